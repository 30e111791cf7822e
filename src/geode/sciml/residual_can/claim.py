"""Claim check of the ResidualCAN paper: far lower stationary Allen-Cahn error than a SiLU MLP.

Revision 2 (issue 22, protocol v2). What changed and why:

- *Budget.* Revision 1 compared 2000 Adam steps for every network; ResidualCAN costs about 2.2x a SiLU-MLP
  step, and with the notes' L-BFGS stage the audit measured 2-4x instead of ~100x. The verdict now uses
  **equal wall-clock Adam, then 200 L-BFGS iterations on each network alone** (the standard PINN recipe):
  each architecture gets ``steps x STEP_COST[arch]`` Adam steps (ResidualCAN's step time over its own,
  fixed constants from the benchmark so a run is deterministic; the measured ratios are reported beside).
  The step-matched ratio (same Adam steps, no L-BFGS) is reported as ``*_stepmatched``.
- *Equal tuning.* Every architecture gets 4 configurations, selected per problem on the PINN residual at
  held-out points (no solution used): learning rates {3e-4, 1e-3, 3e-3, 1e-2} for the MLP-type networks,
  omega0 in {1, 3, 10, 30} for SIREN and sigma in {0.5, 1, 2, 4} for the Fourier features (revision 1 left
  both at untuned defaults although the paper says "tuned").
- *Ablation both ways.* "Mostly from the residual" needs the Gaussian-RBF-node ablation to keep >= 10x
  (``rbf_keeps``, as before) *and* the Cauchy-activation MLP without the residual to stay below 10x
  (``mlp_lacks``, new; revision 1 only reported it, 3.4x).
- *Seeds.* Ratios are combined over at least 3 seeds by their geometric mean (single seeds gave 95x, 195x,
  129x under revision 1).
- *Ranks* on the epsilon suite count only runs that converged (rel. L2 < 0.1); at eps = 0.1 in revision 1
  every model failed. Burgers (nu = 0.1) is run beside Poisson for "without dominating on Poisson/Burgers".
- *Floors.* The SiLU-MLP baseline and ResidualCAN must each reach rel. L2 <= 1e-2 at eps = 1 under the
  verdict's protocol (both learned the problem), and no run may be non-finite.
- Quick-mode budget: 500 Adam steps per configuration in the tuning stage (revision 1: 2000 steps, one
  configuration), so the step-matched figure is at 500 steps; the machine this was written on was shared by
  about 7 jobs, and the 4x tuning grid did not fit the quick budget otherwise.
- Dropped from quick: the robust-loss factorial (reported only in revision 1); ``run_pinn_suite`` keeps it.

Revision 1's verdict (seed 0 quick): **partial** (95x; 3 seeds: 95x, 195x, 129x, "reproduced" on their
arithmetic mean).

Revision 2, quick, **seed 0 only** (seeds 1 and 2 not yet run; the harness needs 3, so the stored verdict is
inconclusive): that seed's own verdict is **not reproduced**. At eps = 1 under equal wall-clock + L-BFGS
ResidualCAN reaches 1.25e-6 vs SiLU-MLP 9.3e-7 (ratio 0.74x), RBF ablation 1.21x, Cauchy MLP without residual
0.26x; step-matched (500 Adam steps, tuned) the ratio is 26.8x (RBF 205x). Floors met (all six converge at
eps = 1; none at eps = 0.1). ResidualCAN ranks 3rd of 6 at eps = 1; on Poisson it is 14x the best tuned
spectral baseline, on Burgers 1.2x. Several selections sit on a grid edge (lr = 1e-2; SIREN omega0 = 1 or 30;
Fourier sigma = 0.5), flagged in the tuned table. CPU time 284 s for the seed (about 3x the quick budget).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read not reproduced on the same runs): not tuned by the protocol: ResidualCAN | Allen-Cahn eps=1,
SiLU-MLP | Allen-Cahn eps=1, ResidualCAN-RBF | Allen-Cahn eps=1, CauchyAct-MLP | Allen-Cahn eps=1. No idea ablation
or learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        eps=(1.0,),
        poisson=False,
        burgers=False,
        architectures=("SiLU-MLP", "CauchyAct-MLP", "ResidualCAN", "ResidualCAN-RBF"),
        steps=15,
        lbfgs_steps=5,
        n_collocation=64,
        n_test=201,
        lrs=(1e-3, 3e-3, 1e-2),
    ),
    "quick": dict(
        eps=(1.0, 0.1),
        poisson=True,
        burgers=True,
        architectures=None,
        steps=500,
        lbfgs_steps=200,
        n_collocation=256,
        n_test=2001,
        lrs=(3e-4, 1e-3, 3e-3, 1e-2),
    ),
    "full": dict(
        eps=(1.0, 0.5, 0.2, 0.1, 0.05),
        poisson=True,
        burgers=True,
        architectures=None,
        steps=20000,
        lbfgs_steps=1000,
        n_collocation=512,
        n_test=2001,
        lrs=(3e-4, 1e-3, 3e-3, 1e-2),
    ),
}
CONVERGED = 0.1  # rel. L2 below which a run counts in the epsilon-suite ranks

_TAG = {
    "SiLU-MLP": "silu",
    "CauchyAct-MLP": "cauchymlp",
    "ResidualCAN": "rescan",
    "ResidualCAN-RBF": "rbf",
    "SIREN": "siren",
    "Fourier-MLP": "fourier",
}


def _ptag(problem: str) -> str:
    if problem.startswith("Allen-Cahn"):
        return "ac_eps" + problem.split("=")[1].replace(".", "p")
    if problem.startswith("Burgers"):
        return "burgers"
    return "poisson"


_RATIO_CONTROL = "silu_over_cauchymlp_eps1"
_EPS1 = "Allen-Cahn eps=1"
_SILU, _RESCAN = f"SiLU-MLP | {_EPS1}", f"ResidualCAN | {_EPS1}"  # tuned-table keys: "<architecture> | <problem>"
_CAUCHY, _RBF = f"CauchyAct-MLP | {_EPS1}", f"ResidualCAN-RBF | {_EPS1}"


@register(
    "residual-can",
    claim=(
        "ResidualCAN (a Cauchy-activation MLP plus a softmax-weighted dense Cauchy-node residual) reaches far lower "
        "stationary Allen-Cahn PINN error than a SiLU MLP, mostly thanks to the dense local-basis residual, without "
        "dominating on Poisson/Burgers."
    ),
    paper_figure=(
        "1520x lower stationary Allen-Cahn error than a SiLU MLP at eps = 1; strongest or second strongest across "
        "the eps-suite; most of the gain kept by a dense local-basis residual without Cauchy activation"
    ),
    baselines=(
        "SiLU MLP",
        "CauchyAct MLP (no residual)",
        "Gaussian-RBF-node ResidualCAN",
        "SIREN (tuned omega0)",
        "Fourier-feature MLP (tuned sigma)",
    ),
    thresholds=(
        Threshold(
            "strong",
            "silu_over_rescan_eps1",
            ">=",
            100.0,
            "ResidualCAN's rel. L2 at eps=1 >= 100x below SiLU-MLP's (equal wall-clock + L-BFGS; geometric mean)",
            agg="geomean",
            control=_RATIO_CONTROL,
            arms=(_RESCAN, _SILU),
        ),
        Threshold(
            "rbf_keeps",
            "silu_over_rbf_eps1",
            ">=",
            10.0,
            "the Gaussian-RBF-node ablation still beats SiLU-MLP >= 10x at eps=1 (geometric mean)",
            agg="geomean",
            control=_RATIO_CONTROL,
            arms=(_RBF, _SILU),
        ),
        Threshold(
            "mlp_lacks",
            "silu_over_cauchymlp_eps1",
            "<",
            10.0,
            "the Cauchy-activation MLP without the residual stays below 10x at eps=1 (geometric mean)",
            agg="geomean",
            control="silu_over_rescan_eps1",
            arms=(_CAUCHY, _SILU),
        ),
        Threshold(
            "some",
            "silu_over_rescan_eps1",
            ">=",
            10.0,
            "ResidualCAN beats SiLU-MLP >= 10x at eps=1 (geometric mean)",
            agg="geomean",
            control=_RATIO_CONTROL,
            arms=(_RESCAN, _SILU),
        ),
    ),
    floors=(
        Threshold(
            "baselines_learn",
            "worst_err_eps1_silu_rescan",
            "<=",
            1e-2,
            "floor: SiLU-MLP and ResidualCAN both reach rel. L2 <= 1e-2 at eps=1 (every seed)",
            agg="all",
        ),
        Threshold(
            "no_collapse",
            "nonfinite_runs",
            "<=",
            0.0,
            "floor: no run of the verdict's protocol is non-finite (every seed)",
            agg="all",
        ),
    ),
    reproduced="strong and rbf_keeps and mlp_lacks",
    partial="some",
    key_metric="silu_over_rescan_eps1",
    timing_metrics=tuple(f"measured_step_cost_{t}" for t in _TAG.values()),
    revision=2,
    method=_RESCAN,
    tuned=(_RESCAN, _SILU, _CAUCHY, _RBF, f"SIREN | {_EPS1}", f"Fourier-MLP | {_EPS1}"),
)
def run(mode: str, seed: int) -> Outcome:
    from geode.sciml.pinn import AllenCahn1D, Burgers1D, Poisson1D
    from geode.sciml.residual_can.experiment import ARCHITECTURES, STEP_COST, run_protocols

    t0 = time.process_time()
    cfg = dict(_MODES[mode])
    archs = tuple(cfg["architectures"] or ARCHITECTURES)
    problems = [AllenCahn1D(e) for e in cfg["eps"]]
    if cfg["poisson"]:
        problems.append(Poisson1D())
    if cfg["burgers"]:
        problems.append(Burgers1D(0.1))
    runs, finish = run_protocols(
        problems,
        architectures=archs,
        steps=cfg["steps"],
        lbfgs_steps=cfg["lbfgs_steps"],
        lrs=cfg["lrs"],
        n_collocation=cfg["n_collocation"],
        n_test=cfg["n_test"],
        seed=seed,
    )
    trial = {(t["architecture"], t["problem"], tuple(sorted(t["config"].items()))): t for t in runs.trials}
    grids: dict[str, list[dict[str, Any]]] = {}
    for t in runs.trials:
        grids.setdefault(f"{t['architecture']} | {t['problem']}", [])
        if t["config"] not in grids[f"{t['architecture']} | {t['problem']}"]:
            grids[f"{t['architecture']} | {t['problem']}"].append(t["config"])

    def fit(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        arch, prob = method.split(" | ")
        t = trial[(arch, prob, tuple(sorted(params.items())))]
        v = t["val_residual"]
        return (v if math.isfinite(v) else math.inf), t

    res = tune(fit, grids, maximize=False)
    step_err = {}
    for method in grids:
        arch, prob = method.split(" | ")
        step_err[(arch, _ptag(prob))] = res.payload(method)["rel_l2"]
    final: dict[tuple[str, str], dict[str, Any]] = {}
    for arch in archs:
        sel = {p.name: res.params(f"{arch} | {p.name}") for p in problems}
        for name, row in finish(arch, sel).items():
            final[(arch, _ptag(name))] = row
    err = {k: v["rel_l2"] for k, v in final.items()}

    def ratio(store: dict, a: str, b: str, p: str) -> float:
        x, y = store.get((a, p), math.nan), store.get((b, p), math.nan)
        if not (math.isfinite(x) and math.isfinite(y)):
            return math.nan
        return x / max(y, 1e-300)

    metrics: dict[str, float] = {}
    for (a, p), v in err.items():
        metrics[f"err_{p}_{_TAG[a]}"] = v
        metrics[f"err_{p}_{_TAG[a]}_stepmatched"] = step_err[(a, p)]
        metrics[f"err_{p}_{_TAG[a]}_adam_only"] = final[(a, p)]["rel_l2_adam"]
    for a in archs:
        if a != "SiLU-MLP":
            metrics[f"silu_over_{_TAG[a]}_eps1"] = ratio(err, "SiLU-MLP", a, "ac_eps1")
            metrics[f"silu_over_{_TAG[a]}_eps1_stepmatched"] = ratio(step_err, "SiLU-MLP", a, "ac_eps1")
    metrics["worst_err_eps1_silu_rescan"] = max(err[("SiLU-MLP", "ac_eps1")], err[("ResidualCAN", "ac_eps1")])
    metrics["nonfinite_runs"] = float(sum(not math.isfinite(v) for v in err.values()))
    best_other = min(v for (a, p), v in err.items() if p == "ac_eps1" and a != "ResidualCAN")
    metrics["best_other_over_rescan_eps1"] = best_other / max(err[("ResidualCAN", "ac_eps1")], 1e-300)
    ranks_line = []
    for e in cfg["eps"]:
        tag = _ptag(f"Allen-Cahn eps={e:g}")
        conv = sorted((err[(a, tag)], a) for a in archs if err[(a, tag)] < CONVERGED)
        metrics[f"converged_{tag}"] = float(len(conv))
        names = [a for _, a in conv]
        metrics[f"rescan_rank_converged_{tag}"] = (
            float(names.index("ResidualCAN") + 1) if "ResidualCAN" in names else 0.0
        )
        ranks_line.append(
            f"eps={e:g}: {len(conv)} converged"
            + (
                f", ResidualCAN rank {names.index('ResidualCAN') + 1}"
                if "ResidualCAN" in names
                else ", ResidualCAN not converged"
            )
        )
    for p in ("poisson", "burgers"):
        if ("ResidualCAN", p) in err:
            spectral = min(err.get((a, p), math.inf) for a in ("SIREN", "Fourier-MLP"))
            metrics[f"{p}_rescan_over_best_spectral"] = err[("ResidualCAN", p)] / max(spectral, 1e-300)
            metrics[f"{p}_rescan_over_best_other"] = err[("ResidualCAN", p)] / max(
                min(v for (a, q), v in err.items() if q == p and a != "ResidualCAN"), 1e-300
            )
    for a, t in _TAG.items():  # 0 = architecture not run in this mode
        s_a = runs.step_seconds.get(a)
        metrics[f"measured_step_cost_{t}"] = (
            runs.step_seconds.get("ResidualCAN", math.nan) / max(s_a, 1e-12) if s_a else 0.0
        )
    metrics = {k: (float(v) if math.isfinite(v) else 1e300) for k, v in metrics.items()}
    cpu = time.process_time() - t0

    summary = (
        f"{mode}: eps=1, equal wall-clock + L-BFGS: ResidualCAN {err[('ResidualCAN', 'ac_eps1')]:.2e} vs SiLU-MLP "
        f"{err[('SiLU-MLP', 'ac_eps1')]:.2e} ({metrics['silu_over_rescan_eps1']:.3g}x; step-matched Adam "
        f"{metrics['silu_over_rescan_eps1_stepmatched']:.3g}x); RBF ablation "
        f"{metrics.get('silu_over_rbf_eps1', 0):.3g}x, "
        f"Cauchy MLP without residual {metrics.get('silu_over_cauchymlp_eps1', 0):.3g}x"
    )
    table = [
        {
            **{k: (round(v, 10) if isinstance(v, float) else v) for k, v in r.items()},
            "rel_l2 step-matched": step_err[(r["architecture"], _ptag(r["problem"]))],
        }
        for r in runs.rows
    ]
    notes = [
        *res.notes(),
        f"1-D PINNs on [-1, 1], float64, {cfg['n_collocation']} equispaced collocation points plus 2 boundary points "
        f"(weight 1), rel. L2 on {cfg['n_test']} points. Problems: {', '.join(p.name for p in problems)}.",
        f"Stage 1 (step-matched, selection): {cfg['steps']} Adam steps per config, constant rate; selection on the "
        "PINN residual at the midpoints between collocation points (no solution used).",
        f"Stage 2 (verdict): fresh network at the selected config, {cfg['steps']} x step-cost Adam steps ("
        + ", ".join(f"{a} x{STEP_COST[a]:g}" for a in archs)
        + f"), then {cfg['lbfgs_steps']} L-BFGS iterations (strong Wolfe) on each network alone. Measured step-cost "
        "ratios this run: "
        + ", ".join(f"{a} {metrics.get('measured_step_cost_' + _TAG[a], math.nan):.2f}" for a in archs)
        + ".",
        "Epsilon-suite ranks among converged runs (rel. L2 < 0.1): " + "; ".join(ranks_line) + ".",
        "Strongest baseline at eps=1: best non-ResidualCAN error / ResidualCAN = "
        f"{metrics['best_other_over_rescan_eps1']:.3g}.",
        f"CPU time of this seed: {cpu:.0f} s.",
    ]
    fig = _figure(err, step_err, archs, problems)
    return Outcome(
        metrics=metrics, table=table, figures={"errors": fig}, summary=summary, notes=notes, tuned=res.table()
    )


def _figure(err: dict, step_err: dict, archs: tuple[str, ...], problems: list[Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tags = [_ptag(p.name) for p in problems]
    fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.6), sharey=True)
    width = 0.8 / len(archs)
    for ax, store, title in ((axes[0], step_err, "step-matched Adam"), (axes[1], err, "equal wall-clock + L-BFGS")):
        for i, a in enumerate(archs):
            ax.bar(np.arange(len(tags)) + i * width, [store.get((a, t), np.nan) for t in tags], width, label=a)
        ax.set_xticks(np.arange(len(tags)) + 0.4 - width / 2, tags, fontsize=8)
        ax.set_yscale("log")
        ax.set_title(title, fontsize=9)
    axes[0].set_ylabel("relative L2 error")
    axes[1].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig
