"""Claim check of geometry-aware SSL for LFP: channel-layout objectives beat masked prediction, more so with data.

Thresholds (fixed by the issue, before any run): ``reproduced`` if the geometry-aware objective beats masked
prediction on held-out-session region balanced accuracy and on depth error, and the gap grows from 2 to 8
pre-training sessions; ``partial`` if it wins on one task.

Read before the first run (the issue leaves them open; added before any run):

- "beats" (at 8 pre-training sessions): geometry - masked balanced accuracy > 0, and masked - geometry depth
  mean absolute error (µm) > 0, each in every seed (``agg="all"``);
- "the gap grows": the gap at 8 sessions minus the gap at 2, > 0 on both tasks, in 2 of 3 seeds (a difference
  of differences is noisier than a gap; one seed may disagree);
- *validity floors*: both SSL arms at 8 sessions reach test balanced accuracy >= 0.3 (chance about 1/6 over six
  regions); the Welch-PSD baseline reaches >= 0.4 (the region is recoverable across sessions at all); no
  pre-training run is non-finite;
- *negative controls*: the geometry objective trained on a *shuffled channel layout* (each session's channel
  positions permuted, so "neighbours" are arbitrary channels of the probe), at the geometry arm's tuned learning
  rate, at 2 and 8 sessions: its gaps over masked prediction and its gap growth must fail the same thresholds;
- reported beside them (revision 2, added after the revision-1 run; not part of any rule): the other reading of
  "mirror the channel layout", :func:`distance_preserving_loss` (alpha = 1/100 per µm on the projection head's
  output, the same batches and the same tuning), as ``distance_*`` metrics; the verdict keeps the
  pre-registered contrastive reading;
- reported beside them: the Welch-PSD baseline (log PSD 1-100 Hz, its segment length tuned with the same
  budget), a random-init encoder, and the strongest of them.

Set-up (notes ``lfp-geossl.md``): :func:`simulate_session` sessions, 64 contacts at 20 µm, 16 windows of 2 s at
250 Hz, session shifts in gain, line noise, sampling rate, tilt, insertion depth and region thickness. Sessions
0-7 are the pool (their labels train the probes), 8-9 validation, 10-12 held-out test. Self-supervised
pre-training on the first 2 or all 8 pool sessions with equal steps and batch (128 windows): masked prediction
draws random windows; the geometry objective draws 8 (session, window) groups of 8 channel pairs 1-2 contacts
apart (:math:`\\delta` = 40 µm). :class:`LFPEncoder` (d = 32), AdamW (weight decay 1e-4), cosine schedule.
Probes on frozen embeddings (each channel's mean embedding over 4 windows, standardised): a class-balanced L2
logistic regression (C = 1) for the region (balanced accuracy) and a ridge regression (alpha = 1) for the
vertical depth (mean absolute error in µm), trained on the 8 pool sessions and scored on held-out sessions.
Equal tuning: the learning rate over the same grid per objective and per scale, selected on the validation
sessions' score 0.5 (balanced accuracy + 1 - MAE / MAE of the mean depth).

``full`` mode (for a GPU; not run here): 384 contacts, 60 windows per session, 24 sessions, 20k steps.

Revision-1 quick verdict (3 seeds, before the distance-preserving reading was added; the rules, arms and data are
unchanged in revision 2): ``partial``. Geometry beats masked prediction at 8 sessions on balanced accuracy
(+0.157 / +0.116 / +0.308, seeds 0/1/2; shuffled-layout control -0.226 / -0.041 / +0.168, fails) and on depth
MAE (+91 / +33 / +42 µm; control -44 / +1 / +44 µm, fails), but the gap does not grow from 2 to 8 sessions
(BA growth -0.089 / -0.187 / +0.152, MAE growth +26 / -7 / -30 µm: 1 of 3 each). About 58 CPU-s per seed.

Quick verdict (3 seeds, revision 2; the verdict arms reproduce revision 1 exactly): ``partial``, the same in every
seed. At 8 pre-training sessions, held-out balanced accuracy geometry 0.922 / 0.783 / 0.894 vs masked 0.765 /
0.667 / 0.586 (gap +0.157 / +0.116 / +0.308; shuffled-layout control -0.226 / -0.041 / +0.168, fails "every
seed") and depth MAE geometry 116 / 172 / 139 µm vs masked 207 / 205 / 181 µm (gap +91 / +33 / +42 µm; control
-44 / +1 / +44 µm, fails). The gap does not grow from 2 to 8 sessions: BA growth -0.089 / -0.187 / +0.152
(control -0.428 / -0.222 / +0.087), MAE growth +26 / -7 / -30 µm (control -117 / -27 / -4); both fail "2 of 3".
Floors pass (lowest SSL BA at 8 sessions 0.765 / 0.667 / 0.586; Welch BA 0.974 / 0.966 / 0.971; all finite).

Caveats a reader must weigh: (1) masked prediction is *worse than its own untrained encoder* in every seed
(BA -0.014 / -0.097 / -0.138, MAE +20 / +27 / +27 µm vs the random-init encoder's 0.779 / 0.764 / 0.725 and
187 / 178 / 153 µm), so "geometry beats masked" is partly "masked prediction hurts at this scale"; geometry
beats the random encoder by +0.143 / +0.019 / +0.169 BA and 71 / 6 / 15 µm. (2) The strongest baseline is the
Welch-PSD probe (BA 0.974 / 0.966 / 0.971, MAE 70 / 100 / 93 µm), ahead of every SSL arm on region: the
generator's region signatures are largely spectral (the risk the notes named). (3) The distance-preserving
reading of the geometry objective (reported, not in the rules) is stronger than the pre-registered contrastive
one: BA at 8 sessions 0.940 / 0.941 / 0.870, MAE 67 / 107 / 77 µm (gap over masked +0.176 / +0.274 / +0.283 BA,
+140 / +98 / +104 µm), and its gap grows in 2 of 3 seeds on both tasks (BA -0.005 / +0.122 / +0.252, MAE +59 /
+11 / -2 µm): under that reading the rules would give ``reproduced``. The verdict stays on the reading fixed
before the first run. (4) The learning rate sat on an edge of its two-value grid in every selection (masked at
1e-3, geometry and distance mostly at 3e-3; flagged in the notes). Quick mode: 84.2 / 87.9 / 83.5 CPU-s per seed
(300-370 s wall under contention).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read partial on the same runs): not tuned by the protocol: geometry, masked. No idea ablation or
learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, device_for, register, tune

SCALES = (2, 8)
_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(channels=16, windows=4, pool=8, n_val=1, n_test=1, steps=3, groups=2, pairs=4, lrs=[1e-3], ev=2),
    "quick": dict(
        channels=64, windows=16, pool=8, n_val=2, n_test=3, steps=150, groups=8, pairs=8, lrs=[1e-3, 3e-3], ev=4
    ),
    "full": dict(
        channels=384,
        windows=60,
        pool=16,
        n_val=4,
        n_test=4,
        steps=20000,
        groups=16,
        pairs=16,
        lrs=[3e-4, 1e-3, 3e-3],
        ev=16,
    ),
}
_NAMES = {
    "masked": "masked prediction (wav2vec2-style)",
    "geometry": "geometry-aware (channel layout)",
    "distance": "geometry-aware, distance-preserving reading",
    "shuffled": "geometry-aware, shuffled layout (control)",
    "random": "random-init encoder",
    "welch": "Welch-PSD + probes",
}
DELTA_UM = 40.0
ALPHA_PER_UM = 1.0 / 100.0


def _sessions(seed: int, cfg: dict[str, Any]) -> list[Any]:
    from geode.neuro.lfp_geossl import ProbeLayout, simulate_session

    layout = ProbeLayout.linear(cfg["channels"], 20.0)
    n = cfg["pool"] + cfg["n_val"] + cfg["n_test"]
    return [simulate_session(seed * 1000 + i, layout=layout, n_windows=cfg["windows"]) for i in range(n)]


def _pretrain(
    kind: str, n_sess: int, lr: float, sess: list[Any], cfg: dict[str, Any], seed: int, dev: Any
) -> dict[str, Any]:
    import torch
    from torch import nn

    from geode.neuro.lfp_geossl import (
        LFPEncoder,
        distance_preserving_loss,
        geometry_contrastive_loss,
        masked_prediction_loss,
    )

    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 7)
    rng = np.random.default_rng(seed + 11)
    enc = LFPEncoder().to(dev)
    d = enc.dim
    if kind == "masked":
        head: nn.Module = nn.ModuleDict({"pred": nn.Linear(d, d), "target": nn.Linear(d, d)}).to(dev)
    else:
        head = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d)).to(dev)
    params = [*enc.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg["steps"], eta_min=lr * 0.01)
    lfp = [torch.tensor(s.lfp) for s in sess[:n_sess]]
    n_ch, n_win = lfp[0].shape[0], lfp[0].shape[1]
    # the channel layout the geometry objective is told: the true positions, or a per-session permutation of them
    order = [np.arange(n_ch) if kind != "shuffled" else rng.permutation(n_ch) for _ in range(n_sess)]
    batch = cfg["groups"] * 2 * cfg["pairs"]
    finite = True
    for _ in range(cfg["steps"]):
        if kind == "masked":
            si = rng.integers(0, n_sess, batch)
            x = torch.stack([lfp[s][rng.integers(n_ch), rng.integers(n_win)] for s in si]).to(dev)
            loss = masked_prediction_loss(enc, head, x, gen)
        else:
            xs, ys, gs = [], [], []
            for g in range(cfg["groups"]):
                s, w = int(rng.integers(n_sess)), int(rng.integers(n_win))
                rank = rng.integers(0, n_ch - 2, cfg["pairs"])  # anchors' positions in the told layout
                partner = rank + rng.integers(1, 3, cfg["pairs"])
                pos = np.concatenate([rank, partner])
                ch = order[s][pos]  # the channels that sit at those told positions
                xs.append(lfp[s][ch, w])
                ys.append(pos * 20.0)
                gs.append(np.full(pos.size, g))
            x = torch.cat(xs).to(dev)
            depth = torch.tensor(np.concatenate(ys), dtype=torch.float32)
            group = torch.tensor(np.concatenate(gs))
            u = head(enc(x)).cpu()
            if kind == "distance":
                loss = distance_preserving_loss(u, depth, group, alpha=ALPHA_PER_UM)
            else:
                loss = geometry_contrastive_loss(u, depth, group, delta=DELTA_UM)
        if not bool(torch.isfinite(loss)):
            finite = False
            break
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
    return {"encoder": enc, "finite": finite}


def _embed(enc: Any, sess: list[Any], n_ev: int, dev: Any) -> list[np.ndarray]:
    import torch

    enc.eval()
    out = []
    with torch.no_grad():
        for s in sess:
            x = torch.tensor(s.lfp[:, :n_ev]).reshape(-1, s.lfp.shape[-1]).to(dev)
            z = enc(x).cpu().double().numpy().reshape(s.lfp.shape[0], n_ev, -1).mean(1)
            out.append(z)
    enc.train()
    return out


def _probe_scores(feats: list[np.ndarray], sess: list[Any], train: list[int], test: list[int]) -> dict[str, float]:
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.metrics import balanced_accuracy_score

    xtr = np.concatenate([feats[i] for i in train])
    xte = np.concatenate([feats[i] for i in test])
    if not (np.isfinite(xtr).all() and np.isfinite(xte).all()):
        return {"ba": 0.0, "mae": math.inf, "score": -math.inf}
    m, s = xtr.mean(0), xtr.std(0) + 1e-6
    xtr, xte = (xtr - m) / s, (xte - m) / s
    rtr = np.concatenate([sess[i].region for i in train])
    rte = np.concatenate([sess[i].region for i in test])
    ytr = np.concatenate([sess[i].depth for i in train])
    yte = np.concatenate([sess[i].depth for i in test])
    clf = LogisticRegression(C=1.0, max_iter=500, class_weight="balanced").fit(xtr, rtr)
    with warnings.catch_warnings():  # a held-out probe may miss a region the classifier predicts
        warnings.simplefilter("ignore", UserWarning)
        ba = float(balanced_accuracy_score(rte, clf.predict(xte)))
    mae = float(np.abs(Ridge(alpha=1.0).fit(xtr, ytr).predict(xte) - yte).mean())
    mae0 = float(np.abs(ytr.mean() - yte).mean())
    return {"ba": ba, "mae": mae, "score": 0.5 * (ba + 1.0 - mae / mae0), "mae_chance": mae0}


@register(
    "lfp-geossl",
    claim=(
        "Self-supervised objectives that make single-channel LFP embeddings mirror the probe's channel layout "
        "beat masked prediction on held-out-session brain-region classification and depth regression, and the "
        "gain grows with the number of pre-training sessions."
    ),
    paper_figure="Geometry-aware SSL outperforms masked-prediction baselines; gains compound at larger data scales",
    baselines=("masked prediction (wav2vec2-style)", "Welch-PSD + probes", "random-init encoder"),
    thresholds=(
        Threshold(
            "beats_region",
            "gap_ba_8",
            ">",
            0.0,
            "geometry beats masked prediction on held-out region balanced accuracy (8 sessions), every seed",
            agg="all",
            control="shuffled_gap_ba_8",
        ),
        Threshold(
            "beats_depth",
            "gap_mae_8",
            ">",
            0.0,
            "geometry has a lower held-out depth MAE than masked prediction (8 sessions), every seed",
            agg="all",
            control="shuffled_gap_mae_8",
        ),
        Threshold(
            "grows_region",
            "growth_ba",
            ">",
            0.0,
            "the balanced-accuracy gap is larger at 8 than at 2 pre-training sessions (2 of 3 seeds)",
            agg="2 of 3",
            control="shuffled_growth_ba",
        ),
        Threshold(
            "grows_depth",
            "growth_mae",
            ">",
            0.0,
            "the depth-error gap is larger at 8 than at 2 pre-training sessions (2 of 3 seeds)",
            agg="2 of 3",
            control="shuffled_growth_mae",
        ),
    ),
    floors=(
        Threshold(
            "ssl_learns",
            "min_ssl_ba_8",
            ">=",
            0.3,
            "floor: both SSL arms reach held-out balanced accuracy >= 0.3 at 8 sessions (chance ~0.17)",
            agg="all",
        ),
        Threshold(
            "task_learnable",
            "welch_ba",
            ">=",
            0.4,
            "floor: the Welch-PSD baseline reaches held-out balanced accuracy >= 0.4",
            agg="all",
        ),
        Threshold("all_finite", "nonfinite_runs", "<=", 0.0, "floor: no pre-training run is non-finite", agg="all"),
    ),
    reproduced="beats_region and beats_depth and grows_region and grows_depth",
    partial="beats_region or beats_depth",
    method="geometry",
    tuned=("geometry", "masked"),
    key_metric="gap_ba_8",
    revision=2,
)
def run(mode: str, seed: int) -> Outcome:
    import torch

    from geode.neuro.lfp_geossl import LFPEncoder, welch_features

    cfg = _MODES[mode]
    device = device_for(mode)
    t0 = time.perf_counter()
    sess = _sessions(seed, cfg)
    pool = list(range(cfg["pool"]))
    val = list(range(cfg["pool"], cfg["pool"] + cfg["n_val"]))
    test = list(range(cfg["pool"] + cfg["n_val"], len(sess)))
    metrics: dict[str, float] = {}
    table: list[dict[str, Any]] = []
    tuned: list[dict[str, Any]] = []
    notes: list[str] = []
    nonfinite = 0
    res_by_scale: dict[int, dict[str, dict[str, float]]] = {}
    for n in SCALES:

        def fit(kind: str, params: dict[str, Any], n: int = n) -> tuple[float, Any]:
            r = _pretrain(kind, n, params["lr"], sess, cfg, seed, device)
            feats = _embed(r["encoder"], sess, cfg["ev"], device) if r["finite"] else None
            sc = _probe_scores(feats, sess, pool, val)["score"] if feats is not None else -math.inf
            return sc, dict(r, feats=feats)

        res = tune(fit, {k: {"lr": cfg["lrs"]} for k in ("masked", "geometry", "distance")}, maximize=True)
        shuf = _pretrain("shuffled", n, res.params("geometry")["lr"], sess, cfg, seed, device)
        arms = {k: res.payload(k) for k in ("masked", "geometry", "distance")}
        arms["shuffled"] = dict(
            shuf, feats=_embed(shuf["encoder"], sess, cfg["ev"], device) if shuf["finite"] else None
        )
        nonfinite += sum(not arms[k]["finite"] for k in ("masked", "geometry", "shuffled"))
        metrics[f"distance_nonfinite_{n}"] = float(not arms["distance"]["finite"])
        scores = {}
        for k, a in arms.items():
            scores[k] = (
                _probe_scores(a["feats"], sess, pool, test) if a["feats"] is not None else {"ba": 0.0, "mae": 1e6}
            )
            metrics[f"{k}_ba_{n}"] = scores[k]["ba"]
            metrics[f"{k}_mae_{n}"] = scores[k]["mae"]
            table.append(
                {"sessions": n, "arm": _NAMES[k], "test BA": scores[k]["ba"], "test MAE µm": scores[k]["mae"]}
            )
        for k in ("geometry", "shuffled", "distance"):
            pre = "" if k == "geometry" else f"{k}_"
            metrics[f"{pre}gap_ba_{n}"] = scores[k]["ba"] - scores["masked"]["ba"]
            metrics[f"{pre}gap_mae_{n}"] = scores["masked"]["mae"] - scores[k]["mae"]
        res_by_scale[n] = scores
        tuned += [dict(r, sessions=n) for r in res.table()]
        notes += [f"({n} sessions) {s}" for s in res.notes()]
    lo, hi = SCALES
    for pre in ("", "shuffled_", "distance_"):
        metrics[f"{pre}growth_ba"] = metrics[f"{pre}gap_ba_{hi}"] - metrics[f"{pre}gap_ba_{lo}"]
        metrics[f"{pre}growth_mae"] = metrics[f"{pre}gap_mae_{hi}"] - metrics[f"{pre}gap_mae_{lo}"]

    # references: random-init encoder and Welch-PSD (segment length tuned with the same budget on validation)
    torch.manual_seed(seed)
    rand = _probe_scores(_embed(LFPEncoder().to(device), sess, cfg["ev"], device), sess, pool, test)

    def welch_fit(kind: str, params: dict[str, Any]) -> tuple[float, Any]:
        feats = [welch_features(s.lfp[:, : cfg["ev"]], s.fs, nperseg=params["nperseg"]).mean(1) for s in sess]
        return _probe_scores(feats, sess, pool, val)["score"], feats

    wres = tune(welch_fit, {"welch": {"nperseg": [64, 128, 256][: len(cfg["lrs"])]}}, maximize=True)
    welch = _probe_scores(wres.payload("welch"), sess, pool, test)
    tuned += [dict(r, sessions="-") for r in wres.table()]
    for k, sc in (("random", rand), ("welch", welch)):
        metrics[f"{k}_ba"], metrics[f"{k}_mae"] = sc["ba"], sc["mae"]
        table.append({"sessions": "-", "arm": _NAMES[k], "test BA": sc["ba"], "test MAE µm": sc["mae"]})
    metrics["mae_chance"] = float(rand["mae_chance"])
    # reported, not thresholded: does each SSL objective improve on its own untrained encoder?
    for k in ("masked", "geometry"):
        metrics[f"{k}_minus_random_ba_{hi}"] = metrics[f"{k}_ba_{hi}"] - rand["ba"]
        metrics[f"{k}_minus_random_mae_{hi}"] = rand["mae"] - metrics[f"{k}_mae_{hi}"]
    metrics["min_ssl_ba_8"] = min(metrics[f"masked_ba_{hi}"], metrics[f"geometry_ba_{hi}"])
    metrics["nonfinite_runs"] = float(nonfinite)
    refs = {"masked": res_by_scale[hi]["masked"], "random": rand, "welch": welch}
    best_ba = max(refs, key=lambda k: refs[k]["ba"])
    best_mae = min(refs, key=lambda k: refs[k]["mae"])
    geo = res_by_scale[hi]["geometry"]
    notes.append(
        f"Strongest baseline on region: {_NAMES[best_ba]} (BA {refs[best_ba]['ba']:.3f}; geometry {geo['ba']:.3f}); "
        f"on depth: {_NAMES[best_mae]} (MAE {refs[best_mae]['mae']:.0f} µm; geometry {geo['mae']:.0f} µm; "
        f"predicting the mean depth {metrics['mae_chance']:.0f} µm)."
    )
    notes.append(f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.")
    summary = (
        f"8 sessions: BA geometry {geo['ba']:.3f} vs masked {metrics[f'masked_ba_{hi}']:.3f} "
        f"(shuffled {metrics[f'shuffled_ba_{hi}']:.3f}, Welch {welch['ba']:.3f}); MAE geometry {geo['mae']:.0f} vs "
        f"masked {metrics[f'masked_mae_{hi}']:.0f} µm; gap growth 2->8: BA {metrics['growth_ba']:+.3f}, "
        f"MAE {metrics['growth_mae']:+.0f} µm"
    )
    return Outcome(metrics=metrics, table=table, summary=summary, notes=notes, tuned=tuned)
