r"""Effective sample size: from replicate errors (``ess_mse``) and from autocorrelations (Geyer).

Two estimates of how many independent draws from :math:`\pi` a sampler's output is worth:

- :func:`ess_mse` compares the mean squared error of independent replicate estimates of
  :math:`\mathbb{E}_\pi f` with the variance :math:`\operatorname{Var}_\pi f`. It needs no Markov
  property, so it is the right yardstick for non-Markovian samplers (score-repellent and other
  history-dependent chains) and for antithetic ones, whose ESS may exceed the number of draws.
- :func:`autocorrelation_ess` is the standard single-chain estimate
  :math:`n / \hat\tau` with Geyer's (1992) initial monotone sequence estimator of the integrated
  autocorrelation time :math:`\hat\tau`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.validation import check_array, check_int

__all__ = ["autocorrelation", "autocorrelation_ess", "ess_mse"]


def ess_mse(estimates: Any, truth: Any, variance: Any, *, axis: int = 0) -> np.ndarray | float:
    r"""Effective sample size from replicate errors: :math:`\operatorname{Var}_\pi(f) / \mathrm{MSE}`.

    With :math:`R` independent replicate estimates :math:`\hat\mu_1, \dots, \hat\mu_R` of
    :math:`\mu = \mathbb{E}_\pi f`,

    .. math::

        \mathrm{MSE} = \frac{1}{R} \sum_{r=1}^R (\hat\mu_r - \mu)^2, \qquad
        \mathrm{ESS}_{\mathrm{MSE}} = \frac{\operatorname{Var}_\pi(f)}{\mathrm{MSE}},

    the number of independent exact draws whose average would have the same MSE. It includes the
    bias of the estimates, needs no Markov property and may exceed the number of draws per
    replicate (antithetic or repellent chains).

    Parameters
    ----------
    estimates : array_like, shape (..., R, ...)
        Replicate estimates; replicates run along ``axis``.
    truth : array_like
        The exact :math:`\mathbb{E}_\pi f`, broadcastable against ``estimates`` with ``axis`` removed.
    variance : array_like
        :math:`\operatorname{Var}_\pi f` (> 0), broadcastable like ``truth``.
    axis : int
        The replicate axis of ``estimates``.

    Returns
    -------
    float or ndarray
        One ESS per component (``estimates`` with ``axis`` removed); ``inf`` where the MSE is 0.

    Examples
    --------
    >>> est = np.array([0.5, -0.5, 0.5, -0.5])
    >>> float(ess_mse(est, 0.0, 1.0))  # MSE = 0.25
    4.0
    """
    est = check_array("estimates", estimates)
    if est.ndim == 0:
        raise ValueError("estimates must have at least 1 dimension (the replicates)")
    check_int("axis", axis, low=-est.ndim, high=est.ndim - 1)
    if est.shape[axis] < 1:
        raise ValueError("estimates must hold at least one replicate along axis")
    mu = check_array("truth", truth)
    var = check_array("variance", variance)
    if np.any(var <= 0):
        raise ValueError("variance must be > 0 everywhere")
    est = np.moveaxis(est, axis, 0)
    try:
        mse = ((est - mu) ** 2).mean(axis=0)
        var = np.broadcast_to(var, mse.shape)
    except ValueError as exc:
        raise ValueError(
            f"truth {mu.shape} and variance {var.shape} must broadcast against estimates {est.shape[1:]} "
            "(the estimates without the replicate axis)"
        ) from exc
    with np.errstate(divide="ignore"):
        ess = np.where(mse > 0, var / np.where(mse > 0, mse, 1.0), np.inf)
    return float(ess) if ess.ndim == 0 else ess


def autocorrelation(x: Any, *, axis: int = 0) -> np.ndarray:
    r"""Normalised sample autocorrelation :math:`\hat\rho_t = \hat\gamma_t / \hat\gamma_0` along ``axis``, by FFT.

    .. math::

        \hat\gamma_t = \frac{1}{n} \sum_{i=1}^{n-t} (x_i - \bar x)(x_{i+t} - \bar x), \qquad t = 0, \dots, n-1,

    (the biased estimator, which keeps the sequence positive semi-definite). A constant series has
    :math:`\hat\gamma_0 = 0`; its autocorrelation is defined as 1 at every lag.

    Parameters
    ----------
    x : array_like, shape (..., n, ...)
        Draws along ``axis`` (at least 2).
    axis : int

    Returns
    -------
    ndarray, same shape as ``x``
    """
    arr = check_array("x", x)
    if arr.ndim == 0:
        raise ValueError("x must have at least 1 dimension (the draws)")
    check_int("axis", axis, low=-arr.ndim, high=arr.ndim - 1)
    arr = np.moveaxis(arr, axis, 0)
    n = arr.shape[0]
    if n < 2:
        raise ValueError(f"x must hold at least 2 draws along axis; got {n}")
    centred = arr - arr.mean(axis=0)
    size = 1 << (2 * n - 1).bit_length()  # zero padding: no circular wrap-around
    f = np.fft.rfft(centred, n=size, axis=0)
    acov = np.fft.irfft(f * np.conj(f), n=size, axis=0)[:n] / n
    g0 = acov[0]
    flat = g0 <= 1e-300 * np.maximum(1.0, np.abs(arr).max(axis=0)) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(flat, 1.0, acov / np.where(flat, 1.0, g0))
    return np.moveaxis(rho, 0, axis)


def autocorrelation_ess(x: Any, *, axis: int = 0) -> np.ndarray | float:
    r"""Single-chain effective sample size :math:`n / \hat\tau` with Geyer's initial monotone sequence.

    With the autocorrelations :math:`\hat\rho_t` (:func:`autocorrelation`), Geyer (1992) sums pairs
    :math:`\hat\Gamma_m = \hat\rho_{2m} + \hat\rho_{2m+1}`, which are positive and decreasing for a
    reversible chain: the sum stops before the first :math:`\hat\Gamma_m \le 0` (initial positive
    sequence) and each pair is capped by the previous one (initial monotone sequence),

    .. math::

        \hat\tau = -1 + 2 \sum_{m=0}^{M} \min_{j \le m} \hat\Gamma_j, \qquad
        \widehat{\mathrm{ESS}} = n / \max(\hat\tau, 1/\log_{10} n).

    The floor :math:`1/\log_{10} n` (as in Stan and ArviZ) keeps antithetic chains, whose
    :math:`\hat\tau < 1` and ESS > n, from blowing up. A constant series gets ESS = 1 (its average is
    one number, whatever ``n``). The estimate assumes a stationary Markov chain; for
    history-dependent samplers prefer :func:`ess_mse`.

    Parameters
    ----------
    x : array_like, shape (..., n, ...)
        One chain per component, draws along ``axis`` (at least 4).
    axis : int

    Returns
    -------
    float or ndarray
        ESS per component (``x`` with ``axis`` removed).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> 9000 < autocorrelation_ess(rng.normal(size=10000)) < 11000
    True
    """
    arr = check_array("x", x)
    if arr.ndim == 0:
        raise ValueError("x must have at least 1 dimension (the draws)")
    check_int("axis", axis, low=-arr.ndim, high=arr.ndim - 1)
    n = arr.shape[axis]
    if n < 4:
        raise ValueError(f"x must hold at least 4 draws along axis; got {n}")
    rho = np.moveaxis(autocorrelation(arr, axis=axis), axis, 0)
    rest = rho.shape[1:]
    rho = rho.reshape(n, -1)
    constant = np.all(rho == 1.0, axis=0)
    m = n // 2
    gamma = rho[0 : 2 * m : 2] + rho[1 : 2 * m : 2]  # Γ_m = ρ_{2m} + ρ_{2m+1}, shape (m, k)
    nonpos = gamma <= 0
    first_bad = np.where(nonpos.any(axis=0), np.argmax(nonpos, axis=0), m)  # initial positive sequence
    gamma = np.minimum.accumulate(gamma, axis=0)  # initial monotone sequence
    keep = np.arange(m)[:, None] < first_bad[None, :]
    tau = -1.0 + 2.0 * np.sum(np.where(keep, gamma, 0.0), axis=0)
    tau = np.maximum(tau, 1.0 / np.log10(n))
    ess = np.where(constant, 1.0, n / tau).reshape(rest)
    return float(ess) if ess.ndim == 0 else ess
