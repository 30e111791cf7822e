r"""Max-sliced Wasserstein-1 between weighted point clouds, POT-style (numpy arrays or torch tensors).

For two discrete measures :math:`\mu = \sum_i a_i \delta_{x_i}` and :math:`\nu = \sum_j b_j \delta_{y_j}` in
:math:`\mathbb R^d` and a set of unit directions :math:`u_1, \dots, u_P`,

.. math::

    \mathrm{msW}_1(\mu, \nu) = \max_{p} W_1(u_p^\top_\# \mu, u_p^\top_\# \nu), \qquad
    W_1(\alpha, \beta) = \int_{\mathbb R} |F_\alpha(t) - F_\beta(t)|\, dt ,

the 1-D :math:`W_1` computed exactly by one merge of the two projected samples: sort the union, take the
running sum of :math:`(a, -b)` in that order (the difference of the CDFs) and integrate its absolute
value over the gaps. The value is differentiable in the weights and in the positions (the order is
piecewise constant), which is what the QST loss uses.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.validation import check_array, check_tensor

__all__ = ["max_sliced_w1", "sliced_w1_per_direction", "uniform_directions", "wasserstein_1d_w1"]


def _is_torch(x: Any) -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a core dependency
        return False
    return isinstance(x, torch.Tensor)


def uniform_directions(n: int, d: int = 2, seed: int | None = None) -> np.ndarray:
    """``n`` unit directions in :math:`\\mathbb R^d`, shape ``(d, n)`` (POT's ``projections`` layout).

    In 2-D they are the equally spaced angles :math:`\\pi p / n` on the half circle (``u`` and ``-u`` give
    the same :math:`W_1`); in higher dimension normalised Gaussian draws from ``seed``.
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer; got {n!r}")
    if d == 2:
        ang = np.pi * np.arange(n) / n
        return np.stack([np.cos(ang), np.sin(ang)])
    g = np.random.default_rng(seed).standard_normal((d, int(n)))
    return g / np.linalg.norm(g, axis=0, keepdims=True)


def _sum_tolerance(w: Any, n: int) -> float:
    """How far the total of ``n`` weights may be from 1: 1e-6, or the rounding of a low-precision dtype."""
    eps = float(np.finfo(np.float64).eps)
    dtype = getattr(w, "dtype", None)
    if dtype is not None:
        try:
            import torch

            eps = float(torch.finfo(dtype).eps) if isinstance(dtype, torch.dtype) else float(np.finfo(dtype).eps)
        except (ImportError, TypeError, ValueError):  # pragma: no cover - a dtype without finfo
            pass
    return max(1e-6, 10.0 * n * eps)


def _check_w1_positions(name: str, x: Any, torch_mode: bool) -> Any:
    """A finite, non-empty array (or tensor in torch mode) of positions with at least one entry on its last axis."""
    if torch_mode:
        if not _is_torch(x):
            raise TypeError(f"{name} must be a torch tensor like u (torch mode); got {type(x).__name__}")
        x = check_tensor(name, x, floating=True)
    else:
        x = check_array(name, x)
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"{name} must hold at least one position along its last axis; got shape {tuple(x.shape)}")
    return x


def _check_w1_weights(name: str, w: Any, x: Any, of: str, torch_mode: bool) -> Any:
    """Weights of the positions ``x``: shape (..., n) broadcastable to ``x``, finite, >= 0, summing to 1."""
    n = x.shape[-1]
    if torch_mode:
        import torch

        if not _is_torch(w):
            try:
                w = torch.as_tensor(np.asarray(w, dtype=float), dtype=x.dtype, device=x.device)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{name} must be array-like weights of the positions of {of}") from exc
        wn = w.detach()
        if wn.ndim < 1 or wn.shape[-1] != n or not _broadcasts(tuple(wn.shape), tuple(x.shape)):
            raise ValueError(
                f"{name} must hold one weight per position of {of}: shape (..., {n}) broadcastable to "
                f"{tuple(x.shape)}; got {tuple(wn.shape)}"
            )
        if not bool(torch.isfinite(wn).all()):
            raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
        if bool((wn < 0).any()):
            raise ValueError(f"{name} must be non-negative (weights of a measure); got min {float(wn.min()):.6g}")
        total = wn.to(torch.float64).sum(-1)
        worst = float((total - 1.0).abs().max())
        first = float(total.reshape(-1)[0])
    else:
        w = check_array(name, w)
        if w.ndim < 1 or w.shape[-1] != n or not _broadcasts(w.shape, x.shape):
            raise ValueError(
                f"{name} must hold one weight per position of {of}: shape (..., {n}) broadcastable to "
                f"{tuple(x.shape)}; got {w.shape}"
            )
        if np.any(w < 0):
            raise ValueError(f"{name} must be non-negative (weights of a measure); got min {w.min():.6g}")
        total = w.sum(-1)
        worst = float(np.max(np.abs(total - 1.0)))
        first = float(np.ravel(total)[0])
    if worst > _sum_tolerance(w, n):
        raise ValueError(
            f"{name} must sum to 1 along its last axis (a probability vector); got a total of {first:.6g}"
        )
    return w


