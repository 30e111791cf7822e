"""Claim check of the GC-KAN paper: parity on clean data, robustness to data scarcity and label noise.

Revision 2 (issue 22, protocol v2). What changed and why:

- *Equal tuning.* Every model (GC-KAN, spline KAN, MLP) is trained over the same grid of learning rates
  {3e-3, 1e-2, 3e-2} x L1 weights {0, 1e-3} (pykan's mean-absolute-activation L1 for the KANs, absolute
  weights for the MLP), selected by :func:`geode.claims.tune` on the 2-fold cross-validation MSE of the
  training sets (geometric mean over settings); the spline KAN's grid G in {1, 2, 3, 5, 10} is then picked
  per setting by the same CV (the paper's "cross-validated spline baseline"). Revision 1 gave the spline
  only G in {3, 5, 10}, and CV picked G = 3 in 80 of 96 fits (audit).
- *The paper's edge.* GC-KAN uses the paper's single-atom edge :math:`a J_p(w x + b) + g \\tanh x + d`,
  :math:`p = 1 + e^\\theta` from 2.5, smoothing 1e-8, gradient clipping at 10 (applied to every model: one
  training recipe), widths [d, 4, 1]. The paper trains 5000 Adam steps; quick mode trains 200 (cosine to
  1e-2 of the initial rate; 300 steps cost about 130 s of CPU per seed, over the quick budget): a budget
  cut we state, not a choice of the paper.
- *Clean parity* (fixed before the run, from the issue): GC-KAN's clean error at the largest n must be
  within 1.2x of the spline's (median over equations) for ``reproduced``; revision 1 computed it (1.77)
  but did not threshold it.
- *Absolute noise-induced error.* The degradation ratio NRMSE(noisy)/NRMSE(clean) falls as the clean error
  rises, so it rewards under-fitting; the absolute NRMSE(noisy) - NRMSE(clean) is thresholded beside it.
- *Controls.* A second initialisation of GC-KAN (the noise floor of every GC-vs-spline statistic: its ratios
  to GC-KAN sit near 1) and least squares on the inputs (an under-fitted model: it must not "win" or reach
  parity). Their ratio statistics against the under-fitted model are reported, and show the bias above.
- *Seeds.* Each harness seed is an independent data draw of the 8 quick equations; the noisy statistics
  must hold in 2 of 3 seeds.

Verdicts: revision 1, seed 0 quick: **partial** (wins 12/16 = 0.75, degradation ratio 0.65); the audit,
with G in {1, 2, 3, 5, 10} and no other change: wins 4/16, ratio 0.73, i.e. **not reproduced**.
Revision 2, quick, seeds 0/1/2: **not reproduced** in every seed, floors met (worst clean NRMSE 0.08-0.10):
win fraction at n=32 0.44 / 0.62 / 0.56 (controls: least squares 0.06-0.12, a second GC-KAN initialisation
0.38-0.56); degradation ratio 0.98 / 0.86 / 0.74 (factors 1.1-1.2 for GC-KAN, 1.3-1.7 for the spline; the
paper's 3.7x vs 21.6x is far from this under-fitted regime); noise-added ratio 1.14 / 0.55 / 0.73; clean
parity 1.75 / 1.33 / 1.76 (GC-KAN worse than the spline on clean n=128 data). The matched MLP beats GC-KAN in
50-56 % and the spline in 56-81 % of n=32 settings. Every model selected lr = 3e-2, the upper edge of its grid
(flagged; equal for all models, and 200 steps favour large rates); the learned exponents sit above 2
(median 2.7, 13-17 % of edges below 2, clean and noisy alike), so the abstract's "smaller p under noise" is
not observed either. CPU time 121-126 s per seed (over the ~90 s quick budget; 8 equations kept).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read not reproduced on the same runs): not tuned by the protocol: GC-KAN, spline KAN (CV). No idea
ablation or learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        equations=("I.6.20a", "I.12.1"),
        n_trains=(32, 64),
        noises=(0.0, 0.1),
        n_seeds=1,
        steps=20,
        grids=(1, 2, 3),
        n_test=200,
        lrs=(1e-2, 3e-2, 1e-1),
        l1s=(0.0, 1e-3),
    ),
    "quick": dict(
        equations=None,
        n_trains=(32, 128),
        noises=(0.0, 0.1),
        n_seeds=1,
        steps=200,
        grids=(1, 2, 3, 5, 10),
        n_test=1000,
        lrs=(3e-3, 1e-2, 3e-2),
        l1s=(0.0, 1e-3),
    ),
    "full": dict(
        equations="first50",
        n_trains=(16, 32, 64, 128, 256),
        noises=(0.0, 0.01, 0.05, 0.1),
        n_seeds=5,
        steps=5000,
        grids=(1, 2, 3, 5, 10),
        n_test=5000,
        lrs=(1e-3, 3e-3, 1e-2, 3e-2),
        l1s=(0.0, 1e-4, 1e-3),
    ),
}
_TAGS = {"GC-KAN": "gc", "spline KAN (CV)": "spline", "MLP": "mlp"}


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
    baselines=("B-spline KAN, grid G in {1,2,3,5,10} by 2-fold CV", "SiLU MLP at matched parameter count"),
    thresholds=(
        Threshold(
            "wins",
            "win_fraction_n32",
            ">=",
            0.70,
            "GC-KAN beats the CV spline KAN in >= 70 % of n=32 settings (2 of 3 seeds)",
            agg="2 of 3",
            control=("linear_win_fraction_n32", "gc_replicate_win_fraction_n32"),
            arms=("GC-KAN", "spline KAN (CV)"),
        ),
        Threshold(
            "robust",
            "degradation_ratio",
            "<=",
            0.5,
            "GC-KAN's median noise degradation factor is at most half the spline KAN's (2 of 3 seeds)",
            agg="2 of 3",
            control="gc_replicate_degradation_ratio",
            arms=("GC-KAN", "spline KAN (CV)"),
        ),
        Threshold(
            "noise_abs",
            "noise_added_ratio",
            "<=",
            0.5,
            "GC-KAN's median noise-added NRMSE (noisy - clean) is at most half the spline KAN's (2 of 3 seeds)",
            agg="2 of 3",
            control="gc_replicate_noise_added_ratio",
            arms=("GC-KAN", "spline KAN (CV)"),
        ),
        Threshold(
            "parity",
            "clean_parity_largest_n",
            "<=",
            1.2,
            "clean data, largest n: GC-KAN's NRMSE within 1.2x of the spline's (median over equations; 2 of 3)",
            agg="2 of 3",
            control="linear_clean_parity_largest_n",
            arms=("GC-KAN", "spline KAN (CV)"),
        ),
    ),
    floors=(
        Threshold(
            "models_learn",
            "worst_clean_nrmse_largest_n",
            "<=",
            0.5,
            "floor: GC-KAN, spline KAN and MLP each reach a median clean NRMSE <= 0.5 at the largest n (mean)",
        ),
        Threshold(
            "no_collapse",
            "nonfinite_fraction",
            "<=",
            0.05,
            "floor: at most 5 % of the selected fits give non-finite predictions (mean over seeds)",
        ),
    ),
    reproduced="wins and robust and noise_abs and parity",
    partial="wins or noise_abs",
    key_metric="win_fraction_n32",
    revision=2,
    method="GC-KAN",
    tuned=("GC-KAN", "spline KAN (CV)", "MLP"),
)
def run(mode: str, seed: int) -> Outcome:
    from geode.data import feynman
    from geode.sciml.gckan.experiment import MODELS, QUICK_EQUATIONS, cv_score, run_feynman_study, select

    t0 = time.process_time()
    cfg = dict(_MODES[mode])
    if cfg["equations"] is None:
        cfg["equations"] = QUICK_EQUATIONS
    elif cfg["equations"] == "first50":
        cfg["equations"] = tuple(e.id for e in feynman.equations(n_vars=(1, 2, 3, 4))[:50])
    lrs, l1s = cfg.pop("lrs"), cfg.pop("l1s")
    study = run_feynman_study(
        **cfg, lrs=lrs, l1s=l1s, lr_final_factor=1e-2, clip=10.0, hidden=4, extrap_fraction=0.1, seed=seed
    )

    def fit(method: str, params: dict[str, Any]) -> float:
        return cv_score(study, method, params["lr"], params["l1"])

    grids = {m: {"lr": list(lrs), "l1": list(l1s)} for m in MODELS}
    res = tune(fit, grids, maximize=False, extend=0)
    lr_sel = {m: res.params(m)["lr"] for m in MODELS}
    l1_sel = {m: res.params(m)["l1"] for m in MODELS}
    rows = select(study, lr_sel, l1_sel)
    exps = [e for e in study.exponents if e["lr"] == lr_sel["GC-KAN"] and e["l1"] == l1_sel["GC-KAN"]]
    from geode.sciml.gckan.experiment import summarize_study

    metrics, table = summarize_study(rows, exps)
    g_chosen = np.array([r["grid"] for r in rows if r["model"] == "spline KAN (CV)"])
    metrics["spline_grid_smallest_fraction"] = float(np.mean(g_chosen == min(cfg["grids"])))
    metrics["spline_grid_largest_fraction"] = float(np.mean(g_chosen == max(cfg["grids"])))
    for m in MODELS:
        metrics[f"tuned_lr_{_TAGS[m]}"] = float(lr_sel[m])
        metrics[f"tuned_l1_{_TAGS[m]}"] = float(l1_sel[m])
        metrics[f"cv_score_{_TAGS[m]}"] = float(res.score(m))
    cpu = time.process_time() - t0
    scarce, big = min(cfg["n_trains"]), max(cfg["n_trains"])
    g = lambda k: metrics.get(k, math.nan)  # noqa: E731
    summary = (
        f"{mode}: GC-KAN beats the tuned CV spline KAN in {int(g('wins_n32'))}/{int(g('settings_n32'))} n={scarce} "
        f"settings ({g('win_fraction_n32'):.0%}); clean parity at n={big} {g('clean_parity_largest_n'):.2f}x; "
        f"degradation {g('degradation_gc'):.2f}x vs {g('degradation_spline'):.2f}x (ratio "
        f"{g('degradation_ratio'):.2f}); noise-added NRMSE {g('noise_added_gc'):.3f} vs {g('noise_added_spline'):.3f} "
        f"(ratio {g('noise_added_ratio'):.2f}); the MLP beats GC-KAN in {g('mlp_vs_gc_win_fraction_n32'):.0%} and the "
        f"spline in {g('mlp_vs_spline_win_fraction_n32'):.0%} of n={scarce} settings"
    )
    notes = [
        *res.notes(),
        f"{len(cfg['equations'])} Feynman equations ({', '.join(cfg['equations'][:8])}"
        f"{', ...' if len(cfg['equations']) > 8 else ''}), n_train in {list(cfg['n_trains'])}, label noise "
        f"{list(cfg['noises'])} x std(y), {cfg['n_seeds']} data draw(s) per harness seed, {cfg['n_test']} clean "
        f"test points and {cfg['n_test']} extrapolation points (ranges widened by 10 %).",
        f"Every model: Adam, full batch, {cfg['steps']} steps (the paper: 5000), cosine to 1e-2 of the initial "
        "rate, per-member gradient clipping at 10 (the paper's), tuned over lr x L1 on 2-fold CV. GC-KAN "
        "[d,4,1], paper edge a*J_p(wx+b)+g*tanh(x)+d, p=1+exp(theta) from 2.5; spline KAN [d,4,1] cubic, "
        f"G in {list(cfg['grids'])} per setting by CV; SiLU MLP [d,h,h,1] matching GC-KAN's parameter count.",
        "Selected: " + "; ".join(f"{m} lr={lr_sel[m]:g}, L1={l1_sel[m]:g}" for m in MODELS) + ". Spline G at the "
        f"smallest candidate in {metrics['spline_grid_smallest_fraction']:.0%} and at the largest in "
        f"{metrics['spline_grid_largest_fraction']:.0%} of settings (mean G {g('spline_mean_grid'):.1f}).",
        f"Strongest baseline: the MLP, median NRMSE {g('median_nrmse_mlp'):.3f} vs GC-KAN {g('median_nrmse_gc'):.3f} "
        f"and spline {g('median_nrmse_spline'):.3f}; MLP vs GC-KAN clean parity {g('mlp_clean_parity_largest_n'):.2f} "
        "(MLP over spline).",
        f"Under-fitting bias of the ratios: least squares has degradation ratio {g('linear_degradation_ratio'):.2f} "
        f"and noise-added ratio {g('linear_noise_added_ratio'):.2f} against the spline (it barely reacts to noise "
        "because it fits little); a second GC-KAN initialisation against GC-KAN: "
        f"{g('gc_replicate_degradation_ratio'):.2f} / {g('gc_replicate_noise_added_ratio'):.2f} "
        "(the noise floor).",
        f"Learned p (selected GC-KAN fits): median {g('exponent_median'):.2f} "
        f"(clean {g('exponent_median_clean'):.2f}, "
        f"noisy {g('exponent_median_noisy'):.2f}); below 2 on {g('exponent_frac_below_2_clean'):.0%} of edges clean "
        f"and {g('exponent_frac_below_2_noisy'):.0%} noisy.",
        f"CPU time of this seed: {cpu:.0f} s.",
    ]
    tuned = res.table()
    fig = _figure(table, metrics, scarce)
    return Outcome(
        metrics={k: float(v) for k, v in metrics.items()},
        table=table,
        figures={"gc_vs_spline": fig},
        summary=summary,
        notes=notes,
        tuned=tuned,
    )


def _figure(table: list[dict[str, Any]], metrics: dict[str, float], scarce: int) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.8, 4.2))
    for n, marker in zip(sorted({r["n_train"] for r in table}), "os^Dv"):
        for noise, color in zip(sorted({r["noise"] for r in table}), ("tab:blue", "tab:orange", "tab:green")):
            sel = [r for r in table if r["n_train"] == n and r["noise"] == noise]
            ax.scatter(
                [r["nrmse spline KAN (CV)"] for r in sel],
                [r["nrmse GC-KAN"] for r in sel],
                marker=marker,
                color=color,
                s=22,
                label=f"n={n}, noise={noise:g}",
            )
    vals = [v for r in table for v in (r["nrmse spline KAN (CV)"], r["nrmse GC-KAN"]) if v > 0]
    lims = [min(vals) * 0.8, max(vals) * 1.2]
    ax.plot(lims, lims, "k--", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tuned CV spline KAN test NRMSE")
    ax.set_ylabel("GC-KAN test NRMSE")
    ax.set_title(f"below the diagonal: GC-KAN wins ({metrics['win_fraction_n32']:.0%} at n={scarce})", fontsize=9)
    ax.legend(fontsize=6)
    fig.tight_layout()
    return fig
