r"""Metric similarity analysis: compare the intrinsic (pullback) geometry of two neural manifolds.

Given two representation maps :math:`f_A, f_B` of the same manifold with shared coordinates
:math:`z`, and their pullback metrics :math:`G_A(z) = J_A^\top J_A`, :math:`G_B(z) = J_B^\top J_B`
(:mod:`geode.analysis.pullback`), MSA compares the metrics point by point:

1. regularise :math:`G \leftarrow G + \varepsilon\, \bar g\, I` with :math:`\bar g` the mean of
   :math:`\mathrm{tr}\, G(z_i) / d` over the points (a *relative* ridge, so step 4's scale invariance is
   exact);
2. the *spectral ratios* at each point are the generalised eigenvalues
   :math:`\lambda_k(z_i) = \mathrm{eig}_k\big(G_A(z_i)^{-1} G_B(z_i)\big)`, the squared stretch ratios
   of :math:`f_B` against :math:`f_A` along the principal directions;
3. normalise away a global scale by the geometric mean :math:`\bar\lambda =
   \exp\big(\tfrac{1}{n d}\sum_{i,k} \log \lambda_k(z_i)\big)`;
4. the per-point discrepancy is the affine-invariant (Riemannian) SPD distance after normalisation,
   and MSA averages its square over the manifold:

.. math::

    \delta_i = \Big(\sum_{k=1}^d \log^2 \frac{\lambda_k(z_i)}{\bar\lambda}\Big)^{1/2}, \qquad
    d_{\mathrm{MSA}}(f_A, f_B) = \Big(\frac1n \sum_{i=1}^n \delta_i^2\Big)^{1/2}, \qquad
    s_{\mathrm{MSA}} = e^{-d_{\mathrm{MSA}}}.

:math:`\delta_i` is the affine-invariant distance :math:`\|\log(G_A^{-1/2} G_B G_A^{-1/2} / \bar\lambda)\|_F`
(pyriemann's ``distance_riemann``). Invariances, exact up to the ridge :math:`\varepsilon`:

- isometries of either state space (:math:`f \mapsto Q f + b`): :math:`J^\top Q^\top Q J = J^\top J`;
- a global scale of either map: it multiplies every :math:`\lambda` by :math:`c^2`, removed by :math:`\bar\lambda`;
- a shared change of coordinates :math:`z = \varphi(u)`: both metrics are congruence-transformed,
  :math:`G \mapsto J_\varphi^\top G J_\varphi`, and generalised eigenvalues are congruence invariant.

What it does detect: any change of the *relative* stretching along the manifold, e.g. a nonlinear
warp of the coordinates applied to one map only, which linear CKA may barely notice.

**Singular metrics.** Where a map collapses a direction of the manifold (dead ReLU units, saturated
tanh, fewer outputs than intrinsic dimensions), :math:`J^\top J` is singular and the generalised
eigenvalue along that direction is set by the ridge: the distance then grows like :math:`\log(1/\varepsilon)`
and means nothing. :func:`spectral_ratios` and :func:`msa_from_metrics` therefore count the points where
an eigenvalue of either raw metric is below ``10 eps`` times its mean scale ("ridge-dominated") and emit a
:class:`SingularMetricWarning` when any is found; ``return_info`` reports the fraction
(``ridge_dominated_fraction``) and, with ``rank="exclude"``, the distance is averaged over the other points
only (a rank-aware reading; the warning still names how many were left out).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.analysis.pullback import _knn, metric_from_samples
from geode.analysis.similarity import check_pair
from geode.core.validation import check_choice, check_int, check_real

__all__ = [
    "SingularMetricWarning",
    "estimate_intrinsic_dim",
    "local_chart_metrics",
    "msa_distance",
    "msa_from_metrics",
    "spectral_ratios",
]


class SingularMetricWarning(RuntimeWarning):
    """A pullback metric is (near-)singular at some points: MSA there is set by the ridge ``eps``."""


def _ridge_dominated(g: np.ndarray, eps: float) -> np.ndarray:
    """Points where an eigenvalue of the raw metric is below 10 x the relative ridge (n,) bool."""
    d = g.shape[1]
    gbar = float(np.trace(g, axis1=1, axis2=2).mean() / d)
    w = np.linalg.eigvalsh(g)
    return w[:, 0] < 10.0 * max(eps, 1e-12) * gbar


_NORMALIZE = ("global", "pointwise", "none")
_DISTANCE = ("affine", "logeuclid")


def _check_metrics(name: str, g: Any) -> np.ndarray:
    try:
        arr = np.asarray(g, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of shape (n_points, d, d); got {type(g).__name__}") from None
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[1] != arr.shape[2] or arr.shape[1] < 1:
        raise ValueError(f"{name} must have shape (n_points, d, d) (one metric per point); got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must hold at least one point; got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    if not np.allclose(arr, np.swapaxes(arr, 1, 2), rtol=1e-6, atol=1e-10 * max(float(np.abs(arr).max()), 1e-300)):
        raise ValueError(f"{name} must be symmetric (metric tensors G = J^T J)")
    return 0.5 * (arr + np.swapaxes(arr, 1, 2))


def _regularise(name: str, g: np.ndarray, eps: float) -> np.ndarray:
    d = g.shape[1]
    gbar = float(np.trace(g, axis1=1, axis2=2).mean() / d)
    if gbar <= 0.0:
        raise ValueError(f"{name} is zero everywhere (a constant map has no pullback geometry): MSA is undefined")
    out = g + (eps * gbar) * np.eye(d)
    w = np.linalg.eigvalsh(out)
    if np.any(w[:, 0] <= 1e-14 * w[:, -1]):
        raise ValueError(f"{name} is singular at some points; use eps > 0 (a relative ridge)")
    return out


def spectral_ratios(GA: Any, GB: Any, *, eps: float = 1e-6) -> np.ndarray:
    r"""Generalised eigenvalues :math:`\lambda_k(z_i)` of :math:`(G_B(z_i), G_A(z_i))`, per point, ascending.

    Computed stably as the eigenvalues of :math:`L^{-1} G_B L^{-\top}` with :math:`G_A = L L^\top`
    (Cholesky), after the relative ridge ``eps`` (see the module docstring).

    Parameters
    ----------
    GA, GB : array_like, shape (n, d, d)
        Metric tensors of the two maps at the same points.
    eps : float
        Relative ridge, ``>= 0``.

    Returns
    -------
    ndarray, shape (n, d), positive
    """
    ga = _check_metrics("GA", GA)
    gb = _check_metrics("GB", GB)
    if ga.shape != gb.shape:
        raise ValueError(f"GA and GB must have the same shape (same points, same d); got {ga.shape} and {gb.shape}")
    eps = check_real("eps", eps, low=0.0)
    ga = _regularise("GA", ga, eps)
    gb = _regularise("GB", gb, eps)
    chol = np.linalg.cholesky(ga)
    m = np.linalg.solve(chol, gb)  # L^{-1} G_B
    m = np.linalg.solve(chol, np.swapaxes(m, 1, 2))  # L^{-1} G_B L^{-T} (G_B symmetric)
    m = 0.5 * (m + np.swapaxes(m, 1, 2))
    lam = np.linalg.eigvalsh(m)
    return np.maximum(lam, np.finfo(float).tiny)


def _logm_spd(g: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(g)
    return np.einsum("nik,nk,njk->nij", v, np.log(w), v)


def msa_from_metrics(
    GA: Any,
    GB: Any,
    *,
    eps: float = 1e-6,
    normalize: str = "global",
    distance: str = "affine",
    return_info: bool = False,
    rank: str = "warn",
) -> float | tuple[float, dict[str, Any]]:
    r"""MSA distance between two fields of metric tensors at the same points.

    Parameters
    ----------
    GA, GB : array_like, shape (n, d, d)
        Pullback metrics of the two maps at the same points (e.g. from
        :func:`geode.analysis.pullback_metric`).
    eps : float
        Relative ridge added to each metric field (see the module docstring).
    normalize : {"global", "pointwise", "none"}
        ``"global"`` divides every ratio by the global geometric mean :math:`\bar\lambda` (the paper's
        scale invariance); ``"pointwise"`` by each point's own geometric mean (additionally invariant to
        a conformal rescaling that varies along the manifold); ``"none"`` keeps the scale.
    distance : {"affine", "logeuclid"}
        ``"affine"``: the affine-invariant distance of the module docstring. ``"logeuclid"``:
        :math:`\delta_i = \|\log G_B(z_i) - \log G_A(z_i) - c\, I\|_F` (cheaper to reason about, but not
        invariant to a change of coordinates), with :math:`c` the matching normalisation.
    return_info : bool
        Also return a dict with ``distance``, ``similarity`` (:math:`e^{-d}`), ``pointwise`` (the
        per-point discrepancies :math:`\delta_i`, shape (n,)), ``log_ratios`` (shape (n, d); affine only),
        ``scale`` (:math:`\bar\lambda` for ``"global"``, else 1 or the per-point means) and
        ``ridge_dominated_fraction`` (points where either metric is near-singular; module docstring).
    rank : {"warn", "exclude", "ignore"}
        Near-singular metrics: ``"warn"`` (default) emits :class:`SingularMetricWarning` and keeps every
        point; ``"exclude"`` averages over the other points only (and warns); ``"ignore"`` is silent.

    Returns
    -------
    float
        :math:`d_{\mathrm{MSA}} \ge 0`; 0 when the two metric fields agree up to one global scale.
    """
    normalize = check_choice("normalize", normalize, _NORMALIZE)
    distance = check_choice("distance", distance, _DISTANCE)
    rank = check_choice("rank", rank, ("warn", "exclude", "ignore"))
    eps = check_real("eps", eps, low=0.0)
    ga0, gb0 = _check_metrics("GA", GA), _check_metrics("GB", GB)
    if ga0.shape != gb0.shape:
        raise ValueError(f"GA and GB must have the same shape (same points, same d); got {ga0.shape} and {gb0.shape}")
    bad = _ridge_dominated(ga0, eps) | _ridge_dominated(gb0, eps)
    frac = float(bad.mean())
    if rank == "exclude" and bad.all():
        raise ValueError("every point has a near-singular metric: rank='exclude' leaves nothing to compare")
    if frac > 0 and rank != "ignore":
        import warnings

        what = "left out (rank='exclude')" if rank == "exclude" else "kept; MSA there grows like log(1/eps)"
        warnings.warn(
            f"pullback metric near-singular (an eigenvalue below 10 eps x its scale) at {frac:.1%} of the points, "
            f"{what}: the distance there is set by the ridge eps = {eps:g}, not by the geometry",
            SingularMetricWarning,
            stacklevel=2,
        )
    info: dict[str, Any] = {"ridge_dominated_fraction": frac}
    if distance == "affine":
        lam = spectral_ratios(GA, GB, eps=eps)
        ell = np.log(lam)
        if normalize == "global":
            c: Any = float(ell.mean())
        elif normalize == "pointwise":
            c = ell.mean(axis=1, keepdims=True)
        else:
            c = 0.0
        dev = ell - c
        delta = np.sqrt(np.sum(dev**2, axis=1))
        info["log_ratios"] = ell
    else:
        ga = _check_metrics("GA", GA)
        gb = _check_metrics("GB", GB)
        if ga.shape != gb.shape:
            raise ValueError(f"GA and GB must have the same shape; got {ga.shape} and {gb.shape}")
        eps = check_real("eps", eps, low=0.0)
        diff = _logm_spd(_regularise("GB", gb, eps)) - _logm_spd(_regularise("GA", ga, eps))
        dim = diff.shape[1]
        tr = np.trace(diff, axis1=1, axis2=2) / dim
        if normalize == "global":
            c = float(tr.mean())
        elif normalize == "pointwise":
            c = tr[:, None, None]
        else:
            c = 0.0
        dev = diff - c * np.eye(dim)
        delta = np.sqrt(np.sum(dev**2, axis=(1, 2)))
    keep = ~bad if rank == "exclude" else np.ones_like(bad)
    d = float(np.sqrt(np.mean(delta[keep] ** 2)))
    if not return_info:
        return d
    info.update(
        distance=d,
        similarity=float(np.exp(-d)),
        pointwise=delta,
        scale=float(np.exp(c)) if isinstance(c, float) else np.exp(np.ravel(c)),
    )
    return d, info


def estimate_intrinsic_dim(X: Any, *, n_neighbors: int = 12, variance: float = 0.9) -> int:
    r"""Intrinsic dimension by local PCA (the median over points of the local number of components).

    The number of principal components of a point's ``k``-neighbourhood needed to explain ``variance`` of its
    local variance; the estimate is its median over the points.

    A simple estimator (Fukunaga and Olsen, 1971); adequate when neighbourhoods are small compared with
    the manifold's curvature radius.
    """
    x = check_pair(X, X)[0]
    n = x.shape[0]
    k = check_int("n_neighbors", n_neighbors, low=2, high=n - 1)
    variance = check_real("variance", variance, low=0.0, high=1.0, low_inclusive=False)
    idx = _knn(x, k)
    nb = x[idx] - x[idx].mean(axis=1, keepdims=True)
    s = np.linalg.svd(nb, compute_uv=False) ** 2
    frac = np.cumsum(s, axis=1) / np.maximum(s.sum(axis=1, keepdims=True), 1e-300)
    dims = (frac < variance - 1e-12).sum(axis=1) + 1
    return int(np.median(dims))


def local_chart_metrics(X: Any, Y: Any, dim: int, *, n_neighbors: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Metrics of ``X`` and ``Y`` in local orthonormal charts of ``X``'s manifold (when no coordinates are given).

    At each point :math:`i` the ``k`` nearest neighbours in ``X`` give a tangent basis :math:`T_i`
    (the top-``dim`` local principal directions) and local coordinates :math:`u_j = T_i^\top (x_j - x_i)`.
    Both representations are then regressed on these coordinates over the same neighbourhood,
    :math:`x_j - x_i \approx J^X_i u_j` and :math:`y_j - y_i \approx J^Y_i u_j`, giving
    :math:`G^X_i = J^{X\top}_i J^X_i` (close to the identity, since the chart is nearly an isometry)
    and :math:`G^Y_i`. Fitting both the same way makes ``Y = c X Q + b`` give :math:`G^Y = c^2 G^X` exactly.

    Returns
    -------
    GX, GY : ndarray, shape (n, dim, dim)
    """
    x, y = check_pair(X, Y)
    n = x.shape[0]
    dim = check_int("intrinsic_dim", dim, low=1, high=x.shape[1])
    k = max(2 * dim + 2, 8) if n_neighbors is None else n_neighbors
    k = check_int("n_neighbors", k, low=dim + 1, high=n - 1)
    idx = _knn(x, k)
    dx = x[idx] - x[:, None, :]  # (n, k, d1)
    _, _, vh = np.linalg.svd(dx - dx.mean(axis=1, keepdims=True), full_matrices=False)
    t = np.swapaxes(vh[:, :dim, :], 1, 2)  # (n, d1, dim) tangent bases
    u = np.einsum("nkd,ndm->nkm", dx, t)  # local coordinates
    s = np.einsum("nki,nkj->nij", u, u)
    if np.any(np.linalg.matrix_rank(s) < dim):
        raise ValueError("some neighbourhoods of X are degenerate; increase n_neighbors or check for duplicates")
    out = []
    for r in (dx, y[idx] - y[:, None, :]):
        jt = np.linalg.solve(s, np.einsum("nki,nkj->nij", u, r))
        g = np.einsum("nik,njk->nij", jt, jt)
        out.append(0.5 * (g + np.swapaxes(g, 1, 2)))
    return out[0], out[1]


