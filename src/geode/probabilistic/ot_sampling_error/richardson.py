r"""Intrinsic-dimension Richardson extrapolation of the plug-in Wasserstein estimate, with bagged half-samples.

The plug-in :math:`W_n = W_p^p(\hat\rho_n, \hat\mu_n)` overestimates :math:`W_p^p(\rho, \mu)` by a bias that decays
like :math:`C n^{-\beta}` with :math:`\beta = p/d` for data of intrinsic dimension :math:`d`. Writing
:math:`W_n \approx W + C n^{-\beta}` and :math:`W_{n/2} \approx W + C 2^\beta n^{-\beta}` and eliminating
:math:`C`:

.. math::

    W_{\mathrm{RE}} = \frac{2^\beta\, W_n - \overline{W}_{n/2}}{2^\beta - 1},

where :math:`\overline{W}_{n/2}` averages the plug-in over ``n_bags`` random halvings of both samples
(bagging), which keeps the variance close to the plug-in's: to first order the half-sample fluctuations
average back to the full sample's, leaving the variance inflation
:math:`1 + 1/(n_{\mathrm{bags}}(2^\beta - 1)^2)`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from geode.core import as_generator, check_array, check_int, check_real
from geode.probabilistic.ot_sampling_error.estimators import _check_p, _points, _weights, intrinsic_dimension

__all__ = ["richardson_extrapolate", "richardson_wasserstein", "wasserstein_pp"]

ASSIGNMENT_MAX = 1200  # unequal sizes m = k n are solved as an assignment (scipy) up to this size, else by POT


def _import_ot() -> Any:
    try:
        import ot
    except ImportError as exc:  # pragma: no cover - POT is installed in the test environment
        raise ImportError("this function needs POT: pip install 'geode[ot]'") from exc
    return ot


def wasserstein_pp(X: Any, Y: Any, a: Any = None, b: Any = None, *, p: float = 2, reg: float | None = None) -> float:
    r"""Plug-in :math:`W_p^p(\hat\rho, \hat\mu)` between two empirical measures, uniform or weighted like POT's.

    .. math::

        W_p^p(\hat\rho, \hat\mu) = \min_{P \in \Pi(a, b)} \sum_{ij} P_{ij} \|x_i - y_j\|^p,
        \qquad \hat\rho = \sum_i a_i \delta_{x_i},\ \hat\mu = \sum_j b_j \delta_{y_j},

    with :math:`a = \frac1n \mathbf 1_n`, :math:`b = \frac1m \mathbf 1_m` by default. The argument order is that
    of POT's ``ot.solve_sample(X_a, X_b, a, b)``; the value is ``ot.emd2(a, b, M)`` with
    :math:`M_{ij} = \|x_i - y_j\|^p`. Solved exactly: with uniform weights as an assignment problem
    (``scipy.optimize.linear_sum_assignment``) when :math:`n = m`, or when one size is a multiple :math:`k` of
    the other and the larger is at most 1200 (each point of the smaller sample then takes :math:`k` copies),
    else (and with weights) by POT's network simplex (``ot.emd2``); or, when ``reg`` is given, the transport
    cost :math:`\langle P_\varepsilon, C\rangle` of the entropic plan with :math:`\varepsilon` = ``reg``
    (``ot.sinkhorn2``, log-domain).

    Parameters
    ----------
    X : array_like, shape (n, D)
    Y : array_like, shape (m, D)
    a : array_like, shape (n,), optional
        Weights of the points of ``X`` (non-negative; default uniform :math:`1/n`).
    b : array_like, shape (m,), optional
        Weights of the points of ``Y`` (non-negative; default uniform :math:`1/m`). As in POT, ``a`` and ``b``
        must have the same total mass (usually 1); the cost scales with it.
    p : float, default 2
        Cost exponent, :math:`p \ge 1`.
    reg : float, optional
        Entropic regularisation :math:`\varepsilon > 0` in the units of the cost.

    Returns
    -------
    float

    Examples
    --------
    >>> wasserstein_pp([[0.0], [1.0]], [[0.0], [3.0]], p=1)  # (0 + 2) / 2
    1.0
    >>> wasserstein_pp([[0.0], [1.0]], [[0.0], [3.0]], a=[0.75, 0.25], b=[0.5, 0.5], p=1)  # 0->0: 1/2, 0->3, 1->3: 1/4
    1.25
    """
    p = _check_p(p)
    A, B = _points("X", X), _points("Y", Y)
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"X and Y must have the same number of coordinates; got {A.shape[1]} and {B.shape[1]}")
    n, m = A.shape[0], B.shape[0]
    wa, wb = _weights("a", a, n, "X"), _weights("b", b, m, "Y")
    small, large = min(n, m), max(n, m)
    uniform = wa is None and wb is None
    if uniform and reg is None and large % small == 0 and (n == m or large <= ASSIGNMENT_MAX):
        # uniform weights with m = k n: the transport polytope scaled by m has integer marginals (1 and k), so
        # an optimal vertex is an assignment of the m points to k copies of each of the n points (Birkhoff)
        from scipy.optimize import linear_sum_assignment

        k = large // small
        S, L = (A, B) if n <= m else (B, A)
        C = _cost(L, np.repeat(S, k, axis=0), p)
        rows, cols = linear_sum_assignment(C)
        return float(C[rows, cols].mean())
    ot = _import_ot()
    wa = np.full(n, 1.0 / n) if wa is None else wa
    wb = np.full(m, 1.0 / m) if wb is None else wb
    ta, tb = float(wa.sum()), float(wb.sum())
    if abs(ta - tb) > 1e-6 * max(ta, tb):
        raise ValueError(
            f"a and b must have the same total mass (POT's convention); got {ta:.6g} and {tb:.6g} "
            "(a weight vector not passed is uniform with total 1)"
        )
    M = _cost(A, B, p)
    if reg is None:
        return float(ot.emd2(wa, wb, M, numItermax=10_000_000))
    reg = check_real("reg", reg, low=0.0, low_inclusive=False)
    return float(ot.sinkhorn2(wa, wb, M, reg, method="sinkhorn_log", numItermax=5000, stopThr=1e-8))


def _renormalised(w: np.ndarray, idx: np.ndarray, name: str) -> np.ndarray:
    """The weights of a subsample, rescaled to the total mass of the full sample."""
    sub = w[idx]
    if not sub.sum() > 0:
        raise ValueError(f"a random half of the sample carries no mass under {name}; drop its zero-weight points")
    return sub * (w.sum() / sub.sum())


def _cost(A: np.ndarray, B: np.ndarray, p: float) -> np.ndarray:
    """The cost matrix :math:`\\|a_i - b_j\\|^p`."""
    from scipy.spatial.distance import cdist

    return cdist(A, B, "sqeuclidean") if p == 2 else cdist(A, B, "euclidean") ** p


def richardson_extrapolate(w_n: Any, w_half: Any, beta: float) -> Any:
    r"""Richardson extrapolation :math:`(2^\beta w_n - w_{n/2}) / (2^\beta - 1)`.

    Exact when :math:`w_s = W + C s^{-\beta}`: it returns :math:`W`.

    Parameters
    ----------
    w_n, w_half : float or array_like
        The estimate at sample size :math:`n` and at :math:`n/2`: finite, of shapes that broadcast together.
    beta : float
        The bias exponent :math:`\beta > 0` (:math:`p/d_{\mathrm{int}}`), small enough that :math:`2^\beta`
        is finite and large enough that :math:`2^\beta - 1 > 0` in floating point.

    Returns
    -------
    float or ndarray
        The extrapolated value(s), a float for scalar inputs.

    Examples
    --------
    >>> round(richardson_extrapolate(1.0 + 3 * 1000**-0.5, 1.0 + 3 * 500**-0.5, 0.5), 12)
    1.0
    """
    beta = check_real("beta", beta, low=0.0, low_inclusive=False)
    w_n, w_half = check_array("w_n", w_n), check_array("w_half", w_half)
    try:
        np.broadcast_shapes(w_n.shape, w_half.shape)
    except ValueError:
        raise ValueError(
            f"w_n and w_half must have shapes that broadcast together; got {w_n.shape} and {w_half.shape}"
        ) from None
    if beta >= 1024.0 or 2.0**beta - 1.0 == 0.0:
        raise ValueError(f"beta must be in (0, 1024) with 2**beta - 1 > 0 in float64; got {beta!r}")
    return _extrapolate(w_n, w_half, beta)


def _extrapolate(w_n: Any, w_half: Any, beta: float) -> Any:
    """The formula of :func:`richardson_extrapolate`, unchecked (``richardson_wasserstein`` checks its own inputs)."""
    q = 2.0**beta
    out = (q * np.asarray(w_n, dtype=float) - np.asarray(w_half, dtype=float)) / (q - 1.0)
    return float(out) if out.ndim == 0 else out


def richardson_wasserstein(
    X: Any,
    Y: Any,
    a: Any = None,
    b: Any = None,
    *,
    p: float = 2,
    d_int: float | None = None,
    n_bags: int = 8,
    reg: float | None = None,
    seed: int | np.random.Generator | None = None,
    log: bool = False,
) -> float | tuple[float, dict[str, Any]]:
    r"""Debiased estimate of :math:`W_p^p(\rho, \mu)` by intrinsic-dimension Richardson extrapolation.

    .. math::

        W_{\mathrm{RE}} = \frac{2^\beta\, W_p^p(\hat\rho_n, \hat\mu_m)
        - \frac{1}{B}\sum_{b=1}^{B} W_p^p(\hat\rho^{(b)}_{n/2}, \hat\mu^{(b)}_{m/2})}{2^\beta - 1},
        \qquad \beta = p / d_{\mathrm{int}},

    where :math:`\hat\rho^{(b)}_{n/2}, \hat\mu^{(b)}_{m/2}` are independent random halves of the two samples.
    With weights ``a``, ``b`` (POT's convention, as in :func:`wasserstein_pp`) the plug-in is the weighted
    :math:`W_p^p`, and each half keeps its points' weights, renormalised to the total of the full sample.
    With ``reg`` the plug-in terms are entropic costs, and the half-sample terms use
    :math:`\varepsilon_{n/2} = 2^\beta \varepsilon` ("diagonal" extrapolation: the entropic bias, taken
    proportional to :math:`\varepsilon`, is then on the same :math:`n^{-\beta}` ladder as the statistical bias
    and is extrapolated away with it).

    Parameters
    ----------
    X : array_like, shape (n, D)
        Sample of :math:`\rho` (at least 4 points).
    Y : array_like, shape (m, D)
        Sample of :math:`\mu` (at least 4 points).
    a, b : array_like, shape (n,) and (m,), optional
        Weights of the points of ``X`` and ``Y`` (non-negative, equal totals; default uniform).
    p : float, default 2
        Cost exponent, :math:`p \ge 1`.
    d_int : float, optional
        Intrinsic dimension; default: the larger of :func:`intrinsic_dimension` on ``X`` and on ``Y``
        (the slower decaying sample dominates the bias).
    n_bags : int, default 8
        Number of random halvings averaged in the half-sample term.
    reg : float, optional
        Entropic regularisation at size n; ``None`` solves exact OT.
    seed : int, numpy Generator or None
        Randomness of the halvings and of the ID estimate.
    log : bool, default False
        Also return a dict with ``plugin`` (:math:`W_n`), ``estimate``, ``d_int``, ``beta``, ``half_mean``,
        ``half_values`` (the bags), ``weights`` (:math:`2^\beta/(2^\beta-1)`, :math:`1/(2^\beta-1)`) and
        ``variance_inflation`` (first-order: :math:`1 + 1/(B(2^\beta-1)^2)`, the variance of the estimate
        over the plug-in's when the linear term of the plug-in dominates its fluctuations).

    Returns
    -------
    float, or (float, dict) when ``log=True``
    """
    p = _check_p(p)
    A, B = _points("X", X, min_rows=4), _points("Y", Y, min_rows=4)
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"X and Y must have the same number of coordinates; got {A.shape[1]} and {B.shape[1]}")
    n_bags = check_int("n_bags", n_bags, low=1)
    wa, wb = _weights("a", a, A.shape[0], "X"), _weights("b", b, B.shape[0], "Y")
    if reg is not None:
        reg = check_real("reg", reg, low=0.0, low_inclusive=False)
    rng = as_generator(seed)
    if d_int is None:
        try:
            d_int = max(float(intrinsic_dimension(A, p=p, seed=rng)), float(intrinsic_dimension(B, p=p, seed=rng)))
        except ValueError as exc:
            raise ValueError(f"cannot estimate d_int ({exc}); pass d_int") from exc
        if not math.isfinite(d_int):
            raise ValueError("the intrinsic dimension estimate is not finite (flat decay); pass d_int")
    d_int = check_real("d_int", d_int, low=0.0, low_inclusive=False)
    beta = p / d_int
    q = 2.0**beta
    plugin = wasserstein_pp(A, B, wa, wb, p=p, reg=reg)
    reg_half = None if reg is None else reg * q
    n_half, m_half = A.shape[0] // 2, B.shape[0] // 2
    halves = np.empty(n_bags)
    for k in range(n_bags):
        ia = rng.permutation(A.shape[0])[:n_half]
        ib = rng.permutation(B.shape[0])[:m_half]
        ha = None if wa is None else _renormalised(wa, ia, "a")
        hb = None if wb is None else _renormalised(wb, ib, "b")
        halves[k] = wasserstein_pp(A[ia], B[ib], ha, hb, p=p, reg=reg_half)
    half_mean = float(halves.mean())
    estimate = float(_extrapolate(plugin, half_mean, beta))
    if not log:
        return estimate
    return estimate, {
        "plugin": plugin,
        "estimate": estimate,
        "d_int": d_int,
        "beta": beta,
        "half_mean": half_mean,
        "half_values": halves,
        "weights": (q / (q - 1.0), 1.0 / (q - 1.0)),
        "variance_inflation": 1.0 + 1.0 / (n_bags * (q - 1.0) ** 2),
        "reg": reg,
        "reg_half": reg_half,
    }
