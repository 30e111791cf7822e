"""Claim check: GA-SRMC against SRMC (and MALA, FisherMALA) on anisotropic Gaussians and logistic posteriors.

**Protocol (revision 2, issue 18).** Every kernel (SRMC, GA-SRMC, GA-SRMC with the oracle metric, and
both under a FisherMALA base) picks its own repellence strength :math:`\\alpha` per target on validation
chains, from the log grid :math:`\\{0.01, 0.1, 0.5, 1, 2, 3, 5, 10\\}` (which holds the official
grid :math:`\\{0.5, 1, 2, 3, 5\\}`), with :func:`geode.claims.tune` (the same budget for every kernel, two
extra points past an edge); the validation score is the *median* over replicates of the replicate MSE of
the posterior-mean estimate (averaged over coordinates). The MSE is then measured at the selected
:math:`\\alpha` on fresh seeds and fresh starting draws (``reps_test`` >= 50 replicates, median again:
the audit found the logistic figures dominated by replicate outliers). SRMC, GA-SRMC and the oracle run
with common random numbers on the test chains; the negative control, GA-SRMC with ``metric="identity"``
(SRMC itself), runs at SRMC's selected :math:`\\alpha` on *other* seeds, so its ratio is the noise floor of
the MSE ratio. The shared-grid ratio of revision 1 (geometric mean over the official grid of the
per-:math:`\\alpha` ratios) is still reported, from the validation chains.

**Thresholds.** Issue 02 fixed them on the shared grid: ratio MSE(SRMC)/MSE(GA-SRMC) >= 2 at
:math:`\\kappa = 100` (reproduced, with "rises with :math:`\\kappa`" and "> 1 on the synthetic and
breast-cancer posteriors"), >= 1.2 (partial). Issue 18 moves the same values to the tuned protocol (the
shared grid cannot express GA's mechanism: with :math:`\\operatorname{tr} M = d` GA's gain is
:math:`\\alpha d / \\operatorname{tr}\\Sigma`, 0.04 :math:`\\alpha` at :math:`\\kappa = 100`, so on
:math:`\\alpha \\le 5` it never gets a strong feedback; the oracle metric's shared-grid ratio was 1.03).
Aggregation over seeds (added): the 2x bound on the one-sided 95% geometric bound over seeds
(``geobound95``), the others in at least 2 of 3 seeds. Validity floor (issue 18): at most 5% of the
chains of each kernel diverge at its selected :math:`\\alpha` (a chain diverges when its mean is more than
10 posterior standard deviations off in a coordinate, or it overflows). **Old verdict** (revision 1,
shared grid, seed 0): *not reproduced*, ratio 1.06 at :math:`\\kappa = 100`, 73% / 80% of the SR-/GA-
FisherMALA configurations diverged (the Fisher estimate's feedback, fixed in
:mod:`geode.probabilistic.fisher` by a warm-up and clipping).

**Inferred / deliberate differences** (beside those of the package docstring): SRMC's official
conventions are followed where they exist (step :math:`\\varepsilon = 2\\tau`; the :math:`\\theta` step 1.0
on Gaussians and 0.3 on the logistic posteriors, as the official MALA runs use; 30% burn-in); the step size
is our pilot-tuned MALA step (acceptance ~0.7) shared by every MALA-based kernel rather than the official
fixed 0.2 / 0.01; :math:`\\alpha` ramps up linearly over the first 100 steps (the kernels' default, the
official ``alpha_warmup_steps``); the official code drops diverged runs, we count them (both are
reported: means over replicates with and without the diverged chains); Gaussians are rotated only (the
diagonal and rotated Gaussians are equal in law for every kernel here); MNIST d = 785 is replaced by
digits 3 vs 8 (d = 65), reported, not thresholded. The synthetic posterior's reference mean is compared
with the official ``TRUE_MEAN_LOGISTIC`` (a long HMC run of the official code).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read inconclusive on the same runs): unresolved: strong; floor failed: few_diverged; not tuned by
the protocol: Gaussian kappa=100 (rot): GA-SRMC, Gaussian kappa=1.3 (rot): GA-SRMC, Gaussian kappa=10 (rot):
GA-SRMC, Gaussian kappa=1.3 (rot): SRMC, Gaussian kappa=10 (rot): SRMC. No idea ablation or learned-arm reference
is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

__all__ = ["run"]

GRID = (0.01, 0.1, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)  # log grid 0.01..10 holding the official one
SHARED_GRID = (0.5, 1.0, 2.0, 3.0, 5.0)  # the official SRMC grid (revision 1's protocol, reported)
KERNELS = ("SRMC", "GA-SRMC", "GA-SRMC (oracle M)", "SR-FisherMALA", "GA-FisherMALA")
LOGISTIC = ("synthetic", "breast_cancer", "digits")
THRESHOLDED_LOGISTIC = ("synthetic", "breast_cancer")
LOGISTIC_THETA_STEP = 0.3  # the official MALA runs on the synthetic logistic posterior
DIVERGED_SD = 10.0  # a chain whose mean is this many posterior s.d. off (any coordinate) has diverged
# official reference posterior mean of the synthetic logistic target (srmc-project, figure 2 script)
TRUE_MEAN_LOGISTIC = np.array(
    [-0.62130, -0.67992, 0.75756, 0.51509, -1.60485, 1.15495, -0.06097, -1.09287, 0.92115, 0.51886]
)


@dataclass(frozen=True)
class _Sizes:
    kappas: tuple[float, ...]
    dim: int
    reps_val: int
    reps_test: int
    n_total: int
    grid: tuple[float, ...]
    extend: int
    pilot_iters: int
    pilot_steps: int
    ref_chains: int
    ref_steps: int
    digits_rows: int | None


SIZES = {
    "smoke": _Sizes((1.3, 10.0, 100.0), 10, 3, 4, 60, (0.1, 1.0, 10.0), 0, 2, 20, 8, 60, 60),
    "quick": _Sizes((1.3, 10.0, 100.0), 10, 12, 50, 2000, GRID, 2, 7, 100, 32, 2000, None),
    "full": _Sizes((1.3, 10.0, 100.0, 1000.0), 10, 50, 100, 20000, GRID, 2, 8, 200, 64, 20000, None),
}


# The tuned table's keys are "<target label>: <kernel>" (one tuning per target, labels as in _gaussian_problem and
# _logistic_problem): the arms the thresholds compare are the kernels on the thresholded targets of smoke and
# quick mode (full mode's kappa=1000 also enters "rises" but is absent from the other modes' tables).
_KAPPA_TARGETS = tuple(f"Gaussian kappa={k:g} (rot)" for k in SIZES["quick"].kappas)
_LOGISTIC_TARGETS = ("synthetic logistic (d=10)", "breast cancer logistic (d=31)")
_KAPPA100 = "Gaussian kappa=100 (rot)"


def _arms(kernels: tuple[str, ...], targets: tuple[str, ...]) -> tuple[str, ...]:
    """The tuned table's keys of ``kernels`` on ``targets``."""
    return tuple(f"{t}: {k}" for k in kernels for t in targets)


