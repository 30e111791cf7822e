r"""Representational similarity measures on paired representations: the field's extrinsic baselines.

Every measure takes two representations of the *same* ``n`` stimuli, ``X`` of shape ``(n, d1)`` and
``Y`` of shape ``(n, d2)`` (rows paired), and returns a Python ``float``, in the style of the common
CKA/RSA toolboxes:

==========================  ==========================================  =====================================
function                    value                                       invariant to
==========================  ==========================================  =====================================
:func:`linear_cka`          similarity in [0, 1], 1 for ``X`` vs ``X``   orthogonal maps, isotropic scale, shifts
:func:`rbf_cka`             similarity in [0, 1]                        orthogonal maps, isotropic scale, shifts
:func:`cca`                 mean canonical correlation in [0, 1]        invertible linear maps, shifts
:func:`svcca`               mean canonical correlation of the top-SVD   orthogonal maps, isotropic scale, shifts
                            subspaces
:func:`pwcca`               projection-weighted mean canonical          invertible linear maps of ``Y``;
                            correlation (asymmetric)                    neuron permutations, scale of ``X``
:func:`rsa`                 Spearman (or Pearson) correlation of the    orthogonal maps, scale, shifts
                            two representational dissimilarity          (Euclidean RDMs)
                            matrices
:func:`procrustes_distance` angular shape distance in [0, π/2],         orthogonal maps, isotropic scale, shifts
                            0 for ``X`` vs ``X``
==========================  ==========================================  =====================================

These measures compare the *extrinsic* geometry of the point clouds in state space; metric similarity
analysis (:mod:`geode.analysis.msa`) compares the intrinsic geometry instead.

Bad input fails loudly: different numbers of samples, fewer than 3 samples, NaN or infinity raise a
``ValueError`` naming the argument, and so does a constant representation (zero variance after
centring), for which every one of these measures is undefined (it is never returned as NaN).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.validation import check_choice, check_positive, check_probability

__all__ = [
    "canonical_correlations",
    "cca",
    "check_pair",
    "linear_cka",
    "procrustes_distance",
    "pwcca",
    "rbf_cka",
    "rdm",
    "rsa",
    "svcca",
]

_MIN_SAMPLES = 3


# --------------------------------------------------------------------------- validation and helpers


def _as_rep(name: str, value: Any) -> np.ndarray:
    """A representation as a float64 matrix (n_samples, n_features); a 1-D input is one feature."""
    if hasattr(value, "detach"):  # torch tensor
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be an array of shape (n_samples, n_features); got {type(value).__name__}"
        ) from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (n_samples, n_features); got shape {arr.shape}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one feature; got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return arr


def check_pair(X: Any, Y: Any, *, names: tuple[str, str] = ("X", "Y")) -> tuple[np.ndarray, np.ndarray]:
    """Validate two paired representations: 2-D, finite, the same number of samples, at least 3.

    Returns float64 copies-or-views of shape ``(n, d1)`` and ``(n, d2)``.
    """
    x = _as_rep(names[0], X)
    y = _as_rep(names[1], Y)
    if x.shape[0] != y.shape[0]:
        raise ValueError(
            f"{names[0]} and {names[1]} must have the same number of samples (rows, paired stimuli); "
            f"got {x.shape[0]} and {y.shape[0]}"
        )
    if x.shape[0] < _MIN_SAMPLES:
        raise ValueError(f"{names[0]} and {names[1]} need at least {_MIN_SAMPLES} samples; got {x.shape[0]}")
    return x, y


def _centre(name: str, x: np.ndarray, what: str) -> np.ndarray:
    xc = x - x.mean(axis=0, keepdims=True)
    scale = float(np.abs(x).max())
    if not np.any(np.abs(xc) > 1e-12 * max(scale, 1e-300)):
        raise ValueError(f"{name} is constant (zero variance after centring): {what} is undefined for it")
    return xc


def _orthonormal_basis(xc: np.ndarray, keep: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal basis of the column space of the centred ``xc`` from its thin SVD.

    Directions with singular value below ``max(n, d) * eps * s_max`` are dropped (numerical rank);
    with ``keep`` in (0, 1] only the leading directions explaining that fraction of the variance stay.
    Returns the basis ``U`` (n, r) and the singular values kept.
    """
    u, s, _ = np.linalg.svd(xc, full_matrices=False)
    tol = max(xc.shape) * np.finfo(float).eps * s[0]
    r = int(np.sum(s > tol))
    if keep is not None:
        energy = np.cumsum(s[:r] ** 2) / np.sum(s[:r] ** 2)
        r = int(np.searchsorted(energy, keep - 1e-12) + 1)
    return u[:, :r], s[:r]


