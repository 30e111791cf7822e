r"""Metropolis-adjusted Langevin kernels: MALA and FisherMALA, blackjax-style, vectorised over chains.

Both follow blackjax's kernel idiom: ``kernel.init(position) -> state`` and
``kernel.step(rng, state) -> (state, info)``, with a numpy ``Generator`` in place of a JAX key. A
position of shape ``(d,)`` is one chain; ``(c, d)`` is ``c`` independent chains advanced together
(``log_prob`` and ``grad_log_prob`` must then accept ``(c, d)`` and return ``(c,)`` and ``(c, d)``).

**The proposal** (blackjax's convention, step size :math:`\tau`; the SRMC code's :math:`\varepsilon`
is :math:`2\tau`), with a symmetric positive-definite preconditioner :math:`A` (:math:`A = I` for MALA):

.. math::

    y = x + \tau A\, g(x) + \sqrt{2\tau}\, A^{1/2} \xi, \qquad \xi \sim \mathcal N(0, I_d),

    \log q(y \mid x) = -\frac{1}{4\tau} \big\| A^{-1/2} (y - x - \tau A g(x)) \big\|^2 + \text{const},

where :math:`g = \nabla \log \tilde\pi` is the score of the density :math:`\tilde\pi` the kernel
targets (:math:`\pi` itself here, a tilted :math:`\pi_\theta` in SRMC). The proposal is accepted with
probability :math:`\min(1, e^{r})`,

.. math::

    r = \log\tilde\pi(y) - \log\tilde\pi(x) + \log q(x \mid y) - \log q(y \mid x).

With :math:`A = c R R^\top`, both proposal densities are evaluated without a solve: writing
:math:`z = \tau c R^\top g(x) + \sqrt{2\tau c}\,\xi` (so :math:`y = x + R z`) and
:math:`w = z + \tau c R^\top g(y)`,

.. math::

    \log q(x \mid y) - \log q(y \mid x) = \tfrac12 \|\xi\|^2 - \frac{\|w\|^2}{4 \tau c}.

A proposal of log density :math:`-\infty` is rejected (outside the support). A NaN log density or score
at the proposal also leads to a rejection, flagged in ``info.is_divergent``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from geode.core.validation import check_array, check_int, check_positive, check_probability
from geode.probabilistic.fisher import FisherEstimate, OnlineFisher

__all__ = ["MALA", "FisherMALA", "FisherMALAState", "MALAInfo", "MALAState"]


class MALAState(NamedTuple):
    """State of :class:`MALA`: the position, :math:`\\log\\pi` there and the score there."""

    position: np.ndarray
    logdensity: np.ndarray
    logdensity_grad: np.ndarray


class MALAInfo(NamedTuple):
    """What one step did, per chain.

    Attributes
    ----------
    acceptance_rate : ndarray
        :math:`\\min(1, e^r)`.
    is_accepted : ndarray of bool
    is_divergent : ndarray of bool
        The log ratio was NaN or :math:`+\\infty` (a NaN log density or score at the proposal): the
        proposal was rejected, and :func:`~geode.probabilistic.sample` stops with an error.
    """

    acceptance_rate: np.ndarray
    is_accepted: np.ndarray
    is_divergent: np.ndarray


class FisherMALAState(NamedTuple):
    """State of :class:`FisherMALA`: a :class:`MALAState`'s fields plus the Fisher estimate and step size."""

    position: np.ndarray
    logdensity: np.ndarray
    logdensity_grad: np.ndarray
    fisher: FisherEstimate
    step_size: np.ndarray
    count: int


# ---------------------------------------------------------------------------------------------
# shared machinery (also used by the score-repellent kernels)


def _check_callable(name: str, fn: Any) -> Callable[..., Any]:
    if not callable(fn):
        raise TypeError(f"{name} must be callable; got {type(fn).__name__}")
    return fn


