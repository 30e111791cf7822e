"""SafeCut's headline claim: cut-gated mutual correction beats source-only, naive exchange and confidence gating."""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register

N_SEEDS = {"smoke": 2, "quick": 5, "full": 10}  # quick: 5 seeds, fixed by the issue
_SIZES: dict[str, dict[str, int]] = {
    "smoke": {"n_target": 300, "n_source": 300, "source_epochs": 10, "rounds": 2, "epochs": 2},
    "quick": {"n_target": 2000, "n_source": 2000, "source_epochs": 60, "rounds": 5, "epochs": 5},
    "full": {"n_target": 10000, "n_source": 10000, "source_epochs": 60, "rounds": 10, "epochs": 5},
}
SHIFT = 2.0  # displacement of the failure classes (source-only ~0.86-0.90 and partner-only ~0.87, as in the notes)
PARTNER_SCALE = 5.0  # the ViL stand-in's logits x5: overconfident, so that confidence gating is misled
METHODS = (
    "source-only",
    "partner-only",
    "self-training",
    "teacher->student",
    "naive exchange",
    "confidence gating",
    "SafeCut",
)
_KEYS = {
    "source-only": "source_only",
    "partner-only": "partner_only",
    "self-training": "self_training",
    "teacher->student": "teacher_student",
    "naive exchange": "naive",
    "confidence gating": "confidence",
    "SafeCut": "safecut",
}


def _figures(runs: list[dict[str, Any]]) -> dict[str, Any]:
    from matplotlib.figure import Figure

    bars = Figure(figsize=(7.5, 3.4), layout="constrained")
    ax = bars.subplots()
    accs = np.array([[r["acc"][m] for m in METHODS] for r in runs])
    colors = ["tab:gray"] * 2 + ["tab:blue"] * 4 + ["tab:red"]
    ax.bar(range(len(METHODS)), accs.mean(0), yerr=accs.std(0) if len(runs) > 1 else None, color=colors)
    ax.set_xticks(range(len(METHODS)), METHODS, rotation=25, ha="right", fontsize=8)
    lo = float(accs.min()) - 0.03
    ax.set_ylim(max(0.0, lo), 1.0)
    ax.set_ylabel("target-model accuracy (target domain)")
    ax.set_title(f"complementary failures, overconfident partner (mean over {len(runs)} seeds)", fontsize=9)
    ax.grid(axis="y", alpha=0.3)

    curves = Figure(figsize=(7.5, 3.2), layout="constrained")
    axes = curves.subplots(1, 2)
    for name, color in zip(METHODS[2:], ("tab:green", "tab:purple", "tab:orange", "tab:blue", "tab:red")):
        for ax2, key in zip(axes, ("acc_t", "acc_v")):
            ys = np.mean([[h[key] for h in r["history"][name]] for r in runs], axis=0)
            ax2.plot(range(len(ys)), ys, "o-", label=name, color=color, ms=3)
    for ax2, title in zip(axes, ("target model", "partner (ViL stand-in)")):
        ax2.set_xlabel("round")
        ax2.set_ylabel("accuracy")
        ax2.set_title(title, fontsize=9)
        ax2.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    return {"accuracy": bars, "rounds": curves}