# --------------------------------------------------------------------------- CKA


def linear_cka(X: Any, Y: Any) -> float:
    r"""Linear centred kernel alignment (Kornblith et al., 2019).

    With column-centred :math:`\tilde X = HX`, :math:`\tilde Y = HY` (:math:`H = I - \tfrac1n \mathbf 1
    \mathbf 1^\top`),

    .. math::

        \mathrm{CKA}(X, Y) = \frac{\|\tilde Y^\top \tilde X\|_F^2}
        {\|\tilde X^\top \tilde X\|_F\, \|\tilde Y^\top \tilde Y\|_F}
        = \frac{\langle \tilde X \tilde X^\top, \tilde Y \tilde Y^\top\rangle_F}
        {\|\tilde X \tilde X^\top\|_F\, \|\tilde Y \tilde Y^\top\|_F}.

    The left (feature-space) form costs :math:`O(n\,(d_1 + d_2)^2)` and is used when the feature
    dimensions are smaller than ``n``; otherwise the right (Gram) form, :math:`O(n^2 (d_1 + d_2))`.

    Parameters
    ----------
    X : array_like, shape (n, d1)
    Y : array_like, shape (n, d2)
        Paired representations (row ``i`` of both is stimulus ``i``); a 1-D input is one feature.

    Returns
    -------
    float
        In [0, 1]; 1 when ``Y = c X Q + b`` for orthogonal ``Q`` and ``c != 0``.

    Raises
    ------
    ValueError
        Different numbers of samples, fewer than 3, non-finite values, or a constant representation.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(50, 4))
    >>> round(linear_cka(X, 3 * X @ np.linalg.qr(rng.normal(size=(4, 4)))[0] + 1), 10)
    1.0
    """
    x, y = check_pair(X, Y)
    xc = _centre("X", x, "linear CKA")
    yc = _centre("Y", y, "linear CKA")
    n, d1 = xc.shape
    d2 = yc.shape[1]
    if d1 * d2 + d1 * d1 + d2 * d2 <= n * (d1 + d2 + 1):
        cross = np.sum((yc.T @ xc) ** 2)
        nx = np.linalg.norm(xc.T @ xc)
        ny = np.linalg.norm(yc.T @ yc)
    else:
        kx = xc @ xc.T
        ky = yc @ yc.T
        cross = np.sum(kx * ky)
        nx = np.linalg.norm(kx)
        ny = np.linalg.norm(ky)
    return float(np.clip(cross / (nx * ny), 0.0, 1.0))


def _centre_gram(k: np.ndarray) -> np.ndarray:
    """:math:`HKH` without forming :math:`H`: subtract row and column means, add back the grand mean."""
    row = k.mean(axis=0, keepdims=True)
    return k - row - row.T + k.mean()


def _rbf_gram(x: np.ndarray, bandwidth: float) -> np.ndarray:
    sq = np.sum(x * x, axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (x @ x.T), 0.0)
    np.fill_diagonal(d2, 0.0)
    med = float(np.median(d2[np.triu_indices_from(d2, k=1)]))
    if med <= 0.0:
        med = float(np.mean(d2[np.triu_indices_from(d2, k=1)]))
    sigma2 = bandwidth**2 * med
    return np.exp(-d2 / (2.0 * sigma2))


