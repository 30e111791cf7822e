"""Claim check of fm-tube-lipschitz: the population FM Jacobian near a manifold grows like 1/sigma, not 1/sigma^2.

Thresholds (fixed by the issue, before any run): ``reproduced`` if the fitted slope of log ||J|| against
log sigma is in [-1.2, -0.8] on all manifolds (against the ambient bound's steeper slope), normal directions
are contractive and tangential growth stays bounded; ``partial`` if the slope condition holds on the circle
only; else ``not reproduced``.

What is measured (per seed; the seed draws the rotations of the manifolds into R^D and the evaluation points):
three manifolds, a circle in R^3, the 2-sphere in R^5 and a torus (R=1, r=0.4) in R^4, each rotated by a random
orthogonal frame; sigma in {0.1, 0.03, 0.01, 0.003} (quick); times 1 - t log-spaced in [1e-4, 0.5]; at each
time, points x ~ p_t kept when x/t lies in the tube (within half the reach of the manifold). For each
(manifold, sigma) the maximum over times and tube points of ||J||_2, of the tangential block ||T'JT||_2, of
the coupling ||T'JN||_2 and the most negative normal eigenvalue; slopes are least-squares fits of the logs
against log sigma.

Added before the first run (the issue names no floors or controls; the protocol needs them):

- *the thresholds' forms*: "slope in [-1.2, -0.8]" is ``|slope + 1| <= 0.2`` (worst manifold), in every seed
  (``all``); "normal directions are contractive" is ``sigma x (most negative normal eigenvalue) <= -0.25`` for
  every manifold and sigma (a contraction rate of at least 1/(4 sigma), "strongly" in the abstract's sense),
  every seed; "tangential growth stays bounded" is a slope of the tangential block's maximum against log sigma
  of at least -0.25 on every manifold (it grows by at most ~2.4x over the 1.5 decades of sigma), every seed.
- *negative controls*: for the slope, (a) the ambient bound (Cov replaced by (diam/2)^2 I, the isotropic
  reading of ambient Lipschitz analyses), maximised over the same times, and (b) the same exact Jacobian off
  the tube, at x = t c with c the centre of each manifold (a point of its medial axis, where the posterior
  spreads over the whole manifold or a whole circle of it): the tube-local statement must not hold there.
  For normal contraction, the same statistic of the tangential block. For bounded tangential growth, the
  slope of the normal block's norm and the off-tube slope.
- *validity floors*: the quadrature converged (the Jacobian at the maximising points changes by <= 1e-3,
  relative, with twice the nodes and 1.5x the window), the analytic Jacobian agrees with central finite
  differences of the velocity (<= 1e-3 relative) and the maximum over t lies inside the time grid for every
  (manifold, sigma) (the grid resolves the peak at 1 - t ~ sigma).

Equal tuning: the verdict compares exact quantities with a closed-form bound; neither has a free parameter
(the quadrature's resolution is checked by the convergence floor, not tuned). The only trained model, the
velocity MLP trained by flow matching on the circle and reported beside the exact Jacobian (the issue asks for
it "for comparison"; not judged), has its learning rate selected by :func:`geode.claims.tune` on a validation
flow-matching loss; it is the only method with a tunable parameter, so equal budgets hold trivially.

Verdict (quick mode, 3 seeds): ``reproduced`` in every seed; the numbers are in the package's docstring.
One change after a first quick seed, to a reported part only: the learned MLP's learning-rate grid selected
its upper edge even after extension, so the grid was moved up one step ({1e-3, 3e-3, 1e-2} -> {3e-3, 1e-2,
3e-2}, extension 1 -> 2); no threshold, floor or control depends on the learned model.

Added after the first quick run (reported, not judged; the verdict's reading is unchanged and its metrics
identical): a second reading of the tube, the inferred detail that can decide ``tangent_bounded``. The verdict
uses x/t within half the reach (fixed before any run); the same statistics with a quarter of the reach are
measured from their own random stream and each seed's verdict under the same bounds is in the notes
(``narrow_*`` metrics). In quick mode that reading gives ``partial`` in every seed: the torus' tangential slope
is -0.32, -0.32, -0.34 (below -0.25), because the narrower tube drops the points that make the largest
tangential block at sigma = 0.1 while the small-sigma maxima stay (~8-9). Neither reading is the paper's
(its "relevant neighbourhood" is not public), so the verdict keeps the one fixed in advance and the
report says that the tangential condition is the fragile one.

Inferred details: see :mod:`geode.generative.fm_tube_lipschitz.diagnostics` (time convention, uniform area
density, tube = half the reach, quadrature) plus the choices above (manifolds, dimensions, the sigma and time
grids, points per time).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **reproduced**
(the v2 harness read reproduced on the same runs). Fresh seeds 10-12 (never used before): **reproduced**. No idea
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
        sigmas=(0.1, 0.03), n_t=8, points=4, check_points=2, learn=dict(sigmas=(0.1,), steps=60, lrs=[3e-3])
    ),
    "quick": dict(
        sigmas=(0.1, 0.03, 0.01, 0.003),
        n_t=24,
        points=24,
        check_points=3,
        learn=dict(sigmas=(0.1, 0.03), steps=1500, lrs=[3e-3, 1e-2, 3e-2]),
    ),
    "full": dict(
        sigmas=(0.3, 0.1, 0.03, 0.01, 0.003, 0.001),
        n_t=48,
        points=128,
        check_points=8,
        learn=dict(sigmas=(0.1, 0.03, 0.01), steps=20000, lrs=[1e-3, 3e-3, 1e-2, 3e-2]),
    ),
}
T_GAP = (1e-4, 0.5)  # 1 - t, log-spaced


def _manifolds(seed: int) -> dict[str, Any]:
    from geode.generative.fm_tube_lipschitz import Circle, Sphere, Torus

    return {
        "circle": Circle(ambient_dim=3, rotation_seed=10 * seed + 1),
        "sphere": Sphere(ambient_dim=5, rotation_seed=10 * seed + 2),
        "torus": Torus(R=1.0, r=0.4, ambient_dim=4, rotation_seed=10 * seed + 3),
    }


def _profile(
    man: Any, sigma: float, ts: np.ndarray, points: int, rng: np.random.Generator, fraction: float = 0.5
) -> dict[str, Any]:
    from geode.generative.fm_tube_lipschitz import GaussianSmoothedManifold, ambient_jacobian_bound

    f = GaussianSmoothedManifold(man, sigma)
    rows = {k: [] for k in ("norm", "tangent", "tangent_min", "normal_min", "normal_max", "coupling", "medial")}
    argmax_x: list[np.ndarray] = []
    for t in ts:
        x = f.sample_tube(float(t), points, rng, fraction=fraction)
        b = f.blocks(float(t), x)
        i = int(np.argmax(b["norm"]))
        argmax_x.append(x[i])
        rows["norm"].append(b["norm"].max())
        rows["tangent"].append(b["tangent"].max())
        rows["tangent_min"].append(b["tangent_min"].min())
        rows["normal_min"].append(b["normal_min"].min())
        rows["normal_max"].append(b["normal_max"].max())
        rows["coupling"].append(b["coupling"].max())
        J0 = f.jacobian(float(t), np.zeros((1, man.ambient_dim)))[0]
        rows["medial"].append(np.linalg.norm(J0, 2))
    prof = {k: np.asarray(v) for k, v in rows.items()}
    prof["ambient"] = ambient_jacobian_bound(ts, sigma, man.diameter)
    prof["argmax_x"] = np.stack(argmax_x)
    prof["field"] = f
    return prof


def _checks(man: Any, sigma: float, ts: np.ndarray, prof: dict[str, Any], n: int) -> tuple[float, float]:
    """Quadrature convergence and finite-difference agreement at the n times with the largest ||J||."""
    from geode.generative.fm_tube_lipschitz import GaussianSmoothedManifold

    f = prof["field"]
    fine = GaussianSmoothedManifold(man, sigma, nodes=2 * f.nodes, window=1.5 * f.window)
    conv, fd = 0.0, 0.0
    for j in np.argsort(prof["norm"])[::-1][:n]:
        t, x = float(ts[j]), prof["argmax_x"][j][None]
        J = f.jacobian(t, x)[0]
        scale = np.linalg.norm(J, 2)
        conv = max(conv, np.linalg.norm(J - fine.jacobian(t, x)[0], 2) / scale)
        h = 1e-6 * max(f.effective_noise(t), 1e-3)
        cols = [(f.velocity(t, x + h * e) - f.velocity(t, x - h * e))[0] / (2 * h) for e in np.eye(len(J))]
        fd = max(fd, np.linalg.norm(J - np.stack(cols, axis=-1), 2) / scale)
    return float(conv), float(fd)


def _learned(cfg: dict[str, Any], seed: int, rng: np.random.Generator) -> dict[str, Any]:
    """Train a velocity MLP by flow matching on the circle (tuned lr on a validation FM loss) and compare."""
    import torch

    from geode.generative.fm_tube_lipschitz import Circle, GaussianSmoothedManifold

    man = Circle(ambient_dim=3, rotation_seed=10 * seed + 1)
    torch.manual_seed(seed)
    out: dict[str, Any] = {"rows": [], "tuned": [], "notes": []}

    def batch(sigma: float, n: int, g: np.random.Generator) -> tuple[Any, Any, Any]:
        y = man.sample(n, g) + sigma * g.standard_normal((n, 3))
        x0 = g.standard_normal((n, 3))
        # times biased towards 1 (where the field is steep): 1 - t log-uniform in [1e-3, 1]
        t = 1 - 10 ** g.uniform(-3, 0, (n, 1))
        xt = t * y + (1 - t) * x0
        return (torch.tensor(np.hstack([xt, t]), dtype=torch.float32), torch.tensor(y - x0, dtype=torch.float32), t)

    for sigma in cfg["sigmas"]:
        g_val = np.random.default_rng(1000 + seed)
        xv, uv, _ = batch(sigma, 4096, g_val)

        def fit(method: str, params: dict[str, Any], sigma: float = sigma, xv: Any = xv, uv: Any = uv) -> Any:
            g = np.random.default_rng(seed)
            net = torch.nn.Sequential(
                torch.nn.Linear(4, 128),
                torch.nn.SiLU(),
                torch.nn.Linear(128, 128),
                torch.nn.SiLU(),
                torch.nn.Linear(128, 3),
            )
            opt = torch.optim.Adam(net.parameters(), lr=params["lr"])
            sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg["steps"])
            for _ in range(cfg["steps"]):
                xb, ub, _ = batch(sigma, 256, g)
                loss = ((net(xb) - ub) ** 2).sum(-1).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
            with torch.no_grad():
                val = float(((net(xv) - uv) ** 2).sum(-1).mean())
            return (val if math.isfinite(val) else math.inf), net

        res = tune(fit, {"FM MLP": {"lr": list(cfg["lrs"])}}, maximize=False, extend=2 if len(cfg["lrs"]) >= 3 else 0)
        net = res.payload("FM MLP")
        out["tuned"] += [dict(r, method=f"{r['method']} (sigma={sigma})") for r in res.table()]
        out["notes"] += [f"(sigma={sigma}) {n}" for n in res.notes()]
        f = GaussianSmoothedManifold(man, sigma)
        t = 1 - sigma  # near the peak of ||J||
        x = f.sample_tube(t, 16, rng)
        J = f.jacobian(t, x)
        inp = torch.tensor(np.hstack([x, np.full((len(x), 1), t)]), dtype=torch.float32)
        Jl = torch.func.vmap(torch.func.jacrev(lambda z, net=net: net(z[None])[0]))(inp)
        Jl = Jl[:, :, :3].detach().double().numpy()
        from geode.generative.fm_tube_lipschitz import tangent_normal_blocks

        _, T = man.nearest(x / t)
        be, bl = tangent_normal_blocks(J, T), tangent_normal_blocks(Jl, T)
        rel = float(np.median(np.linalg.norm(Jl - J, ord=2, axis=(1, 2)) / be["norm"]))
        out["rows"].append(
            {
                "sigma": sigma,
                "t": t,
                "exact max ||J||": float(be["norm"].max()),
                "learned max ||J||": float(bl["norm"].max()),
                "exact min normal eig": float(be["normal_min"].min()),
                "learned min normal eig": float(bl["normal_min"].min()),
                "exact max tangential": float(be["tangent"].max()),
                "learned max tangential": float(bl["tangent"].max()),
                "median rel. error ||J_learned - J||/||J||": rel,
                "val FM loss": res.score("FM MLP"),
            }
        )
    return out


def _figure(ts: np.ndarray, profiles: dict[str, dict[float, dict[str, Any]]]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(profiles), figsize=(4 * len(profiles), 3.4), squeeze=False)
    for ax, (name, by_sigma) in zip(axes[0], profiles.items()):
        for k, (sigma, p) in enumerate(by_sigma.items()):
            c = f"C{k}"
            ax.plot(1 - ts, p["norm"], color=c, label=f"||J||, sigma={sigma}")
            ax.plot(1 - ts, p["tangent"], color=c, ls="--")
            ax.plot(1 - ts, -p["normal_min"], color=c, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("1 - t")
        ax.set_title(f"{name}: ||J|| (solid), tangential (dashed), -normal min (dotted)", fontsize=7)
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


@register(
    "fm-tube-lipschitz",
    claim=(
        "On a tube around a manifold, the population flow-matching velocity of Gaussian-smoothed manifold data has "
        "a Jacobian growing only like the inverse noise scale (slope -1 in log sigma, against the ambient bound's "
        "steeper blow-up), with mildly growing tangential, strongly contractive normal and lower-order coupling "
        "blocks."
    ),
    paper_figure="theory only: ||nabla v|| = O(1/sigma) on the tube (vs sigma^-2 or worse ambient); no numbers",
    baselines=("ambient isotropic Lipschitz bound", "exact Jacobian off the tube (medial axis)"),
    thresholds=(
        Threshold(
            "slope_all",
            "worst_slope_dev",
            "<=",
            0.2,
            "slope of log max||J|| vs log sigma in [-1.2, -0.8] on every manifold (|slope + 1| <= 0.2), every seed",
            agg="all",
            control=("ambient_slope_dev", "medial_slope_dev"),
            arms=("law",),
        ),
        Threshold(
            "normal_contractive",
            "worst_normal_rate",
            "<=",
            -0.25,
            "sigma x most negative normal eigenvalue <= -0.25 on every manifold and sigma, every seed",
            agg="all",
            control="worst_tangent_rate",
            arms=("law",),
        ),
        Threshold(
            "tangent_bounded",
            "worst_tangent_slope",
            ">=",
            -0.25,
            "slope of the tangential block's max vs log sigma >= -0.25 on every manifold, every seed",
            agg="all",
            control=("normal_block_slope", "medial_slope"),
            arms=("law",),
        ),
        Threshold(
            "slope_circle",
            "circle_slope_dev",
            "<=",
            0.2,
            "slope on the circle in [-1.2, -0.8], every seed",
            agg="all",
            control=("circle_ambient_slope_dev", "circle_medial_slope_dev"),
            arms=("law",),
        ),
    ),
    floors=(
        Threshold(
            "quadrature_converged",
            "quadrature_rel_change",
            "<=",
            1e-3,
            "floor: ||J|| at the maximising points changes <= 1e-3 (relative) with 2x nodes and 1.5x window",
            agg="all",
        ),
        Threshold(
            "jacobian_matches_fd",
            "fd_rel_error",
            "<=",
            1e-3,
            "floor: analytic Jacobian within 1e-3 (relative) of central differences of the velocity",
            agg="all",
        ),
        Threshold(
            "peak_resolved",
            "peak_at_grid_edge",
            "<=",
            0.0,
            "floor: the maximum of ||J|| over t is inside the time grid for every (manifold, sigma)",
            agg="all",
        ),
    ),
    reproduced="slope_all and normal_contractive and tangent_bounded",
    partial="slope_circle",
    method="law",
    untuned={
        "law": "the paper's bound, evaluated in closed form and by quadrature: nothing to tune",
        "ambient bound": "no parameter (closed form, Cov replaced by (diam/2)^2 I)",
        "off-tube Jacobian": "no parameter (the exact Jacobian at the manifold's centre)",
    },
    key_metric="worst_slope_dev",
)
def run(mode: str, seed: int) -> Outcome:
    from geode.generative.fm_tube_lipschitz import fit_loglog_slope

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    sigmas = np.asarray(cfg["sigmas"], float)
    ts = 1 - np.geomspace(T_GAP[1], T_GAP[0], cfg["n_t"])
    profiles: dict[str, dict[float, dict[str, Any]]] = {}
    metrics: dict[str, float] = {}
    table: list[dict[str, Any]] = []
    conv, fd, edge = 0.0, 0.0, 0
    slopes: dict[str, dict[str, float]] = {}
    rates_n, rates_t = [], []
    for name, man in _manifolds(seed).items():
        profiles[name] = {}
        for sigma in sigmas:
            p = _profile(man, float(sigma), ts, cfg["points"], rng)
            profiles[name][float(sigma)] = p
            c, d = _checks(man, float(sigma), ts, p, cfg["check_points"])
            conv, fd = max(conv, c), max(fd, d)
            k = int(np.argmax(p["norm"]))
            edge += int(k in (0, len(ts) - 1))
            rates_n.append(sigma * p["normal_min"].min())
            rates_t.append(sigma * p["tangent_min"].min())
            table.append(
                {
                    "manifold": name,
                    "sigma": float(sigma),
                    "max ||J||": float(p["norm"].max()),
                    "sigma x max ||J||": float(sigma * p["norm"].max()),
                    "1-t at max": float(1 - ts[k]),
                    "max tangential": float(p["tangent"].max()),
                    "min normal eig": float(p["normal_min"].min()),
                    "max normal eig": float(p["normal_max"].max()),
                    "max coupling": float(p["coupling"].max()),
                    "off-tube max ||J||": float(p["medial"].max()),
                    "ambient bound": float(p["ambient"].max()),
                }
            )
        by = profiles[name]

        def sl(key: str, fn: Any = np.max, by: dict = by) -> float:
            return fit_loglog_slope(sigmas, np.array([fn(by[float(s)][key]) for s in sigmas]))

        slopes[name] = {
            "J": sl("norm"),
            "tangent": sl("tangent"),
            "normal": sl("normal_min", lambda a: -np.min(a)),
            "coupling": sl("coupling"),
            "medial": sl("medial"),
            "ambient": sl("ambient"),
        }
        for k, v in slopes[name].items():
            metrics[f"{name}_slope_{k}"] = v
    names = list(slopes)
    metrics.update(
        worst_slope_dev=max(abs(slopes[n]["J"] + 1) for n in names),
        ambient_slope_dev=max(abs(slopes[n]["ambient"] + 1) for n in names),
        medial_slope_dev=max(abs(slopes[n]["medial"] + 1) for n in names),
        circle_slope_dev=abs(slopes["circle"]["J"] + 1),
        circle_ambient_slope_dev=abs(slopes["circle"]["ambient"] + 1),
        circle_medial_slope_dev=abs(slopes["circle"]["medial"] + 1),
        worst_normal_rate=float(max(rates_n)),
        worst_tangent_rate=float(max(rates_t)),
        worst_tangent_slope=min(slopes[n]["tangent"] for n in names),
        normal_block_slope=min(slopes[n]["normal"] for n in names),
        medial_slope=min(slopes[n]["medial"] for n in names),
        worst_coupling_slope=min(slopes[n]["coupling"] for n in names),
        quadrature_rel_change=conv,
        fd_rel_error=fd,
        peak_at_grid_edge=float(edge),
    )
    learned = _learned(cfg["learn"], seed, rng)
    for r in learned["rows"]:
        s = r["sigma"]
        metrics[f"learned_rel_error_sigma{s}"] = r["median rel. error ||J_learned - J||/||J||"]
        metrics[f"learned_over_exact_max_norm_sigma{s}"] = r["learned max ||J||"] / r["exact max ||J||"]
    # second reading of the tube (inferred detail that can decide tangent_bounded): a quarter of the reach
    narrow = _narrow_reading(cfg, seed, sigmas, ts)
    metrics.update(narrow["metrics"])
    slope_line = "; ".join(
        f"{n}: ||J|| {slopes[n]['J']:.2f}, tangential {slopes[n]['tangent']:.2f}, normal {slopes[n]['normal']:.2f}, "
        f"coupling {slopes[n]['coupling']:.2f}, off-tube {slopes[n]['medial']:.2f}, "
        f"ambient bound {slopes[n]['ambient']:.2f}"
        for n in names
    )
    summary = (
        "slopes of log max||J|| vs log sigma: "
        + ", ".join(f"{n} {slopes[n]['J']:.2f}" for n in names)
        + f" (ambient bound {slopes['circle']['ambient']:.2f}, off-tube {metrics['medial_slope']:.2f}); "
        f"sigma x min normal eig <= {metrics['worst_normal_rate']:.2f}; "
        f"tangential slope >= {metrics['worst_tangent_slope']:.2f}"
    )
    notes = [
        f"Slopes per manifold: {slope_line}.",
        f"Quadrature change with 2x nodes, 1.5x window: {conv:.2e}; finite-difference error {fd:.2e}.",
        narrow["note"],
        "Learned FM MLP on the circle (reported, not judged): "
        + "; ".join(
            f"sigma={r['sigma']}: learned max||J|| {r['learned max ||J||']:.3g} vs exact {r['exact max ||J||']:.3g}, "
            f"min normal eig {r['learned min normal eig']:.3g} vs {r['exact min normal eig']:.3g}, median rel. error "
            f"{r['median rel. error ||J_learned - J||/||J||']:.2f}"
            for r in learned["rows"]
        ),
        *learned["notes"],
        f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.",
    ]
    table += [dict(r, manifold="circle (learned MLP vs exact)") for r in learned["rows"]]
    return Outcome(
        metrics={k: float(v) for k, v in metrics.items()},
        table=table,
        figures={"fm_tube_jacobian": _figure(ts, profiles)},
        summary=summary,
        notes=notes,
        tuned=learned["tuned"],
    )


def _rule(slope_dev: float, normal_rate: float, tangent_slope: float, circle_dev: float) -> str:
    """The claim's rule on one seed's numbers (for the reading the verdict does not use)."""
    if slope_dev <= 0.2 and normal_rate <= -0.25 and tangent_slope >= -0.25:
        return "reproduced"
    return "partial" if circle_dev <= 0.2 else "not reproduced"


def _narrow_reading(cfg: dict[str, Any], seed: int, sigmas: np.ndarray, ts: np.ndarray) -> dict[str, Any]:
    """The same statistics with the tube at a quarter of the reach (reported beside the verdict's half)."""
    from geode.generative.fm_tube_lipschitz import fit_loglog_slope

    rng = np.random.default_rng(seed + 7919)
    sl: dict[str, tuple[float, float]] = {}
    rates = []
    for name, man in _manifolds(seed).items():
        ps = [_profile(man, float(s), ts, cfg["points"], rng, fraction=0.25) for s in sigmas]
        rates += [s * p["normal_min"].min() for s, p in zip(sigmas, ps)]
        sl[name] = (
            fit_loglog_slope(sigmas, np.array([p["norm"].max() for p in ps])),
            fit_loglog_slope(sigmas, np.array([p["tangent"].max() for p in ps])),
        )
    m = {
        "narrow_worst_slope_dev": max(abs(a + 1) for a, _ in sl.values()),
        "narrow_circle_slope_dev": abs(sl["circle"][0] + 1),
        "narrow_worst_normal_rate": float(max(rates)),
        "narrow_worst_tangent_slope": min(b for _, b in sl.values()),
    }
    verdict = _rule(
        m["narrow_worst_slope_dev"],
        m["narrow_worst_normal_rate"],
        m["narrow_worst_tangent_slope"],
        m["narrow_circle_slope_dev"],
    )
    note = (
        f"Second reading of the tube (x/t within a quarter of the reach, not half), same bounds on this seed: "
        f"{verdict}; slopes of ||J|| / tangential block: "
        + ", ".join(f"{n} {a:.2f} / {b:.2f}" for n, (a, b) in sl.items())
        + f"; sigma x min normal eig <= {m['narrow_worst_normal_rate']:.2f}."
    )
    return {"metrics": m, "note": note, "verdict": verdict}
