"""Claim check of MSA: extrinsic measures can miss intrinsic-geometry differences; MSA separates rich from lazy.

Revision 2 (protocol v2, issue 21). What changed and why:

- *No tuning step.* The compared measures (MSA, CKA, RSA) have no hyper-parameter the claim could tune
  on validation data; MSA's regulariser keeps the component's default, and the networks they compare are
  trained identically for every measure, so protocol section 1 has nothing to equalise.

- *Separation on a harder task.* Revision 1 separated two extreme regimes (alpha = 0.1 vs 100), which every
  measure classified perfectly (1-NN 100 %), so the task could not show an advantage. Now 2 networks at each
  of alpha = 0.1, 0.3, 1, 3, 10, 100 and, per measure, the Mantel (Spearman) correlation between the
  pairwise distances and |log alpha_i - log alpha_j|: how well the distance orders the continuum.
  ``msa_beats_cka`` / ``msa_beats_rsa`` compare these correlations (control: a random distance matrix).
- *Sensitivity against each measure's noise floor.* Revision 1's "CKA stays above 0.9 under the warp" had
  no scale (two unrelated random networks have CKA 0.98). Each measure's warp distance is now divided by
  its distance between unrelated random networks (:func:`~geode.analysis.msa.experiment.warp_sensitivity`):
  ``warp_msa_moves`` asks MSA's ratio to be >= 1, ``msa_more_sensitive`` MSA's ratio to be >= 2x the largest
  extrinsic one (the audit's "relatively more sensitive" reading of "extrinsic measures can miss"); the
  control is an isometry (rotation, scale, shift) in place of the warp.
- *The paper's RNN/SSM comparison at CPU scale* (:func:`~geode.analysis.msa.experiment.rnn_ssm_study`):
  reported (between/within-architecture ratio and 1-NN per measure), not thresholded: added after the
  thresholds, and the paper gives no number.
- Floors: the regimes are realised (first-layer movement at alpha = 0.1 is >= 10x that at alpha = 100), and
  the memory networks learn the task (recall MSE <= 0.05, variance of the stimulus 1/3). 3 seeds.

Revision 2's verdict (quick, 3 seeds, every seed alike): **partial**. Floors hold (first-layer movement
at alpha = 0.1 is 173-186x that at alpha = 100; recall MSE <= 0.006). On the continuum MSA orders the
networks no better than the extrinsic measures: Mantel 0.51 / 0.60 / 0.54 against CKA 0.51 / 0.64 / 0.57,
RSA 0.56 / 0.68 / 0.59, Procrustes 0.59 / 0.65 / 0.63 (random control 0.15 / -0.21 / 0.19), so both
"beats" thresholds fail. Against each measure's noise floor the warp moves MSA 5.6-6.3x its floor and the
extrinsic measures 1.4-2.1x (so they do notice it), a ratio of 2.7-3.1 (>= 2: passes; isometry control 0).
The invariance threshold is an identity of the implementation (errors ~4e-7) and has no control; the
report flags it. RNN vs SSM (reported): between/within ratio MSA 1.63-2.00 with 1-NN 83-100 %, against
CKA 0.93-1.35 (17-50 %), RSA 1.08-1.41 (50-67 %), Procrustes 1.58-1.65 (83-100 %).

Revision 1's verdict (quick, 1 seed): **partial**: between/within ratios MSA 4.13 vs CKA 6.67 and RSA 8.32,
1-NN 100 % for every measure; the warp kept CKA at 0.98 while MSA moved (1 - exp(-d) >= 0.5); invariance
to 1e-12. Revision 1's metrics on the extreme regimes are still reported (``ratio_msa_over_cka_extremes``).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **partial** (the
v2 harness read partial on the same runs). No idea ablation or learned-arm reference is declared yet (protocol v3;
the rework issues 45-50).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        n_per_regime=2, width=64, steps=60, n_train=150, n_eval=80, prop_points=80, prop_width=32, rnn_steps=30
    ),
    "quick": dict(
        n_per_regime=2, width=512, steps=1000, n_train=500, n_eval=400, prop_points=400, prop_width=128, rnn_steps=300
    ),
    "full": dict(
        n_per_regime=5,
        width=1024,
        steps=3000,
        n_train=2000,
        n_eval=1000,
        prop_points=1000,
        prop_width=256,
        rnn_steps=2000,
    ),
}
ALPHAS = (0.1, 0.3, 1.0, 3.0, 10.0, 100.0)

_MEASURES = ("msa", "msa_samples", "cka", "rsa", "procrustes")


@register(
    "msa",
    claim=(
        "Extrinsic similarity measures (CKA, RSA, CCA) can miss differences in intrinsic geometry that metric "
        "similarity analysis (MSA) detects, and MSA disentangles networks trained in the rich and lazy regimes."
    ),
    paper_figure=(
        "MSA is invariant to rotation, scale and reparametrisation and separates rich from lazy networks "
        "(deep nets, RNN/SSM and diffusion models); the abstract gives no number"
    ),
    baselines=("linear CKA", "RSA (Spearman of RDMs)", "Procrustes angular distance"),
    thresholds=(
        Threshold(
            "msa_beats_cka",
            "mantel_msa_minus_cka",
            ">",
            0.0,
            "MSA orders the rich-lazy continuum (Mantel vs |log alpha| gaps) better than 1 - CKA (2 of 3 seeds)",
            agg="2 of 3",
            control="mantel_random_minus_cka",
            arms=("MSA", "CKA"),
            requires="regimes_realised",
        ),
        Threshold(
            "msa_beats_rsa",
            "mantel_msa_minus_rsa",
            ">",
            0.0,
            "MSA orders the rich-lazy continuum better than 1 - RSA (2 of 3 seeds)",
            agg="2 of 3",
            control="mantel_random_minus_rsa",
            arms=("MSA", "RSA"),
            requires="regimes_realised",
        ),
        Threshold(
            "msa_more_sensitive",
            "warp_rel_msa_over_extrinsic",
            ">=",
            2.0,
            "relative to each measure's noise floor, MSA responds to the warp >= 2x more than CKA, RSA and "
            "Procrustes (2 of 3 seeds)",
            agg="2 of 3",
            control="isometry_rel_msa_over_extrinsic",
            arms=("MSA", "CKA", "RSA", "Procrustes"),
            requires=(),
        ),
        Threshold(
            "warp_msa_moves",
            "warp_rel_msa",
            ">=",
            1.0,
            "the warp moves MSA at least as far as two unrelated random networks are apart (2 of 3 seeds)",
            agg="2 of 3",
            control="isometry_rel_msa",
            arms="MSA",
            requires=(),
        ),
        Threshold(
            "invariant",
            "invariance_max_msa",
            "<=",
            0.01,
            "MSA <= 0.01 under rotation, scale, and change under a shared reparametrisation (every seed)",
            agg="all",
            arms="MSA",
            requires=(),
        ),
    ),
    floors=(
        Threshold(
            "regimes_realised",
            "movement_rich_over_lazy",
            ">=",
            10.0,
            "floor: first-layer movement at alpha = 0.1 is >= 10x that at alpha = 100 (every seed)",
            agg="all",
        ),
        Threshold(
            "memory_learned",
            "recall_mse_max",
            "<=",
            0.05,
            "floor: every RNN and SSM recalls the stimulus with MSE <= 0.05 (every seed)",
            agg="all",
        ),
    ),
    reproduced="msa_beats_cka and msa_beats_rsa and msa_more_sensitive",
    partial="msa_more_sensitive and warp_msa_moves and invariant",
    key_metric="mantel_msa_minus_cka",
    revision=2,
    method="MSA",
    untuned={
        "MSA": "not tuned: its ridge is fixed at 1e-6 (the default); the compared measures have no knob either",
        "CKA": "no hyper-parameter: 1 - linear CKA, closed form",
        "RSA": "no hyper-parameter: 1 - Spearman of Euclidean RDMs, closed form",
        "Procrustes": "no hyper-parameter: Procrustes angular distance, closed form",
    },
)
def run(mode: str, seed: int) -> Outcome:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from geode.analysis.msa.experiment import (
        between_within_ratio,
        mantel,
        nearest_neighbour_accuracy,
        property_checks,
        rich_lazy_study,
        rnn_ssm_study,
        warp_sensitivity,
    )

    p = _MODES[mode]
    props = property_checks(seed, n_points=p["prop_points"], width=p["prop_width"])
    sens = warp_sensitivity(seed, n_points=p["prop_points"], width=p["prop_width"])
    study = rich_lazy_study(
        seed,
        n_per_regime=p["n_per_regime"],
        width=p["width"],
        steps=p["steps"],
        n_train=p["n_train"],
        n_eval=p["n_eval"],
        alphas=ALPHAS,
    )
    mem = rnn_ssm_study(seed, steps=p["rnn_steps"])
    lab = np.asarray(study["labels"])
    log_a = np.log(np.asarray(study["alphas"]))
    gap = np.abs(log_a[:, None] - log_a[None, :])
    rng = np.random.default_rng(seed + 4242)
    rnd = rng.random(gap.shape)
    rnd = rnd + rnd.T
    mant = {m: mantel(d, gap) for m, d in study["distances"].items()}
    mant["random"] = mantel(rnd, gap)
    knn = {m: nearest_neighbour_accuracy(d, lab) for m, d in study["distances"].items()}
    ext = np.isin(lab, (0, len(ALPHAS) - 1))
    ext_lab = lab[ext]
    ratios_ext = {m: between_within_ratio(d[np.ix_(ext, ext)], ext_lab) for m, d in study["distances"].items()}
    mem_ratio = {m: between_within_ratio(d, mem["labels"]) for m, d in mem["distances"].items()}
    mem_knn = {m: nearest_neighbour_accuracy(d, mem["labels"]) for m, d in mem["distances"].items()}
    inv = max(props["msa_rotation"], props["msa_scale"], props["msa_reparam_change"])
    mv = np.asarray(study["weight_movement"])
    extr = max(sens["cka_warp_rel"], sens["rsa_warp_rel"], sens["procrustes_warp_rel"])

    metrics: dict[str, float] = {
        "mantel_msa_minus_cka": mant["msa"] - mant["cka"],
        "mantel_msa_minus_rsa": mant["msa"] - mant["rsa"],
        "mantel_random_minus_cka": mant["random"] - mant["cka"],
        "mantel_random_minus_rsa": mant["random"] - mant["rsa"],
        "warp_rel_msa_over_extrinsic": sens["msa_warp_rel"] / extr,
        "isometry_rel_msa_over_extrinsic": sens["msa_isometry_rel"] / extr,
        "warp_rel_msa": sens["msa_warp_rel"],
        "isometry_rel_msa": sens["msa_isometry_rel"],
        "invariance_max_msa": inv,
        "movement_rich_over_lazy": float(mv[lab == 0].mean() / max(mv[lab == len(ALPHAS) - 1].mean(), 1e-12)),
        "recall_mse_max": float(max(mem["recall_mse"])),
        "memory_ridge_dominated_fraction": mem["ridge_dominated_fraction"],
        "ratio_msa_over_cka_extremes": ratios_ext["msa"] / ratios_ext["cka"],
        "ratio_msa_over_rsa_extremes": ratios_ext["msa"] / ratios_ext["rsa"],
        "warp_linear_cka": props["cka_warp"],
        "warp_msa_dissimilarity": 1.0 - float(np.exp(-props["msa_warp"])),
        "msa_rotation": props["msa_rotation"],
        "msa_scale": props["msa_scale"],
        "msa_reparam_change": props["msa_reparam_change"],
        "msa_two_random_nets": props["msa_two_random_nets"],
        "mantel_random": mant["random"],
    }
    for m in study["distances"]:
        metrics[f"mantel_{m}"] = mant[m]
        metrics[f"knn_alpha_{m}"] = knn[m]
        metrics[f"ratio_extremes_{m}"] = ratios_ext[m]
        metrics[f"rnn_ssm_ratio_{m}"] = mem_ratio[m]
        metrics[f"rnn_ssm_knn_{m}"] = mem_knn[m]
    for k, v in sens.items():
        metrics[f"sens_{k}"] = v
    for a in ALPHAS:
        sel = np.isclose(np.asarray(study["alphas"]), a)
        metrics[f"movement_alpha{a:g}"] = float(mv[sel].mean())
        metrics[f"train_mse_alpha{a:g}"] = float(np.asarray(study["train_mse"])[sel].mean())

    names = {
        "msa": "MSA (pullback)",
        "msa_samples": "MSA (samples)",
        "cka": "1 - linear CKA",
        "rsa": "1 - RSA",
        "procrustes": "Procrustes angle",
    }
    table = [
        {
            "measure": names[m],
            "mantel_vs_log_alpha_gap": round(mant[m], 4),
            "knn_alpha_level": round(knn[m], 3),
            "warp / noise floor": round(sens[f"{m}_warp_rel"], 3) if f"{m}_warp_rel" in sens else None,
            "noise floor (unrelated nets)": round(sens[f"{m}_floor"], 5) if f"{m}_floor" in sens else None,
            "ratio_extremes (rev. 1)": round(ratios_ext[m], 3),
            "rnn_vs_ssm_ratio": round(mem_ratio[m], 3),
            "rnn_vs_ssm_knn": round(mem_knn[m], 3),
        }
        for m in study["distances"]
    ]
    table.append({"measure": "random distance (control)", "mantel_vs_log_alpha_gap": round(mant["random"], 4)})

    fig1, axes = plt.subplots(1, len(names), figsize=(3.0 * len(names), 3.0))
    for ax, m in zip(axes, names):
        im = ax.imshow(study["distances"][m], cmap="viridis")
        ax.set_title(f"{names[m]}\nMantel {mant[m]:.2f}, RNN/SSM {mem_ratio[m]:.2f}", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
        fig1.colorbar(im, ax=ax, fraction=0.046)
    fig1.suptitle(f"networks ordered by alpha {ALPHAS} (2 each): pairwise distances", fontsize=9)
    fig1.tight_layout()

    fig2, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    ms = ["msa", "cka", "rsa", "procrustes"]
    axes[0].bar(range(len(ms)), [sens[f"{m}_warp_rel"] for m in ms])
    axes[0].axhline(1.0, color="k", ls="--", lw=0.8, label="noise floor (unrelated networks)")
    axes[0].set_xticks(range(len(ms)), [names[m] for m in ms], fontsize=7)
    axes[0].set_ylabel("warp distance / noise floor")
    axes[0].legend(fontsize=7)
    zz = props["z"]
    sc = axes[1].scatter(zz[:, 0], zz[:, 1], c=props["msa_warp_pointwise"], s=8, cmap="magma")
    fig2.colorbar(sc, ax=axes[1])
    axes[1].set_title("per-point MSA discrepancy under z + 0.3 sin 3z", fontsize=9)
    fig2.tight_layout()

    summary = (
        f"{mode}: Mantel vs |log alpha| gap: MSA {mant['msa']:.2f}, CKA {mant['cka']:.2f}, RSA {mant['rsa']:.2f}, "
        f"Procrustes {mant['procrustes']:.2f} (random {mant['random']:.2f}); warp / noise floor: MSA "
        f"{sens['msa_warp_rel']:.2f}, CKA {sens['cka_warp_rel']:.2f}, RSA {sens['rsa_warp_rel']:.2f}, Procrustes "
        f"{sens['procrustes_warp_rel']:.2f}; RNN vs SSM ratio MSA {mem_ratio['msa']:.2f}, CKA {mem_ratio['cka']:.2f}"
        f"; invariance error {inv:.1e}"
    )
    notes = [
        f"networks: 1-hidden-layer tanh MLPs of width {p['width']} on a 2-D manifold in R^20, f = alpha (g - g0), "
        f"alpha in {ALPHAS}, {p['n_per_regime']} initialisations each, full-batch Adam lr 1e-3, {p['steps']} "
        f"steps, {p['n_train']} training points; representations are the hidden layers at {p['n_eval']} shared "
        "evaluation points.",
        "noise floors: mean distance between 3 unrelated random 2-layer tanh MLPs on the same manifold; warp: "
        "z -> z + 0.3 sin 3z on one side; isometry control: 3.7 Q f + b.",
        f"RNN/SSM: 3 tanh RNNs and 3 diagonal linear SSMs (hidden 64, MLP readout for the SSM) recall z in "
        f"[-1, 1]^2 after 10 noisy steps (noise 0.1), {p['rnn_steps']} Adam steps; recall MSE "
        f"{', '.join(f'{v:.4f}' for v in mem['recall_mse'])}; states compared at 300 stimuli. The SSM's state is "
        "linear in z (a flat metric); the RNN's is not. Reported, not thresholded.",
        "distances: MSA from exact pullback metrics (relative ridge 1e-6, global geometric-mean normalisation, "
        "affine-invariant); baselines as 1 - linear CKA, 1 - Spearman(RDM) with Euclidean RDMs, Procrustes angle.",
    ]
    return Outcome(
        metrics=metrics,
        table=table,
        figures={"alpha_distances": fig1, "warp_sensitivity": fig2},
        summary=summary,
        notes=notes,
    )


def _block(dist: np.ndarray, lab: np.ndarray, a: int, b: int) -> float:
    sel = dist[np.ix_(lab == a, lab == b)]
    if a == b:
        k = sel.shape[0]
        return float(sel.sum() / max(k * (k - 1), 1))
    return float(sel.mean())
