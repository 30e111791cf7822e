"""SafeCut's claim: reliability-gated mutual correction beats source-only, naive and confidence-gated exchange.

Revision 2 (issue 21, protocol v2). What changed from revision 1 and why:

* **The method is the authors' release** (``SeongJunLee-net/SafeCut_NIPS26``): :class:`~geode.ensembles.SafeCut`
  (exp(-cut ratio) reliabilities on a mutual cosine kNN graph, EMA-smoothed, complementary sigmoid gates, KL +
  IIC + diversity + temporal losses, both models updated every mini-batch). Revision 1's reading from the
  abstract (Z-statistic gate, rounds of hard-label exchange) is reported as ``SafeCut rounds``.
* **A harder test bed.** Revision 1's displacement 2.0 left source-only 1.5-6 points under a supervised
  ceiling of 0.947 (naive exchange within 1.5-2.5 points of it), so a 2-point margin was barely possible.
  The displacement is now 4.0, and a validity floor requires the supervised ceiling (the same MLP trained on
  the pool *with* labels) to sit >= 10 points above source-only in every seed.
* **Equal tuning.** Every adaptation method, baselines included, gets the same learning-rate grid and the
  same number of passes over the pool, selected by accuracy on a labelled target *validation* split; the
  accuracies are on a disjoint test split. (The release reports a "best" epoch chosen on labelled target
  data; we never do.)
* **Baselines share SafeCut's training.** Naive exchange (both gates one) and confidence gating (the
  max-probability in place of the cut reliability) use the release's losses and schedule; only the gate
  differs. Self-training (SHOT's information maximisation) and teacher -> student are reported beside them;
  the strongest baseline by validation accuracy is reported with its margin.
* **Negative control.** The same training with the cut reliabilities permuted across samples at every
  refresh ("shuffled gate": the same distribution of gate values, no per-sample information). Each verdict
  threshold's control is that run's gain; it must fail the threshold.
* **The class-swap case** (reported, not thresholded): the target model's source swaps classes 0 and 1, so
  it makes whole-class errors that are coherent on the kNN graph; the partner is right on those classes.
* **Seeds.** Revision 1 averaged 5 inner draws in one run; now one draw per seed and the harness's >= 3
  seeds, thresholds "2 of 3". The thresholds (+2 points over source-only, naive and confidence gating) are
  the issue's and are unchanged; their baselines are now the tuned, release-trained ones.

Revision 1's verdict: **not reproduced** (0.9292; gains +4.71 / +1.57 / +1.79 points over source-only /
naive / confidence, 5 inner draws, near-saturated bed).

Revision 2's verdict (quick, 3 seeds, measured once with the thresholds above): **partial, unstable**. Per
seed: reproduced, not reproduced, partial. Both floors hold: the ceiling gap is 21.0 / 17.5 / 15.9 points
and no method collapses.

* Over source-only: +21.7 / +16.5 / +14.7 points. This threshold does not discriminate: the shuffled-gate
  control gains +20.1 / +16.4 / +13.3, and the harness flags the verdict for it.
* Over naive exchange: +2.5 / -0.6 / +3.1, which passes 2 of 3 (control +0.9 / -0.7 / +1.7, fails).
* Over confidence gating: +2.9 / +0.3 / +1.2, which fails (control +1.3 / +0.2 / -0.2).
* Over the strongest baseline by validation: +1.0 on average.
* Class swap: SafeCut 0.932 overall and 0.94 on the swapped classes (source-only 0.62 and 0.02). Revision 1's
  gate reaches 0.74 and 0.04.

Tuning: on seed 0, SafeCut, naive exchange and the shuffled control selected the extended edge (lr 9e-3,
flagged in the notes). The verdict does not hinge on it: beats_confidence fails on seeds 1 and 2, where the
selections of SafeCut and confidence gating are interior.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read partial on the same runs): not tuned by the protocol: SafeCut, naive exchange. No idea
ablation or learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

_SIZES: dict[str, dict[str, int]] = {
    "smoke": {"n_pool": 300, "n_val": 150, "n_test": 300, "n_source": 400, "source_epochs": 10, "epochs": 2},
    "quick": {"n_pool": 2000, "n_val": 500, "n_test": 1500, "n_source": 2000, "source_epochs": 60, "epochs": 10},
    "full": {"n_pool": 10000, "n_val": 2000, "n_test": 5000, "n_source": 10000, "source_epochs": 60, "epochs": 20},
}
ROUNDS = 5  # MutualCorrection methods: ROUNDS rounds of epochs // ROUNDS epochs (the same passes in total)
SHIFT = 4.0  # displacement of each model's failure classes (revision 1: 2.0, near-saturated)
PARTNER_SCALE = 5.0  # the ViL stand-in's logits x5: overconfident, so that confidence gating is misled
SWAP = (0, 1)  # the class-swap case: the target model's source exchanges these labels (the partner's good half)
LR_GRID = [3e-4, 1e-3, 3e-3]  # Adam learning rate, the same grid for every method (plus one step past an edge)
METHODS = (
    "self-training",
    "teacher->student",
    "naive exchange",
    "confidence gating",
    "SafeCut rounds",
    "shuffled gate",
    "SafeCut",
)
BASELINES = ("self-training", "teacher->student", "naive exchange", "confidence gating")
_KEYS = {
    "source-only": "source_only",
    "partner-only": "partner_only",
    "self-training": "self_training",
    "teacher->student": "teacher_student",
    "naive exchange": "naive",
    "confidence gating": "confidence",
    "SafeCut rounds": "safecut_rounds",
    "shuffled gate": "shuffled",
    "SafeCut": "safecut",
}


def _figure(acc: dict[str, float], swap_acc: dict[str, float], ceiling: float) -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.0, 3.4), layout="constrained")
    ax = fig.subplots()
    names = ["source-only", "partner-only", *METHODS]
    xs = np.arange(len(names))
    ax.bar(xs - 0.2, [acc[m] for m in names], 0.4, label="complementary failures", color="tab:blue")
    ax.bar(xs + 0.2, [swap_acc[m] for m in names], 0.4, label=f"+ class swap {SWAP}", color="tab:orange")
    ax.axhline(ceiling, color="k", ls="--", lw=1, label="supervised ceiling")
    ax.set_xticks(xs, names, rotation=25, ha="right", fontsize=8)
    ax.set_ylim(0.4, 1.0)
    ax.set_ylabel("target-model test accuracy")
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    return fig


@register(
    "safecut",
    claim=(
        "Gating cross-model supervision by the relative cut-statistic reliability of the two models' pseudo-labels "
        "gives a net-positive mutual correction that beats source-only, naive mutual exchange and confidence-gated "
        "exchange when the two models fail on complementary classes."
    ),
    paper_figure=(
        "state of the art on Office-31 / Office-Home / VisDA-C / DomainNet-126 SFDA (no number in the abstract); "
        "a guaranteed net-positive correction signal"
    ),
    baselines=(
        "source-only",
        "self-training",
        "one-directional ViL -> target distillation",
        "naive mutual exchange",
        "confidence-gated exchange",
    ),
    thresholds=(
        Threshold(
            "beats_source",
            "gain_vs_source_only_pts",
            ">=",
            2.0,
            "SafeCut's test accuracy >= source-only + 2 points, in 2 of 3 seeds",
            agg="2 of 3",
            control="control_gain_vs_source_only_pts",
            arms=("SafeCut", "source-only"),
        ),
        Threshold(
            "beats_naive",
            "gain_vs_naive_pts",
            ">=",
            2.0,
            "SafeCut >= tuned naive mutual exchange (same training) + 2 points, in 2 of 3 seeds",
            agg="2 of 3",
            control="control_gain_vs_naive_pts",
            arms=("SafeCut", "naive exchange"),
        ),
        Threshold(
            "beats_confidence",
            "gain_vs_confidence_pts",
            ">=",
            2.0,
            "SafeCut >= tuned confidence-gated exchange (same training) + 2 points, in 2 of 3 seeds",
            agg="2 of 3",
            control="control_gain_vs_confidence_pts",
            arms=("SafeCut", "confidence gating"),
        ),
    ),
    floors=(
        Threshold(
            "headroom",
            "ceiling_gap_pts",
            ">=",
            10.0,
            "floor: the supervised ceiling is >= 10 points above source-only (every seed)",
            agg="all",
        ),
        Threshold(
            "no_collapse",
            "collapsed_methods",
            "<=",
            0.0,
            "floor: no adapted target model predicts fewer than half of the classes on the test split",
            agg="all",
        ),
    ),
    reproduced="beats_source and beats_naive and beats_confidence",
    partial="beats_source and beats_naive",
    method="SafeCut",
    tuned=("SafeCut", "self-training", "teacher->student", "naive exchange", "confidence gating"),
    untuned={"source-only": "no hyper-parameter: the source-trained target model, not adapted"},
    key_metric="gain_vs_confidence_pts",
    revision=2,
)
def run(mode: str, seed: int) -> Outcome:
    """Tune every method on validation, report test accuracies, the shuffled-gate control and the swap case."""
    import torch

    from geode.ensembles.safecut.experiment import accuracy, make_bed, make_method

    size = dict(_SIZES[mode])
    epochs = size.pop("epochs")
    bed = make_bed(seed, shift=SHIFT, partner_scale=PARTNER_SCALE, **size)
    fit_seed = seed + 7

    def fit(b: Any, name: str, lr: float) -> tuple[Any, list[dict[str, float]]]:
        method = make_method(name, lr=lr, epochs=epochs, rounds=min(ROUNDS, epochs), seed=fit_seed)
        mt, _mv, hist = method.fit(b.model_t, b.partner, b.x_pool, y=b.y_pool)
        return mt, hist

    def evaluate(name: str, params: dict[str, Any]) -> tuple[float, Any]:
        mt, hist = fit(bed, name, params["lr"])
        return accuracy(mt, bed.x_val, bed.y_val), (mt, hist)

    res = tune(evaluate, {m: {"lr": LR_GRID} for m in METHODS}, extend=1)
    acc = {
        "source-only": accuracy(bed.model_t, bed.x_test, bed.y_test),
        "partner-only": accuracy(bed.partner, bed.x_test, bed.y_test),
    }
    collapsed = 0
    hist0: dict[str, dict[str, float]] = {}
    for m in METHODS:
        mt, hist = res.payload(m)
        acc[m] = accuracy(mt, bed.x_test, bed.y_test)
        mt.eval()
        with torch.no_grad():
            n_pred = len(np.unique(mt(bed.x_test).argmax(1).numpy()))
        collapsed += int(n_pred < bed.n_classes / 2)
        hist0[m] = hist[0]

    # the class-swap case: the same draws, the target model's source swaps SWAP; the tuned learning rates
    sbed = make_bed(seed, shift=SHIFT, partner_scale=PARTNER_SCALE, swap=SWAP, ceiling=False, **size)
    swap_acc = {
        "source-only": accuracy(sbed.model_t, sbed.x_test, sbed.y_test),
        "partner-only": accuracy(sbed.partner, sbed.x_test, sbed.y_test),
    }
    on_swapped = np.isin(sbed.y_test, SWAP)
    swap_cls = {"source-only": accuracy(sbed.model_t, sbed.x_test[on_swapped], sbed.y_test[on_swapped])}
    swap_hist0: dict[str, dict[str, float]] = {}
    for m in METHODS:
        mt, hist = fit(sbed, m, res.params(m)["lr"])
        swap_acc[m] = accuracy(mt, sbed.x_test, sbed.y_test)
        swap_cls[m] = accuracy(mt, sbed.x_test[on_swapped], sbed.y_test[on_swapped])
        swap_hist0[m] = hist[0]

    strongest = max(BASELINES, key=lambda m: res.score(m))
    metrics: dict[str, float] = {f"acc_{_KEYS[m]}": v for m, v in acc.items()}
    metrics["acc_ceiling"] = bed.ceiling
    metrics["ceiling_gap_pts"] = 100.0 * (bed.ceiling - acc["source-only"])
    metrics["collapsed_methods"] = float(collapsed)
    for ref in ("source-only", "naive exchange", "confidence gating", "self-training", "teacher->student"):
        metrics[f"gain_vs_{_KEYS[ref]}_pts"] = 100.0 * (acc["SafeCut"] - acc[ref])
        metrics[f"control_gain_vs_{_KEYS[ref]}_pts"] = 100.0 * (acc["shuffled gate"] - acc[ref])
        metrics[f"rounds_gain_vs_{_KEYS[ref]}_pts"] = 100.0 * (acc["SafeCut rounds"] - acc[ref])
    metrics["gain_vs_strongest_pts"] = 100.0 * (acc["SafeCut"] - acc[strongest])
    metrics["gain_vs_shuffled_pts"] = 100.0 * (acc["SafeCut"] - acc["shuffled gate"])
    for m in ("SafeCut", "confidence gating", "naive exchange", "shuffled gate"):
        for side in ("t", "v"):
            metrics[f"net_correction0_{side}_{_KEYS[m]}"] = hist0[m][f"net_correction_{side}"]
            metrics[f"swap_net_correction0_{side}_{_KEYS[m]}"] = swap_hist0[m][f"net_correction_{side}"]
    for m, v in swap_acc.items():
        metrics[f"swap_acc_{_KEYS[m]}"] = v
    for m, v in swap_cls.items():
        metrics[f"swap_acc_on_swapped_{_KEYS[m]}"] = v
    metrics["swap_gain_vs_source_only_pts"] = 100.0 * (swap_acc["SafeCut"] - swap_acc["source-only"])
    metrics["swap_gain_vs_naive_pts"] = 100.0 * (swap_acc["SafeCut"] - swap_acc["naive exchange"])
    metrics["swap_gain_vs_confidence_pts"] = 100.0 * (swap_acc["SafeCut"] - swap_acc["confidence gating"])

    table: list[dict[str, Any]] = []
    for m in ("source-only", "partner-only", *METHODS):
        table.append(
            {
                "method": m,
                "lr": res.params(m)["lr"] if m in METHODS else "",
                "val acc": round(res.score(m), 4) if m in METHODS else "",
                "test acc": round(acc[m], 4),
                "swap case: test acc": round(swap_acc[m], 4),
                f"swap case: acc on classes {SWAP}": round(swap_cls[m], 4) if m in swap_cls else "",
            }
        )
    table.append({"method": "supervised ceiling", "test acc": round(bed.ceiling, 4)})
    summary = (
        f"SafeCut {acc['SafeCut']:.3f} vs source-only {acc['source-only']:.3f}, naive {acc['naive exchange']:.3f}, "
        f"confidence {acc['confidence gating']:.3f} (gains {metrics['gain_vs_source_only_pts']:+.1f} / "
        f"{metrics['gain_vs_naive_pts']:+.1f} / {metrics['gain_vs_confidence_pts']:+.1f} pts; shuffled-gate control "
        f"{acc['shuffled gate']:.3f}; ceiling {bed.ceiling:.3f}); class swap: SafeCut {swap_acc['SafeCut']:.3f} vs "
        f"source-only {swap_acc['source-only']:.3f}, on the swapped classes {swap_cls['SafeCut']:.3f}"
    )
    notes = [
        f"10-class Gaussian mixture in d=16: the target model (MLP, trainable features) is pretrained on a source "
        f"where classes 0-4 are displaced by {SHIFT:g}, the partner (frozen random ReLU encoder + linear head, a ViL "
        f"stand-in, logits x{PARTNER_SCALE:g}) where classes 5-9 are. Splits of the target: {size['n_pool']} "
        f"unlabelled (adaptation), {size['n_val']} labelled validation (learning-rate selection only), "
        f"{size['n_test']} test.",
        f"Every method: {epochs} passes over the pool, Adam, learning rate tuned on the grid {LR_GRID} (+1 step past "
        "an edge). SafeCut, naive, confidence and shuffled share the release's training (k=50 mutual cosine kNN, "
        "tau_sim 0.1, beta 6, IIC 1.3, diversity 0.5, temporal 1.0, EMA 0.7->0.95); self-training, teacher->student "
        f"and SafeCut rounds (revision 1) are {min(ROUNDS, epochs)} rounds of MutualCorrection with SHOT's IM.",
        f"Strongest baseline by validation accuracy: {strongest} ({acc[strongest]:.3f} test).",
        f"Class-swap case: the target model's source swaps classes {SWAP} (whole-class, graph-coherent errors); the "
        "partner is right there; the learning rates tuned on the main case are reused. Reported, not thresholded.",
        "net_correction0_*: the gate-weighted count of true minus false corrections before training (t: partner -> "
        "target, v: target -> partner).",
        *res.notes(),
    ]
    return Outcome(
        metrics=metrics,
        table=table,
        figures={"accuracy": _figure(acc, swap_acc, bed.ceiling)},
        summary=summary,
        notes=notes,
        tuned=res.table(),
    )
