"""Claim check of GAE: shift rotates the active subspace; the gap predicts degradation; GAE recovers faithfulness."""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        thetas=(10.0, 30.0, 60.0),
        n_id=2000,
        n_ood=500,
        n_test=500,
        steps=100,
        finetune_steps=60,
        relu=False,
        d_sae=128,
        batch_size=128,
    ),
    "quick": dict(
        thetas=(10.0, 30.0, 60.0), n_id=20000, n_ood=2000, n_test=4000, steps=2000, finetune_steps=1000, relu=False
    ),
    "full": dict(
        thetas=(5.0, 10.0, 20.0, 30.0, 45.0, 60.0, 75.0, 85.0),
        n_id=100000,
        n_ood=2000,
        n_test=10000,
        steps=20000,
        finetune_steps=5000,
        relu=True,
    ),
}


def _spearman(a: np.ndarray, b: np.ndarray) -> tuple[float, bool]:
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0, False
    from scipy.stats import spearmanr

    return float(spearmanr(a, b)[0]), True


def _summarise(study: dict[str, Any], prefix: str = "") -> tuple[dict[str, float], dict[str, Any]]:
    rows = study["rows"]
    thetas = [p["theta_deg"] for p in study["per_theta"]]

    def get(method: str, theta: float, key: str = "fvu") -> float:
        return next(r[key] for r in rows if r["method"] == method and r["theta_deg"] == theta)

    gaps = np.array([p["gap"] for p in study["per_theta"]])
    degr = np.array([get("unadapted", t, "excess_fvu") for t in thetas])
    rho, rho_ok = _spearman(gaps, degr)
    cuts = {t: 1.0 - get("GAE", t, "excess_fvu") / max(get("unadapted", t, "excess_fvu"), 1e-12) for t in thetas}
    ratio_ft = {t: get("GAE", t) / max(get("fine-tune (Adam)", t), 1e-12) for t in thetas}
    m = {
        f"{prefix}gap_rank_corr": rho,
        f"{prefix}gap_rank_corr_defined": float(rho_ok),
        f"{prefix}gae_excess_cut_min_30_60": min(cuts[t] for t in (30.0, 60.0)),
        f"{prefix}gae_over_finetune_fvu_max": max(ratio_ft.values()),
        f"{prefix}fvu_id": study["fvu_id"],
    }
    for t in thetas:
        tag = f"{int(t)}deg"
        m[f"{prefix}gap_{tag}"] = float(gaps[thetas.index(t)])
        m[f"{prefix}gae_excess_cut_{tag}"] = cuts[t]
        m[f"{prefix}gae_over_finetune_{tag}"] = ratio_ft[t]
        for key, method in (
            ("unadapted", "unadapted"),
            ("gae", "GAE"),
            ("finetune", "fine-tune (Adam)"),
            ("retrain", "retrain on OOD sample"),
            ("meanshift", "mean shift"),
            ("refit", "decoder refit (no constraint)"),
        ):
            m[f"{prefix}fvu_{key}_{tag}"] = get(method, t)
    p = study["per_theta"]
    m[f"{prefix}identity_cosine_min"] = min(q["identity_cosine"] for q in p)
    m[f"{prefix}gap_after_max"] = max(q["gap_after"] for q in p)
    return m, {"cuts": cuts, "ratio_ft": ratio_ft, "gaps": gaps, "degr": degr, "thetas": thetas, "rho_ok": rho_ok}