def _broadcasts(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether ``shape`` broadcasts to ``target`` (numpy's rule, without changing ``target``)."""
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(shape[::-1], target[::-1]))


def wasserstein_1d_w1(u: Any, v: Any, a: Any = None, b: Any = None) -> Any:
    """Exact :math:`W_1` between 1-D weighted samples along the last axis (batched over leading axes).

    Parameters
    ----------
    u, v : array or tensor, shape (..., m) and (..., n)
        Positions, finite, at least one along the last axis; the leading (batch) shapes must be equal. Torch
        mode (``u`` a tensor) needs ``v`` to be a tensor too.
    a, b : array or tensor, shape (..., m) and (..., n), optional
        Weights of the positions of ``u`` and ``v`` (default uniform): probability vectors along the last axis
        (finite, non-negative, each summing to 1 within 1e-6, or the rounding of a lower-precision dtype),
        broadcastable to the shape of ``u`` and ``v``.

    Returns
    -------
    array or tensor, shape (...)
        :math:`\\int |F_a - F_b|`.

    Raises
    ------
    ValueError
        An empty ``u`` or ``v``, a NaN or infinite position or weight, batch shapes that differ, weights of
        another length, negative weights or weights that do not sum to 1 (each message names the argument).
    TypeError
        A non-numeric argument, or a ``v`` that is not a tensor when ``u`` is.
    """
    torch_mode = _is_torch(u)
    u = _check_w1_positions("u", u, torch_mode)
    v = _check_w1_positions("v", v, torch_mode)
    if tuple(u.shape[:-1]) != tuple(v.shape[:-1]):
        raise ValueError(
            f"u and v must have the same leading (batch) shape; got {tuple(u.shape)} and {tuple(v.shape)}"
        )
    if a is not None:
        a = _check_w1_weights("a", a, u, "u", torch_mode)
    if b is not None:
        b = _check_w1_weights("b", b, v, "v", torch_mode)
    if torch_mode:
        import torch

        m, n = u.shape[-1], v.shape[-1]
        if a is None:
            a = torch.full(u.shape, 1.0 / m, dtype=u.dtype, device=u.device)
        if b is None:
            b = torch.full(v.shape, 1.0 / n, dtype=v.dtype, device=v.device)
        a, b = torch.broadcast_to(a, u.shape), torch.broadcast_to(b, v.shape)
        z = torch.cat([u, v], dim=-1)
        w = torch.cat([a, -b], dim=-1)
        zs, order = torch.sort(z, dim=-1)
        c = torch.cumsum(torch.gather(w, -1, order), dim=-1)
        return (c[..., :-1].abs() * torch.diff(zs, dim=-1)).sum(-1)
    m, n = u.shape[-1], v.shape[-1]
    a = np.full(u.shape, 1.0 / m) if a is None else np.broadcast_to(a, u.shape)
    b = np.full(v.shape, 1.0 / n) if b is None else np.broadcast_to(b, v.shape)
    z = np.concatenate([u, v], axis=-1)
    w = np.concatenate([a, -b], axis=-1)
    order = np.argsort(z, axis=-1, kind="stable")
    zs = np.take_along_axis(z, order, -1)
    c = np.cumsum(np.take_along_axis(w, order, -1), axis=-1)
    return (np.abs(c[..., :-1]) * np.diff(zs, axis=-1)).sum(-1)


def _check(X: Any, name: str) -> Any:
    """``X`` as a finite (n_samples, dim) array (a tensor stays a tensor), at least one sample."""
    if _is_torch(X):
        X = check_tensor(name, X, finite=True, nonempty=False)
    else:
        X = check_array(name, X)
    if X.ndim != 2:
        raise ValueError(f"{name} must have shape (n_samples, dim); got shape {tuple(X.shape)}")
    if X.shape[0] < 1:
        raise ValueError(f"{name} must hold at least one sample")
    if X.shape[1] < 1:
        raise ValueError(f"{name} must have at least one coordinate; got shape {tuple(X.shape)}")
    return X


def _check_weights(w: Any, n: int, name: str) -> None:
    wn = w.detach().cpu().numpy() if _is_torch(w) else check_array(name, w, finite=False)
    if wn.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},); got {wn.shape}")
    if not np.all(np.isfinite(wn)) or np.any(wn < 0):
        raise ValueError(f"{name} must be finite and non-negative")
    if abs(wn.sum() - 1.0) > 1e-6:
        raise ValueError(f"{name} must sum to 1; got {wn.sum():.6g}")


