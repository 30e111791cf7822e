r"""The paper's claims: solver-free ID estimates within 15% on manifolds, an accurate solver-free estimate of
OT(rho, rho_n), and Richardson removing >= 5x of the bias.

**Revision 2 (issue 18).**

- *No tuning step:* the estimators compared (ours, TwoNN, MLE with the usual k = 20, the two-sample OT
  estimate) run at fixed settings and none has a hyper-parameter selected on data, so protocol section 1
  has nothing to equalise; the Sinkhorn epsilon the method calibrates is reported, not judged.

- *Accuracy* (new threshold, fixed by the issue): the estimator's prediction (leave-one-out :math:`H(0)` of
  the n atoms, the component's new default) against an exact reference of :math:`\mathrm{OT}(\rho, \hat\rho_n)`,
  relative error <= 25% (median over manifolds of intrinsic dimension 3..8) for ``reproduced``; d <= 2
  (where :math:`H(0)` is a loose lower bound) and d = 12 are reported beside it. POT's semi-discrete solver
  (``ot/semidiscrete.py``) is not in the POT release we pin (0.9.7), so the reference is a *sandwich*: the
  discrete OT between m = 40 n fresh points and the atoms (POT ``emd``; its expectation is >= the
  semi-discrete value, being a maximum of the empirical semi-dual) and the semi-dual at that solution's
  atom potentials evaluated on m other fresh points (an unbiased value of :math:`H(g) \le \mathrm{OT}`);
  the reference is the midpoint, and a floor requires the sandwich to be narrow (median width <= 10%).
  Control: the naive solver-based estimate, exact OT between the sample and an independent n-sample.
- *Debias*: the bias is now the mean over 60 repetitions per seed, 3 seeds; the threshold is applied to
  the Richardson bias relative to the plug-in bias, :math:`r = b_{\mathrm{RE}}/|b_{\mathrm{plug}}|`, on its
  one-sided 95% bounds over seeds (``bound95``: :math:`\bar r \le 0.2` and :math:`\bar r \ge -0.2`, i.e. the
  seed-averaged bias reduced >= 5x; averaging the biases, then the ratio). Controls: Richardson with d = 2
  (too little correction: the same half-sample gap read as a fast decay) and with the ambient dimension 20
  (too much). **Old verdict** (revision 1,
  seed 0): *reproduced* with a 35x reduction on 20 repetitions; seeds 1-3 gave 6.4x, 3.3x, 12.3x (audit).
- *ID*: the suite now holds d = 12 and curved manifolds (flat tori in :math:`\mathbb R^{2k}`, a cube bent by
  a smooth map); the 15% threshold holds in 2 of 3 seeds; control: the ambient dimension as the estimate.
- The Sinkhorn calibration :math:`\varepsilon = \widehat E_n` is evaluated (reported): the error of the
  Sinkhorn transport cost against the closed form at the calibrated and at 10x smaller / larger
  :math:`\varepsilon`.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive
(underpowered: debias_lo)** (the v2 harness read partial on the same runs): unresolved: debias_lo; partial at
least, whatever the unknowns are. With the seeds the harness added while the verdict was underpowered (seeds 0, 1,
2, 3): **reproduced**. Fresh seeds 10-12 (never used before): **reproduced**. No idea ablation or learned-arm
reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register

AMBIENT = 20  # ambient dimension of the synthetic manifolds
RICHARDSON_D = 6  # d_int of the Richardson experiment (fixed by the issue)
RICHARDSON_N = 1000  # n of the Richardson experiment (fixed by the issue)

# (kind, intrinsic dimension): uniform cubes, spheres S^d, flat tori T^d in R^(2d), a bent cube and the swiss
# roll, all embedded in R^20
SUITE: tuple[tuple[str, int], ...] = (
    ("cube", 2),
    ("cube", 4),
    ("cube", 6),
    ("cube", 8),
    ("cube", 12),
    ("sphere", 2),
    ("sphere", 4),
    ("sphere", 6),
    ("sphere", 8),
    ("torus", 3),
    ("torus", 6),
    ("bent", 5),
    ("swissroll", 2),
)
# the accuracy suite: intrinsic dimension 3..8 (thresholded), <= 2 and 12 (reported)
ACCURACY_SUITE: tuple[tuple[str, int], ...] = (
    ("cube", 3),
    ("cube", 4),
    ("cube", 6),
    ("cube", 8),
    ("sphere", 3),
    ("sphere", 5),
    ("torus", 3),
    ("torus", 4),
    ("bent", 5),
    ("cube", 1),
    ("cube", 2),
    ("swissroll", 2),
    ("cube", 12),
)

_SIZES: dict[str, dict[str, Any]] = {
    # id_n: points per manifold; decay: (dims, atom sizes, fresh points m, repetitions);
    # rich: (n, repetitions, bags)
    # digits: whether to run the (informative) load_digits row, which imports scikit-learn
    # acc: (atoms n, fresh points per atom, repetitions); sink: (n, repetitions)
    "smoke": {
        "id_n": 500,
        "decay": ((3,), (25, 50, 100), 600, 1),
        "rich": (200, 3, 2),
        "digits": False,
        "acc": (30, 10, 1),
        "sink": (100, 1),
    },
    "quick": {
        "id_n": 4000,
        "decay": ((3, 5), (25, 50, 100, 200, 400), 4000, 2),
        "rich": (RICHARDSON_N, 60, 8),
        "digits": True,
        "acc": (100, 40, 2),
        "sink": (500, 2),
    },
    "full": {
        "id_n": 16000,
        "decay": ((3, 5), (25, 50, 100, 200, 400, 800), 8000, 5),
        "rich": (RICHARDSON_N, 200, 8),
        "digits": True,
        "acc": (200, 50, 5),
        "sink": (1000, 5),
    },
}


def _frame(d_embed: int, rng: np.random.Generator) -> np.ndarray:
    """A random orthonormal (d_embed, AMBIENT) frame."""
    Q, _ = np.linalg.qr(rng.standard_normal((AMBIENT, AMBIENT)))
    return Q[:d_embed]


def _manifold(kind: str, d: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """n uniform points on a d-dimensional manifold isometrically embedded in R^20 by a random rotation."""
    if kind == "cube":
        Z = rng.random((n, d))
    elif kind == "sphere":
        G = rng.standard_normal((n, d + 1))
        Z = G / np.linalg.norm(G, axis=1, keepdims=True)
    elif kind == "torus":  # flat torus T^d: d circles of radius 1/(2 pi), extrinsically curved
        a = 2 * np.pi * rng.random((n, d))
        Z = np.concatenate([np.cos(a), np.sin(a)], axis=1) / (2 * np.pi)
    elif kind == "bent":  # the unit cube bent by a smooth map into d + 3 coordinates
        U = rng.random((n, d))
        Z = np.column_stack([U, np.sin(np.pi * U[:, 0]) * U[:, 1], np.cos(np.pi * U[:, 1]), U[:, 2] ** 2])
    elif kind == "swissroll":  # scikit-learn's make_swiss_roll parametrisation, without the import
        t = 1.5 * np.pi * (1.0 + 2.0 * rng.random(n))
        Z = np.column_stack([t * np.cos(t), 21.0 * rng.random(n), t * np.sin(t)])
    else:  # pragma: no cover
        raise ValueError(kind)
    return Z @ _frame(Z.shape[1], rng)


def _id_suite(n: int, rng: np.random.Generator, seed: int) -> tuple[list[dict[str, Any]], dict[str, float]]:
    from geode.probabilistic.ot_sampling_error.baselines import mle_dimension, twonn_dimension
    from geode.probabilistic.ot_sampling_error.estimators import intrinsic_dimension

    rows, rel = [], {"ot": [], "twonn": [], "mle": []}
    for kind, d in SUITE:
        X = _manifold(kind, d, n, rng)
        est = {
            "ot": intrinsic_dimension(X, p=2, seed=seed),
            "twonn": twonn_dimension(X),
            "mle": mle_dimension(X, k=20),
        }
        for k, v in est.items():
            rel[k].append(abs(v - d) / d)
        rows.append(
            {"experiment": "ID", "data": f"{kind} d={d} in R^{AMBIENT}", "n": n, "true_d": d}
            | {f"{k}_d": round(float(v), 3) for k, v in est.items()}
        )
    metrics = {f"{k}_median_rel_error": float(np.median(v)) for k, v in rel.items()}
    metrics["ambient_median_rel_error"] = float(np.median([abs(AMBIENT - d) / d for _, d in SUITE]))
    metrics |= {f"{k}_max_rel_error": float(np.max(v)) for k, v in rel.items()}
    metrics |= {f"ot_d_{kind}{d}": float(r["ot_d"]) for (kind, d), r in zip(SUITE, rows)}
    return rows, metrics


def _digits(seed: int) -> tuple[dict[str, Any], dict[str, float]]:
    from sklearn.datasets import load_digits

    from geode.probabilistic.ot_sampling_error.baselines import mle_dimension, twonn_dimension
    from geode.probabilistic.ot_sampling_error.estimators import intrinsic_dimension

    X = load_digits().data.astype(float)
    X = X + 1e-6 * np.random.default_rng(seed).standard_normal(X.shape)  # break exact duplicates (integer pixels)
    est = {"ot": intrinsic_dimension(X, seed=seed), "twonn": twonn_dimension(X), "mle": mle_dimension(X)}
    row = {"experiment": "ID", "data": "load_digits (64-D, no ground truth)", "n": X.shape[0], "true_d": "-"}
    return row | {f"{k}_d": round(float(v), 3) for k, v in est.items()}, {
        f"digits_{k}_d": float(v) for k, v in est.items()
    }


def _decay(size: tuple, rng: np.random.Generator) -> tuple[list[dict[str, Any]], dict[str, float], dict]:
    """Semi-dual estimate vs the exact OT between m fresh points and the n atoms, for growing n."""
    from geode.probabilistic.ot_sampling_error.estimators import sampling_error
    from geode.probabilistic.ot_sampling_error.richardson import wasserstein_pp

    dims, ns, m, reps = size
    rows, metrics, curves = [], {}, {}
    ratios = []
    for d in dims:
        est, ref = np.zeros(len(ns)), np.zeros(len(ns))
        for _ in range(reps):
            frame = _frame(d, rng)
            fresh = rng.random((m, d)) @ frame
            for i, n in enumerate(ns):
                atoms = rng.random((n, d)) @ frame
                e = sampling_error(atoms, p=2, X_fresh=fresh)
                o = wasserstein_pp(fresh, atoms, p=2)
                est[i] += e / reps
                ref[i] += o / reps
                ratios.append(e / o)
        slope_e = float(np.polyfit(np.log(ns), np.log(est), 1)[0])
        slope_r = float(np.polyfit(np.log(ns), np.log(ref), 1)[0])
        curves[d] = (est, ref)
        for i, n in enumerate(ns):
            rows.append(
                {"experiment": "decay", "data": f"cube d={d} in R^{AMBIENT}", "n": n, "fresh_m": m}
                | {"semidual_H0": round(float(est[i]), 6), "exact_OT": round(float(ref[i]), 6)}
                | {"ratio": round(float(est[i] / ref[i]), 4)}
            )
        metrics[f"decay_slope_semidual_d{d}"] = slope_e
        metrics[f"decay_slope_ot_d{d}"] = slope_r
        metrics[f"decay_rate_rel_diff_d{d}"] = abs(slope_e - slope_r) / abs(slope_r)
    metrics["decay_rate_rel_diff_max"] = max(metrics[f"decay_rate_rel_diff_d{d}"] for d in dims)
    metrics["semidual_over_ot_min"] = float(min(ratios))
    metrics["semidual_over_ot_max"] = float(max(ratios))  # <= 1: H(0) is a lower bound of OT
    return rows, metrics, {"ns": ns, "curves": curves}


def _accuracy(size: tuple, rng: np.random.Generator) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Predicted sampling error (LOO H(0) of the atoms) against a sandwiched exact OT(rho, rho_n)."""
    import ot

    from geode.probabilistic.ot_sampling_error.estimators import sampling_error
    from geode.probabilistic.ot_sampling_error.richardson import wasserstein_pp

    n, per_atom, reps = size
    m = per_atom * n
    rows, rel, rel_ctrl, width = [], {}, {}, {}
    for kind, d in ACCURACY_SUITE:
        est, lo, up, two = [], [], [], []
        for _ in range(reps):
            Z = _manifold(kind, d, 2 * n + 2 * m, rng)  # one draw (one embedding), split four ways
            atoms, other, fit, held = Z[:n], Z[n : 2 * n], Z[2 * n : 2 * n + m], Z[2 * n + m :]
            est.append(sampling_error(atoms, p=2))
            M = ot.dist(fit, atoms)  # squared Euclidean
            G, log = ot.emd(np.full(m, 1 / m), np.full(n, 1 / n), M, log=True, numItermax=10**7)
            val = float(np.sum(G * M))
            g = np.asarray(log["v"])
            held_c = ot.dist(held, atoms) - g[None, :]
            lo.append(float(held_c.min(axis=1).mean() + g.mean()))
            up.append(float(val))
            two.append(float(wasserstein_pp(other, atoms, p=2)))
        ref = 0.5 * (np.mean(lo) + np.mean(up))
        key = f"{kind}{d}"
        rel[key] = float(np.mean(est) / ref - 1.0)
        rel_ctrl[key] = float(np.mean(two) / ref - 1.0)
        width[key] = float((np.mean(up) - np.mean(lo)) / ref)
        rows.append(
            {"experiment": "accuracy", "data": f"{kind} d={d} in R^{AMBIENT}", "n": n, "fresh_m": m}
            | {"predicted_loo_H0": round(float(np.mean(est)), 6), "reference_OT": round(float(ref), 6)}
            | {"reference_lower": round(float(np.mean(lo)), 6), "reference_upper": round(float(np.mean(up)), 6)}
            | {"rel_error": round(rel[key], 4), "two_sample_rel_error": round(rel_ctrl[key], 4)}
        )
    mid = [f"{k}{d}" for k, d in ACCURACY_SUITE if 3 <= d <= 8]
    low = [f"{k}{d}" for k, d in ACCURACY_SUITE if d <= 2]
    metrics = {
        "accuracy_median_rel_error": float(np.median([abs(rel[k]) for k in mid])),
        "accuracy_median_signed_rel_error": float(np.median([rel[k] for k in mid])),
        "accuracy_max_rel_error": float(np.max([abs(rel[k]) for k in mid])),
        "accuracy_low_d_median_rel_error": float(np.median([abs(rel[k]) for k in low])),
        "accuracy_d12_rel_error": float(abs(rel["cube12"])),
        "two_sample_median_rel_error": float(np.median([abs(rel_ctrl[k]) for k in mid])),
        "reference_median_rel_width": float(np.median([width[k] for k in mid])),
    }
    metrics |= {f"accuracy_rel_error_{k}": v for k, v in rel.items()}
    return rows, metrics


