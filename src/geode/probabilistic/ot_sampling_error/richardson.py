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

from geode.core import as_generator, check_int, check_real
from geode.probabilistic.ot_sampling_error.estimators import _check_p, _points, intrinsic_dimension

__all__ = ["richardson_extrapolate", "richardson_wasserstein", "wasserstein_pp"]

ASSIGNMENT_MAX = 1200  # unequal sizes m = k n are solved as an assignment (scipy) up to this size, else by POT


def _import_ot() -> Any:
    try:
        import ot
    except ImportError as exc:  # pragma: no cover - POT is installed in the test environment
        raise ImportError("this function needs POT: pip install 'geode[ot]'") from exc
    return ot


def wasserstein_pp(X: Any, Y: Any, *, p: float = 2, reg: float | None = None) -> float:
    r"""Plug-in :math:`W_p^p(\hat\rho_n, \hat\mu_m)` between two uniform empirical measures.

    .. math::

        W_p^p(\hat\rho_n, \hat\mu_m) = \min_{P \in \Pi(\frac1n \mathbf 1_n, \frac1m \mathbf 1_m)}
        \sum_{ij} P_{ij} \|x_i - y_j\|^p,

    solved exactly: as an assignment problem (``scipy.optimize.linear_sum_assignment``) when :math:`n = m`, or
    when one size is a multiple :math:`k` of the other and the larger is at most 1200 (each point of the
    smaller sample then takes :math:`k` copies), else by POT's network simplex (``ot.emd2``); or, when ``reg`` is
    given, the transport cost
    :math:`\langle P_\varepsilon, C\rangle` of the entropic plan with :math:`\varepsilon` = ``reg``
    (``ot.sinkhorn2``, log-domain).

    Parameters
    ----------
    X : array_like, shape (n, D)
    Y : array_like, shape (m, D)
    p : float, default 2
        Cost exponent, :math:`p \ge 1`.
    reg : float, optional
        Entropic regularisation :math:`\varepsilon > 0` in the units of the cost.

    Returns
    -------
    float
    """
    p = _check_p(p)
    A, B = _points("X", X), _points("Y", Y)
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"X and Y must have the same number of coordinates; got {A.shape[1]} and {B.shape[1]}")
    n, m = A.shape[0], B.shape[0]
    small, large = min(n, m), max(n, m)
    if reg is None and large % small == 0 and (n == m or large <= ASSIGNMENT_MAX):
        # uniform weights with m = k n: the transport polytope scaled by m has integer marginals (1 and k), so
        # an optimal vertex is an assignment of the m points to k copies of each of the n points (Birkhoff)
        from scipy.optimize import linear_sum_assignment

        k = large // small
        S, L = (A, B) if n <= m else (B, A)
        C = _cost(L, np.repeat(S, k, axis=0), p)
        rows, cols = linear_sum_assignment(C)
        return float(C[rows, cols].mean())
    ot = _import_ot()
    a, b = np.full(n, 1.0 / n), np.full(m, 1.0 / m)
    M = _cost(A, B, p)
    if reg is None:
        return float(ot.emd2(a, b, M, numItermax=10_000_000))
    reg = check_real("reg", reg, low=0.0, low_inclusive=False)
    return float(ot.sinkhorn2(a, b, M, reg, method="sinkhorn_log", numItermax=5000, stopThr=1e-8))


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
        The estimate at sample size :math:`n` and at :math:`n/2`.
    beta : float
        The bias exponent :math:`\beta > 0` (:math:`p/d_{\mathrm{int}}`).

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
    q = 2.0**beta
    out = (q * np.asarray(w_n, dtype=float) - np.asarray(w_half, dtype=float)) / (q - 1.0)
    return float(out) if out.ndim == 0 else out


def richardson_wasserstein(
    X: Any,
    Y: Any,
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
    plugin = wasserstein_pp(A, B, p=p, reg=reg)
    reg_half = None if reg is None else reg * q
    n_half, m_half = A.shape[0] // 2, B.shape[0] // 2
    halves = np.empty(n_bags)
    for b in range(n_bags):
        ia = rng.permutation(A.shape[0])[:n_half]
        ib = rng.permutation(B.shape[0])[:m_half]
        halves[b] = wasserstein_pp(A[ia], B[ib], p=p, reg=reg_half)
    half_mean = float(halves.mean())
    estimate = float(richardson_extrapolate(plugin, half_mean, beta))
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
