"""Claim check of MSA: extrinsic measures can miss intrinsic-geometry differences; MSA separates rich from lazy."""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(n_per_regime=2, width=64, steps=60, n_train=150, n_eval=80, prop_points=80, prop_width=32),
    "quick": dict(n_per_regime=5, width=512, steps=1000, n_train=500, n_eval=400, prop_points=400, prop_width=128),
    "full": dict(n_per_regime=10, width=1024, steps=3000, n_train=2000, n_eval=1000, prop_points=1000, prop_width=256),
}

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
            "ratio_msa_over_cka",
            ">",
            1.0,
            "MSA's between/within-regime distance ratio exceeds linear CKA's (1 - CKA)",
        ),
        Threshold(
            "msa_beats_rsa",
            "ratio_msa_over_rsa",
            ">",
            1.0,
            "MSA's between/within-regime distance ratio exceeds RSA's (1 - Spearman)",
        ),
        Threshold("knn_90", "knn_accuracy_msa", ">=", 0.9, "1-NN regime classification from MSA distances >= 90 %"),
        Threshold("warp_cka_high", "warp_linear_cka", ">", 0.9, "the one-sided warp keeps linear CKA > 0.9"),
        Threshold("warp_msa_moves", "warp_msa_dissimilarity", ">=", 0.5, "the warp moves MSA: 1 - exp(-d_MSA) >= 0.5"),
        Threshold(
            "invariant",
            "invariance_max_msa",
            "<=",
            0.01,
            "MSA <= 0.01 under rotation, scale, and change under a shared reparametrisation",
        ),
    ),
    reproduced="msa_beats_cka and msa_beats_rsa and knn_90",
    partial="warp_cka_high and warp_msa_moves and invariant",
    key_metric="ratio_msa",
)
def run(mode: str, seed: int) -> Outcome:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from geode.analysis.msa.experiment import (
        between_within_ratio,
        nearest_neighbour_accuracy,
        property_checks,
        rich_lazy_study,
    )

    p = _MODES[mode]

    props = property_checks(seed, n_points=p["prop_points"], width=p["prop_width"])
    study = rich_lazy_study(
        seed,
        n_per_regime=p["n_per_regime"],
        width=p["width"],
        steps=p["steps"],
        n_train=p["n_train"],
        n_eval=p["n_eval"],
    )
    labels = study["labels"]
    ratios = {m: between_within_ratio(study["distances"][m], labels) for m in _MEASURES}
    knn = {m: nearest_neighbour_accuracy(study["distances"][m], labels) for m in _MEASURES}
    inv = max(props["msa_rotation"], props["msa_scale"], props["msa_reparam_change"])
    mv = np.asarray(study["weight_movement"])
    mse = np.asarray(study["train_mse"])
    lab = np.asarray(labels)

    metrics: dict[str, float] = {
        "ratio_msa_over_cka": ratios["msa"] / ratios["cka"],
        "ratio_msa_over_rsa": ratios["msa"] / ratios["rsa"],
        "knn_accuracy_msa": knn["msa"],
        "warp_linear_cka": props["cka_warp"],
        "warp_msa_dissimilarity": 1.0 - float(np.exp(-props["msa_warp"])),
        "invariance_max_msa": inv,
        "warp_msa_distance": props["msa_warp"],
        "warp_rsa": props["rsa_warp"],
        "warp_procrustes_angle": props["procrustes_warp"],
        "warp_msa_from_samples": props["msa_samples_warp"],
        "msa_rotation": props["msa_rotation"],
        "msa_scale": props["msa_scale"],
        "msa_reparam_change": props["msa_reparam_change"],
        "msa_two_random_nets": props["msa_two_random_nets"],
        "msa_samples_rotation": props["msa_samples_rotation"],
        "rich_weight_movement": float(mv[lab == 0].mean()),
        "lazy_weight_movement": float(mv[lab == 1].mean()),
        "rich_train_mse": float(mse[lab == 0].mean()),
        "lazy_train_mse": float(mse[lab == 1].mean()),
    }
    for m in _MEASURES:
        metrics[f"ratio_{m}"] = ratios[m]
        metrics[f"knn_accuracy_{m}"] = knn[m]

    table = [
        {
            "measure": m,
            "between_within_ratio": round(ratios[m], 4),
            "knn_accuracy": round(knn[m], 3),
            "mean_within_rich": round(float(_block(study["distances"][m], lab, 0, 0)), 5),
            "mean_within_lazy": round(float(_block(study["distances"][m], lab, 1, 1)), 5),
            "mean_between": round(float(_block(study["distances"][m], lab, 0, 1)), 5),
        }
        for m in _MEASURES
    ]
    table += [
        {"measure": f"property test: {k}", "value": round(float(props[k]), 8)}
        for k in (
            "msa_rotation",
            "msa_scale",
            "msa_reparam_change",
            "msa_warp",
            "cka_warp",
            "rsa_warp",
            "procrustes_warp",
            "msa_samples_warp",
        )
    ]

    names = {
        "msa": "MSA (pullback)",
        "msa_samples": "MSA (samples)",
        "cka": "1 - linear CKA",
        "rsa": "1 - RSA",
        "procrustes": "Procrustes angle",
    }
    fig1, axes = plt.subplots(1, len(_MEASURES), figsize=(3.0 * len(_MEASURES), 3.0))
    for ax, m in zip(axes, _MEASURES):
        im = ax.imshow(study["distances"][m], cmap="viridis")
        ax.set_title(f"{names[m]}\nratio {ratios[m]:.2f}, 1-NN {knn[m]:.0%}", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
        fig1.colorbar(im, ax=ax, fraction=0.046)
    fig1.suptitle(f"rich (first {int((lab == 0).sum())}) vs lazy networks: pairwise distances", fontsize=9)
    fig1.tight_layout()

    fig2, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    tests = ["rotation", "scale", "warp"]
    msa_dis = [1 - np.exp(-props[f"msa_{t}"]) for t in tests]
    cka_dis = [1 - props[f"cka_{t}"] for t in tests]
    xs = np.arange(len(tests))
    axes[0].bar(xs - 0.2, msa_dis, 0.4, label="MSA: 1 - exp(-d)")
    axes[0].bar(xs + 0.2, cka_dis, 0.4, label="1 - linear CKA")
    axes[0].set_xticks(xs, tests)
    axes[0].set_ylabel("dissimilarity")
    axes[0].legend(fontsize=8)
    axes[0].set_title("property tests on a random MLP")
    zz = props["z"]
    sc = axes[1].scatter(zz[:, 0], zz[:, 1], c=props["msa_warp_pointwise"], s=8, cmap="magma")
    fig2.colorbar(sc, ax=axes[1])
    axes[1].set_title("per-point MSA discrepancy under z + 0.3 sin 3z", fontsize=9)
    axes[1].set_xlabel("z1")
    axes[1].set_ylabel("z2")
    fig2.tight_layout()

    verdict_bits = (
        f"between/within ratio MSA {ratios['msa']:.2f} vs CKA {ratios['cka']:.2f}, RSA {ratios['rsa']:.2f}, "
        f"Procrustes {ratios['procrustes']:.2f}; 1-NN MSA {knn['msa']:.0%}"
    )
    summary = (
        f"{mode}: rich vs lazy ({p['n_per_regime']}+{p['n_per_regime']} nets): {verdict_bits}; warp keeps CKA "
        f"{props['cka_warp']:.3f} while MSA d = {props['msa_warp']:.2f}; invariance error {inv:.1e}"
    )
    notes = [
        f"networks: 1-hidden-layer tanh MLPs of width {p['width']} on a 2-D manifold in R^20, f = alpha (g - g0), "
        f"alpha = 0.1 (rich) / 100 (lazy), full-batch Adam lr 1e-3, {p['steps']} steps, {p['n_train']} training "
        f"points; representations are the hidden layers at {p['n_eval']} shared evaluation points.",
        f"regimes: mean relative first-layer movement rich {metrics['rich_weight_movement']:.3f}, lazy "
        f"{metrics['lazy_weight_movement']:.4f}; training MSE rich {metrics['rich_train_mse']:.2e}, lazy "
        f"{metrics['lazy_train_mse']:.2e}.",
        "distances: MSA from exact pullback metrics (relative ridge 1e-6, global geometric-mean normalisation, "
        "affine-invariant); baselines as 1 - linear CKA, 1 - Spearman(RDM) with Euclidean RDMs, Procrustes angle.",
        "the warp test's 'MSA moves' bound (1 - exp(-d) >= 0.5) and the invariance bound (<= 0.01) were fixed "
        "by us before running, the issue giving only the qualitative test.",
    ]
    return Outcome(
        metrics=metrics,
        table=table,
        figures={"rich_lazy_distances": fig1, "property_tests": fig2},
        summary=summary,
        notes=notes,
    )


def _block(dist: np.ndarray, lab: np.ndarray, a: int, b: int) -> float:
    sel = dist[np.ix_(lab == a, lab == b)]
    if a == b:
        k = sel.shape[0]
        return float(sel.sum() / max(k * (k - 1), 1))
    return float(sel.mean())
