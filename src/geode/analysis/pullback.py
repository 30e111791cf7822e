r"""Pullback metrics of a representation map on a data manifold: exact (Jacobians) and from samples.

A network's representation :math:`f: \mathcal Z \to \mathbb R^N`, restricted to a data manifold with
coordinates :math:`z \in \mathbb R^d`, induces on the manifold the *pullback* Riemannian metric

.. math::

    G(z) = J(z)^\top J(z), \qquad J(z) = \frac{\partial f}{\partial z}(z) \in \mathbb R^{N \times d},

so that the squared length of a small step :math:`\delta z` in representation space is
:math:`\delta z^\top G(z)\, \delta z`. :math:`G` does not change when ``f`` is followed by an isometry
of state space (:math:`f \mapsto Qf + b`, :math:`Q^\top Q = I`), scales by :math:`c^2` under
:math:`f \mapsto c f`, and transforms by congruence, :math:`G \mapsto J_\varphi^\top G J_\varphi`,
under a change of coordinates :math:`z = \varphi(u)`.

- :func:`jacobians` and :func:`pullback_metric` compute :math:`J` and :math:`G` exactly from a torch
  callable, batched over points, in forward mode (``d`` passes) or reverse mode (``N`` passes).
- :func:`metric_from_samples` estimates them when only paired samples :math:`(z_i, f(z_i))` exist, by
  a local linear regression over the ``k`` nearest neighbours in ``z``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from geode.core.validation import check_choice, check_int

__all__ = ["jacobians", "metric_from_samples", "pullback_metric"]


def _infer_dtype(fn: Any, z: Any) -> Any:
    import torch

    if isinstance(fn, torch.nn.Module):
        for p in fn.parameters():
            if p.is_floating_point():
                return p.dtype
    if isinstance(z, torch.Tensor) and z.is_floating_point():
        return z.dtype
    return torch.float64


def _jac_forward(fn: Callable[[Any], Any], z: Any) -> np.ndarray:
    """Jacobians of a row-independent map by ``d`` forward-mode passes (one tangent e_k for every row)."""
    import torch
    import torch.autograd.forward_ad as fwad

    b, d = z.shape
    cols = []
    for k in range(d):
        tangent = torch.zeros_like(z)
        tangent[:, k] = 1.0
        with fwad.dual_level(), warnings.catch_warnings():
            # torch's first forward-AD call scripts its JVP decompositions with the deprecated torch.jit.script
            warnings.filterwarnings("ignore", message=".*torch.jit.script.*", category=DeprecationWarning)
            out = fn(fwad.make_dual(z, tangent))
            cols.append(fwad.unpack_dual(out).tangent.reshape(b, -1).detach())
    return torch.stack(cols, dim=-1).double().numpy()


def _jac_reverse(fn: Callable[[Any], Any], z: Any, n_out: int) -> np.ndarray:
    """Jacobians of a row-independent map by ``N`` reverse-mode passes (gradient of each output summed over rows)."""
    import torch

    with torch.enable_grad():
        zz = z.detach().clone().requires_grad_(True)
        out = fn(zz).reshape(zz.shape[0], -1)
        rows = [torch.autograd.grad(out[:, j].sum(), zz, retain_graph=j < n_out - 1)[0] for j in range(n_out)]
    return torch.stack(rows, dim=1).detach().double().numpy()


def jacobians(
    fn: Callable[[Any], Any],
    Z: Any,
    *,
    batch_size: int | None = 1024,
    mode: str = "auto",
) -> np.ndarray:
    r"""Per-point Jacobians :math:`J(z_i) = \partial f / \partial z\,(z_i)` of a batched torch map.

    Parameters
    ----------
    fn : callable
        A torch function or ``nn.Module`` mapping a batch of points ``(b, d)`` to representations
        ``(b, N)`` (further output axes are flattened). It must treat the batch's rows independently
        (no batch norm in training mode).
    Z : array_like or torch.Tensor, shape (n, d)
        The points (intrinsic coordinates).
    batch_size : int or None
        Points per vectorised chunk (memory ``batch_size * N * d``); ``None`` does all at once.
    mode : {"auto", "forward", "reverse"}
        Forward mode (``d`` batched JVPs with ``torch.autograd.forward_ad``) or reverse mode (``N``
        batched VJPs); ``"auto"`` picks forward mode when ``d <= N``. Both rely on the rows being
        independent, so one pass serves the whole batch.

    Returns
    -------
    ndarray, shape (n, N, d), float64
    """
    import torch

    mode = check_choice("mode", mode, ("auto", "forward", "reverse"))
    if not callable(fn):
        raise TypeError(f"fn must be callable (a torch function or nn.Module); got {type(fn).__name__}")
    dtype = _infer_dtype(fn, Z)
    if isinstance(Z, torch.Tensor):
        z = Z.detach().to(dtype)
    else:
        try:
            arr = np.asarray(Z, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"Z must be an array of shape (n_points, d); got {type(Z).__name__}") from None
        z = torch.as_tensor(arr, dtype=dtype)
    if z.ndim != 2:
        raise ValueError(f"Z must have shape (n_points, d); got shape {tuple(z.shape)}")
    if z.shape[0] < 1 or z.shape[1] < 1:
        raise ValueError(f"Z must have at least one point and one coordinate; got shape {tuple(z.shape)}")
    if not bool(torch.isfinite(z).all()):
        raise ValueError("Z must contain only finite values (found NaN or inf)")
    n, d = z.shape
    bs = n if batch_size is None else check_int("batch_size", batch_size, low=1)
    with torch.no_grad():
        n_out = int(fn(z[:1]).reshape(1, -1).shape[1])
    use_fwd = mode == "forward" or (mode == "auto" and d <= n_out)
    out = np.empty((n, n_out, d), dtype=float)
    for s in range(0, n, bs):
        zb = z[s : s + bs]
        out[s : s + bs] = _jac_forward(fn, zb) if use_fwd else _jac_reverse(fn, zb, n_out)
    if not np.all(np.isfinite(out)):
        raise ValueError("fn produced non-finite Jacobians on Z")
    return out


def pullback_metric(
    fn: Callable[[Any], Any],
    Z: Any,
    *,
    batch_size: int | None = 1024,
    mode: str = "auto",
) -> np.ndarray:
    r"""Pullback metric :math:`G(z_i) = J(z_i)^\top J(z_i)` of ``fn`` at every point of ``Z``.

    Parameters
    ----------
    fn, Z, batch_size, mode
        As in :func:`jacobians`.

    Returns
    -------
    ndarray, shape (n, d, d), symmetric positive semi-definite, float64

    Examples
    --------
    >>> import torch
    >>> A = torch.tensor([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]], dtype=torch.float64)
    >>> G = pullback_metric(lambda z: z @ A.T, np.zeros((1, 2)))
    >>> G[0].tolist()
    [[1.0, 0.0], [0.0, 4.0]]
    """
    j = jacobians(fn, Z, batch_size=batch_size, mode=mode)
    g = np.einsum("nki,nkj->nij", j, j)
    return 0.5 * (g + np.swapaxes(g, 1, 2))


def _knn(z: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` nearest neighbours of every row of ``z`` (itself excluded), shape (n, k)."""
    from scipy.spatial import cKDTree

    _, idx = cKDTree(z).query(z, k=k + 1)
    return idx[:, 1:]