@register(
    "safecut",
    claim=(
        "Gating cross-model supervision by the relative cut statistic of the two models' pseudo-labels gives a "
        "net-positive mutual correction that beats source-only, naive mutual exchange and confidence-gated "
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
            "SafeCut's target accuracy >= source-only + 2 points (mean over seeds)",
        ),
        Threshold(
            "beats_naive",
            "gain_vs_naive_pts",
            ">=",
            2.0,
            "SafeCut's target accuracy >= naive mutual exchange + 2 points",
        ),
        Threshold(
            "beats_confidence",
            "gain_vs_confidence_pts",
            ">=",
            2.0,
            "SafeCut's target accuracy >= confidence-gated exchange + 2 points",
        ),
    ),
    reproduced="beats_source and beats_naive and beats_confidence",
    partial="beats_source and beats_naive",
    key_metric="gain_vs_confidence_pts",
)
def run(mode: str, seed: int) -> Outcome:
    """The complementary-failure setup, trainable target features, an overconfident partner, several seeds."""
    from geode.ensembles.safecut.experiment import run_schemes

    size = _SIZES[mode]
    seeds = [int(s) for s in np.random.SeedSequence(seed).generate_state(N_SEEDS[mode]) % (2**31)]
    runs = [run_schemes(s, shift=SHIFT, partner_scale=PARTNER_SCALE, **size) for s in seeds]

    acc = {m: float(np.mean([r["acc"][m] for r in runs])) for m in METHODS}
    metrics: dict[str, float] = {f"acc_{_KEYS[m]}": v for m, v in acc.items()}
    for m in METHODS[2:]:
        metrics[f"partner_acc_{_KEYS[m]}"] = float(np.mean([r["acc_partner"][m] for r in runs]))
    for m in (
        "source-only",
        "partner-only",
        "self-training",
        "teacher->student",
        "naive exchange",
        "confidence gating",
    ):
        metrics[f"gain_vs_{_KEYS[m]}_pts"] = 100.0 * (acc["SafeCut"] - acc[m])
    for key in runs[0]["diag"]:
        metrics[key] = float(np.mean([r["diag"][key] for r in runs]))
    for m in ("confidence gating", "SafeCut", "naive exchange"):
        for side in ("t", "v"):
            metrics[f"net_correction_round0_{side}_{_KEYS[m]}"] = float(
                np.mean([r["history"][m][0][f"net_correction_{side}"] for r in runs])
            )
    metrics["n_seeds"] = float(len(runs))

    table: list[dict[str, Any]] = []
    for m in METHODS:
        vals = np.array([r["acc"][m] for r in runs])
        row: dict[str, Any] = {
            "method": m,
            "target acc (mean)": round(float(vals.mean()), 4),
            "target acc (std)": round(float(vals.std()), 4),
        }
        if m in METHODS[2:]:
            row["partner acc (mean)"] = round(float(np.mean([r["acc_partner"][m] for r in runs])), 4)
        row["per seed"] = " ".join(f"{v:.3f}" for v in vals)
        table.append(row)

    summary = (
        f"target acc over {len(runs)} seeds: SafeCut {acc['SafeCut']:.3f} vs source-only {acc['source-only']:.3f}, "
        f"naive {acc['naive exchange']:.3f}, confidence {acc['confidence gating']:.3f} (gains "
        f"{metrics['gain_vs_source_only_pts']:+.1f} / {metrics['gain_vs_naive_pts']:+.1f} / "
        f"{metrics['gain_vs_confidence_pts']:+.1f} pts)"
    )
    notes = [
        "10-class Gaussian mixture in d=16; the target model (MLP, trainable features) is trained on a source "
        f"where classes 0-4 are displaced by {SHIFT}, the partner (frozen random ReLU encoder + linear head, a ViL "
        f"stand-in) where classes 5-9 are; the partner's logits are scaled x{PARTNER_SCALE:g} (overconfident). Source "
        "training uses label smoothing 0.1.",
        f"{_SIZES[mode]['n_target']} unlabelled target samples; {_SIZES[mode]['rounds']} rounds x "
        f"{_SIZES[mode]['epochs']} epochs of Adam (lr 1e-3) on gated soft targets plus SHOT's information "
        "maximisation (weight 1) on the target model, the same for every scheme; cut statistic with k=20 on each "
        "model's own representation, gate temperature tau=1.",
        "Gains are in accuracy points (mean over seeds). The partial rule reads the issue's 'beats source-only and "
        "naive exchange' with the same >= 2-point margin.",
        "auc_z_* / auc_conf_*: how well the cut statistic / (negative) confidence ranks each model's wrong "
        "pseudo-labels before adaptation; z_picks_right / conf_picks_right: on disagreements, how often the more "
        "reliable model by that score is the right one.",
    ]
    return Outcome(metrics=metrics, table=table, figures=_figures(runs), summary=summary, notes=notes)
