"""Claim check of the GC-KAN paper: robust to data scarcity and label noise on the Feynman equations."""

from __future__ import annotations

from typing import Any

from geode.claims import Outcome, Threshold, register

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        equations=("I.6.20a", "I.12.1"),
        n_trains=(32,),
        noises=(0.0, 0.1),
        n_seeds=1,
        steps=25,
        grids=(3, 5),
        n_test=200,
    ),
    "quick": dict(
        equations=None,
        n_trains=(32, 128),
        noises=(0.0, 0.1),
        n_seeds=3,
        steps=400,
        grids=(3, 5, 10),
        n_test=2000,
    ),
    "full": dict(
        equations="first50",
        n_trains=(16, 32, 64, 128, 256),
        noises=(0.0, 0.01, 0.05, 0.1),
        n_seeds=5,
        steps=3000,
        grids=(3, 5, 10),
        n_test=5000,
    ),
}


@register(
    "gckan",
    claim=(
        "Geometry-constrained KANs (duality-map edges with a learned exponent p per edge) match spline KANs on "
        "clean data but are far more robust under data scarcity and label noise."
    ),
    paper_figure=(
        "50 Feynman equations: beats cross-validated spline KANs in 85/90 data-scarcity settings; noise "
        "degradation 3.7x vs 21.6x for splines"
    ),
    baselines=("B-spline KAN, grid chosen by 2-fold CV", "SiLU MLP at matched parameter count"),
    thresholds=(
        Threshold(
            "wins", "win_fraction_n32", ">=", 0.70, "GC-KAN beats the CV spline KAN in >= 70 % of n=32 settings"
        ),
        Threshold(
            "robust",
            "degradation_ratio",
            "<=",
            0.5,
            "GC-KAN's median noise degradation factor is at most half the spline KAN's",
        ),
    ),
    reproduced="wins and robust",
    partial="wins or robust",
    key_metric="win_fraction_n32",
)
def run(mode: str, seed: int) -> Outcome:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from geode.data import feynman
    from geode.sciml.gckan.experiment import QUICK_EQUATIONS, run_feynman_study, summarize_study

    cfg = dict(_MODES[mode])
    if cfg["equations"] is None:
        cfg["equations"] = QUICK_EQUATIONS
    elif cfg["equations"] == "first50":
        cfg["equations"] = tuple(e.id for e in feynman.equations(n_vars=(1, 2, 3, 4))[:50])
    study = run_feynman_study(**cfg, lr=3e-2, lr_final=1e-4, hidden=4, atoms=4, extrap_fraction=0.1, seed=seed)
    metrics, table = summarize_study(study)
    scarce = min(cfg["n_trains"])

    # figure 1: GC-KAN vs CV spline KAN per setting
    fig1, ax = plt.subplots(figsize=(4.8, 4.2))
    noises = sorted({r["noise"] for r in table})
    for n, marker in zip(sorted({r["n_train"] for r in table}), "os^Dv"):
        for noise, color in zip(noises, ("tab:blue", "tab:orange", "tab:green", "tab:red")):
            sel = [r for r in table if r["n_train"] == n and r["noise"] == noise]
            ax.scatter(
                [r["nrmse spline KAN (CV)"] for r in sel],
                [r["nrmse GC-KAN"] for r in sel],
                marker=marker,
                color=color,
                s=22,
                label=f"n={n}, noise={noise:g}",
            )
    lims = [
        min(min(r["nrmse spline KAN (CV)"], r["nrmse GC-KAN"]) for r in table) * 0.8,
        max(max(r["nrmse spline KAN (CV)"], r["nrmse GC-KAN"]) for r in table) * 1.2,
    ]
    ax.plot(lims, lims, "k--", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("CV spline KAN test NRMSE (median over seeds)")
    ax.set_ylabel("GC-KAN test NRMSE")
    ax.set_title(f"below the diagonal: GC-KAN wins ({metrics['win_fraction_n32']:.0%} at n={scarce})", fontsize=9)
    ax.legend(fontsize=6)
    fig1.tight_layout()

    # figure 2: learned exponents
    fig2, ax = plt.subplots(figsize=(4.8, 3.4))
    hi = noises[-1]
    for noise, color in ((0.0, "tab:blue"), (hi, "tab:orange")):
        p = [e["p"] for e in study.exponents if e["noise"] == noise]
        ax.hist(p, bins=40, alpha=0.6, color=color, label=f"noise {noise:g}")
    ax.axvline(2.0, color="k", lw=0.8, ls="--")
    ax.set_xlabel("learned exponent p per edge (2 = linear)")
    ax.set_ylabel("edges")
    ax.legend(fontsize=8)
    fig2.tight_layout()

    # figure 3: degradation factors
    fig3, ax = plt.subplots(figsize=(4.8, 3.4))
    idx = {(r["model"], r["equation"], r["n_train"], r["noise"], r["seed"]): r["nrmse_test"] for r in study.rows}
    data = []
    names = ("GC-KAN", "spline KAN (CV)", "MLP")
    for m in names:
        data.append(
            [
                v / max(idx[(m, *k[1:3], 0.0, k[4])], 1e-12)
                for k, v in idx.items()
                if k[0] == m and k[3] == hi and hi > 0
            ]
        )
    ax.boxplot(data, showfliers=False)
    ax.set_xticks([1, 2, 3], names, fontsize=8)
    ax.set_yscale("log")
    ax.axhline(1.0, color="k", lw=0.6)
    ax.set_ylabel(f"NRMSE(noise {hi:g}) / NRMSE(clean)")
    fig3.tight_layout()

    summary = (
        f"{mode}: GC-KAN beats the CV spline KAN in {int(metrics['wins_n32'])}/{int(metrics['settings_n32'])} "
        f"n={scarce} settings ({metrics['win_fraction_n32']:.0%}); median noise degradation "
        f"{metrics.get('degradation_gc', 0):.2f}x "
        f"vs {metrics.get('degradation_spline', 0):.2f}x (ratio {metrics.get('degradation_ratio', 0):.2f}); "
        f"median learned p {metrics['exponent_median']:.2f}, {metrics['exponent_frac_below_2']:.0%} of edges below 2"
    )
    notes = [
        f"{len(cfg['equations'])} Feynman equations ({', '.join(cfg['equations'][:8])}"
        f"{', ...' if len(cfg['equations']) > 8 else ''}), n_train in {list(cfg['n_trains'])}, label noise "
        f"{list(cfg['noises'])} x std(y), {cfg['n_seeds']} seeds, {cfg['n_test']} clean test points and "
        f"{cfg['n_test']} extrapolation points (ranges widened by 10 %, outside the training box).",
        f"every model: Adam, full batch, {cfg['steps']} steps, lr 3e-2 cosine-annealed to 1e-4 (chosen from a "
        "training-loss probe on clean data; the notes' 600 steps at a lower rate left all models far from fitted "
        "and the quick budget allows about 400). GC-KAN [d,4,1] with K=4 atoms; spline KAN [d,4,1], cubic, "
        f"G in {list(cfg['grids'])} by 2-fold CV, pykan-style grid updates every 5 steps for the first 50; SiLU MLP "
        "[d,h,h,1] with h matching GC-KAN's parameter count.",
        f"parameter counts (median over equations): GC-KAN {metrics['params_median_gc']:.0f}, spline KAN "
        f"{metrics['params_median_spline']:.0f}, MLP {metrics['params_median_mlp']:.0f}.",
        "a setting is (equation, n_train, noise) with the median NRMSE over seeds; the degradation factor is "
        "NRMSE(noise 0.1)/NRMSE(clean) per (equation, n_train, seed), same training inputs, median over all.",
    ]
    return Outcome(
        metrics={k: float(v) for k, v in metrics.items()},
        table=table,
        figures={"gc_vs_spline": fig1, "learned_exponents": fig2, "noise_degradation": fig3},
        summary=summary,
        notes=notes,
    )