def _rng(seed: int, *keys: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, *keys]))


def _tune_step_size(
    log_prob: Any, grad: Any, x0: np.ndarray, lam_max: float, rng: np.random.Generator, iters: int, steps: int
) -> float:
    """MALA's step size at acceptance ~0.7: bisection on log tau around d^{-1/3}/lambda_max, one pilot per probe."""
    from geode.probabilistic.mala import MALA
    from geode.probabilistic.sampling import sample

    d = x0.shape[-1]
    lo, hi = math.log(0.125 * d ** (-1 / 3) / lam_max), math.log(8.0 * d ** (-1 / 3) / lam_max)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        res = sample(MALA(log_prob, grad, math.exp(mid)), x0, steps, seed=rng, store=False)
        lo, hi = (mid, hi) if res.acceptance_rate > 0.7 else (lo, mid)
    return math.exp(0.5 * (lo + hi))


class _Boxed:
    """The target restricted to the box ``|x - centre| <= bound`` (coordinate-wise): ``log_prob = -inf`` outside.

    With ``bound`` a thousand standard deviations the box holds all the mass to machine precision, but a
    chain whose repellence feedback diverges (large alpha) stays finite and shows up as a huge MSE.
    """

    def __init__(self, target: Any, centre: np.ndarray, bound: float) -> None:
        self.target, self.centre, self.bound = target, centre, bound
        self.grad_log_prob = target.grad_log_prob
        self.dim = target.dim

    def log_prob(self, x: np.ndarray) -> np.ndarray:
        inside = np.all(np.abs(x - self.centre) <= self.bound, axis=-1)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.where(inside, self.target.log_prob(np.where(inside[..., None], x, self.centre)), -np.inf)