def _sinkhorn(size: tuple, rng: np.random.Generator) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """The calibrated Sinkhorn epsilon against 10x smaller and larger ones: error of the cost vs the closed form."""
    from geode.probabilistic.ot_sampling_error.estimators import calibrate_sinkhorn_eps
    from geode.probabilistic.ot_sampling_error.richardson import wasserstein_pp

    n, reps = size
    U, S, c, w_true = _affine_truth(RICHARDSON_D, rng)
    err: dict[str, list[float]] = {"exact": [], "calibrated": [], "calibrated/10": [], "calibrated*10": []}
    eps_used = []
    for _ in range(reps):
        X, Y = rng.random((n, RICHARDSON_D)) @ U, (rng.random((n, RICHARDSON_D)) @ S + c) @ U
        eps = calibrate_sinkhorn_eps(X, p=2)
        eps_used.append(eps)
        err["exact"].append(wasserstein_pp(X, Y, p=2) - w_true)
        for name, e in (("calibrated", eps), ("calibrated/10", eps / 10), ("calibrated*10", eps * 10)):
            err[name].append(wasserstein_pp(X, Y, p=2, reg=e) - w_true)
    metrics = {
        f"sinkhorn_abs_error_{k.replace('/', '_over_').replace('*', '_times_')}": float(np.mean(np.abs(v)))
        for k, v in err.items()
    }
    metrics["sinkhorn_calibrated_eps"] = float(np.mean(eps_used))
    rows = [
        {"experiment": "Sinkhorn calibration", "epsilon": k, "n": n, "reps": reps}
        | {"mean_error_vs_true_W2sq": round(float(np.mean(v)), 5), "true_W2sq": round(w_true, 5)}
        for k, v in err.items()
    ]
    return rows, metrics


