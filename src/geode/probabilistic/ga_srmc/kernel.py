r"""GA-SRMC: score-repellent Monte Carlo whose repulsion acts through a metric :math:`M`.

GA-SRMC replaces SRMC's Euclidean alignment :math:`\theta^\top s(x)` by :math:`\theta^\top M s(x)` for a
symmetric positive-definite :math:`M` with :math:`\operatorname{tr} M = d`:

.. math::

    \pi_{\theta, M}(x) \propto \pi(x)\, \exp\!\big(-\alpha\, \theta_n^\top M s(x)\big), \qquad
    s_{\theta, M}(x) = s(x) - \alpha\, \nabla^2\!\log\pi(x)\, M\theta_n,

i.e. SRMC's kernel with the tilt direction :math:`v = \alpha M \theta_n` (the shifted surrogate score is
:math:`s(x - \alpha M\theta_n)`, the Metropolis-Hastings factor :math:`\exp(-\alpha\theta_n^\top M[s(y) - s(x)])`).

Under the trace constraint, the paper's stochastic-approximation CLT singles out the trace-normalised
inverse Fisher information,

.. math::

    M_{\mathrm{opt}} = \frac{d\, S^{-1}}{\operatorname{tr} S^{-1}}, \qquad S = \operatorname{Cov}_\pi(s, s)
        = \mathbb{E}_\pi[s s^\top],

estimated online as :math:`M_n = d \widehat S_n^{-1} / \operatorname{tr}\widehat S_n^{-1}` with
:math:`\widehat S_n = (\lambda I + \sum_{i \le n} s(X_i) s(X_i)^\top)/(n+1)`, from the scores the chain
computes anyway. With a FisherMALA base the same :math:`\widehat S_n` also preconditions the proposal.

Why it helps, for :math:`\pi = \mathcal N(\mu, \Sigma)`: the tilt moves the mean of
:math:`\pi_{\theta, M}` by :math:`\alpha M\theta`, and :math:`\theta \approx -S(\bar X - \mu)`, so the
feedback gain on the running-mean error is :math:`\alpha M S`. With :math:`M = I` the gains
:math:`\alpha/\sigma_i^2` spread over a factor :math:`\kappa`: no single :math:`\alpha` suits the steep and
the flat directions. With :math:`M \propto S^{-1}` the gain is the same in every direction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from geode.core.validation import check_array
from geode.probabilistic.fisher import FisherEstimate, OnlineFisher
from geode.probabilistic.mala import _matvec
from geode.probabilistic.srmc import SRMC, SRMCState

__all__ = ["GASRMC", "normalise_metric"]


def normalise_metric(metric: Any, dim: int | None = None) -> np.ndarray:
    r"""Check that ``metric`` is symmetric positive definite and rescale it to :math:`\operatorname{tr} M = d`.

    Parameters
    ----------
    metric : array_like, shape (d, d)
    dim : int, optional
        The expected d.

    Returns
    -------
    ndarray, shape (d, d)
        :math:`d M / \operatorname{tr} M`, exactly symmetric.

    Examples
    --------
    >>> normalise_metric(np.diag([1.0, 3.0]))
    array([[0.5, 0. ],
           [0. , 1.5]])
    """
    m = check_array("metric", metric, ndim=2)
    d = m.shape[0]
    if m.shape != (d, d) or (dim is not None and d != dim):
        want = f"({dim}, {dim})" if dim is not None else "(d, d)"
        raise ValueError(f"metric must be a square matrix of shape {want}; got {m.shape}")
    scale = np.abs(m).max()
    if not np.allclose(m, m.T, rtol=1e-8, atol=1e-12 * scale):
        raise ValueError("metric must be symmetric positive definite; it is not symmetric")
    m = 0.5 * (m + m.T)
    eig = np.linalg.eigvalsh(m)
    if eig[0] <= 1e-12 * max(eig[-1], 0.0) or eig[-1] <= 0:
        raise ValueError(f"metric must be symmetric positive definite; its smallest eigenvalue is {eig[0]:.3g}")
    return d * m / np.trace(m)


class _SamplerFisher(OnlineFisher):
    """:class:`~geode.probabilistic.fisher.OnlineFisher` with a lean :meth:`update` for one chain.

    A sampler feeds the estimate one score per step, so for d ~ 100 the generic update's Python and numpy
    call overhead (argument checks, ``np.where`` on 0-d arrays, ``errstate``) cost as much as GA-SRMC's extra
    linear algebra. For a finite float64 increment of shape (d,) this does the same arithmetic with scalar
    control flow, and returns the same estimate bit for bit; anything else goes to the generic update.
    """

    def update(self, est: FisherEstimate, u: np.ndarray) -> FisherEstimate:
        scatter = est.scatter
        if (
            type(u) is not np.ndarray
            or u.dtype != np.float64
            or u.ndim != 1
            or scatter.ndim != 2
            or u.shape[0] != scatter.shape[-1]
            or not np.isfinite(u).all()
        ):
            return super().update(est, u)  # batches, conversions and the error messages
        d = scatter.shape[-1]
        count = est.count
        if self.clip is not None and count >= self.warmup_steps(d) and count > 0:
            w = np.matmul(u[None, :], est.factor)[0]  # as in OnlineFisher.update
            with np.errstate(over="ignore", invalid="ignore"):
                m2 = (count - len(est.pending) + 1) * np.add.reduce(w * w, axis=-1)  # np.sum, less its wrapper
            bound = self.clip**2 * d
            if m2 > bound:  # winsorise (a NaN m2 is not shrunk, as there)
                u = u * np.sqrt(bound / m2)
        pending = (*est.pending, u)
        new = FisherEstimate(scatter, pending, count + 1, est.factor, est.scale, est.metric)
        every = self.refresh_every if self.refresh_every is not None else d
        return new if len(pending) < every else self.refresh(new)


class GASRMC(SRMC):
    r"""Geometry-aware Score-Repellent Monte Carlo: SRMC with the repulsion :math:`\alpha\,\theta^\top M s(x)`.

    Parameters
    ----------
    log_prob, grad_log_prob, step_size, alpha :
        As for :class:`~geode.probabilistic.SRMC`.
    base : {"mala", "fisher-mala"}
        The Langevin kernel. With ``"fisher-mala"`` and ``metric="fisher"``, one Fisher estimate serves
        both the proposal and the repulsion.
    metric : {"fisher", "identity"} or array_like of shape (d, d)
        :math:`M`: ``"fisher"``, the online trace-normalised inverse Fisher :math:`M_n` (the method);
        ``"identity"``, :math:`M = I` (exactly SRMC, draw for draw); or a fixed symmetric
        positive-definite matrix, rescaled to :math:`\operatorname{tr} M = d` (e.g. an oracle
        :math:`S^{-1}`).
    rho : float
        :math:`\rho` of the history's step sizes.
    **kwargs :
        Every other option of :class:`~geode.probabilistic.SRMC` (``theta_step``, ``hvp``, ``hvp_fn``,
        ``alpha_schedule``, ``damping``, ``refresh_every``, ...). ``damping`` and ``refresh_every`` also
        configure the repulsion's own Fisher estimate when ``base="mala"``.

    Examples
    --------
    >>> from geode.probabilistic.targets import anisotropic_gaussian
    >>> t = anisotropic_gaussian(100.0, dim=4)
    >>> k = GASRMC(t.log_prob, t.grad_log_prob, step_size=0.3, alpha=2.0)
    >>> from geode.probabilistic import sample
    >>> sample(k, t.sample(0, 8), 50, seed=0).mean.shape
    (8, 4)
    """

    def __init__(
        self,
        log_prob: Callable,
        grad_log_prob: Callable,
        step_size: float,
        alpha: Any,
        *,
        base: str = "mala",
        metric: str | Any = "fisher",
        rho: float = 0.6,
        **kwargs: Any,
    ) -> None:
        super().__init__(log_prob, grad_log_prob, step_size, alpha, base=base, rho=rho, **kwargs)
        e = self.estimator  # same options, leaner per-step update (bit-identical)
        self.estimator = _SamplerFisher(e.damping, e.refresh_every, warmup=e.warmup, clip=e.clip)
        if isinstance(metric, str):
            if metric not in ("fisher", "identity"):
                raise ValueError(f"metric must be 'fisher', 'identity' or a (d, d) SPD matrix; got {metric!r}")
            self.metric: str | np.ndarray = metric
        else:
            self.metric = normalise_metric(metric)

    def _init_metric(self, x: np.ndarray, fisher: FisherEstimate | None) -> Any:
        if isinstance(self.metric, np.ndarray) and self.metric.shape[0] != x.shape[-1]:
            raise ValueError(f"metric has shape {self.metric.shape} but the position has dimension {x.shape[-1]}")
        if isinstance(self.metric, str) and self.metric == "fisher" and fisher is None:
            return self.estimator.init(x.shape[-1], x.shape[:-1])  # MALA base: the repulsion's own estimate
        return None

    def _direction(self, state: SRMCState) -> np.ndarray:
        """:math:`M\\theta_n` for the chosen metric."""
        if isinstance(self.metric, np.ndarray):
            return state.theta @ self.metric  # M symmetric
        if self.metric == "identity":
            return state.theta
        est = state.metric if state.metric is not None else state.fisher
        return _matvec(est.metric, state.theta)

    def _update_metric(self, metric: Any, score: np.ndarray) -> Any:
        return metric if metric is None else self.estimator.update(metric, score)