@dataclass
class _Problem:
    name: str
    label: str
    target: Any
    mean: np.ndarray
    var: np.ndarray
    fisher: np.ndarray | None  # for the oracle metric
    x0: np.ndarray  # (reps_val + reps_test, d) draws from the target: validation starts, then test starts
    step_size: float
    kappa: float | None = None
    geometry: str | None = None
    theta_step: float = 1.0


def _gaussian_problem(kappa: float, rotated: bool, sz: _Sizes, seed: int, key: int) -> _Problem:
    from geode.probabilistic.targets import anisotropic_gaussian

    t = anisotropic_gaussian(kappa, sz.dim, rotated=rotated, seed=0)
    rng = _rng(seed, key, 0)
    x0 = t.sample(rng, sz.reps_val + sz.reps_test)
    lam = float(np.linalg.eigvalsh(t.precision)[-1])
    tau = _tune_step_size(t.log_prob, t.grad_log_prob, t.sample(rng, 16), lam, rng, sz.pilot_iters, sz.pilot_steps)
    geo = "rot" if rotated else "diag"
    return _Problem(
        f"kappa{kappa:g}_{geo}",
        f"Gaussian kappa={kappa:g} ({geo})",
        t,
        t.mean,
        t.variance,
        t.fisher,
        x0,
        tau,
        kappa,
        geo,
    )