def rbf_cka(X: Any, Y: Any, *, bandwidth: float = 1.0) -> float:
    r"""CKA with Gaussian (RBF) kernels (Kornblith et al., 2019).

    .. math::

        K_{ij} = \exp\!\left(-\frac{\|x_i - x_j\|^2}{2\sigma_X^2}\right), \quad
        \mathrm{CKA} = \frac{\langle HKH, HLH\rangle_F}{\|HKH\|_F\, \|HLH\|_F},

    with :math:`\sigma_X` = ``bandwidth`` times the median pairwise distance of ``X`` (likewise for
    ``Y``), so the measure is invariant to isotropic scaling as well as to orthogonal maps and shifts.
    Cost :math:`O(n^2 (d_1 + d_2))` time and :math:`O(n^2)` memory.

    Parameters
    ----------
    X : array_like, shape (n, d1)
    Y : array_like, shape (n, d2)
    bandwidth : float
        Kernel width as a multiple of the median pairwise Euclidean distance (> 0).

    Returns
    -------
    float in [0, 1]
    """
    x, y = check_pair(X, Y)
    bandwidth = check_positive("bandwidth", bandwidth)
    _centre("X", x, "RBF CKA")
    _centre("Y", y, "RBF CKA")
    kx = _centre_gram(_rbf_gram(x, bandwidth))
    ky = _centre_gram(_rbf_gram(y, bandwidth))
    nx, ny = np.linalg.norm(kx), np.linalg.norm(ky)
    if nx == 0.0 or ny == 0.0:  # pragma: no cover - excluded by the constant check
        raise ValueError("a centred RBF Gram matrix is zero: RBF CKA is undefined")
    return float(np.clip(np.sum(kx * ky) / (nx * ny), 0.0, 1.0))


# --------------------------------------------------------------------------- CCA family


def canonical_correlations(X: Any, Y: Any) -> np.ndarray:
    r"""Canonical correlations :math:`\rho_1 \ge \rho_2 \ge \dots` between two representations.

    With orthonormal bases :math:`Q_X, Q_Y` of the column spaces of the centred representations, the
    canonical correlations are the singular values of :math:`Q_X^\top Q_Y` (Björck and Golub, 1973):

    .. math::

        \rho_i = \sigma_i(Q_X^\top Q_Y) = \max_{a, b}\ \mathrm{corr}(\tilde X a, \tilde Y b)
        \ \text{(under orthogonality to the previous pairs)}.

    Rank-deficient representations are handled through their numerical rank; ``min(rank X, rank Y)``
    correlations are returned. They are invariant to invertible linear maps and shifts of either
    side. When ``n`` is not much larger than ``d1 + d2`` they are biased towards 1 (overfitting);
    :func:`svcca` reduces the dimension first.

    Returns
    -------
    ndarray, shape (min(rank X, rank Y),), values in [0, 1], descending
    """
    x, y = check_pair(X, Y)
    qx, _ = _orthonormal_basis(_centre("X", x, "CCA"))
    qy, _ = _orthonormal_basis(_centre("Y", y, "CCA"))
    return _ccorr(qx, qy)


def _ccorr(qx: np.ndarray, qy: np.ndarray) -> np.ndarray:
    rho = np.linalg.svd(qx.T @ qy, compute_uv=False)
    return np.clip(rho[: min(qx.shape[1], qy.shape[1])], 0.0, 1.0)


def cca(X: Any, Y: Any) -> float:
    r"""Mean canonical correlation :math:`\bar\rho = \frac1k \sum_{i=1}^k \rho_i` (see :func:`canonical_correlations`).

    Invariant to invertible linear maps of either representation; 1 for ``X`` vs ``X``.
    """
    return float(np.mean(canonical_correlations(X, Y)))


