r"""Spectral and subspace measures, and orthonormalisation, for numpy arrays and torch tensors.

Every function accepts either a numpy array or a torch tensor and returns the same kind (torch
results stay differentiable where the underlying decomposition is). Matrices may be batched
over leading dimensions, except where a docstring says otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["effective_rank", "polar", "principal_angles", "sign_fixed_qr", "stable_rank"]


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _check_matrix(name: str, a: Any) -> Any:
    if _is_torch(a):
        if a.ndim < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (a matrix); got shape {tuple(a.shape)}")
        if a.shape[-1] == 0 or a.shape[-2] == 0:
            raise ValueError(f"{name} must not be empty; got shape {tuple(a.shape)}")
        if not a.is_floating_point() and not a.is_complex():
            a = a.double()
        if not bool(a.detach().isfinite().all()):
            raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
        return a
    arr = np.asarray(a)
    if arr.ndim < 2:
        raise ValueError(f"{name} must have at least 2 dimensions (a matrix); got shape {arr.shape}")
    if arr.shape[-1] == 0 or arr.shape[-2] == 0:
        raise ValueError(f"{name} must not be empty; got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"{name} must be a numeric matrix; got dtype {arr.dtype}")
    if not np.issubdtype(arr.dtype, np.inexact):
        arr = arr.astype(float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return arr


def _svdvals(a: Any) -> Any:
    if _is_torch(a):
        import torch

        return torch.linalg.svdvals(a)
    return np.linalg.svd(a, compute_uv=False)


def stable_rank(a: Any, eps: float = 1e-12) -> Any:
    r"""Stable rank :math:`\|A\|_F^2 / \|A\|_2^2`.

    It lies in ``[1, rank(A)]``, equals the rank for a matrix whose non-zero singular values are
    all equal, and unlike the rank it is continuous in ``A``. The zero matrix gets 0.

    Parameters
    ----------
    a : array_like or torch.Tensor, shape (..., m, n)
    eps : float
        Guard against division by zero.

    Returns
    -------
    float or ndarray or torch.Tensor, shape (...)

    Examples
    --------
    >>> float(stable_rank(np.eye(3)))
    3.0
    """
    a = _check_matrix("a", a)
    s = _svdvals(a)
    top = s[..., 0]
    num = (s**2).sum(-1)
    if _is_torch(a):
        return num / (top**2).clamp_min(eps)
    out = num / np.maximum(top**2, eps)
    return float(out) if np.ndim(out) == 0 else out


def effective_rank(a: Any, eps: float = 1e-12) -> Any:
    r"""Effective rank of Roy and Vetterli (2007): :math:`\exp H(p)`, :math:`p_i = \sigma_i / \sum_j \sigma_j`.

    Shannon entropy :math:`H(p) = -\sum_i p_i \log p_i` of the normalised singular values. It lies in
    ``[1, min(m, n)]`` and equals ``k`` for a matrix with ``k`` equal non-zero singular values.

    Examples
    --------
    >>> round(float(effective_rank(np.diag([1.0, 1.0, 0.0]))), 6)
    2.0
    """
    a = _check_matrix("a", a)
    s = _svdvals(a)
    if _is_torch(a):
        import torch

        p = s / s.sum(-1, keepdim=True).clamp_min(eps)
        h = -(torch.where(p > 0, p * torch.log(p.clamp_min(eps)), torch.zeros_like(p))).sum(-1)
        return torch.exp(h)
    p = s / np.maximum(s.sum(-1, keepdims=True), eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0).sum(-1)
    out = np.exp(h)
    return float(out) if np.ndim(out) == 0 else out


def sign_fixed_qr(a: Any) -> tuple[Any, Any]:
    r"""Reduced QR decomposition with a non-negative diagonal of ``R``: the unique QR of a full-rank ``A``.

    Plain Householder QR determines ``Q`` only up to the signs of its columns; flipping column
    :math:`j` of ``Q`` and row :math:`j` of ``R`` so that :math:`R_{jj} \ge 0` makes ``Q`` a smooth
    function of ``A`` (the Gram-Schmidt basis), which is what a method that trains through an
    orthonormal basis needs.

    Parameters
    ----------
    a : array_like or torch.Tensor, shape (..., m, n)

    Returns
    -------
    q : shape (..., m, k), orthonormal columns, ``k = min(m, n)``
    r : shape (..., k, n), upper triangular with ``diag(r) >= 0``
    """
    a = _check_matrix("a", a)
    if _is_torch(a):
        import torch

        q, r = torch.linalg.qr(a, mode="reduced")
        d = torch.diagonal(r, dim1=-2, dim2=-1)
        sign = torch.where(d < 0, -torch.ones_like(d), torch.ones_like(d))
        return q * sign.unsqueeze(-2), r * sign.unsqueeze(-1)
    q, r = np.linalg.qr(a, mode="reduced")
    d = np.diagonal(r, axis1=-2, axis2=-1)
    sign = np.where(d < 0, -1.0, 1.0)
    return q * sign[..., None, :], r * sign[..., :, None]


def polar(a: Any) -> tuple[Any, Any]:
    r"""Polar decomposition :math:`A = U P` with ``U`` having orthonormal columns and ``P`` symmetric PSD.

    Computed from the thin SVD :math:`A = W \Sigma V^\top` as :math:`U = W V^\top`,
    :math:`P = V \Sigma V^\top`. For a tall matrix (m >= n) ``U`` is (m, n); ``U`` is the closest
    matrix with orthonormal columns to ``A`` in Frobenius norm.

    Returns
    -------
    u : shape (..., m, n)
    p : shape (..., n, n)
    """
    a = _check_matrix("a", a)
    if _is_torch(a):
        import torch

        w, s, vh = torch.linalg.svd(a, full_matrices=False)
        u = w @ vh
        p = vh.transpose(-2, -1).conj() @ (s.unsqueeze(-1) * vh)
        return u, p
    w, s, vh = np.linalg.svd(a, full_matrices=False)
    u = w @ vh
    p = np.swapaxes(vh, -2, -1).conj() @ (s[..., :, None] * vh)
    return u, p


def principal_angles(a: Any, b: Any) -> Any:
    r"""Principal angles (radians, ascending) between the column spaces of ``A`` and ``B``.

    Björck and Golub (1973): with orthonormal bases :math:`Q_A, Q_B`, the cosines of the angles are
    the singular values of :math:`Q_A^\top Q_B`. Returns ``min(rank A, rank B)`` angles in
    :math:`[0, \pi/2]`; identical subspaces give zeros, orthogonal ones :math:`\pi/2`. The columns of each
    must be linearly independent (a rank-deficient basis spans a smaller space than its columns say, so its
    angles would be arbitrary): a ``ValueError`` otherwise. Not batched.

    Parameters
    ----------
    a : shape (m, p)
    b : shape (m, q)

    Examples
    --------
    >>> np.round(principal_angles(np.eye(3)[:, :1], np.eye(3)[:, 1:]), 6)
    array([1.570796])
    """
    a = _check_matrix("a", a)
    b = _check_matrix("b", b)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"a and b must be matrices; got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"a and b must have the same number of rows; got {a.shape[0]} and {b.shape[0]}")
    for name, m in (("a", a), ("b", b)):
        s = _svdvals(m)
        rank = int((s > s.max() * max(m.shape) * np.finfo(float).eps).sum()) if float(s.max()) > 0 else 0
        if rank < m.shape[1]:
            raise ValueError(
                f"{name} must have full column rank (linearly independent columns); got rank {rank} of {m.shape[1]}"
            )
    if _is_torch(a) or _is_torch(b):
        import torch

        a_t = torch.as_tensor(a)
        b_t = torch.as_tensor(b, dtype=a_t.dtype)
        qa, _ = torch.linalg.qr(a_t)
        qb, _ = torch.linalg.qr(b_t)
        cos = torch.linalg.svdvals(qa.transpose(-2, -1) @ qb).clamp(-1.0, 1.0)
        return torch.arccos(cos).sort().values
    qa, _ = np.linalg.qr(a)
    qb, _ = np.linalg.qr(b)
    cos = np.clip(np.linalg.svd(qa.T @ qb, compute_uv=False), -1.0, 1.0)
    return np.sort(np.arccos(cos))
