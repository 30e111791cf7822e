"""Claim check of the connectome errors-in-variables analysis: a narrow window where message passing helps.

Thresholds (fixed by the issue before any run): ``reproduced`` if (a) the independent-graph linear GCN
beats raw ridge for the community-smooth target at some T of the grid and not at any T >= 8x that T,
(b) the same-sample graph is worse than the independent one at small T (double dipping), and (c) the
graph hurts the rough target; each as a paired difference of cross-validated R² over >= 8 independent
data draws with a 95% confidence interval excluding 0. ``partial`` if two of the three hold.

Set-up (quick): the latent community model with p = 60 regions in K = 6 communities, n = 100 subjects,
kNN graphs (k = 8) on the oracle ``C_i``, an independent second scan, or ``Ĉ_i`` itself; one linear graph
convolution ``Â Ĉ`` flattened, then ``RidgeCV`` (alpha by GCV inside each fold), 5-fold CV R²;
T in {10, 20, 40, 80, 160, 320, 640}; 8 replicates (independent cohorts, targets and scans) per run,
paired within a replicate.

Made precise before the first run (the issue states them in words):

- "at some T": the largest Bonferroni-corrected lower bound (95% over the grid's |T| values, t
  interval over the replicates) of the paired gain ``R²(indep) - R²(raw)`` must be > 0, at T*; "not for
  T >= 8 T*": the largest corrected lower bound over those T must be <= 0 (if the grid has no such T the
  condition fails). Both are folded into ``window_margin = min(gain_lower(T*), -max late lower)``, > 0;
- "small T": T in the first two values of the grid (10, 20), Bonferroni over the two;
- "hurts the rough target": at the largest T (the graph well estimated, so the loss is the smoothing
  bias itself), lower bound of ``R²(raw) - R²(indep)`` > 0;
- aggregation over the harness seeds (each with its own 8 replicates): 2 of 3.

Validity floors (added): the raw ridge must learn both targets at the largest T (R² >= 0.5 smooth,
>= 0.3 rough, mean over seeds), so the comparisons are between trained predictors.

Negative controls (added): the window computed for the rough target (the graph should not open a window
there); for double dipping, an independent graph against a second independent graph (no double dipping,
so no gap); for the rough-target harm, the same difference on the smooth target at the largest T.
A random kNN graph (regions permuted) is reported beside them.

Equal tuning: every pipeline is ridge with its penalty selected by the same GCV over the same 17 values
inside each training fold; the graph's k is fixed (8, the prototype's value), for all graphs alike.

Closing notes (quick, 3 seeds x 8 replicates, 28-31 CPU s per seed): ``not reproduced`` in every seed;
the floors hold (raw ridge R² at T = 640: 0.72 / 0.72 / 0.74 smooth, 0.39 / 0.40 / 0.40 rough) and every
control fails its threshold. (a) window: the independent graph's mean gain over raw ridge on the smooth
target is positive at every T (+0.02 to +0.05 for T <= 40, +0.01 to +0.02 up to T = 640) but no
Bonferroni-corrected lower bound clears 0 (best -0.003 / -0.001 / -0.001), and the gain does not close
at large T in this simulator. (b) double dipping has the claimed sign (same-sample minus independent
-0.02 to -0.06 at T <= 20) but its lower bounds stay below 0 (-0.002 / -0.012 / -0.005). (c) the graph
hurts the rough target at T = 640 (raw minus independent, lower bounds -0.004 / +0.051 / +0.074: holds in
2 of 3 seeds). One of three holds, so not even ``partial``. The effects are of the prototype's size
but 8 replicates of n = 100 subjects cannot resolve them; ``full`` mode (n = 1000, 20 replicates)
is the test with the power the claim needs. Benchmark (quick): the graph pipeline runs at 0.69x the
raw ridge's speed, 2.2x its peak memory.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **not
reproduced** (the v2 harness read not reproduced on the same runs). No idea ablation or learned-arm reference is
declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register

PIPELINES = ("raw", "oracle", "indep", "same", "indep2", "random")
_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(p=12, K=3, n=30, k=3, Ts=(10, 20, 160), reps=3, folds=3),
    "quick": dict(p=60, K=6, n=100, k=8, Ts=(10, 20, 40, 80, 160, 320, 640), reps=8, folds=5),
    "full": dict(p=200, K=10, n=1000, k=10, Ts=(10, 20, 40, 80, 160, 320, 640, 1200, 2400, 4800), reps=20, folds=5),
}
_SAME_RIDGE = (  # why the pipelines have no tuned table
    "no tune() grid: ridge penalty by the same in-fold GCV (17 values) in every pipeline; kNN k fixed for all graphs"
)
NOISE = 0.4  # target noise sd (targets' signal part has unit variance): the R² ceiling is 1/(1+0.16) = 0.86


def _targets(sample: Any, model: Any, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = sample.a.shape[0]
    w = rng.standard_normal(model.K)
    smooth = sample.a @ w
    v = rng.standard_normal(model.p)
    for c in range(model.K):  # centred within each community: blind to the community-level signal
        v[model.community == c] -= v[model.community == c].mean()
    rough = sample.delta @ v
    out = {}
    for name, s in (("smooth", smooth), ("rough", rough)):
        s = (s - s.mean()) / (s.std() + 1e-12)
        out[name] = s + NOISE * rng.standard_normal(n)
    return out


def _replicate(cfg: dict[str, Any], T: int, seed: int) -> dict[str, dict[str, float]]:
    from geode.graphs.connectome_eiv.model import LatentCommunityModel, cv_r2, gcn_features, raw_features

    rng = np.random.default_rng(seed)
    model = LatentCommunityModel(cfg["p"], cfg["K"])
    s = model.sample(cfg["n"], T, rng)
    third = model.time_series(s.loadings, T, rng)
    from geode.graphs.connectome_eiv.model import sample_correlation

    corr2 = sample_correlation(third)
    perm = rng.permutation(model.p)
    shuffled = s.true_corr[:, perm][:, :, perm]
    k = cfg["k"]
    feats = {
        "raw": raw_features(s.corr),
        "oracle": gcn_features(s.corr, s.true_corr, k),
        "indep": gcn_features(s.corr, s.corr_indep, k),
        "same": gcn_features(s.corr, s.corr, k),
        "indep2": gcn_features(s.corr, corr2, k),
        "random": gcn_features(s.corr, shuffled, k),
    }
    ys = _targets(s, model, rng)
    return {t: {p: cv_r2(feats[p], y, folds=cfg["folds"], seed=seed) for p in PIPELINES} for t, y in ys.items()}


def _bounds(d: np.ndarray, m: int) -> tuple[float, float, float]:
    """Mean and the two-sided (1 - 0.05/m) t interval of the paired differences ``d``."""
    from scipy.stats import t as student

    n = d.size
    mean = float(d.mean())
    half = float(student.ppf(1 - 0.025 / m, n - 1) * d.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    return mean, mean - half, mean + half


def _figure(Ts: tuple[int, ...], r2: dict[int, dict[str, dict[str, np.ndarray]]]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, tgt in zip(axes, ("smooth", "rough"), strict=True):
        for p in ("raw", "oracle", "indep", "same", "random"):
            ax.plot(Ts, [r2[T][tgt][p].mean() for T in Ts], marker="o", label=p)
        ax.set_xscale("log")
        ax.set_xlabel("time points T")
        ax.set_ylabel("CV R²")
        ax.set_title(f"{tgt} target")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


@register(
    "connectome-eiv",
    claim=(
        "Treating connectome prediction as an errors-in-variables problem: graph convolution helps only for "
        "community-smooth targets and only inside a window of time-series length T, and a graph built from the same "
        "noisy matrix as the features hurts (double dipping)."
    ),
    paper_figure=(
        "simulations isolate oracle, independent and same-sample graphs: a narrow favourable window for smooth "
        "targets; real-data GNN pipelines fall outside it"
    ),
    baselines=("raw-connectome ridge", "same-sample graph GCN", "oracle graph GCN"),
    thresholds=(
        Threshold(
            "window",
            "window_margin",
            ">",
            0.0,
            "the independent-graph GCN beats raw ridge (smooth target) at some T and at no T >= 8x it (CI, 2 of 3)",
            agg="2 of 3",
            control="rough_window_margin",
            arms=("indep", "raw"),
        ),
        Threshold(
            "double_dipping",
            "dd_gap_lower",
            ">",
            0.0,
            "the same-sample graph is worse than the independent one at small T (CI lower bound, 2 of 3)",
            agg="2 of 3",
            control="indep2_gap_lower",
            arms=("same", "indep"),
        ),
        Threshold(
            "rough_hurts",
            "rough_harm_lower",
            ">",
            0.0,
            "the graph hurts the rough target at the largest T (CI lower bound, 2 of 3)",
            agg="2 of 3",
            control="smooth_harm_lower",
            arms=("raw", "indep"),
        ),
    ),
    floors=(
        Threshold(
            "raw_learns_smooth",
            "raw_smooth_r2_tmax",
            ">=",
            0.5,
            "floor: raw ridge R² >= 0.5 (smooth, T max)",
            arms="raw",
        ),
        Threshold(
            "raw_learns_rough",
            "raw_rough_r2_tmax",
            ">=",
            0.3,
            "floor: raw ridge R² >= 0.3 (rough, T max)",
            arms="raw",
        ),
    ),
    reproduced="window and double_dipping and rough_hurts",
    partial="(window and double_dipping) or (window and rough_hurts) or (double_dipping and rough_hurts)",
    method="law",
    untuned={
        "law": "the paper's law: a prediction measured on the trained arms, nothing to tune",
        "raw": _SAME_RIDGE,
        "indep": _SAME_RIDGE,
        "same": _SAME_RIDGE,
    },
    key_metric="window_margin",
)
def run(mode: str, seed: int) -> Outcome:
    from geode.graphs.connectome_eiv.model import eiv_decomposition

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    Ts, R = cfg["Ts"], cfg["reps"]
    r2: dict[int, dict[str, dict[str, np.ndarray]]] = {}
    for T in Ts:
        reps = [_replicate(cfg, T, seed * 7919 + T * 104729 + r) for r in range(R)]
        r2[T] = {t: {p: np.array([rep[t][p] for rep in reps]) for p in PIPELINES} for t in ("smooth", "rough")}

    def diff(T: int, tgt: str, a: str, b: str, m: int) -> tuple[float, float, float]:
        return _bounds(r2[T][tgt][a] - r2[T][tgt][b], m)

    def window(tgt: str, graph: str) -> tuple[float, int, float]:
        lows = {T: diff(T, tgt, graph, "raw", len(Ts))[1] for T in Ts}
        t_star = max(Ts, key=lambda T: lows[T])
        late = [lows[T] for T in Ts if T >= 8 * t_star]
        late_max = max(late) if late else math.inf
        return min(lows[t_star], -late_max) if late else -1.0, t_star, late_max

    w, t_star, late = window("smooth", "indep")
    w_rough, _, _ = window("rough", "indep")
    w_random, _, _ = window("smooth", "random")
    small = Ts[:2]
    dd = max(diff(T, "smooth", "indep", "same", len(small))[1] for T in small)
    dd2 = max(diff(T, "smooth", "indep", "indep2", len(small))[1] for T in small)
    tmax = Ts[-1]
    metrics = {
        "window_margin": w,
        "window_t_star": float(t_star),
        "window_gain_lower": diff(t_star, "smooth", "indep", "raw", len(Ts))[1],
        "window_late_lower_max": late if math.isfinite(late) else 1.0,
        "rough_window_margin": w_rough,
        "random_graph_window_margin": w_random,
        "dd_gap_lower": dd,
        "indep2_gap_lower": dd2,
        "rough_harm_lower": diff(tmax, "rough", "raw", "indep", 1)[1],
        "smooth_harm_lower": diff(tmax, "smooth", "raw", "indep", 1)[1],
        "raw_smooth_r2_tmax": float(r2[tmax]["smooth"]["raw"].mean()),
        "raw_rough_r2_tmax": float(r2[tmax]["rough"]["raw"].mean()),
    }
    table = []
    for T in Ts:
        for tgt in ("smooth", "rough"):
            m = {p: float(r2[T][tgt][p].mean()) for p in PIPELINES}
            dec = eiv_decomposition(m["raw"], m["oracle"], m["indep"], m["same"])
            g = diff(T, tgt, "indep", "raw", len(Ts))
            table.append(
                {
                    "T": T,
                    "target": tgt,
                    **{f"R² {p}": round(v, 3) for p, v in m.items()},
                    "indep - raw [CI]": f"{g[0]:+.3f} [{g[1]:+.3f}, {g[2]:+.3f}]",
                    **{k: round(v, 3) for k, v in dec.items()},
                }
            )
            if tgt == "smooth":
                metrics[f"smooth_gain_T{T}"] = g[0]
                metrics[f"smooth_double_dipping_T{T}"] = dec["double_dipping"]
    elapsed = time.perf_counter() - t0
    summary = (
        f"smooth target: independent graph vs raw, best corrected lower bound {metrics['window_gain_lower']:+.3f} at "
        f"T={t_star} (late T>={8 * t_star}: {metrics['window_late_lower_max']:+.3f}); double dipping lower bound "
        f"{dd:+.3f}; rough-target harm lower bound {metrics['rough_harm_lower']:+.3f} at T={tmax}."
    )
    notes = [
        f"{R} replicates per T (independent cohorts, targets and scans), paired within a replicate; "
        f"wall time of this seed {elapsed:.0f} s.",
        f"Random kNN graph (regions permuted) window margin: {w_random:+.3f} (reported, not a control).",
    ]
    return Outcome(metrics=metrics, table=table, figures={"r2_vs_T": _figure(Ts, r2)}, summary=summary, notes=notes)