def svcca(X: Any, Y: Any, *, keep: float = 0.99) -> float:
    r"""SVCCA (Raghu et al., 2017): mean canonical correlation after an SVD reduction of each side.

    Each centred representation is reduced to its leading left singular vectors explaining a fraction
    ``keep`` of its variance, :math:`\tilde X \approx U_X S_X V_X^\top`, and the mean canonical
    correlation of :math:`U_X S_X` and :math:`U_Y S_Y` is returned:

    .. math::

        \mathrm{SVCCA}(X, Y) = \frac1k \sum_{i=1}^{k} \sigma_i\big(U_X^\top U_Y\big),
        \quad k = \min(r_X, r_Y).

    Invariant to orthogonal maps, isotropic scale and shifts; with ``keep=1`` it is :func:`cca` and
    hence invariant to every invertible linear map.

    Parameters
    ----------
    X : array_like, shape (n, d1)
    Y : array_like, shape (n, d2)
    keep : float in (0, 1]
        Fraction of variance kept by the SVD step (Raghu et al. keep 99 %).
    """
    x, y = check_pair(X, Y)
    keep = check_probability("keep", keep)
    if keep == 0.0:
        raise ValueError("keep must be > 0; got 0.0")
    qx, _ = _orthonormal_basis(_centre("X", x, "SVCCA"), keep=keep)
    qy, _ = _orthonormal_basis(_centre("Y", y, "SVCCA"), keep=keep)
    return float(np.mean(_ccorr(qx, qy)))


def pwcca(X: Any, Y: Any) -> float:
    r"""Projection-weighted CCA (Morcos et al., 2018): canonical correlations weighted by their share of ``X``.

    With canonical variates :math:`h_i = Q_X a_i` of ``X`` (unit vectors in sample space; :math:`a_i`
    the left singular vectors of :math:`Q_X^\top Q_Y`) and the centred neurons :math:`\tilde x_j`
    (columns of :math:`\tilde X`),

    .. math::

        \alpha_i = \sum_j |\langle h_i, \tilde x_j\rangle|, \qquad
        \mathrm{PWCCA}(X, Y) = \frac{\sum_i \alpha_i \rho_i}{\sum_i \alpha_i}.

    Asymmetric: the weights come from ``X``. Invariant to invertible linear maps of ``Y``, to
    permutations and sign flips of the neurons of ``X``, to isotropic scaling and to shifts (but not
    to general rotations of ``X``: the weights are an L1 norm over its neurons); 1 for ``X`` vs ``X``.
    """
    x, y = check_pair(X, Y)
    xc = _centre("X", x, "PWCCA")
    qx, _ = _orthonormal_basis(xc)
    qy, _ = _orthonormal_basis(_centre("Y", y, "PWCCA"))
    a, rho, _ = np.linalg.svd(qx.T @ qy, full_matrices=False)
    k = min(qx.shape[1], qy.shape[1])
    rho = np.clip(rho[:k], 0.0, 1.0)
    h = qx @ a[:, :k]  # (n, k) canonical variates of X
    alpha = np.abs(h.T @ xc).sum(axis=1)
    return float(np.sum(alpha * rho) / np.sum(alpha))


# --------------------------------------------------------------------------- RSA


_RDM_METRICS = ("euclidean", "sqeuclidean", "correlation", "cosine")


def rdm(X: Any, *, metric: str = "euclidean") -> np.ndarray:
    r"""Representational dissimilarity matrix in condensed form (the upper triangle, row by row).

    ``metric``: ``"euclidean"`` :math:`\|x_i - x_j\|`, ``"sqeuclidean"``, ``"correlation"``
    :math:`1 - \mathrm{corr}(x_i, x_j)` across features, or ``"cosine"``.

    Returns
    -------
    ndarray, shape (n (n - 1) / 2,)
    """
    from scipy.spatial.distance import pdist

    x = _as_rep("X", X)
    metric = check_choice("metric", metric, _RDM_METRICS)
    if x.shape[0] < 2:
        raise ValueError(f"X needs at least 2 samples for a dissimilarity matrix; got {x.shape[0]}")
    if metric == "correlation":
        if x.shape[1] < 2 or np.any(np.ptp(x, axis=1) == 0):
            raise ValueError("metric='correlation' needs every pattern (row of X) to vary across >= 2 features")
    if metric == "cosine" and np.any(np.linalg.norm(x, axis=1) == 0):
        raise ValueError("metric='cosine' needs every pattern (row of X) to be non-zero")
    d = pdist(x, metric=metric)
    if not np.all(np.isfinite(d)):  # pragma: no cover - excluded by the checks above
        raise ValueError(f"the {metric} RDM of X contains non-finite values")
    return d