def _evaluate(log_prob: Callable, grad_log_prob: Callable, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log_prob`` and ``grad_log_prob`` at a validated initial position, with shape and finiteness checks."""
    lp = np.asarray(log_prob(x), dtype=float)
    if lp.shape != x.shape[:-1]:
        raise ValueError(
            f"log_prob must return shape {x.shape[:-1]} for a position of shape {x.shape}; got {lp.shape}"
        )
    if not np.all(np.isfinite(lp)):
        raise ValueError("log_prob(position) must be finite at the initial position (got NaN or inf)")
    g = np.asarray(grad_log_prob(x), dtype=float)
    if g.shape != x.shape:
        raise ValueError(f"grad_log_prob must return the shape of the position {x.shape}; got {g.shape}")
    if not np.all(np.isfinite(g)):
        raise ValueError("grad_log_prob(position) must be finite at the initial position (got NaN or inf)")
    return lp, g


def _check_position(position: Any) -> np.ndarray:
    x = check_array("position", position, ndim=(1, 2))
    if x.shape[-1] < 1:
        raise ValueError(f"position must have at least one coordinate; got shape {x.shape}")
    if x.ndim == 2 and x.shape[0] < 1:
        raise ValueError(f"position must hold at least one chain; got shape {x.shape}")
    return x


def _fisher_estimator(damping: Any, refresh_every: Any, fisher_warmup: Any, fisher_clip: Any) -> OnlineFisher:
    """The kernels' :class:`OnlineFisher`, its options checked under the kernels' own argument names."""
    if fisher_warmup is not None:
        check_int("fisher_warmup", fisher_warmup, low=0)
    if fisher_clip is not None:
        check_positive("fisher_clip", fisher_clip)
    return OnlineFisher(damping, refresh_every, warmup=fisher_warmup, clip=fisher_clip)


def _col(a: Any) -> Any:
    """Broadcast a per-chain scalar (shape (...)) against a position (..., d)."""
    return a if np.ndim(a) == 0 else np.asarray(a)[..., None]


def _matvec(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """:math:`M v` for (..., d, d) and (..., d)."""
    return np.matmul(m, v[..., None])[..., 0]


def _rmatvec(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """:math:`M^\\top v` for (..., d, d) and (..., d)."""
    return np.matmul(v[..., None, :], m)[..., 0, :]


def _propose(
    rng: np.random.Generator, x: np.ndarray, g: np.ndarray, tau: Any, pre: tuple[np.ndarray, np.ndarray] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Draw :math:`y = x + \\tau A g + \\sqrt{2\\tau} A^{1/2}\\xi`; return ``(y, xi, z)``."""
    xi = rng.standard_normal(x.shape)
    if pre is None:
        t = _col(tau)
        return x + t * g + np.sqrt(2.0 * t) * xi, xi, None
    R, c = pre
    tc = _col(tau * c)
    z = tc * _rmatvec(R, g) + np.sqrt(2.0 * tc) * xi
    return x + _matvec(R, z), xi, z


def _log_q_ratio(
    xi: np.ndarray,
    z: np.ndarray | None,
    g_x: np.ndarray,
    g_y: np.ndarray,
    tau: Any,
    pre: tuple[np.ndarray, np.ndarray] | None,
) -> np.ndarray:
    """:math:`\\log q(x \\mid y) - \\log q(y \\mid x)` for a proposal made by :func:`_propose`."""
    if pre is None:
        t = _col(tau)
        w = np.sqrt(2.0 * t) * xi + t * (g_x + g_y)
        return 0.5 * np.sum(xi * xi, axis=-1) - np.sum(w * w, axis=-1) / (4.0 * np.asarray(tau))
    R, c = pre
    tc = tau * c
    w = z + _col(tc) * _rmatvec(R, g_y)
    return 0.5 * np.sum(xi * xi, axis=-1) - np.sum(w * w, axis=-1) / (4.0 * tc)


def _accept(rng: np.random.Generator, log_ratio: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Metropolis-Hastings decision ``(probability, accepted, divergent)``.

    A proposal of log density :math:`-\\infty` (outside the support) is rejected. A NaN or :math:`+\\infty`
    ratio (NaN density or score) is rejected too, and flagged as divergent.
    """
    divergent = np.isnan(log_ratio) | (log_ratio == np.inf)
    log_ratio = np.where(divergent, -np.inf, log_ratio)
    u = np.asarray(rng.random(np.shape(log_ratio)))
    with np.errstate(divide="ignore"):
        accepted = np.log(u) < log_ratio
    return np.exp(np.minimum(log_ratio, 0.0)), accepted, divergent


def _select(accepted: np.ndarray, new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """``new`` where accepted, ``old`` elsewhere (per chain)."""
    a = np.asarray(accepted)
    return np.where(a[..., None] if new.ndim > a.ndim else a, new, old)


def _adapt_step_size(tau: np.ndarray, prob: np.ndarray, count: int, target: float) -> np.ndarray:
    """Robbins-Monro on the log step size: :math:`\\log\\tau_{n+1} = \\log\\tau_n + (n+1)^{-0.6} (a_n - a^\\star)`."""
    return tau * np.exp((count + 1) ** -0.6 * (prob - target))


# ---------------------------------------------------------------------------------------------


class MALA:
    r"""Metropolis-adjusted Langevin algorithm (Roberts and Tweedie, 1996), in blackjax's parametrisation.

    .. math::

        y = x + \tau\, s(x) + \sqrt{2\tau}\, \xi, \qquad
        r = \log\pi(y) - \log\pi(x) - \frac{\|x - y - \tau s(y)\|^2}{4\tau} + \frac{\|\xi\|^2}{2},

    accepted with probability :math:`\min(1, e^r)`; :math:`s = \nabla\log\pi`.

    Parameters
    ----------
    log_prob : callable
        :math:`\log\pi` up to a constant, ``(..., d) -> (...)``.
    grad_log_prob : callable
        The score :math:`s = \nabla\log\pi`, ``(..., d) -> (..., d)``.
    step_size : float
        :math:`\tau > 0` (blackjax's ``step_size``; the proposal variance is :math:`2\tau`).

    Examples
    --------
    >>> kernel = MALA(lambda x: -0.5 * (x**2).sum(-1), lambda x: -x, step_size=0.5)
    >>> state = kernel.init(np.zeros(2))
    >>> state, info = kernel.step(np.random.default_rng(0), state)
    >>> state.position.shape
    (2,)
    """

    def __init__(self, log_prob: Callable, grad_log_prob: Callable, step_size: float) -> None:
        self.log_prob = _check_callable("log_prob", log_prob)
        self.grad_log_prob = _check_callable("grad_log_prob", grad_log_prob)
        self.step_size = check_positive("step_size", step_size)

    def init(self, position: Any) -> MALAState:
        """State at ``position`` (shape (d,) or (c, d)); checks the shapes and finiteness of log_prob and its score."""
        x = _check_position(position)
        lp, g = _evaluate(self.log_prob, self.grad_log_prob, x)
        return MALAState(x, lp, g)

    def step(self, rng: np.random.Generator, state: MALAState) -> tuple[MALAState, MALAInfo]:
        """One MALA transition of every chain (draws: the proposal noise, then the uniforms)."""
        x, lp, g = state.position, state.logdensity, state.logdensity_grad
        tau = self.step_size
        y, xi, _ = _propose(rng, x, g, tau, None)
        with np.errstate(over="ignore", invalid="ignore"):
            lp_y = np.asarray(self.log_prob(y), dtype=float)
            g_y = np.asarray(self.grad_log_prob(y), dtype=float)
            log_ratio = (lp_y - lp) + _log_q_ratio(xi, None, g, g_y, tau, None)
        prob, acc, div = _accept(rng, log_ratio)
        new = MALAState(_select(acc, y, x), np.where(acc, lp_y, lp), _select(acc, g_y, g))
        return new, MALAInfo(prob, acc, div)


class FisherMALA:
    r"""MALA preconditioned by an online estimate of the inverse Fisher information (after Titsias, 2023).

    The proposal of :class:`MALA` with :math:`A_n = d\, \widehat S_n^{-1} / \operatorname{tr}\widehat S_n^{-1}`,
    the trace-normalised inverse of the running Fisher estimate
    :math:`\widehat S_n = (\lambda I + \sum_{i \le n} s(X_i) s(X_i)^\top)/(n+1)` (see
    :mod:`geode.probabilistic.fisher`):

    .. math::

        y = x + \tau_n A_n s(x) + \sqrt{2\tau_n} A_n^{1/2} \xi,

    and the step size adapted towards the acceptance rate :math:`a^\star` by Robbins-Monro,
    :math:`\log\tau_{n+1} = \log\tau_n + (n+1)^{-0.6}(a_n - a^\star)`.

    Titsias (NeurIPS 2023) builds the estimate from Rao-Blackwellised score *differences*
    :math:`\sqrt{a_n}(s(y) - s(x))` and adapts :math:`\sigma^2` at a constant rate. We use the scores
    at the visited states, which estimate :math:`S = \mathbb{E}_\pi[s s^\top]` directly (the matrix
    GA-SRMC's repulsion needs, so one estimate serves both), and a diminishing adaptation rate
    (the chain becomes Markov in the limit). Both are our choices.

    Parameters
    ----------
    log_prob, grad_log_prob : callable
        As for :class:`MALA`.
    step_size : float
        Initial :math:`\tau_0 > 0`. With a trace-normalised :math:`A_n` it has MALA's meaning on
        average over directions.
    damping : float
        :math:`\lambda > 0` of the Fisher estimate (units of :math:`s s^\top`).
    refresh_every : int, optional
        Refresh :math:`A_n` every this many steps (default d; amortised :math:`O(d^2)` per step).
    target_accept : float
        :math:`a^\star \in (0, 1)`, default 0.574 (optimal for MALA).
    adapt_step_size : bool
        Adapt :math:`\tau_n` (default True); with False, :math:`\tau_n = \tau_0`.
    fisher_warmup : int or None
        Steps before the preconditioner leaves :math:`A = I` (default None: ``10 d``).
    fisher_clip : float or None
        Winsorise score increments at Mahalanobis norm ``fisher_clip`` :math:`\sqrt d` (default 5; None: off).
        See :mod:`geode.probabilistic.fisher`.
    """

    def __init__(
        self,
        log_prob: Callable,
        grad_log_prob: Callable,
        step_size: float,
        *,
        damping: float = 1.0,
        refresh_every: int | None = None,
        target_accept: float = 0.574,
        adapt_step_size: bool = True,
        fisher_warmup: int | None = None,
        fisher_clip: float | None = 5.0,
    ) -> None:
        self.log_prob = _check_callable("log_prob", log_prob)
        self.grad_log_prob = _check_callable("grad_log_prob", grad_log_prob)
        self.step_size = check_positive("step_size", step_size)
        self.estimator = _fisher_estimator(damping, refresh_every, fisher_warmup, fisher_clip)
        self.target_accept = check_probability("target_accept", target_accept, open_interval=True)
        self.adapt_step_size = bool(adapt_step_size)

    def init(self, position: Any) -> FisherMALAState:
        """State at ``position`` (shape (d,) or (c, d)) with :math:`F_0 = \\lambda I` and :math:`\\tau = \\tau_0`."""
        x = _check_position(position)
        lp, g = _evaluate(self.log_prob, self.grad_log_prob, x)
        est = self.estimator.init(x.shape[-1], x.shape[:-1])
        return FisherMALAState(x, lp, g, est, np.full(x.shape[:-1], self.step_size), 0)

    def step(self, rng: np.random.Generator, state: FisherMALAState) -> tuple[FisherMALAState, MALAInfo]:
        """One preconditioned transition, then the updates of the Fisher estimate and the step size."""
        x, lp, g, est, tau = state.position, state.logdensity, state.logdensity_grad, state.fisher, state.step_size
        pre = (est.factor, est.scale)
        y, xi, z = _propose(rng, x, g, tau, pre)
        with np.errstate(over="ignore", invalid="ignore"):
            lp_y = np.asarray(self.log_prob(y), dtype=float)
            g_y = np.asarray(self.grad_log_prob(y), dtype=float)
            log_ratio = (lp_y - lp) + _log_q_ratio(xi, z, g, g_y, tau, pre)
        prob, acc, div = _accept(rng, log_ratio)
        x1, lp1, g1 = _select(acc, y, x), np.where(acc, lp_y, lp), _select(acc, g_y, g)
        if self.adapt_step_size:
            tau = _adapt_step_size(tau, prob, state.count, self.target_accept)
        new = FisherMALAState(x1, lp1, g1, self.estimator.update(est, g1), tau, state.count + 1)
        return new, MALAInfo(prob, acc, div)
