"""The paper's claims: solver-free ID estimates within 15% on manifolds, and Richardson removing >= 5x of the bias."""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register
from geode.probabilistic.ot_sampling_error.baselines import mle_dimension, twonn_dimension
from geode.probabilistic.ot_sampling_error.estimators import intrinsic_dimension, sampling_error
from geode.probabilistic.ot_sampling_error.richardson import richardson_wasserstein, wasserstein_pp

AMBIENT = 20  # ambient dimension of the synthetic manifolds
RICHARDSON_D = 6  # d_int of the Richardson experiment (fixed by the issue)
RICHARDSON_N = 1000  # n of the Richardson experiment (fixed by the issue)

# (kind, intrinsic dimension): uniform cubes and spheres S^d, and the swiss roll, all embedded in R^20
SUITE: tuple[tuple[str, int], ...] = (
    ("cube", 2),
    ("cube", 4),
    ("cube", 6),
    ("cube", 8),
    ("sphere", 2),
    ("sphere", 4),
    ("sphere", 6),
    ("sphere", 8),
    ("swissroll", 2),
)

_SIZES: dict[str, dict[str, Any]] = {
    # id_n: points per manifold; decay: (dims, atom sizes, fresh points m, repetitions);
    # rich: (n, repetitions, bags)
    # digits: whether to run the (informative) load_digits row, which imports scikit-learn
    "smoke": {"id_n": 500, "decay": ((3,), (25, 50, 100), 600, 1), "rich": (200, 2, 2), "digits": False},
    "quick": {
        "id_n": 4000,
        "decay": ((3, 5), (25, 50, 100, 200, 400), 4000, 3),
        "rich": (RICHARDSON_N, 20, 8),
        "digits": True,
    },
    "full": {
        "id_n": 16000,
        "decay": ((3, 5), (25, 50, 100, 200, 400, 800), 8000, 5),
        "rich": (RICHARDSON_N, 60, 8),
        "digits": True,
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
    elif kind == "swissroll":  # scikit-learn's make_swiss_roll parametrisation, without the import
        t = 1.5 * np.pi * (1.0 + 2.0 * rng.random(n))
        Z = np.column_stack([t * np.cos(t), 21.0 * rng.random(n), t * np.sin(t)])
    else:  # pragma: no cover
        raise ValueError(kind)
    return Z @ _frame(Z.shape[1], rng)


def _id_suite(n: int, rng: np.random.Generator, seed: int) -> tuple[list[dict[str, Any]], dict[str, float]]:
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
    metrics |= {f"{k}_max_rel_error": float(np.max(v)) for k, v in rel.items()}
    metrics |= {f"ot_d_{kind}{d}": float(r["ot_d"]) for (kind, d), r in zip(SUITE, rows)}
    return rows, metrics


def _digits(seed: int) -> tuple[dict[str, Any], dict[str, float]]:
    from sklearn.datasets import load_digits

    X = load_digits().data.astype(float)
    X = X + 1e-6 * np.random.default_rng(seed).standard_normal(X.shape)  # break exact duplicates (integer pixels)
    est = {"ot": intrinsic_dimension(X, seed=seed), "twonn": twonn_dimension(X), "mle": mle_dimension(X)}
    row = {"experiment": "ID", "data": "load_digits (64-D, no ground truth)", "n": X.shape[0], "true_d": "-"}
    return row | {f"{k}_d": round(float(v), 3) for k, v in est.items()}, {
        f"digits_{k}_d": float(v) for k, v in est.items()
    }


def _decay(size: tuple, rng: np.random.Generator) -> tuple[list[dict[str, Any]], dict[str, float], dict]:
    """Semi-dual estimate vs the exact OT between m fresh points and the n atoms, for growing n."""
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
    n, reps, bags = size
    d = RICHARDSON_D
    U, S, c, w_true = _affine_truth(d, rng)
    plug, rich, oracle, d_hat, infl = [], [], [], [], []
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
        q = 2.0 ** (2.0 / d)
        oracle.append((q * info["plugin"] - info["half_mean"]) / (q - 1.0))
    plug, rich, oracle = np.asarray(plug), np.asarray(rich), np.asarray(oracle)
    b_plug, b_rich, b_orac = plug.mean() - w_true, rich.mean() - w_true, oracle.mean() - w_true
    tiny = 1e-12
    se = float(rich.std(ddof=1) / np.sqrt(reps)) if reps > 1 else 0.0
    metrics = {
        "w2sq_true": w_true,
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
    baselines=("TwoNN (Facco et al. 2017)", "MLE (Levina-Bickel 2004)", "plug-in W_2^2 (exact OT, POT emd)"),
    thresholds=(
        Threshold("id", "ot_median_rel_error", "<=", 0.15, "median relative ID error <= 15% on the synthetic suite"),
        Threshold(
            "debias", "richardson_bias_reduction", ">=", 5.0, "Richardson removes >= 5x of the plug-in bias, d_int 6"
        ),
    ),
    reproduced="id and debias",
    partial="id or debias",
    key_metric="ot_median_rel_error",
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
    summary = (
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
        table=id_table + decay_rows + rich_rows,
        figures=_figures(id_rows, decay, rich),
        summary=summary,
        notes=notes,
    )