def _check_projections(P: Any, d: int) -> None:
    if P.ndim != 2 or P.shape[0] != d or P.shape[1] < 1:
        raise ValueError(f"projections must have shape ({d}, n_projections); got {tuple(P.shape)}")
    finite = bool(P.detach().isfinite().all()) if _is_torch(P) else bool(np.all(np.isfinite(P)))
    if not finite:
        raise ValueError("projections must contain only finite values (found NaN or inf)")


def sliced_w1_per_direction(
    X_s: Any, X_t: Any, a: Any = None, b: Any = None, n_projections: int = 50, projections: Any = None, seed=None
) -> Any:
    """:math:`W_1` of the projections on each direction, shape ``(n_projections,)``.

    Same arguments as :func:`max_sliced_w1`.
    """
    X_s = _check(X_s, "X_s")
    X_t = _check(X_t, "X_t")
    if X_s.shape[1] != X_t.shape[1]:
        raise ValueError(f"X_s and X_t must have the same dimension; got {X_s.shape[1]} and {X_t.shape[1]}")
    d = X_s.shape[1]
    if a is not None:
        _check_weights(a, X_s.shape[0], "a")
    if b is not None:
        _check_weights(b, X_t.shape[0], "b")
    if projections is None:
        projections = uniform_directions(n_projections, d, seed)
    torch_mode = _is_torch(X_s) or _is_torch(X_t)
    if torch_mode:
        import torch

        ref = X_s if _is_torch(X_s) else X_t
        X_s = torch.as_tensor(X_s, dtype=ref.dtype, device=ref.device)
        X_t = torch.as_tensor(X_t, dtype=ref.dtype, device=ref.device)
        try:
            P = torch.as_tensor(projections, dtype=ref.dtype, device=ref.device)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"projections must be an array of shape ({d}, n_projections)") from exc
        a = None if a is None else torch.as_tensor(a, dtype=ref.dtype, device=ref.device)
        b = None if b is None else torch.as_tensor(b, dtype=ref.dtype, device=ref.device)
    else:
        X_s, X_t = np.asarray(X_s, dtype=float), np.asarray(X_t, dtype=float)
        P = check_array("projections", projections, finite=False)
    _check_projections(P, d)
    u = (X_s @ P).T  # (P, m)
    v = (X_t @ P).T
    return wasserstein_1d_w1(u, v, a, b)


def max_sliced_w1(
    X_s: Any,
    X_t: Any,
    a: Any = None,
    b: Any = None,
    n_projections: int = 50,
    projections: Any = None,
    seed: int | None = None,
    log: bool = False,
) -> Any:
    r"""Max-sliced Wasserstein-1 distance between two weighted point clouds.

    .. math::

        \mathrm{msW}_1(\mu, \nu) = \max_{p=1..P} \int_{\mathbb R} |F_{u_p^\top\mu}(t) - F_{u_p^\top\nu}(t)|\,dt

    over the directions ``projections`` (by default ``n_projections`` equally spaced angles on the half
    circle in 2-D, normalised Gaussian draws otherwise). With POT's ``projections`` it equals
    ``ot.max_sliced_wasserstein_distance(X_s, X_t, a, b, p=1, projections=projections)``; the max over a
    finite set of directions is a lower bound of the max over the sphere (Deshpande et al. 2019).

    Parameters
    ----------
    X_s, X_t : array or tensor, shape (m, d) and (n, d)
        Support points (numpy arrays or torch tensors; torch keeps the graph).
    a, b : array or tensor, shape (m,) and (n,), optional
        Weights, non-negative, summing to 1 (default uniform).
    n_projections : int
        Number of directions when ``projections`` is not given.
    projections : array, shape (d, P), optional
        Unit directions, one per column.
    seed : int, optional
        Seed of random directions (``d > 2``).
    log : bool
        Also return ``{"projections", "per_direction", "argmax"}``.

    Returns
    -------
    float or tensor
        The distance (and the log when ``log``).

    Raises
    ------
    ValueError
        Wrong shapes, empty point clouds, dimensions that differ, NaN or infinite points, weights or directions,
        weights that are negative or do not sum to 1 (each message names the argument).
    TypeError
        A non-numeric argument.
    """
    X_s, X_t = _check(X_s, "X_s"), _check(X_t, "X_t")
    d = X_s.shape[1]
    if projections is None:
        projections = uniform_directions(n_projections, d, seed)
    per = sliced_w1_per_direction(X_s, X_t, a, b, n_projections, projections, seed)
    if _is_torch(per):
        val, idx = per.max(0)
        idx = int(idx)
    else:
        idx = int(np.argmax(per))
        val = float(per[idx])
    if log:
        return val, {"projections": projections, "per_direction": per, "argmax": idx}
    return val