def _rank(v: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean of their positions), as ``scipy.stats.rankdata``."""
    order = np.argsort(v, kind="mergesort")
    sv = v[order]
    first = np.r_[True, sv[1:] != sv[:-1]]
    group = np.cumsum(first)
    bounds = np.r_[np.nonzero(first)[0], v.size]
    ranks = np.empty(v.size)
    ranks[order] = 0.5 * (bounds[group - 1] + bounds[group] + 1)
    return ranks


def rsa(X: Any, Y: Any, *, metric: str = "euclidean", compare: str = "spearman") -> float:
    r"""Representational similarity analysis (Kriegeskorte et al., 2008): correlation of the two RDMs.

    .. math::

        \mathrm{RSA}(X, Y) = \mathrm{corr}\big(\mathrm{vec}_{i<j} D^X_{ij},\ \mathrm{vec}_{i<j} D^Y_{ij}\big),

    with :math:`D` from :func:`rdm` and Spearman's rank correlation (default) or Pearson's. With
    Euclidean RDMs it is invariant to orthogonal maps, shifts and isotropic scale; with Spearman to
    any monotone transform of the dissimilarities too. Cost :math:`O(n^2 (d_1 + d_2))`.

    Parameters
    ----------
    X : array_like, shape (n, d1)
    Y : array_like, shape (n, d2)
    metric : {"euclidean", "sqeuclidean", "correlation", "cosine"}
    compare : {"spearman", "pearson"}

    Returns
    -------
    float in [-1, 1]; 1 for ``X`` vs ``X``.

    Raises
    ------
    ValueError
        When an RDM is constant (e.g. a constant representation), for which the correlation is undefined.
    """
    x, y = check_pair(X, Y)
    compare = check_choice("compare", compare, ("spearman", "pearson"))
    dx = rdm(x, metric=metric)
    dy = rdm(y, metric=metric)
    for name, d in (("X", dx), ("Y", dy)):
        if np.ptp(d) <= 1e-12 * max(float(np.abs(d).max()), 1e-300):
            raise ValueError(f"the RDM of {name} is constant (e.g. a constant representation): RSA is undefined")
    if compare == "spearman":
        dx, dy = _rank(dx), _rank(dy)
    dx = dx - dx.mean()
    dy = dy - dy.mean()
    return float(np.clip(np.dot(dx, dy) / (np.linalg.norm(dx) * np.linalg.norm(dy)), -1.0, 1.0))


# --------------------------------------------------------------------------- Procrustes


def procrustes_distance(X: Any, Y: Any, *, kind: str = "angular") -> float:
    r"""Procrustes shape distance (Williams et al., 2021, netrep's ``LinearMetric(alpha=1)``).

    Centre both representations and scale them to unit Frobenius norm; zero-pad the narrower one.
    The best orthogonal alignment gives :math:`\max_Q \langle \hat X, \hat Y Q\rangle = \|\hat X^\top
    \hat Y\|_*` (nuclear norm), and

    .. math::

        d_{\angle}(X, Y) = \arccos \|\hat X^\top \hat Y\|_*, \qquad
        d_{E}(X, Y) = \sqrt{2 - 2\,\|\hat X^\top \hat Y\|_*}.

    The angular form (default) is a metric on shapes: symmetric, zero exactly when ``Y = c X Q + b``,
    and it satisfies the triangle inequality. Cost :math:`O(n\, d_1 d_2)`.

    Parameters
    ----------
    X : array_like, shape (n, d1)
    Y : array_like, shape (n, d2)
    kind : {"angular", "euclidean"}

    Returns
    -------
    float, in [0, π/2] (angular) or [0, √2] (Euclidean)
    """
    x, y = check_pair(X, Y)
    kind = check_choice("kind", kind, ("angular", "euclidean"))
    xc = _centre("X", x, "the Procrustes distance")
    yc = _centre("Y", y, "the Procrustes distance")
    xc = xc / np.linalg.norm(xc)
    yc = yc / np.linalg.norm(yc)
    nuc = float(np.clip(np.linalg.svd(xc.T @ yc, compute_uv=False).sum(), 0.0, 1.0))
    if kind == "angular":
        return float(np.arccos(nuc))
    return float(np.sqrt(max(2.0 - 2.0 * nuc, 0.0)))