def msa_distance(
    X: Any,
    Y: Any,
    Z: Any = None,
    *,
    n_neighbors: int | None = None,
    intrinsic_dim: int | None = None,
    eps: float = 1e-6,
    normalize: str = "global",
    distance: str = "affine",
    return_info: bool = False,
    rank: str = "warn",
) -> float | tuple[float, dict[str, Any]]:
    r"""MSA distance between two paired representations of the same manifold, from samples.

    With intrinsic coordinates ``Z`` (task variables, or a chart of the input manifold), each
    representation's pullback metric is estimated by local linear regression over the ``k`` nearest
    neighbours in ``Z`` (:func:`geode.analysis.metric_from_samples`) and the metrics are compared with
    :func:`msa_from_metrics`. Without ``Z``, ``Y``'s metric is taken in local orthonormal charts of
    ``X``'s manifold (:func:`local_chart_metrics`), where ``X``'s metric is the identity; the
    dimension of the charts is ``intrinsic_dim`` or the local-PCA estimate of
    :func:`estimate_intrinsic_dim`. When a differentiable model is at hand, prefer exact metrics:
    ``msa_from_metrics(pullback_metric(f_A, Z), pullback_metric(f_B, Z))``.

    Named ``msa`` before issue 43, a name that shadowed the package :mod:`geode.analysis.msa`; the old name and
    calling the package still work, with a ``DeprecationWarning``.

    Parameters
    ----------
    X : array_like, shape (n, d1)
    Y : array_like, shape (n, d2)
        Paired representations (row ``i`` of both is the same point of the manifold).
    Z : array_like, shape (n, d), optional
        Shared intrinsic coordinates of the points.
    n_neighbors : int, optional
        Neighbourhood size for the local fits (default ``max(2 d + 2, 8)``).
    intrinsic_dim : int, optional
        Chart dimension when ``Z`` is not given.
    eps, normalize, distance, return_info, rank
        As in :func:`msa_from_metrics`.

    Returns
    -------
    float
        :math:`d_{\mathrm{MSA}}`: 0 for identical intrinsic geometry (up to isometries, scale and,
        with ``Z``, shared reparametrisation); ``info["pointwise"]`` holds the per-point discrepancies.
        Without ``Z`` the measure is not exactly symmetric (the charts come from ``X``).
    """
    x, y = check_pair(X, Y)
    for name, r in (("X", x), ("Y", y)):
        if np.ptp(r, axis=0).max() <= 0.0:
            raise ValueError(f"{name} is constant (zero variance): it has no intrinsic geometry, MSA is undefined")
    if Z is not None:
        z, _ = check_pair(Z, x, names=("Z", "X"))
        ga = metric_from_samples(z, x, n_neighbors=n_neighbors)
        gb = metric_from_samples(z, y, n_neighbors=n_neighbors)
    else:
        k_dim = 12 if n_neighbors is None else n_neighbors
        dim = (
            estimate_intrinsic_dim(x, n_neighbors=min(k_dim, x.shape[0] - 1))
            if intrinsic_dim is None
            else intrinsic_dim
        )
        ga, gb = local_chart_metrics(x, y, dim, n_neighbors=n_neighbors)
    return msa_from_metrics(
        ga, gb, eps=eps, normalize=normalize, distance=distance, return_info=return_info, rank=rank
    )
