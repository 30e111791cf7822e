r"""Solver-free estimates of the OT sampling error and the intrinsic dimension from its multi-scale decay.

For a probability measure :math:`\rho` on :math:`\mathbb{R}^D`, an i.i.d. sample :math:`y_1, \dots, y_n \sim \rho`
with empirical measure :math:`\hat\rho_n = \frac1n \sum_j \delta_{y_j}` and the cost :math:`c(x, y) = \|x - y\|^p`,
the semi-dual of the semi-discrete problem :math:`\mathrm{OT}_c(\rho, \hat\rho_n)` is

.. math::

    H(g) = \mathbb{E}_{X\sim\rho}\big[g^c(X)\big] + \frac1n \sum_{j=1}^n g_j,
    \qquad g^c(x) = \min_j \big(c(x, y_j) - g_j\big),

and :math:`\mathrm{OT}_c(\rho, \hat\rho_n) = \max_g H(g) \ge H(0) = \mathbb{E}_{X\sim\rho}[\min_j \|X - y_j\|^p]`.
:math:`H(0)` is the quantisation error of the sample; it decays at the same rate :math:`n^{-p/d}` as the
sampling error when :math:`\rho` has intrinsic dimension :math:`d > p`, and it needs only nearest-neighbour
queries (a KD-tree), no OT solver.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from geode.core import as_generator, check_array, check_choice, check_int, check_real

__all__ = [
    "OTIntrinsicDimension",
    "calibrate_sinkhorn_eps",
    "intrinsic_dimension",
    "multiscale_errors",
    "sampling_error",
]

MIN_SCALE = 16  # smallest subsample size the default scales go down to
DEFAULT_LEVELS = 4  # default dyadic levels n, n/2, n/4, n/8


def _points(name: str, X: Any, *, min_rows: int = 2) -> np.ndarray:
    """``X`` as a float array of shape (n, D): 1-D input is read as n points on the line."""
    arr = check_array(name, X, ndim=(1, 2))
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} must have at least {min_rows} points; got {arr.shape[0]}")
    if arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least one coordinate; got shape {arr.shape}")
    return arr


def _check_p(p: Any) -> float:
    return check_real("p", p, low=1.0)


def _weights(name: str, w: Any, n: int, of: str) -> np.ndarray | None:
    """Weights of the ``n`` points of ``of``, as POT takes them: non-negative, positive total (``None``: uniform)."""
    if w is None:
        return None
    arr = check_array(name, w, ndim=1)
    if arr.shape[0] != n:
        raise ValueError(f"{name} must have {n} entries, one weight per point of {of}; got {arr.shape[0]}")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative (weights of the points of {of})")
    if not arr.sum() > 0:
        raise ValueError(f"{name} must have a positive total mass; got {arr.sum()}")
    return arr


def _loo_costs(X: np.ndarray, p: float) -> np.ndarray:
    """Leave-one-out costs :math:`\\min_{j \\ne i} \\|x_i - x_j\\|^p`, one per point."""
    dist, _ = cKDTree(X).query(X, k=2)
    return dist[:, 1] ** p


def _weighted_mean_and_se(costs: np.ndarray, w: np.ndarray | None) -> tuple[float, float]:
    """The (weighted) mean of the per-query costs and its standard error (Kish's effective size for weights)."""
    m = costs.shape[0]
    if w is None:
        se = float(costs.std(ddof=1) / math.sqrt(m)) if m > 1 else float("nan")
        return float(costs.mean()), se
    w = w / w.sum()
    mean = float(w @ costs)
    n_eff = 1.0 / float(w @ w)
    if m < 2 or n_eff <= 1:
        return mean, float("nan")
    var = float(w @ (costs - mean) ** 2) * n_eff / (n_eff - 1.0)
    return mean, math.sqrt(var / n_eff)


def sampling_error(
    X: Any,
    b: Any = None,
    *,
    p: float = 2,
    method: str | None = None,
    X_fresh: Any = None,
    a: Any = None,
    seed: int | np.random.Generator | None = None,
    log: bool = False,
) -> float | tuple[float, dict[str, Any]]:
    r"""Solver-free estimate of the sampling error :math:`\mathrm{OT}_c(\rho, \hat\rho_n)`, :math:`c = \|x-y\|^p`.

    The semi-dual functional at the zero potential (the quantisation error of the sample),

    .. math::

        \widehat{E}_n = \sum_{i=1}^m a_i \min_{1\le j\le n} \|x_i - y_j\|^p, \qquad x_i \sim \rho
        \text{ independent of the atoms } y_j,

    a Monte Carlo estimate of :math:`H(0) \le \mathrm{OT}_c(\rho, \hat\rho_n)` (unbiased with the uniform
    weights :math:`a_i = 1/m`, the default), computed with one KD-tree; no OT solver and no tuning parameter.
    The weights follow POT (``ot.emd2(a, b, M)``): ``a`` weighs the query points (draws of :math:`\rho`, e.g. an
    importance-weighted sample), ``b`` the atoms, :math:`\hat\rho_n = \sum_j b_j \delta_{y_j}`. :math:`H(0)` does
    not depend on ``b``: it is a lower bound of :math:`\mathrm{OT}_c(\rho, \hat\rho_n)` for every ``b``, equal to
    the OT between the weighted queries and the atoms when each :math:`b_j` is the ``a``-mass of the atom's
    Voronoi cell (the nearest-atom plan is then feasible); ``log=True`` reports those cell masses and the
    total-variation gap :math:`\frac12\sum_j |b_j - \text{cell}_j|` (0: the bound is tight against the queries).

    Parameters
    ----------
    X : array_like, shape (n, D) or (n,)
        The sample (the atoms of :math:`\hat\rho_n`).
    b : array_like, shape (n,), optional
        Weights of the points of ``X`` (non-negative, normalised to sum 1; default uniform). They weigh the
        atoms; where the points of ``X`` are also the query points (``"loo"``, and ``"fresh"`` without
        ``X_fresh``) they weigh those queries too: :math:`\sum_i b_i \min_{j\ne i}\|y_i - y_j\|^p / \sum_i b_i`.
    p : float, default 2
        Cost exponent, :math:`p \ge 1`.
    method : {"loo", "fresh"}, optional
        ``"loo"`` (the default without ``X_fresh``): leave-one-out,
        :math:`\frac1n\sum_i \min_{j\ne i}\|y_i - y_j\|^p`, unbiased for the quantisation error of a sample
        of size :math:`n - 1`, i.e. it answers for (almost) the sample given. ``"fresh"`` (the default with
        ``X_fresh``): the query points are ``X_fresh`` (fresh draws of :math:`\rho`) and every row of ``X`` is
        an atom; ``"fresh"`` without ``X_fresh`` holds a random half of ``X`` out as queries and the other
        :math:`\lceil n/2 \rceil` points are the atoms, so the estimate is for a sample *half the size*
        (+28% at d = 6 against the n-sample's value: the default before issue 18).
    X_fresh : array_like, shape (m, D), optional
        Fresh draws of :math:`\rho` (only with ``method="fresh"``).
    a : array_like, shape (m,), optional
        Weights of the points of ``X_fresh`` (non-negative, normalised to sum 1; default uniform; only with
        ``X_fresh``).
    seed : int, numpy Generator or None
        Randomness of the held-out split (``method="fresh"`` without ``X_fresh``).
    log : bool, default False
        Also return a dict with ``n_atoms``, ``n_queries``, ``method``, ``std_error`` (the Monte Carlo
        standard error of the mean; with weights, by Kish's effective sample size) and ``costs`` (the per-query
        costs); with ``X_fresh`` also ``cell_mass`` (the query mass of each atom's Voronoi cell) and
        ``mass_gap`` (the total-variation distance between ``b`` and ``cell_mass``).

    Returns
    -------
    float, or (float, dict) when ``log=True``

    Examples
    --------
    >>> round(sampling_error([0.0, 1.0, 3.0], p=1, method="loo"), 6)  # (1 + 1 + 2) / 3
    1.333333
    >>> sampling_error([[0.0], [1.0]], p=2, X_fresh=[[0.25], [0.5], [2.0]])  # (1/16 + 1/4 + 1) / 3
    0.4375
    >>> sampling_error([[0.0], [1.0]], p=2, X_fresh=[[0.25], [0.5], [2.0]], a=[0.5, 0.25, 0.25])  # 1/32 + 1/16 + 1/4
    0.34375
    """
    p = _check_p(p)
    if method is None:
        method = "loo" if X_fresh is None else "fresh"
    check_choice("method", method, ("fresh", "loo"))
    Y = _points("X", X)
    wy = _weights("b", b, Y.shape[0], "X")
    if a is not None and X_fresh is None:
        raise ValueError("a weighs X_fresh (the query points); the weights of X are b")
    info: dict[str, Any] = {}
    if method == "loo":
        if X_fresh is not None:
            raise ValueError("X_fresh is used only with method='fresh'")
        costs = _loo_costs(Y, p)
        wq = wy
        n_atoms = Y.shape[0] - 1
    elif X_fresh is None:
        rng = as_generator(seed)
        perm = rng.permutation(Y.shape[0])
        n_q = Y.shape[0] // 2
        Q, Y = Y[perm[:n_q]], Y[perm[n_q:]]
        wq = None if wy is None else wy[perm[:n_q]]
        if wq is not None and not wq.sum() > 0:
            raise ValueError("b puts no mass on the held-out half of X; pass X_fresh or method='loo'")
        costs = cKDTree(Y).query(Q, k=1)[0] ** p
        n_atoms = Y.shape[0]
    else:
        Q = _points("X_fresh", X_fresh, min_rows=1)
        if Q.shape[1] != Y.shape[1]:
            raise ValueError(f"X_fresh must have {Y.shape[1]} coordinates like X; got {Q.shape[1]}")
        wq = _weights("a", a, Q.shape[0], "X_fresh")
        dist, nearest = cKDTree(Y).query(Q, k=1)
        costs = dist**p
        n_atoms = Y.shape[0]
        if log:
            qa = np.full(Q.shape[0], 1.0 / Q.shape[0]) if wq is None else wq / wq.sum()
            cells = np.bincount(nearest, weights=qa, minlength=Y.shape[0])
            by = np.full(Y.shape[0], 1.0 / Y.shape[0]) if wy is None else wy / wy.sum()
            info = {"cell_mass": cells, "mass_gap": float(0.5 * np.abs(cells - by).sum())}
    value, se = _weighted_mean_and_se(costs, wq)
    if not log:
        return value
    base = {"n_atoms": n_atoms, "n_queries": int(costs.shape[0]), "method": method, "std_error": se}
    return value, base | info | {"costs": costs}


def _default_scales(n: int) -> list[int]:
    levels = min(DEFAULT_LEVELS, int(math.floor(math.log2(n / MIN_SCALE))) + 1) if n >= MIN_SCALE else 0
    if levels < 2:
        raise ValueError(
            f"n too small for the default scales: need at least {2 * MIN_SCALE} points (two dyadic levels of "
            f">= {MIN_SCALE}); got {n}. Pass scales explicitly."
        )
    return [n // 2**k for k in range(levels)]


def multiscale_errors(
    X: Any, *, p: float = 2, scales: Sequence[int] | None = None, seed: int | np.random.Generator | None = None
) -> tuple[np.ndarray, np.ndarray]:
    r"""Leave-one-out quantisation errors :math:`\widehat E_s` at several subsample sizes :math:`s`.

    The sample is permuted once; at size :math:`s` it is cut into :math:`\lfloor n/s \rfloor` disjoint
    groups of :math:`s` points, and :math:`\widehat E_s` is the mean leave-one-out cost
    :math:`\min_{j\ne i}\|x_i - x_j\|^p` over all groups (every point is used at every scale; the total cost is
    one KD-tree pass per scale).

    Parameters
    ----------
    X : array_like, shape (n, D)
        The sample.
    p : float, default 2
        Cost exponent, :math:`p \ge 1`.
    scales : sequence of int, optional
        Subsample sizes, at least two distinct, each in [2, n]; default :math:`n, n/2, n/4, n/8` (not below 16).
    seed : int, numpy Generator or None
        Randomness of the permutation.

    Returns
    -------
    scales : ndarray of int, shape (k,)
        The subsample sizes, decreasing.
    errors : ndarray of float, shape (k,)
        :math:`\widehat E_s`, an unbiased estimate of the quantisation error of a sample of size :math:`s-1`.
    """
    p = _check_p(p)
    Y = _points("X", X)
    n = Y.shape[0]
    if scales is None:
        sizes = _default_scales(n)
    else:
        sizes = _check_scales(scales)
        if max(sizes) > n:
            raise ValueError(f"n too small for the requested scales: largest scale {max(sizes)} > n = {n}")
    sizes = sorted(set(sizes), reverse=True)
    perm = as_generator(seed).permutation(n)
    errors = []
    for s in sizes:
        g = n // s
        groups = Y[perm[: g * s]].reshape(g, s, Y.shape[1])
        errors.append(float(np.mean([_loo_costs(grp, p).mean() for grp in groups])))
    return np.asarray(sizes, dtype=int), np.asarray(errors)


def intrinsic_dimension(
    X: Any,
    *,
    p: float = 2,
    scales: Sequence[int] | None = None,
    seed: int | np.random.Generator | None = None,
    log: bool = False,
) -> float | tuple[float, dict[str, Any]]:
    r"""Intrinsic dimension from the multi-scale decay of the sampling-error estimate.

    With :math:`\widehat E_s \approx C\,(s-1)^{-p/d}` (the rate of the sampling error for a measure of
    intrinsic dimension :math:`d > p`), the least-squares slope :math:`\hat a` of
    :math:`\log \widehat E_s` against :math:`\log(s-1)` over the scales gives

    .. math::

        \hat d = -p / \hat a,

    which for two dyadic scales is :math:`\hat d = p \log 2 / \log(\widehat E_{n/2} / \widehat E_n)`.
    Linear time up to the KD-tree's logarithm: one leave-one-out nearest-neighbour pass per scale.

    Parameters
    ----------
    X : array_like, shape (n, D)
        The sample.
    p : float, default 2
        Cost exponent of the underlying sampling error (:math:`p \ge 1`); the estimate assumes
        :math:`d > p` (below that the rate of :math:`\mathrm{OT}` changes but the quantisation error keeps
        :math:`n^{-p/d}`, so the estimator still applies).
    scales : sequence of int, optional
        Subsample sizes (at least two distinct, each in [2, n]). Default: the dyadic sizes
        :math:`n, n/2, n/4, n/8`, fewer when :math:`n/2^k` would drop below 16.
    seed : int, numpy Generator or None
        Randomness of the subsampling permutation.
    log : bool, default False
        Also return ``scales``, ``errors``, ``slope`` and ``intercept`` of the log-log fit.

    Returns
    -------
    float, or (float, dict) when ``log=True``

    Examples
    --------
    >>> t = np.random.default_rng(0).random(4000)
    >>> X = np.outer(t, [1.0, 2.0, 2.0]) / 3  # a segment in R^3
    >>> abs(intrinsic_dimension(X, seed=0) - 1) < 0.05
    True
    """
    sizes, errors = multiscale_errors(X, p=p, scales=scales, seed=seed)
    p = float(p)
    if np.any(errors <= 0):
        raise ValueError("X has duplicate points at every scale (zero nearest-neighbour distances)")
    x, y = np.log(sizes - 1.0), np.log(errors)
    slope, intercept = np.polyfit(x, y, 1)
    d_hat = float(-p / slope) if slope < 0 else float("inf")
    if not log:
        return d_hat
    return d_hat, {"scales": sizes, "errors": errors, "slope": float(slope), "intercept": float(intercept)}


def _check_scales(scales: Any) -> list[int]:
    """Subsample sizes: integers >= 2, at least two distinct (not yet checked against n)."""
    sizes = [check_int("scales[i]", s, low=2) for s in scales]
    if len(set(sizes)) < 2:
        raise ValueError(f"scales must hold at least two distinct subsample sizes; got {list(scales)}")
    return sizes


class OTIntrinsicDimension:
    """Scikit-learn-style wrapper of :func:`intrinsic_dimension`: ``OTIntrinsicDimension().fit(X).dimension_``.

    Parameters
    ----------
    p : float, default 2
        Cost exponent.
    scales : sequence of int, optional
        Subsample sizes (see :func:`intrinsic_dimension`).
    seed : int or None
        Seed of the subsampling permutation.

    Attributes
    ----------
    dimension_ : float
        The estimated intrinsic dimension.
    scales_, errors_ : ndarray
        The subsample sizes and their sampling-error estimates.
    slope_ : float
        Slope of log error against log sample size (:math:`-p/d`).
    """

    def __init__(self, p: float = 2, scales: Sequence[int] | None = None, seed: int | None = None) -> None:
        _check_p(p)  # checked here too, so that a bad value fails at construction (kept as given)
        if scales is not None:
            _check_scales(scales)
        self.p = p
        self.scales = scales
        self.seed = seed

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"p": self.p, "scales": self.scales, "seed": self.seed}

    def fit(self, X: Any, y: Any = None) -> OTIntrinsicDimension:
        d_hat, info = intrinsic_dimension(X, p=self.p, scales=self.scales, seed=self.seed, log=True)
        self.dimension_ = d_hat
        self.scales_ = info["scales"]
        self.errors_ = info["errors"]
        self.slope_ = info["slope"]
        return self

    def fit_transform(self, X: Any, y: Any = None) -> float:
        return self.fit(X).dimension_


def calibrate_sinkhorn_eps(X: Any, *, p: float = 2, factor: float = 1.0) -> float:
    r"""Sinkhorn regularisation matched to the intrinsic geometry: :math:`\varepsilon = \kappa \widehat E_n`.

    The entropic bias of Sinkhorn is :math:`O(\varepsilon \log(1/\varepsilon))` and the sampling error is
    :math:`\mathrm{OT}_c(\rho, \hat\rho_n) \asymp n^{-p/d}`; taking :math:`\varepsilon` of the order of the
    solver-free estimate :math:`\widehat E_n` (leave-one-out, :func:`sampling_error`) makes the
    regularisation no coarser than the resolution the sample has anyway, and makes it shrink at the
    intrinsic rate :math:`n^{-p/d}` when :math:`n` grows (the "diagonal" coupling of the two biases).

    Parameters
    ----------
    X : array_like, shape (n, D)
        The sample.
    p : float, default 2
        Cost exponent (the same as the OT cost the :math:`\varepsilon` is used with).
    factor : float, default 1
        The constant :math:`\kappa > 0`.

    Returns
    -------
    float
        :math:`\varepsilon`, in the units of the cost :math:`\|x - y\|^p`.
    """
    factor = check_real("factor", factor, low=0.0, low_inclusive=False)
    eps = factor * float(sampling_error(X, p=p, method="loo"))
    if eps <= 0:
        raise ValueError("X has duplicate points only: the calibrated epsilon would be 0")
    return eps