def _logistic_problem(name: str, sz: _Sizes, seed: int, key: int) -> _Problem:
    from geode.probabilistic.fisher import fisher_from_samples
    from geode.probabilistic.mala import MALA
    from geode.probabilistic.sampling import sample
    from geode.probabilistic.targets import breast_cancer_logistic, digits_logistic, synthetic_logistic

    if name == "synthetic":
        t = synthetic_logistic()
    elif name == "breast_cancer":
        t = breast_cancer_logistic()
    else:
        t = digits_logistic((3, 8), max_rows=sz.digits_rows)
    rng = _rng(seed, key, 0)
    d = t.dim
    b = t.map_estimate()
    H = -t.hessian(b)
    L = np.linalg.cholesky(np.linalg.inv(H))  # Laplace covariance = L L^T

    # reference run: MALA on the Laplace-whitened posterior z = L^{-1}(beta - b), from Laplace draws
    def lp_z(z: np.ndarray) -> np.ndarray:
        return t.log_prob(b + z @ L.T)

    def g_z(z: np.ndarray) -> np.ndarray:
        return t.grad_log_prob(b + z @ L.T) @ L

    z0 = rng.standard_normal((sz.ref_chains, d))
    tau_ref = _tune_step_size(lp_z, g_z, z0[:16], 1.0, rng, sz.pilot_iters, sz.pilot_steps)
    ref = sample(MALA(lp_z, g_z, tau_ref), z0, sz.ref_steps, seed=rng, burn_in=sz.ref_steps // 5)
    draws = b + ref.samples @ L.T  # (steps, chains, d)
    flat = draws.reshape(-1, d)
    mean, var = flat.mean(axis=0), flat.var(axis=0)
    thin = flat[:: max(1, flat.shape[0] // 4000)]
    fisher = fisher_from_samples(t.grad_log_prob(thin))
    # replicate starting points: reference draws spread over time and chains
    n0 = sz.reps_val + sz.reps_test
    idx_t = np.linspace(draws.shape[0] // 2, draws.shape[0] - 1, n0).astype(int)
    x0 = draws[idx_t, np.arange(n0) % draws.shape[1]]
    lam = float(np.linalg.eigvalsh(H)[-1])
    tau = _tune_step_size(t.log_prob, t.grad_log_prob, draws[-1, :16], lam, rng, sz.pilot_iters, sz.pilot_steps)
    label = {
        "synthetic": "synthetic logistic (d=10)",
        "breast_cancer": "breast cancer logistic (d=31)",
        "digits": f"digits 3 vs 8 logistic (d={d})",
    }[name]
    return _Problem(name, label, t, mean, var, fisher, x0, tau, theta_step=LOGISTIC_THETA_STEP)


def _kernel(prob: _Problem, t: Any, method: str, alphas: np.ndarray) -> Any:
    """The kernel ``method`` over an array of per-chain alphas (defaults of the components otherwise)."""
    from geode.probabilistic.ga_srmc.kernel import GASRMC
    from geode.probabilistic.srmc import SRMC

    kw: dict[str, Any] = dict(theta_step=prob.theta_step)
    tau = prob.step_size
    if method == "SRMC":
        return SRMC(t.log_prob, t.grad_log_prob, tau, alphas, **kw)
    if method == "GA-SRMC":
        return GASRMC(t.log_prob, t.grad_log_prob, tau, alphas, metric="fisher", **kw)
    if method == "GA-SRMC (oracle M)":
        return GASRMC(t.log_prob, t.grad_log_prob, tau, alphas, metric=np.linalg.inv(prob.fisher), **kw)
    if method == "GA-SRMC (identity M)":
        return GASRMC(t.log_prob, t.grad_log_prob, tau, alphas, metric="identity", **kw)
    if method == "SR-FisherMALA":
        return SRMC(t.log_prob, t.grad_log_prob, tau, alphas, base="fisher-mala", **kw)
    if method == "GA-FisherMALA":
        return GASRMC(t.log_prob, t.grad_log_prob, tau, alphas, base="fisher-mala", metric="fisher", **kw)
    raise ValueError(f"unknown kernel {method!r}")


def _batch(
    prob: _Problem, t: Any, method: str, alphas: tuple[float, ...], x0: np.ndarray, n_total: int, key: tuple[int, ...]
) -> dict[float, dict[str, Any]]:
    """Run ``method`` for every alpha x replicate as one array of chains; per alpha, per-replicate results."""
    from geode.probabilistic.sampling import sample

    reps = x0.shape[0]
    burn = int(round(0.3 * n_total))
    keep = n_total - burn
    record = max(1, keep // 40)
    sd = np.sqrt(prob.var)

    def go(al: tuple[float, ...]) -> Any:
        kernel = _kernel(prob, t, method, np.repeat(np.asarray(al, dtype=float), reps))
        return sample(kernel, np.tile(x0, (len(al), 1)), keep, seed=_rng(*key), burn_in=burn, record_every=record)

    out: dict[float, dict[str, Any]] = {}
    try:
        parts = [(alphas, go(alphas))]
    except FloatingPointError:  # some chain overflowed: run each alpha alone, keep those that finish
        parts = []
        for a in alphas:
            try:
                parts.append(((a,), go((a,))))
            except FloatingPointError:
                out[a] = dict(mse=np.full(reps, np.inf), diverged=np.ones(reps, bool), acc=0.0, curve=None)
    for al, res in parts:
        for j, a in enumerate(al):
            sl = slice(j * reps, (j + 1) * reps)
            err = res.mean[sl] - prob.mean
            with np.errstate(over="ignore", invalid="ignore"):
                mse = np.mean(err**2, axis=-1)
                div = ~np.all(np.abs(err) / sd <= DIVERGED_SD, axis=-1)
                curve = np.median(np.mean((res.running_means[:, sl] - prob.mean) ** 2, axis=-1), axis=1)
            out[a] = dict(
                mse=np.where(np.isfinite(mse), mse, np.inf),
                diverged=div,
                acc=float(np.mean(res.chain_acceptance_rate[sl])),
                curve=(res.checkpoints, curve),
            )
    return out


def _median(r: dict[str, Any]) -> float:
    return float(np.median(r["mse"]))


def _mean(r: dict[str, Any], drop: bool = False) -> float:
    m = r["mse"][~r["diverged"]] if drop else r["mse"]
    return float(np.mean(m)) if m.size else math.inf


def _ratio(num: float, den: float, clip: float = 1e3) -> float:
    if not math.isfinite(num) and not math.isfinite(den):
        return 1.0
    if den <= 0 or not math.isfinite(num):
        return clip
    return float(np.clip(num / den, 1 / clip, clip))


def _geomean(xs: list[float]) -> float:
    return float(np.exp(np.mean(np.log(xs))))


def _evaluate(prob: _Problem, sz: _Sizes, seed: int, key: int) -> dict[str, Any]:
    """Tune every kernel's alpha on validation chains, then measure each at its alpha on fresh test chains."""
    t = _Boxed(prob.target, prob.mean, 1e3 * float(np.sqrt(prob.var.max())))
    x_val, x_test = prob.x0[: sz.reps_val], prob.x0[sz.reps_val :]
    val: dict[str, dict[float, dict[str, Any]]] = {}

    def fit(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        a = float(params["alpha"])
        if method not in val:  # the whole grid as one batch, with common random numbers across kernels
            val[method] = _batch(prob, t, method, tuple(sz.grid), x_val, sz.n_total, (seed, key, 1))
        if a not in val[method]:  # a point past the grid's edge (tune's extension)
            val[method].update(_batch(prob, t, method, (a,), x_val, sz.n_total, (seed, key, 1, int(a * 1000))))
        return _median(val[method][a]), None

    res = tune(fit, {m: {"alpha": list(sz.grid)} for m in KERNELS}, maximize=False, extend=sz.extend)
    alpha = {m: float(res.params(m)["alpha"]) for m in KERNELS}
    test: dict[str, dict[str, Any]] = {}
    for m in KERNELS:
        test[m] = _batch(prob, t, m, (alpha[m],), x_test, sz.n_total, (seed, key, 2))[alpha[m]]
    # the base kernels (alpha = 0) on the same test chains, and the control on other seeds
    test["MALA"] = _batch(prob, t, "SRMC", (0.0,), x_test, sz.n_total, (seed, key, 2))[0.0]
    test["FisherMALA"] = _batch(prob, t, "SR-FisherMALA", (0.0,), x_test, sz.n_total, (seed, key, 2))[0.0]
    test["GA-SRMC (identity M)"] = _batch(
        prob, t, "GA-SRMC (identity M)", (alpha["SRMC"],), x_test, sz.n_total, (seed, key, 3)
    )[alpha["SRMC"]]
    med = {m: _median(r) for m, r in test.items()}
    shared = [a for a in SHARED_GRID if a in val["SRMC"] and a in val["GA-SRMC"]]
    baselines = ("MALA", "FisherMALA", "SRMC", "SR-FisherMALA")
    strongest = min(baselines, key=lambda m: med[m])
    return {
        "res": res,
        "alpha": alpha,
        "val": val,
        "test": test,
        "median": med,
        "ratio": _ratio(med["SRMC"], med["GA-SRMC"]),
        "oracle": _ratio(med["SRMC"], med["GA-SRMC (oracle M)"]),
        "fisher": _ratio(med["SR-FisherMALA"], med["GA-FisherMALA"]),
        "identity": _ratio(med["SRMC"], med["GA-SRMC (identity M)"]),
        "mala_over_ga": _ratio(med["MALA"], med["GA-SRMC"]),
        "strongest": strongest,
        "strongest_over_ga": _ratio(med[strongest], min(med["GA-SRMC"], med["GA-FisherMALA"])),
        "mean_ratio": _ratio(_mean(test["SRMC"]), _mean(test["GA-SRMC"])),
        "mean_ratio_dropped": _ratio(_mean(test["SRMC"], True), _mean(test["GA-SRMC"], True)),
        "shared": _geomean([_ratio(_median(val["SRMC"][a]), _median(val["GA-SRMC"][a])) for a in shared])
        if shared
        else 1.0,
        "diverged": {m: float(np.mean(test[m]["diverged"])) for m in (*KERNELS, "MALA", "FisherMALA")},
    }


def _table_rows(prob: _Problem, ev: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for m, r in ev["test"].items():
        rows.append(
            {
                "target": prob.label,
                "kernel": m,
                "alpha": ev["alpha"].get(m, ev["alpha"]["SRMC"] if "identity" in m else 0.0),
                "median_mse": _median(r) if math.isfinite(_median(r)) else 1e300,
                "mean_mse": min(_mean(r), 1e300),
                "mean_mse_without_diverged": min(_mean(r, True), 1e300),
                "diverged": float(np.mean(r["diverged"])),
                "acceptance": r["acc"],
                "step_size": prob.step_size,
            }
        )
    return rows


def _figures(kappas: tuple[float, ...], gauss: dict[float, dict[str, Any]], panels: list[tuple[str, dict]]) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig1, ax = plt.subplots(figsize=(5.5, 3.8))
    ks = list(kappas)
    for k, style, label in [
        ("ratio", "o-", "GA-SRMC, each kernel's tuned alpha"),
        ("oracle", "^:", "GA-SRMC oracle M, tuned"),
        ("fisher", "d-.", "GA vs SR under FisherMALA, tuned"),
        ("shared", "s--", "shared official grid (revision 1)"),
        ("identity", "x:", "control: identity M (noise floor)"),
    ]:
        ax.plot(ks, [gauss[kk][k] for kk in ks], style, label=label)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.axhline(2.0, color="r", lw=0.8, ls=":", label="threshold 2.0")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("condition number kappa")
    ax.set_ylabel("median MSE(SRMC) / median MSE(GA-SRMC)")
    ax.set_title("Rotated anisotropic Gaussians, d = 10")
    ax.legend(fontsize=7)
    fig1.tight_layout()

    fig2, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.8), squeeze=False)
    for ax, (label, ev) in zip(axes[0], panels):
        for m in KERNELS:
            v = ev["val"].get(m, {})
            al = sorted(v)
            ys = [min(_median(v[a]), 1e6) for a in al]
            ax.plot(al, ys, marker=".", label=f"{m} (selected {ev['alpha'][m]:g})")
        ax.axhline(min(_median(ev["test"]["MALA"]), 1e6), color="k", ls=":", lw=0.8, label="MALA (test)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("alpha")
        ax.set_ylabel("median replicate MSE (validation)")
        ax.set_title(label, fontsize=9)
        ax.legend(fontsize=6)
    fig2.tight_layout()
    return {"ratio_vs_kappa": fig1, "validation_mse_vs_alpha": fig2}


@register(
    "ga-srmc",
    claim="GA-SRMC lowers the MSE of SRMC's estimates, by more as the condition number grows, "
    "and on logistic-regression posteriors.",
    paper_figure="4.4x lower MSE than SRMC on an anisotropic Gaussian at kappa=100 (MALA base); 18-32% on "
    "logistic posteriors; up to +48% under FisherMALA; the advantage grows monotonically with kappa",
    baselines=("MALA", "FisherMALA", "SRMC", "SR-FisherMALA"),
    thresholds=(
        Threshold(
            "strong",
            "mse_ratio_kappa100",
            ">=",
            2.0,
            "tuned median-MSE ratio SRMC/GA-SRMC >= 2 at kappa=100 (one-sided 95% geometric bound over seeds)",
            agg="geobound95",
            control="identity_ratio_kappa100",
            arms=_arms(("GA-SRMC", "SRMC"), (_KAPPA100,)),
        ),
        Threshold(
            "rises",
            "ratio_rises_with_kappa",
            ">=",
            1.0,
            "the tuned ratio rises strictly with kappa (2 of 3 seeds)",
            agg="2 of 3",
            control="identity_rises_with_kappa",
            arms=_arms(("GA-SRMC", "SRMC"), _KAPPA_TARGETS),
        ),
        Threshold(
            "logistic",
            "min_logistic_ratio",
            ">",
            1.0,
            "tuned ratio > 1 on the synthetic and breast-cancer posteriors (2 of 3 seeds)",
            agg="2 of 3",
            control="min_logistic_identity_ratio",
            arms=_arms(("GA-SRMC", "SRMC"), _LOGISTIC_TARGETS),
        ),
        Threshold(
            "some",
            "mse_ratio_kappa100",
            ">=",
            1.2,
            "tuned ratio >= 1.2 at kappa=100 (2 of 3 seeds)",
            agg="2 of 3",
            control="identity_ratio_kappa100",
            arms=_arms(("GA-SRMC", "SRMC"), (_KAPPA100,)),
        ),
    ),
    floors=(
        Threshold(
            "few_diverged",
            "max_diverged_fraction",
            "<=",
            0.05,
            "floor: at most 5% of each kernel's test chains diverge at its selected alpha, every target (all seeds)",
            agg="all",
        ),
    ),
    reproduced="strong and rises and logistic",
    partial="some",
    method=_arms(("GA-SRMC",), _KAPPA_TARGETS + _LOGISTIC_TARGETS),
    tuned=_arms(("GA-SRMC", "SRMC", "SR-FisherMALA"), _KAPPA_TARGETS + _LOGISTIC_TARGETS),
    untuned={
        "MALA": "no repellence (alpha = 0); its step size is the shared pilot-tuned MALA step",
        "FisherMALA": "no repellence (alpha = 0); its step size is the shared pilot-tuned MALA step",
    },
    key_metric="mse_ratio_kappa100",
    revision=2,
)
def run(mode: str, seed: int) -> Outcome:
    """Run the check at ``mode``'s size (smoke, quick, full); every draw from ``seed``."""
    import time

    t0 = time.perf_counter()
    sz = SIZES[mode]
    metrics: dict[str, float] = {}
    table: list[dict[str, Any]] = []
    tuned: list[dict[str, Any]] = []
    notes: list[str] = []
    gauss: dict[float, dict[str, Any]] = {}
    panels: list[tuple[str, dict]] = []
    evs: dict[str, dict[str, Any]] = {}
    key = 0
    for kappa in sz.kappas:
        key += 1
        prob = _gaussian_problem(kappa, True, sz, seed, key)
        ev = _evaluate(prob, sz, seed, key)
        gauss[kappa] = evs[f"kappa{kappa:g}".replace(".", "p")] = ev
        table += _table_rows(prob, ev)
        tuned += [dict(r, method=f"{prob.label}: {r['method']}") for r in ev["res"].table()]
        notes += [f"{prob.label}: {n}" for n in ev["res"].notes()[1:]]
        if kappa == 100.0:
            panels.append((prob.label, ev))
    for name in LOGISTIC:
        key += 1
        prob = _logistic_problem(name, sz, seed, key)
        ev = _evaluate(prob, sz, seed, key)
        evs[name] = ev
        table += _table_rows(prob, ev)
        tuned += [dict(r, method=f"{prob.label}: {r['method']}") for r in ev["res"].table()]
        notes += [f"{prob.label}: {n}" for n in ev["res"].notes()[1:]]
        if name == "breast_cancer":
            panels.append((prob.label, ev))
        if name == "synthetic":
            metrics["synthetic_ref_mean_max_abs_diff"] = float(np.max(np.abs(prob.mean - TRUE_MEAN_LOGISTIC)))

    for tag, ev in evs.items():
        metrics[f"mse_ratio_{tag}"] = ev["ratio"]
        for what in ("oracle", "fisher", "identity", "mala_over_ga", "strongest_over_ga", "shared"):
            metrics[f"{what}_ratio_{tag}"] = ev[what]
        metrics[f"mean_ratio_{tag}"] = ev["mean_ratio"]
        metrics[f"mean_ratio_without_diverged_{tag}"] = ev["mean_ratio_dropped"]
        for m in ("SRMC", "GA-SRMC", "GA-FisherMALA"):
            metrics[f"alpha_{m.lower().replace('-', '_')}_{tag}"] = ev["alpha"][m]
    ratios = [gauss[k]["ratio"] for k in sz.kappas]
    ids = [gauss[k]["identity"] for k in sz.kappas]
    metrics["ratio_rises_with_kappa"] = float(all(b > a for a, b in zip(ratios, ratios[1:])))
    metrics["identity_rises_with_kappa"] = float(all(b > a for a, b in zip(ids, ids[1:])))
    metrics["min_logistic_ratio"] = min(evs[n]["ratio"] for n in THRESHOLDED_LOGISTIC)
    metrics["min_logistic_identity_ratio"] = min(evs[n]["identity"] for n in THRESHOLDED_LOGISTIC)
    div = {m: max(ev["diverged"][m] for ev in evs.values()) for m in (*KERNELS, "MALA", "FisherMALA")}
    for m, v in div.items():
        metrics[f"diverged_fraction_{m.lower().replace(' ', '_').replace('-', '_').strip('()')}"] = v
    metrics["max_diverged_fraction"] = max(div.values())
    metrics = {k.replace("(", "").replace(")", ""): v for k, v in metrics.items()}

    figures = _figures(sz.kappas, gauss, panels)
    summary = (
        "median MSE(SRMC)/MSE(GA-SRMC), each kernel at its tuned alpha: "
        + ", ".join(f"kappa={k:g} {gauss[k]['ratio']:.2f}x" for k in sz.kappas)
        + f" (identity-M control at kappa=100 {metrics['identity_ratio_kappa100']:.2f}x, oracle M "
        f"{metrics['oracle_ratio_kappa100']:.2f}x, shared grid {metrics['shared_ratio_kappa100']:.2f}x); logistic "
        f"synthetic {metrics['mse_ratio_synthetic']:.2f}x, breast cancer {metrics['mse_ratio_breast_cancer']:.2f}x, "
        f"digits {metrics['mse_ratio_digits']:.2f}x; FisherMALA base at kappa=100 "
        f"{metrics['fisher_ratio_kappa100']:.2f}x"
    )
    elapsed = time.perf_counter() - t0
    notes = [
        *evs[next(iter(evs))]["res"].notes()[:1],
        f"Validation: {sz.reps_val} replicates x {sz.n_total} steps (30% burn-in) per kernel and alpha; test: "
        f"{sz.reps_test} fresh replicates at the selected alpha; score: median over replicates of the "
        "replicate MSE of the posterior mean (averaged over coordinates).",
        "Control: GA-SRMC with metric='identity' (exactly SRMC) at SRMC's alpha on other seeds: its ratio is "
        "the noise floor of the MSE ratio.",
        "Diverged test chains at the selected alpha (max over targets): "
        + ", ".join(f"{m} {v:.0%}" for m, v in div.items())
        + ". Means over replicates are reported with and without them (the official code drops them).",
        "Strongest baseline per target (lowest test median MSE among MALA, FisherMALA, SRMC, SR-FisherMALA): "
        + ", ".join(f"{n}: {ev['strongest']} ({ev['strongest_over_ga']:.2f}x GA's best)" for n, ev in evs.items()),
        f"Synthetic posterior: our reference mean is within {metrics['synthetic_ref_mean_max_abs_diff']:.3f} "
        "(max abs) of the official TRUE_MEAN_LOGISTIC.",
        *notes,
        f"Wall time of this seed: {elapsed:.0f} s.",
    ]
    return Outcome(metrics=metrics, table=table, figures=figures, summary=summary, notes=notes, tuned=tuned)