def metric_from_samples(Z: Any, X: Any, *, n_neighbors: int | None = None) -> np.ndarray:
    r"""Pullback metric estimated from paired samples by local linear regression over nearest neighbours.

    For each point :math:`i` with neighbours :math:`\mathcal N_i` (the ``k`` nearest in ``Z``), with
    :math:`\Delta Z` the rows :math:`z_j - z_i` and :math:`\Delta X` the rows :math:`x_j - x_i`, the
    local Jacobian is the least-squares fit :math:`\Delta X \approx \Delta Z\, J_i^\top`,

    .. math::

        J_i^\top = (\Delta Z^\top \Delta Z)^{-1} \Delta Z^\top \Delta X, \qquad
        G_i = J_i^\top J_i = S^{-1} \Delta Z^\top \Delta X \Delta X^\top \Delta Z\, S^{-1},
        \quad S = \Delta Z^\top \Delta Z.

    The estimate is first-order: curvature of ``f`` within a neighbourhood biases it by
    :math:`O(r)` in the neighbourhood radius ``r``. It commutes exactly with isometries and scalings
    of ``X`` and, to first order, with changes of the coordinates ``Z``.

    Parameters
    ----------
    Z : array_like, shape (n, d)
        Intrinsic coordinates of the samples.
    X : array_like, shape (n, N)
        Representations, paired with ``Z`` by row.
    n_neighbors : int, optional
        ``k``; default ``max(2 d + 2, 8)``; must be at least ``d`` and less than ``n``.

    Returns
    -------
    ndarray, shape (n, d, d)
    """
    from scipy.sparse import csr_matrix

    from geode.analysis.similarity import check_pair

    z, x = check_pair(Z, X, names=("Z", "X"))
    n, d = z.shape
    k = max(2 * d + 2, 8) if n_neighbors is None else n_neighbors
    k = check_int("n_neighbors", k, low=d, high=n - 1)
    if k > n - 1:  # pragma: no cover - check_int enforces it
        raise ValueError(f"n_neighbors must be < n = {n}")
    idx = _knn(z, k)
    dz = z[idx] - z[:, None, :]  # (n, k, d)
    s = np.einsum("nki,nkj->nij", dz, dz)
    if np.any(np.linalg.matrix_rank(s) < d):
        raise ValueError(
            "the neighbourhoods of some points in Z are degenerate (neighbours on a lower-dimensional set); "
            "increase n_neighbors or check for duplicated points"
        )
    # C_i = dZ_i^T dX_i (d x N) without gathering the (n, k, N) neighbour differences: for each coordinate c,
    # sum_j dz_ijc x_j is a sparse (n x n, n k non-zeros) times dense (n x N) product, minus (sum_j dz_ijc) x_i.
    rows = np.repeat(np.arange(n), k)
    c = [
        csr_matrix((dz[:, :, a].ravel(), (rows, idx.ravel())), shape=(n, n)) @ x - dz[:, :, a].sum(1)[:, None] * x
        for a in range(d)
    ]
    p = np.empty((n, d, d))  # C_i C_i^T
    for a in range(d):
        for b in range(a, d):
            p[:, a, b] = p[:, b, a] = np.einsum("nk,nk->n", c[a], c[b])
    s_inv = np.linalg.inv(s)
    g = s_inv @ p @ s_inv  # G_i = S^-1 C C^T S^-1
    return 0.5 * (g + np.swapaxes(g, 1, 2))
