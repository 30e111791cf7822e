r"""Nearest-neighbour intrinsic-dimension baselines: TwoNN (Facco et al., 2017) and the MLE (Levina & Bickel, 2004).

Both read the intrinsic dimension off the distances :math:`T_1(x) \le T_2(x) \le \dots` from a point to its
nearest neighbours, assuming a locally uniform density on a :math:`d`-dimensional manifold.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from geode.core import check_int, check_real
from geode.probabilistic.ot_sampling_error.estimators import _points

__all__ = ["mle_dimension", "twonn_dimension"]


def twonn_dimension(X: Any, *, discard_fraction: float = 0.1) -> float:
    r"""TwoNN intrinsic dimension (Facco, d'Errico, Rodriguez & Laio, Sci. Rep. 2017).

    With :math:`\mu_i = T_2(x_i)/T_1(x_i)`, locally uniform data give the Pareto law
    :math:`F(\mu) = 1 - \mu^{-d}` on :math:`[1, \infty)`; so :math:`-\log(1 - F(\mu)) = d \log\mu`, and :math:`d`
    is the least-squares slope through the origin of :math:`-\log(1 - F_{\mathrm{emp}}(\mu_{(i)}))` against
    :math:`\log\mu_{(i)}`, :math:`F_{\mathrm{emp}}(\mu_{(i)}) = i/n`, after discarding the largest
    ``discard_fraction`` of the ratios (as in the paper).

    Parameters
    ----------
    X : array_like, shape (n, D)
        The sample, at least 3 points.
    discard_fraction : float, default 0.1
        Fraction of the largest ratios left out of the fit, in [0, 1).

    Returns
    -------
    float
    """
    Y = _points("X", X, min_rows=3)
    discard_fraction = check_real("discard_fraction", discard_fraction, low=0.0, high=1.0, high_inclusive=False)
    dist, _ = cKDTree(Y).query(Y, k=3)
    r1, r2 = dist[:, 1], dist[:, 2]
    keep = r1 > 0
    if keep.sum() < 2:
        raise ValueError("X needs at least two points with a non-zero nearest-neighbour distance")
    mu = np.sort(r2[keep] / r1[keep])
    n = mu.shape[0]
    m = max(int(np.floor(n * (1.0 - discard_fraction))), 1)
    x = np.log(mu[:m])
    y = -np.log(1.0 - np.arange(1, m + 1) / n)  # F_emp(mu_(i)) = i / n; i <= m < n unless m == n
    if m == n:
        x, y = x[:-1], y[:-1]
    denom = float(np.dot(x, x))
    if denom <= 0:
        raise ValueError("all TwoNN ratios are 1: the dimension is not identifiable")
    return float(np.dot(x, y) / denom)


def mle_dimension(X: Any, *, k: int = 20) -> float:
    r"""Levina-Bickel maximum-likelihood intrinsic dimension, averaged as MacKay & Ghahramani suggest.

    The local estimate at :math:`x` from its :math:`k` nearest neighbours is
    :math:`\hat m_k(x) = \big[\frac{1}{k-1}\sum_{j=1}^{k-1} \log\frac{T_k(x)}{T_j(x)}\big]^{-1}` (Levina & Bickel,
    NeurIPS 2004); the global estimate averages the inverses, :math:`\hat m_k = \big[\frac1n \sum_i
    \hat m_k(x_i)^{-1}\big]^{-1}` (MacKay & Ghahramani, 2005), which removes the upward bias of averaging
    :math:`\hat m_k(x_i)` itself.

    Parameters
    ----------
    X : array_like, shape (n, D)
        The sample, at least ``k + 1`` points.
    k : int, default 20
        Number of neighbours, ``k >= 2``.

    Returns
    -------
    float
    """
    k = check_int("k", k, low=2)
    Y = _points("X", X, min_rows=k + 1)
    dist, _ = cKDTree(Y).query(Y, k=k + 1)
    T = dist[:, 1:]  # T_1..T_k
    if np.any(T[:, 0] <= 0):
        raise ValueError("X has duplicate points: the MLE needs non-zero neighbour distances")
    inv = np.mean(np.log(T[:, -1:] / T[:, :-1]), axis=1)  # 1 / m_k(x_i)
    return float(1.0 / inv.mean())
