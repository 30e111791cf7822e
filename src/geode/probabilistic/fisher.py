r"""Online estimate of the Fisher information :math:`S = \mathbb{E}_\pi[s s^\top]` from a chain's scores.

One estimate serves two roles in geode's samplers: the proposal preconditioner of
:class:`~geode.probabilistic.FisherMALA` (Titsias, 2023) and the repulsion metric of GA-SRMC.

.. math::

    F_n = \lambda I + \sum_{i=1}^n u_i u_i^\top, \qquad \widehat S_n = \frac{F_n}{n + 1},

    A_n = \frac{d\, F_n^{-1}}{\operatorname{tr} F_n^{-1}}
        = \frac{d\, \widehat S_n^{-1}}{\operatorname{tr} \widehat S_n^{-1}}, \qquad
    R_n R_n^\top = F_n^{-1}, \quad c_n = \frac{d}{\operatorname{tr} F_n^{-1}}, \quad A_n = c_n R_n R_n^\top,

where :math:`u_i = s(X_i)` is the score at the chain's state after step :math:`i` (computed by the
sampler anyway: the estimate costs no score evaluation) and :math:`\lambda > 0` a damping. The
trace-normalised :math:`A_n` (``metric``) has :math:`\operatorname{tr} A_n = d` and starts at
:math:`A_0 = I`; :math:`R_n` (``factor``) is a square root used to draw preconditioned noise.

**Cost.** Increments are buffered and folded in every ``refresh_every`` steps (default d) with one
rank-k update, one Cholesky factorisation and one triangular inverse: :math:`O(d^3)` every d steps, i.e.
amortised :math:`O(d^2)` per step, like a Sherman-Morrison update, but in level-3 BLAS. Between
refreshes :math:`A_n` and :math:`R_n` stay fixed (the sampler is Markov between refreshes).

**Warm-up and outliers** (issue 18: without them a transient excursion of a FisherMALA-based
score-repellent chain fed its huge scores into :math:`F_n`, shrank the preconditioner in that direction to
1e-5..1e-14 and the chain never came back: GA-FisherMALA diverged in 20 of 20 chains on
:math:`\mathcal N(0, I_{10})` at :math:`\alpha = 5`). ``warmup``: :math:`F_n` accumulates from the start, but
:math:`A_n = I` until ``warmup`` increments were received (the samplers' default ``10 d``; the research
notes: "warm up :math:`\widehat S` before switching M on"). ``clip``: after the warm-up an increment whose
Mahalanobis norm under the last refresh's estimate, :math:`\sqrt{(n+1)\, u^\top F^{-1} u}`, exceeds
``clip`` :math:`\sqrt d` is shrunk to that norm (winsorised; the samplers' default 5, i.e. 25 d against
the :math:`\mathbb{E}\, u^\top S^{-1} u = d` of a draw from the target), so one outlier moves
:math:`\widehat S_n` by a bounded amount. Both are our choices.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from geode.core.validation import check_array, check_int, check_positive

__all__ = ["FisherEstimate", "OnlineFisher", "fisher_from_samples"]


class FisherEstimate(NamedTuple):
    """State of :class:`OnlineFisher` for one chain (arrays of shape (d, d)) or a batch ((c, d, d)).

    Attributes
    ----------
    scatter : ndarray, shape (..., d, d)
        :math:`\\lambda I + \\sum u_i u_i^\\top` over the increments folded in at the last refresh.
    pending : tuple of ndarray, each (..., d)
        Increments received since the last refresh.
    count : int
        :math:`n`, the number of increments received.
    factor : ndarray, shape (..., d, d)
        :math:`R` with :math:`R R^\\top = F^{-1}` at the last refresh (:math:`L^{-\\top}` for :math:`F = L L^\\top`).
    scale : ndarray, shape (...)
        :math:`c = d / \\operatorname{tr} F^{-1}` at the last refresh.
    metric : ndarray, shape (..., d, d)
        :math:`A = c R R^\\top = d F^{-1} / \\operatorname{tr} F^{-1}` at the last refresh.
    """

    scatter: np.ndarray
    pending: tuple[np.ndarray, ...]
    count: int
    factor: np.ndarray
    scale: np.ndarray
    metric: np.ndarray

    @property
    def fisher(self) -> np.ndarray:
        """The estimate :math:`\\widehat S_n = (\\lambda I + \\sum_{i \\le n} u_i u_i^\\top) / (n + 1)`.

        Pending increments are included.
        """
        f = self.scatter.copy()
        for u in self.pending:
            f += u[..., :, None] * u[..., None, :]
        return f / (self.count + 1)


class OnlineFisher:
    r"""Online, damped, trace-normalised inverse-Fisher estimate (see the module docstring).

    Parameters
    ----------
    damping : float
        :math:`\lambda > 0`, a prior pseudo-observation :math:`\lambda I` in the units of
        :math:`s s^\top`; it keeps :math:`F_n` invertible while :math:`n < d`.
    refresh_every : int, optional
        Fold the buffered increments in every this many updates (default: the dimension d).
    warmup : int or None
        Increments received before :math:`A_n` leaves the identity (default 0 here; None means ``10 d``,
        the default of the samplers).
    clip : float or None
        Winsorise each increment after the warm-up at Mahalanobis norm ``clip`` :math:`\sqrt d` under the
        current estimate (default None: off here; the samplers use 5).

    Examples
    --------
    >>> est = OnlineFisher(damping=1.0, refresh_every=1).init(2)
    >>> est = OnlineFisher(damping=1.0, refresh_every=1).update(est, np.array([3.0, 0.0]))
    >>> np.round(est.metric, 3)  # F = diag(10, 1): A = 2 diag(0.1, 1) / 1.1
    array([[0.182, 0.   ],
           [0.   , 1.818]])
    """

    def __init__(
        self,
        damping: float = 1.0,
        refresh_every: int | None = None,
        *,
        warmup: int | None = 0,
        clip: float | None = None,
    ) -> None:
        self.damping = check_positive("damping", damping)
        self.refresh_every = None if refresh_every is None else check_int("refresh_every", refresh_every, low=1)
        self.warmup = None if warmup is None else check_int("warmup", warmup, low=0)
        self.clip = None if clip is None else check_positive("clip", clip)

    def warmup_steps(self, dim: int) -> int:
        """Increments received before :math:`A_n` leaves the identity (``warmup``, or ``10 d`` when None)."""
        return 10 * dim if self.warmup is None else self.warmup

    def init(self, dim: int, batch_shape: tuple[int, ...] = ()) -> FisherEstimate:
        """:math:`F_0 = \\lambda I` (so :math:`A_0 = I`) for ``batch_shape`` chains of dimension ``dim``."""
        dim = check_int("dim", dim, low=1)
        eye = np.broadcast_to(np.eye(dim), (*batch_shape, dim, dim))
        return FisherEstimate(
            scatter=self.damping * eye.copy(),
            pending=(),
            count=0,
            factor=eye.copy() / np.sqrt(self.damping),
            scale=np.full(batch_shape, self.damping),
            metric=eye.copy(),
        )

    def update(self, est: FisherEstimate, u: np.ndarray) -> FisherEstimate:
        r"""Add the increment ``u`` (shape (..., d)); refresh :math:`R, c, A` every ``refresh_every`` updates.

        With ``clip``, an increment whose Mahalanobis norm under the estimate of the last refresh exceeds
        ``clip`` :math:`\sqrt d` is shrunk to that norm first (after the warm-up; see the class docstring).
        ``u`` must be finite, of the estimate's shape ``(..., d)`` (a ``ValueError`` naming it otherwise).
        """
        u = check_array("u", u, shape=est.scatter.shape[:-1])  # finite, one increment per chain
        d = est.scatter.shape[-1]
        if self.clip is not None and est.count >= self.warmup_steps(d) and est.count > 0:
            # |u|^2_{S^-1} = (n+1) |R^T u|^2 with R R^T = F^{-1} and S = F / (n + 1) at the last refresh
            n_ref = est.count - len(est.pending)
            w = np.matmul(u[..., None, :], est.factor)[..., 0, :]
            with np.errstate(over="ignore", invalid="ignore"):
                m2 = (n_ref + 1) * np.sum(w * w, axis=-1)
                bound = self.clip**2 * d
                shrink = np.where(m2 > bound, np.sqrt(bound / np.where(m2 > bound, m2, 1.0)), 1.0)
            u = u * (shrink if np.ndim(shrink) == 0 else shrink[..., None])
        pending = (*est.pending, u)
        every = self.refresh_every if self.refresh_every is not None else est.scatter.shape[-1]
        if len(pending) < every:
            return est._replace(pending=pending, count=est.count + 1)
        return self.refresh(est._replace(pending=pending, count=est.count + 1))

    def refresh(self, est: FisherEstimate) -> FisherEstimate:
        """Fold the pending increments into :math:`F` and recompute :math:`R`, :math:`c` and :math:`A`."""
        if not est.pending:
            return est
        U = np.stack(est.pending, axis=-2)  # (..., k, d)
        with np.errstate(over="ignore", invalid="ignore"):
            F = est.scatter + _gram(U)  # rank-k update
        if not np.all(np.isfinite(F)):
            raise FloatingPointError("the Fisher estimate overflowed: the chain's scores diverged")
        try:
            R, Finv = _inverse_factor(F)
        except np.linalg.LinAlgError:  # numerically indefinite (huge scores): eigenvalues of F are >= lambda
            try:
                w, Q = np.linalg.eigh(F)
            except np.linalg.LinAlgError:
                raise FloatingPointError("the Fisher estimate is numerically singular: the chain diverged") from None
            R = Q / np.sqrt(np.maximum(w, self.damping))[..., None, :]
            Finv = R @ np.swapaxes(R, -1, -2)
        trace = np.trace(Finv, axis1=-2, axis2=-1)
        d = F.shape[-1]
        scale = d / trace
        metric = scale[..., None, None] * Finv
        if est.count < self.warmup_steps(d):  # warm-up: F accumulates, the metric stays at the identity
            eye = np.broadcast_to(np.eye(d), F.shape).copy()
            return FisherEstimate(F, (), est.count, R, scale, metric)._replace(
                factor=eye / np.sqrt(self.damping), scale=np.full(F.shape[:-2], self.damping), metric=eye
            )
        return FisherEstimate(F, (), est.count, R, scale, metric)


def _gram(U: np.ndarray) -> np.ndarray:
    """:math:`U^\\top U` for (..., k, d), exactly symmetric (BLAS ``syrk`` for one chain)."""
    if U.ndim == 2:
        from scipy.linalg import blas

        low = blas.dsyrk(1.0, np.asfortranarray(U), trans=1, lower=1)
        return np.tril(low) + np.tril(low, -1).T
    G = np.swapaxes(U, -1, -2) @ U
    return 0.5 * G + 0.5 * np.swapaxes(G, -1, -2)


def _inverse_factor(F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(R, F^{-1})`` with :math:`R = L^{-\\top}` for :math:`F = L L^\\top`, so :math:`R R^\\top = F^{-1}`.

    One chain: LAPACK ``potrf``, ``trtri`` and ``lauum`` (:math:`d^3` flops in all, several times
    faster than a general inverse); batches: numpy's batched Cholesky and inverse.
    """
    if F.ndim == 2:
        from scipy.linalg import lapack

        L, info = lapack.dpotrf(F, lower=1)
        if info != 0:
            raise np.linalg.LinAlgError("Fisher estimate is not positive definite")
        Linv, info = lapack.dtrtri(L, lower=1)
        if info != 0:
            raise np.linalg.LinAlgError("singular Cholesky factor")
        low, _ = lapack.dlauum(Linv, lower=1)  # Linv^T Linv = F^{-1}, lower triangle
        return Linv.T, np.tril(low) + np.tril(low, -1).T
    Linv = np.linalg.inv(np.linalg.cholesky(F))
    R = np.swapaxes(Linv, -1, -2)
    Finv = R @ Linv
    return R, 0.5 * Finv + 0.5 * np.swapaxes(Finv, -1, -2)


def fisher_from_samples(scores: Any) -> np.ndarray:
    """Monte Carlo Fisher information :math:`\\frac1N \\sum_i s_i s_i^\\top` from scores of shape (N, d).

    ``scores`` must be finite, with at least one row and one column (a ``ValueError`` naming it otherwise).
    """
    s = check_array("scores", scores, ndim=2, min_rows=1)
    if s.shape[1] < 1:
        raise ValueError(f"scores must have at least one coordinate; got shape {s.shape}")
    return s.T @ s / s.shape[0]