@register(
    "gae",
    claim=(
        "Distribution shift rotates the subspace a model actively uses; the faithfulness gap (distance between the "
        "ID dictionary's subspace and the OOD-active subspace) predicts the explainer's degradation, and GAE, a "
        "closed-form realignment from unlabeled OOD activations, recovers faithfulness, matching training-based "
        "baselines."
    ),
    paper_figure=(
        "GAE matches or surpasses all training-based baselines in causal faithfulness across models (GPT-2, Gemma "
        "SAEs/transcoders) and OOD settings; excess loss bounded quadratically by the second-moment shift"
    ),
    baselines=("unadapted ID SAE", "mean shift", "decoder refit", "fine-tuning (Adam)", "retraining on OOD"),
    thresholds=(
        Threshold(
            "gap_predicts",
            "gap_rank_corr",
            ">=",
            0.8,
            "Spearman(faithfulness gap, FVU degradation) over the angles >= 0.8",
        ),
        Threshold(
            "gae_cuts",
            "gae_excess_cut_min_30_60",
            ">=",
            0.5,
            "GAE removes >= 50 % of the unadapted dictionary's excess FVU at 30 and 60 degrees",
        ),
        Threshold(
            "gae_matches",
            "gae_over_finetune_fvu_max",
            "<=",
            1.2,
            "GAE's OOD FVU within 20 % of the fine-tuned dictionary's, at every angle",
        ),
    ),
    reproduced="gap_predicts and gae_cuts and gae_matches",
    partial="gap_predicts and gae_cuts",
    key_metric="gae_excess_cut_min_30_60",
)
def run(mode: str, seed: int) -> Outcome:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from geode.analysis.gae.experiment import run_shift_study

    p = _MODES[mode]
    kw = dict(
        thetas=p["thetas"],
        n_id=p["n_id"],
        n_ood=p["n_ood"],
        n_test=p["n_test"],
        steps=p["steps"],
        finetune_steps=p["finetune_steps"],
        d_sae=p.get("d_sae", 256),
        batch_size=p.get("batch_size", 256),
    )
    study = run_shift_study(seed, activation="topk", k=8, **kw)
    metrics, aux = _summarise(study)
    rows = study["rows"]
    if p["relu"]:
        relu_study = run_shift_study(seed, activation="relu", l1_coeff=0.05, **kw)
        relu_metrics, _ = _summarise(relu_study, prefix="relu_")
        metrics.update(relu_metrics)
        rows = rows + [{**r, "method": f"ReLU SAE: {r['method']}"} for r in relu_study["rows"]]

    table = [{k: (round(v, 5) if isinstance(v, float) else v) for k, v in r.items()} for r in rows]
    table += [
        {
            "theta_deg": q["theta_deg"],
            "method": "diagnostics",
            **{k: (round(v, 5) if isinstance(v, float) else v) for k, v in q.items() if k != "theta_deg"},
        }
        for q in study["per_theta"]
    ]

    thetas = aux["thetas"]
    fig1, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for method in (
        "unadapted",
        "mean shift",
        "decoder refit (no constraint)",
        "GAE rotation only",
        "GAE",
        "fine-tune (Adam)",
        "retrain on OOD sample",
    ):
        ys = [next(r["fvu"] for r in study["rows"] if r["method"] == method and r["theta_deg"] == t) for t in thetas]
        axes[0].plot(thetas, ys, "o-", label=method, lw=2.5 if method == "GAE" else 1.2)
    axes[0].axhline(study["fvu_id"], color="k", ls="--", lw=0.8, label="ID dictionary on ID data")
    axes[0].set_xlabel("rotation of the active subspace θ (degrees)")
    axes[0].set_ylabel("OOD FVU (held out)")
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=7)
    axes[1].plot(aux["gaps"], aux["degr"], "o-")
    for g, dg, t in zip(aux["gaps"], aux["degr"], thetas):
        axes[1].annotate(f"{int(t)}°", (g, dg), fontsize=8)
    axes[1].set_xlabel("faithfulness gap Δ (ID dictionary vs OOD-active subspace)")
    axes[1].set_ylabel("FVU degradation of the unadapted dictionary")
    axes[1].set_title(f"Spearman ρ = {metrics['gap_rank_corr']:.2f}")
    fig1.tight_layout()

    cut_txt = ", ".join(f"{int(t)}°: {aux['cuts'][t]:.0%}" for t in thetas)
    summary = (
        f"{mode}: gap-vs-degradation Spearman {metrics['gap_rank_corr']:.2f}; GAE removes {cut_txt} of the "
        f"unadapted excess FVU; GAE/fine-tune FVU ratio max {metrics['gae_over_finetune_fvu_max']:.2f} "
        f"(ID FVU {study['fvu_id']:.3f}; at 60°: unadapted {metrics['fvu_unadapted_60deg']:.3f}, "
        f"GAE {metrics['fvu_gae_60deg']:.3f}, fine-tune {metrics['fvu_finetune_60deg']:.3f})"
    )
    notes = [
        f"synthetic activations: d = 64, 256 unit features in a 24-dim subspace, each active w.p. 5/256 with "
        f"magnitude U[0.5, 1.5], noise 0.02; shift = direct rotation of the subspace by θ into unused directions and "
        f"codes x1.25; TopK SAE (k = 8, {kw['d_sae']} features) on {p['n_id']} ID samples, {p['steps']} Adam steps.",
        f"GAE and all adaptive baselines see the same {p['n_ood']} unlabeled OOD samples (and GAE {p['n_ood']} ID "
        f"samples for feature usage); fine-tuning runs {p['finetune_steps']} Adam steps from the ID dictionary; "
        f"FVU on {p['n_test']} held-out OOD samples; excess FVU is over the ID dictionary's ID test FVU.",
        "the planted shift is the rotation model GAE assumes (a direct rotation plus a scale change), so the "
        "rotation step can be exact here; a real model's shift need not be.",
        f"Spearman ρ over {len(thetas)} angles only (with 3 angles it can take the values ±1, ±0.5).",
    ]
    if not aux["rho_ok"]:
        notes.append("the gap or the degradation is constant over the angles: Spearman ρ is undefined, reported as 0.")
    return Outcome(metrics=metrics, table=table, figures={"fvu_vs_angle": fig1}, summary=summary, notes=notes)