def _affine_truth(d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """A Brenier map T(x) = U S U^T x + U c (S symmetric positive definite) and W_2^2(rho, T#rho) in closed form."""
    U = _frame(d, rng)  # (d, 20): rows are the frame, x = z U
    R, _ = np.linalg.qr(rng.standard_normal((d, d)))
    S = R @ np.diag(np.linspace(0.5, 2.0, d)) @ R.T
    c = 0.5 * rng.standard_normal(d)
    K = S - np.eye(d)
    mean, second = np.full(d, 0.5), np.eye(d) / 12 + 0.25 * np.ones((d, d))  # z ~ U[0,1]^d
    w_true = float(np.trace(K @ K @ second) + 2 * c @ K @ mean + c @ c)  # E|(S - I) z + c|^2
    return U, S, c, w_true


def _richardson(size: tuple, rng: np.random.Generator) -> tuple[list[dict[str, Any]], dict[str, float], dict]:
    from geode.probabilistic.ot_sampling_error.richardson import richardson_wasserstein

    n, reps, bags = size
    d = RICHARDSON_D
    U, S, c, w_true = _affine_truth(d, rng)
    plug, rich, oracle, d_hat, infl, amb, low = [], [], [], [], [], [], []
    for _ in range(reps):
        z1, z2 = rng.random((n, d)), rng.random((n, d))
        X, Y = z1 @ U, (z2 @ S + c) @ U  # Y = T(X') for an independent X'
        sub = int(rng.integers(2**31))
        est, info = richardson_wasserstein(X, Y, p=2, n_bags=bags, seed=sub, log=True)
        plug.append(info["plugin"])
        rich.append(est)
        d_hat.append(info["d_int"])
        infl.append(info["variance_inflation"])
        # the same halvings with the true d_int (the extrapolation is linear in the half-sample mean)
        for dd, out in ((d, oracle), (AMBIENT, amb), (2, low)):
            q = 2.0 ** (2.0 / dd)
            out.append((q * info["plugin"] - info["half_mean"]) / (q - 1.0))
    plug, rich, oracle = np.asarray(plug), np.asarray(rich), np.asarray(oracle)
    b_plug, b_rich, b_orac = plug.mean() - w_true, rich.mean() - w_true, oracle.mean() - w_true
    b_amb, b_low = float(np.mean(amb)) - w_true, float(np.mean(low)) - w_true
    tiny = 1e-12
    se = float(rich.std(ddof=1) / np.sqrt(reps)) if reps > 1 else 0.0
    metrics = {
        "w2sq_true": w_true,
        # the thresholded quantity: the Richardson bias relative to the plug-in's (averaged over seeds)
        "richardson_rel_bias": float(b_rich / max(abs(b_plug), tiny)),
        "richardson_rel_bias_ambient_d": float(b_amb / max(abs(b_plug), tiny)),
        "richardson_rel_bias_d2": float(b_low / max(abs(b_plug), tiny)),
        "oracle_richardson_rel_bias": float(b_orac / max(abs(b_plug), tiny)),
        "plugin_bias_z": float(b_plug / max(float(plug.std(ddof=1) / np.sqrt(reps)) if reps > 1 else tiny, tiny)),
        "plugin_bias": float(b_plug),
        "richardson_bias": float(b_rich),
        "richardson_bias_reduction": float(abs(b_plug) / max(abs(b_rich), tiny)),
        "richardson_bias_se": se,
        # informative: the reduction if the Richardson bias were 2 standard errors further from zero
        "richardson_bias_reduction_2se": float(abs(b_plug) / max(abs(b_rich) + 2 * se, tiny)),
        "richardson_std_inflation": float(rich.std() / max(plug.std(), tiny)),
        "richardson_nominal_variance_inflation": float(np.mean(infl)),
        "richardson_d_int_mean": float(np.mean(d_hat)),
        "oracle_richardson_bias": float(b_orac),
        "oracle_richardson_bias_reduction": float(abs(b_plug) / max(abs(b_orac), tiny)),
        "oracle_richardson_std_inflation": float(oracle.std() / max(plug.std(), tiny)),
    }
    rows = [
        {"experiment": "Richardson", "estimator": name, "d_int": dd, "n": n, "reps": reps}
        | {"mean": round(float(v.mean()), 5), "bias": round(float(v.mean() - w_true), 5)}
        | {"std": round(float(v.std()), 5), "true_W2sq": round(w_true, 5)}
        for name, dd, v in (
            ("plug-in W_2^2 (exact OT)", "-", plug),
            ("Richardson, estimated d_int", round(float(np.mean(d_hat)), 2), rich),
            ("Richardson, true d_int", d, oracle),
        )
    ]
    return rows, metrics, {"plug": plug, "rich": rich, "oracle": oracle, "w_true": w_true}


def _figures(id_rows: list[dict[str, Any]], decay: dict, rich: dict) -> dict[str, Any]:
    from matplotlib.figure import Figure

    fig_id = Figure(figsize=(8, 3.4), layout="constrained")
    ax = fig_id.subplots()
    labels = [r["data"].split(" in")[0] for r in id_rows]
    x = np.arange(len(id_rows))
    for j, (k, name) in enumerate((("ot_d", "OT decay (ours)"), ("twonn_d", "TwoNN"), ("mle_d", "MLE (k=20)"))):
        ax.bar(x + (j - 1) * 0.27, [r[k] for r in id_rows], width=0.27, label=name)
    ax.scatter(x, [r["true_d"] for r in id_rows], color="k", marker="_", s=300, zorder=3, label="true d")
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("intrinsic dimension")
    ax.legend(fontsize=8)

    fig_decay = Figure(figsize=(5, 3.6), layout="constrained")
    ax = fig_decay.subplots()
    for d, (est, ref) in decay["curves"].items():
        (line,) = ax.loglog(decay["ns"], ref, "o-", label=f"exact OT, d={d}")
        ax.loglog(decay["ns"], est, "s--", color=line.get_color(), label=f"semi-dual H(0), d={d}")
    ax.set_xticks(decay["ns"], [str(n) for n in decay["ns"]])
    ax.set_xticks([], minor=True)
    ax.set_xlabel("sample size n")
    ax.set_ylabel("OT(rho, rho_n), p = 2")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")

    fig_rich = Figure(figsize=(5, 3.6), layout="constrained")
    ax = fig_rich.subplots()
    for key, name in (("plug", "plug-in"), ("rich", "Richardson (estimated d)"), ("oracle", "Richardson (true d)")):
        ax.hist(rich[key] - rich["w_true"], bins=12, alpha=0.5, label=name)
    ax.axvline(0.0, color="k")
    ax.set_xlabel("estimate - true W_2^2")
    ax.legend(fontsize=8)
    return {"id_estimates": fig_id, "sampling_error_decay": fig_decay, "richardson_bias": fig_rich}


@register(
    "ot-sampling-error",
    claim=(
        "The semi-dual at zero potential gives a tuning-free, solver-free estimate of OT(rho, rho_n) whose "
        "multi-scale decay estimates the intrinsic dimension, and intrinsic-dimension Richardson extrapolation "
        "strongly debiases Wasserstein estimates."
    ),
    paper_figure="no number in the abstract: 'strongly debiases'; fast ID estimator on manifolds and images",
    baselines=(
        "TwoNN (Facco et al. 2017)",
        "MLE (Levina-Bickel 2004)",
        "plug-in W_2^2 (exact OT, POT emd)",
        "two-sample exact OT (solver-based sampling error)",
    ),
    thresholds=(
        Threshold(
            "id",
            "ot_median_rel_error",
            "<=",
            0.15,
            "median relative ID error <= 15% on the synthetic suite (2 of 3 seeds)",
            agg="2 of 3",
            control="ambient_median_rel_error",
            arms=("ot",),
            requires=(),
        ),
        Threshold(
            "accuracy",
            "accuracy_median_rel_error",
            "<=",
            0.25,
            "predicted sampling error within 25% of exact OT(rho, rho_n), median over d = 3..8 (2 of 3 seeds)",
            agg="2 of 3",
            control="two_sample_median_rel_error",
            arms=("ot",),
        ),
        Threshold(
            "debias_hi",
            "richardson_rel_bias",
            "<=",
            0.2,
            "seed-averaged Richardson bias <= 1/5 of the plug-in's (upper 95% bound), d_int 6",
            agg="bound95",
            control="richardson_rel_bias_d2",
            arms=("richardson", "plug-in W2"),
            requires=("bias_resolved",),
        ),
        Threshold(
            "debias_lo",
            "richardson_rel_bias",
            ">=",
            -0.2,
            "and no over-correction beyond 1/5 (lower 95% bound)",
            agg="bound95",
            control="richardson_rel_bias_ambient_d",
            arms=("richardson", "plug-in W2"),
            requires=("bias_resolved",),
        ),
    ),
    floors=(
        Threshold(
            "reference_exact",
            "reference_median_rel_width",
            "<=",
            0.10,
            "floor: the exact-OT reference sandwich is narrow (median width <= 10%, every seed)",
            agg="all",
        ),
        Threshold(
            "bias_resolved",
            "plugin_bias_z",
            ">=",
            3.0,
            "floor: the plug-in bias is resolved (>= 3 standard errors, every seed)",
            agg="all",
            arms=("plug-in W2",),
        ),
    ),
    reproduced="id and accuracy and debias_hi and debias_lo",
    partial="id or accuracy or (debias_hi and debias_lo)",
    method=("ot", "richardson"),
    untuned={
        "ot": "no hyper-parameter: the paper's estimator of the intrinsic dimension from OT sampling errors",
        "richardson": "no hyper-parameter: Richardson extrapolation with the paper's rate",
        "plug-in W2": "no hyper-parameter (exact OT, POT emd)",
        "two-sample OT": "no hyper-parameter (exact OT between the sample and an independent n-sample)",
        "TwoNN": "no hyper-parameter selected on data (the usual fixed discard of the top 10% of ratios)",
    },
    key_metric="accuracy_median_rel_error",
    revision=2,
)
def run(mode: str, seed: int) -> Outcome:
    """(i) ID on embedded manifolds and digits; (ii) decay vs exact OT; (iii) Richardson bias at d_int = 6."""
    size = _SIZES[mode]
    rng = np.random.default_rng(seed)
    id_rows, metrics = _id_suite(size["id_n"], rng, seed)
    if size["digits"]:
        digit_row, digit_metrics = _digits(seed)
        id_table = id_rows + [digit_row]
        metrics |= digit_metrics
    else:
        id_table = id_rows
    decay_rows, decay_metrics, decay = _decay(size["decay"], rng)
    metrics |= decay_metrics
    rich_rows, rich_metrics, rich = _richardson(size["rich"], rng)
    metrics |= rich_metrics
    acc_rows, acc_metrics = _accuracy(size["acc"], rng)
    metrics |= acc_metrics
    sink_rows, sink_metrics = _sinkhorn(size["sink"], rng)
    metrics |= sink_metrics
    summary = (
        f"predicted sampling error vs exact OT: median |rel. error| {100 * metrics['accuracy_median_rel_error']:.1f}% "
        f"(d 3..8; d <= 2 {100 * metrics['accuracy_low_d_median_rel_error']:.0f}%, two-sample control "
        f"{100 * metrics['two_sample_median_rel_error']:.0f}%); Richardson bias / plug-in bias "
        f"{metrics['richardson_rel_bias']:+.3f}; "
        f"median rel. ID error {100 * metrics['ot_median_rel_error']:.1f}% (TwoNN "
        f"{100 * metrics['twonn_median_rel_error']:.1f}%, MLE {100 * metrics['mle_median_rel_error']:.1f}%); "
        f"W_2^2 bias at d_int=6: plug-in {metrics['plugin_bias']:+.4f} -> "
        f"Richardson {metrics['richardson_bias']:+.4f} +- {metrics['richardson_bias_se']:.4f} "
        f"({metrics['richardson_bias_reduction']:.1f}x), std x{metrics['richardson_std_inflation']:.2f}"
    )
    n_r, reps, bags = size["rich"]
    notes = [
        f"ID suite: {size['id_n']} uniform points per manifold (cubes, spheres S^d, swiss roll) rotated into "
        f"R^{AMBIENT}; our estimator uses p = 2 and the dyadic scales n, n/2, n/4, n/8 (leave-one-out); TwoNN "
        "discards the top 10% of ratios; MLE uses k = 20 with MacKay-Ghahramani averaging.",
        "Decay: H(0) is computed with the same m fresh points that the exact OT (POT emd) transports to the n "
        "atoms, so H(0) <= OT holds exactly; the reference OT(rho_m, rho_n) is a proxy for the semi-discrete "
        "OT(rho, rho_n).",
        f"Richardson: X uniform on [0,1]^{RICHARDSON_D} rotated into R^{AMBIENT}, Y = T(X') with T an affine Brenier "
        f"map (symmetric positive-definite linear part), so W_2^2 is known in closed form; n = {n_r}, {reps} "
        f"repetitions, {bags} bags; d_int estimated by intrinsic_dimension (max over X and Y). The 'true d_int' "
        "row reuses the same halvings with d_int = 6 (informative only).",
        "Biases are means over repetitions; richardson_bias_se is the Monte Carlo standard error of the "
        "Richardson mean, so a reduction factor is only resolved when the Richardson bias exceeds about 2 se; "
        "richardson_bias_reduction_2se is the (informative) factor with the Richardson bias pushed out by 2 se.",
    ]
    return Outcome(
        metrics=metrics,
        table=id_table + decay_rows + rich_rows + acc_rows + sink_rows,
        figures=_figures(id_rows, decay, rich),
        summary=summary,
        notes=notes,
    )
