"""Claim check of MDA: directional alignment gives the best merged accuracy, more so as K grows.

Thresholds (fixed by the issue, before any run): with K in {4, 8} fine-tuned copies of a small backbone,
``reproduced`` if MDA has the best average normalised accuracy at both K and its margin over TIES grows
with K; ``partial`` if it is best at one K; else ``not reproduced``. "Best" is against the named
baselines: averaging, task arithmetic, TIES and layer-wise AdaMerging (the strongest reasonable baseline
here, data-using like MDA, is AdaMerging; its own margin is reported).

Added before the first run (the protocol needs them; the issue names none):

- *aggregation*: each threshold must hold in at least 2 of 3 seeds (``"2 of 3"``; a seed is a fresh split,
  pre-training and fine-tuning, so margins are noisy per-seed statistics);
- *validity floors*: the pre-trained backbone reaches >= 90% test accuracy, every fine-tuned task model
  >= 85% (so normalised accuracy divides by a model that learned its task), and the best named baseline
  keeps >= 50% normalised accuracy at K = 4 (merging is not hopeless on this bed), all in every seed;
- *negative controls*: for "best at K", MDA's merged backbone with its learned feature rotations replaced
  by random orthogonal ones (directions scrambled, same coefficients); for "margin grows", the same growth
  measured for AdaMerging (the coefficient method without directional alignment) and task arithmetic.

Equal tuning: every method gets the same 12 configurations (plus 2 past a grid's edge; ``tune``), selected
on the labelled validation split (mean normalised validation accuracy); the data-using methods (AdaMerging,
MDA) adapt on a separate unlabeled split with the same 100 full-batch Adam steps. Test accuracy is measured
once per selection.

Inferred reading that can decide the verdict (protocol section 5), run both: the verdict uses MDA with both
stages (parameter alignment + feature rotations with the ETF term, the abstract's "both parameter and
feature spaces"); the data-free parameter stage alone ("MDA (param only)", tuned with the same budget) is
reported beside it with its own per-seed verdict in the notes.

Normalised accuracy: per task, merged accuracy / that task's fine-tuned accuracy, averaged arithmetically
over tasks (the paper's metric); margins are differences in points, averaged arithmetically.

Quick-mode verdict (3 seeds, 2026-12-01; thresholds never changed): **reproduced, unstable per seed**
(partial / reproduced / partial). Normalised test accuracy (%), MDA vs the best named baseline:
K=4 72.0 vs 78.9, 82.3 vs 81.4, 85.0 vs 76.0 (margins -6.9, +0.9, +9.1: best in 2 of 3 seeds);
K=8 72.2 vs 68.0, 74.0 vs 65.7, 63.7 vs 57.3 (+4.2, +8.3, +6.4: 3 of 3); growth of the margin over TIES
+1.2, +4.5, -5.2 (2 of 3). The strongest baseline is layer-wise AdaMerging (K=4 in all seeds, K=8 in two;
task arithmetic in the third). Floors met in every seed (pre-trained 0.96-0.98, fine-tuned min 0.92-0.95,
best baseline at K=4 >= 76). Controls discriminate: random rotations lose 44-46 points at K=4 and 26-35 at
K=8; the growth of AdaMerging over TIES is -10.0, -2.9, -4.6 and of task arithmetic -8.1, +4.5, -2.0 (both
fail "2 of 3"). 45-51 CPU s per seed.

What carries the result is the data-free parameter stage: "MDA (param only)" is best at both K in 3 of 3
seeds (margins +2.9 / +6.3, +6.7 / +12.8, +9.3 / +8.5) but its margin over TIES grows in 1 of 3 (partial
by the claim's rule); the feature stage (rotations + entropy + ETF term) adds nothing here: its tuned
learning rate goes to the bottom of the grid (1e-6, i.e. switched off) in 3 of 6 studies, and MDA's
full score is at most the param-only score in every study. The tuned lambda of the aligned merge is 1-1.5,
against 0.1-0.7 for task arithmetic: aligned task vectors interfere less, so they can be added at full
strength.

Sensitivity to the grids (reported, protocol section 1): the first quick run used grids with two-value
axes (MDA lambda in {0.5, 1.0}, AdaMerging init in {0.3, 0.5}, ...); many selections sat on those edges
and could not be extended, so the grids were widened to >= 3 values per axis (budget 8 -> 12) and the run
repeated once. First run: **not reproduced** (not reproduced / partial / not reproduced; MDA margins at
K=4 -8.0, -10.5, -3.8, at K=8 -0.8, +6.1, -3.8), with MDA's lambda capped at the edge 1.0. The verdict
therefore depends on tuning the aligned merge's scale past 1; the param-only reading was best at both K in
every seed of both runs.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read reproduced on the same runs): not tuned by the protocol: mda, ta, ada. Fresh seeds 10-12
(never used before): **inconclusive (mda, ta and ada not tuned by the protocol)**. No idea ablation or learned-arm
reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

NAMED = ("average", "ta", "ties", "ada")
_NAMES = {
    "average": "averaging",
    "ta": "task arithmetic",
    "ties": "TIES",
    "ada": "AdaMerging (layer-wise)",
    "mda": "MDA",
    "mda_param": "MDA (param only)",
}
_GRIDS: dict[str, Any] = {
    "average": [{}],
    "ta": dict(lam=[0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0, 1.4, 2.0]),
    "ties": dict(density=[0.1, 0.2, 0.5, 1.0], lam=[0.25, 0.5, 1.0]),
    "ada": dict(init=[0.2, 0.3, 0.5, 0.7], lr=[1e-4, 1e-3, 1e-2]),
    # gamma fixed at 10: selected in 5 of 6 tuned runs of the first quick run (grid lam x lr x gamma in {1, 10})
    "mda": dict(lam=[0.5, 1.0, 1.5, 2.0], lr=[1e-4, 1e-3, 1e-2], gamma=[10.0]),
    "mda_param": dict(lam=[0.5, 1.0, 1.5, 2.0], rank_frac=[0.25, 0.5, 1.0]),
}
_LIMITS = {"density": (0.0, 1.0)}
_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(ks=(2, 3), bed=dict(pretrain_steps=60, finetune_steps=40), steps=5, budget=2, extend=0),
    "quick": dict(ks=(4, 8), bed=dict(pretrain_steps=400, finetune_steps=300), steps=100, budget=12, extend=2),
    # full: same bed, longer schedules (the paper's ViT/LLM suites need assets we do not ship)
    "full": dict(ks=(4, 8), bed=dict(pretrain_steps=2000, finetune_steps=1500), steps=300, budget=16, extend=3),
}


def _study(k: int, seed: int, cfg: dict[str, Any]) -> dict[str, Any]:
    import torch

    from geode.ensembles.mda import MDA
    from geode.ensembles.mda.experiment import make_bed, normalised_accuracy
    from geode.ensembles.merging import LayerwiseMerger, average_merge, task_arithmetic, task_vectors, ties_merge

    bed = make_bed(k, seed=seed, **cfg["bed"])
    base_sd = {n: v.detach() for n, v in bed.base.state_dict().items()}
    taus = task_vectors(bed.base, bed.finetuned)

    def load(sd: dict[str, Any]) -> Any:
        m = copy.deepcopy(bed.base)
        m.load_state_dict(sd)
        return m

    def fit(method: str, p: dict[str, Any]) -> tuple[float, Any]:
        rot = None
        if method == "average":
            model = load(average_merge(bed.base, bed.finetuned))
        elif method == "ta":
            model = load(task_arithmetic(bed.base, bed.finetuned, p["lam"]))
        elif method == "ties":
            model = load(ties_merge(bed.base, bed.finetuned, p["density"], p["lam"]))
        elif method == "ada":
            torch.manual_seed(seed)
            merger = LayerwiseMerger(init=p["init"], lr=p["lr"], steps=cfg["steps"])
            model = load(merger.fit(bed.base, base_sd, taus, bed.heads, bed.unlabeled))
        elif method == "mda":
            m = MDA(lam=p["lam"], lr=p["lr"], gamma=p["gamma"], steps=cfg["steps"])
            model = m.merge(bed.base, bed.finetuned, data=bed.unlabeled, heads=bed.heads)
            rot = m.rotations_
        else:
            model = MDA(lam=p["lam"], rank_frac=p["rank_frac"]).merge(bed.base, bed.finetuned)
        score = normalised_accuracy(bed, model, "val", rot)
        return (score if np.isfinite(score) else -np.inf), (model, rot)

    res = tune(fit, _GRIDS, budget=cfg["budget"], extend=cfg["extend"], limits=_LIMITS, seed=seed)
    test = {}
    for m in _GRIDS:
        model, rot = res.payload(m)
        test[m] = 100 * normalised_accuracy(bed, model, "test", rot)
    # negative control: MDA's merged backbone with random orthogonal rotations in place of the learned ones
    g = torch.Generator().manual_seed(seed + 7919)
    model, rot = res.payload("mda")
    d = rot[0].shape[0] if rot else 64
    rand = [torch.linalg.qr(torch.randn(d, d, generator=g))[0] for _ in range(k)]
    test["randrot"] = 100 * normalised_accuracy(bed, model, "test", rand)
    return dict(
        test=test,
        res=res,
        pretrain=bed.pretrain_test,
        min_individual=min(bed.individual_test),
        mean_individual=float(np.mean(bed.individual_test)),
    )


@register(
    "mda",
    claim=(
        "Independently fine-tuned models have misaligned dominant directions in parameter and feature space; "
        "merging with directional alignment (MDA) preserves structure and gives the best merged accuracy, with a "
        "margin that grows with the number of heterogeneous tasks."
    ),
    paper_figure=(
        "MDA beats TA, TIES, AdaMerging and subspace methods on ViT-B/32 / ViT-L/14 8-task suites and healthcare QA "
        "merges; gains grow with the number of tasks"
    ),
    baselines=("averaging", "task arithmetic", "TIES", "AdaMerging (layer-wise)"),
    thresholds=(
        Threshold(
            "best_k4",
            "mda_margin_k4",
            ">",
            0.0,
            "MDA's normalised accuracy exceeds every named baseline's at K=4 (points; 2 of 3 seeds)",
            agg="2 of 3",
            control="randrot_margin_k4",
        ),
        Threshold(
            "best_k8",
            "mda_margin_k8",
            ">",
            0.0,
            "MDA's normalised accuracy exceeds every named baseline's at K=8 (points; 2 of 3 seeds)",
            agg="2 of 3",
            control="randrot_margin_k8",
        ),
        Threshold(
            "grows_with_k",
            "mda_vs_ties_growth",
            ">",
            0.0,
            "(MDA - TIES) at K=8 exceeds (MDA - TIES) at K=4 (points; 2 of 3 seeds)",
            agg="2 of 3",
            control=("ada_vs_ties_growth", "ta_vs_ties_growth"),
            arms=("mda", "ties"),
        ),
    ),
    floors=(
        Threshold(
            "pretrain_learns",
            "pretrain_test_acc",
            ">=",
            0.90,
            "floor: the pre-trained backbone reaches >= 90% test accuracy (every seed)",
            agg="all",
        ),
        Threshold(
            "finetune_learns",
            "min_individual_acc",
            ">=",
            0.85,
            "floor: every fine-tuned task model reaches >= 85% test accuracy (every seed)",
            agg="all",
        ),
        Threshold(
            "merging_works",
            "best_baseline_k4",
            ">=",
            50.0,
            "floor: the best named baseline keeps >= 50% normalised accuracy at K=4 (every seed)",
            agg="all",
        ),
    ),
    reproduced="best_k4 and best_k8 and grows_with_k",
    partial="best_k4 or best_k8",
    method="mda",
    tuned=("mda", "ta", "ties", "ada"),
    untuned={"average": "no hyper-parameter: the plain average of the fine-tuned weights"},
    key_metric="mda_margin_k8",
)
def run(mode: str, seed: int) -> Outcome:
    """Fine-tune K in {4, 8} task models per seed, tune every merge on validation, report test accuracies."""
    cfg = _MODES[mode]
    t0 = time.perf_counter()
    ks = cfg["ks"]
    studies = {k: _study(k, seed, cfg) for k in ks}
    metrics: dict[str, float] = {}
    table: list[dict[str, Any]] = []
    tuned: list[dict[str, Any]] = []
    notes: list[str] = []
    for i, k in enumerate(ks):
        tag = f"k{4 if i == 0 else 8}"  # metric names are the quick/full K; smoke runs smaller K under them
        st = studies[k]
        t = st["test"]
        best_base = max(t[m] for m in NAMED)
        strongest = max(NAMED, key=lambda m: t[m])
        metrics[f"mda_margin_{tag}"] = t["mda"] - best_base
        metrics[f"mda_param_margin_{tag}"] = t["mda_param"] - best_base
        metrics[f"randrot_margin_{tag}"] = t["randrot"] - best_base
        metrics[f"best_baseline_{tag}"] = best_base
        metrics[f"mda_minus_ada_{tag}"] = t["mda"] - t["ada"]
        for m in (*_GRIDS, "randrot"):
            metrics[f"{m}_norm_acc_{tag}"] = t[m]
        metrics[f"min_individual_acc_{tag}"] = st["min_individual"]
        for m in (*_GRIDS, "randrot"):
            row: dict[str, Any] = {"K": k, "method": _NAMES.get(m, "MDA + random rotations (control)")}
            row["normalised test acc (%)"] = round(t[m], 2)
            if m in _GRIDS:
                row["tuned"] = ", ".join(f"{a}={b:g}" for a, b in st["res"].params(m).items()) or "-"
            table.append(row)
        for r in st["res"].table():
            tuned.append({"K": k, **r})
        notes += [f"K={k}: {n}" for n in st["res"].notes()]
        notes.append(
            f"K={k}: strongest named baseline {_NAMES[strongest]} {best_base:.2f}; MDA {t['mda']:.2f} "
            f"(margin {t['mda'] - best_base:+.2f}), MDA param-only {t['mda_param']:.2f}, random-rotation control "
            f"{t['randrot']:.2f}; fine-tuned accuracy mean {st['mean_individual']:.3f}, min {st['min_individual']:.3f}"
        )
    k4, k8 = (studies[k]["test"] for k in ks)
    for m in ("mda", "mda_param", "ada", "ta"):
        metrics[f"{m}_vs_ties_growth"] = (k8[m] - k8["ties"]) - (k4[m] - k4["ties"])
    metrics["pretrain_test_acc"] = min(st["pretrain"] for st in studies.values())
    metrics["min_individual_acc"] = min(st["min_individual"] for st in studies.values())
    v_param = (
        "reproduced"
        if metrics["mda_param_margin_k4"] > 0
        and metrics["mda_param_margin_k8"] > 0
        and metrics["mda_param_vs_ties_growth"] > 0
        else "partial"
        if metrics["mda_param_margin_k4"] > 0 or metrics["mda_param_margin_k8"] > 0
        else "not reproduced"
    )
    notes.append(
        f"Other reading (data-free parameter stage only) on this seed: {v_param} (margins "
        f"{metrics['mda_param_margin_k4']:+.2f} / {metrics['mda_param_margin_k8']:+.2f}, growth over TIES "
        f"{metrics['mda_param_vs_ties_growth']:+.2f})."
    )
    notes.append(f"wall time {time.perf_counter() - t0:.1f} s")
    summary = (
        f"normalised acc K={ks[0]}: MDA {k4['mda']:.1f} vs best baseline {metrics['best_baseline_k4']:.1f}; "
        f"K={ks[1]}: MDA {k8['mda']:.1f} vs {metrics['best_baseline_k8']:.1f}; MDA-TIES growth "
        f"{metrics['mda_vs_ties_growth']:+.1f} pts"
    )
    return Outcome(metrics=metrics, table=table, summary=summary, notes=notes, tuned=tuned)
