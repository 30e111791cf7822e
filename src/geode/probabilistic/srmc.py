r"""Score-Repellent Monte Carlo (SRMC): a MALA or FisherMALA chain on a target tilted away from its own past.

Hu, Chen, Kim, Choi, Han and Eun, *Score-Repellent Monte Carlo: toward efficient non-Markovian
sampling with constant memory in general state spaces*, ICML 2026 (arXiv 2604.22948).

The chain keeps a running average :math:`\theta_n` of the scores it has visited and, at step
:math:`n+1`, makes one Metropolis-adjusted Langevin transition targeting the tilted density

.. math::

    \pi_{\theta}(x) \propto \pi(x) \exp\!\big(-\alpha\, \theta^\top M s(x)\big)
        = \pi(x) \exp\!\big(-v^\top s(x)\big), \qquad v = \alpha M \theta_n,

with :math:`M = I` in SRMC (GA-SRMC generalises :math:`M`). By Stein's identity
:math:`\mathbb{E}_\pi s = 0`, so :math:`\theta^\star = 0` is the fixed point: a chain whose past
over-visits a region sees the scores there pull :math:`\theta_n` away from 0 and is pushed out.
The normaliser of :math:`\pi_\theta` cancels in the Metropolis-Hastings ratio, which uses
:math:`\log\pi_\theta = \log\pi - v^\top s` exactly. Its score,

.. math::

    s_\theta(x) = s(x) - \nabla^2\!\log\pi(x)\, v,

drives the Langevin proposal and is computed in one of three ways (``hvp``): ``"exact"`` with a
user Hessian-vector product, ``"fd"`` by the finite difference
:math:`(s(x + h v) - s(x))/h`, or ``"shifted"`` (the official default),
:math:`s_\theta(x) \approx s(x - v)`, exact for Gaussian targets. After the accept/reject step the
history moves towards the score at the new state (Algorithm 1),

.. math::

    \theta_{n+1} = \theta_n + \gamma_{n+1}\big(s(X_{n+1}) - \theta_n\big), \qquad
    \gamma_{n+1} = \gamma_0\,(n+1)^{-\rho}, \quad \rho \in (\tfrac12, 1], \quad \theta_0 = 0.

Costs per step, beyond the base kernel: two extra score evaluations (``"shifted"``, ``"fd"``) or two
Hessian-vector products (``"exact"``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from geode.core.validation import (
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_probability,
    check_real,
)
from geode.probabilistic.fisher import FisherEstimate
from geode.probabilistic.mala import (
    _accept,
    _adapt_step_size,
    _check_callable,
    _check_position,
    _evaluate,
    _fisher_estimator,
    _log_q_ratio,
    _propose,
    _select,
)

__all__ = ["SRMC", "SRMCInfo", "SRMCState"]

BASES = ("mala", "fisher-mala")
HVPS = ("shifted", "exact", "fd")
ALPHA_SCHEDULES = ("constant", "rational", "linear")


class SRMCState(NamedTuple):
    """State of a score-repellent chain.

    Attributes
    ----------
    position, logdensity, logdensity_grad : ndarray
        As in :class:`~geode.probabilistic.MALAState` (the *untilted* :math:`\\log\\pi` and score).
    theta : ndarray, shape like position
        The score history :math:`\\theta_n`.
    count : int
        :math:`n`, the number of steps taken.
    step_size : ndarray or float
        The current step size (adapted with ``base="fisher-mala"``).
    fisher : FisherEstimate or None
        FisherMALA's estimate (``base="fisher-mala"``).
    metric : Any
        Extra state of the repulsion metric (None for SRMC; GA-SRMC's own Fisher estimate).
    """

    position: np.ndarray
    logdensity: np.ndarray
    logdensity_grad: np.ndarray
    theta: np.ndarray
    count: int
    step_size: Any
    fisher: FisherEstimate | None
    metric: Any


class SRMCInfo(NamedTuple):
    """One step: as :class:`~geode.probabilistic.MALAInfo`, plus the repellence strength :math:`\\alpha_n` used."""

    acceptance_rate: np.ndarray
    is_accepted: np.ndarray
    is_divergent: np.ndarray
    alpha: Any


def _check_alpha(alpha: Any) -> float | np.ndarray:
    if np.ndim(alpha) == 0:
        return check_real("alpha", alpha, low=0.0)
    a = check_array("alpha", alpha, ndim=1)
    if np.any(a < 0):
        raise ValueError(f"alpha must be >= 0 everywhere; got min {a.min()}")
    return a


class SRMC:
    r"""Score-Repellent Monte Carlo with a MALA or FisherMALA base (see the module docstring).

    Parameters
    ----------
    log_prob, grad_log_prob : callable
        :math:`\log\pi` and its score, batched: ``(..., d) -> (...)`` and ``(..., d) -> (..., d)``.
    step_size : float
        :math:`\tau > 0` of the base kernel (initial value for ``"fisher-mala"``).
    alpha : float or array_like of shape (c,)
        Repellence strength :math:`\alpha \ge 0`; an array gives each of c chains its own
        (:math:`\alpha = 0` is exactly the base kernel).
    base : {"mala", "fisher-mala"}
        The Langevin kernel that targets :math:`\pi_\theta`.
    rho : float
        :math:`\rho \in (1/2, 1]` of the history's step sizes :math:`\gamma_n = \gamma_0 (n+1)^{-\rho}`.
    theta_step : float
        :math:`\gamma_0 \ge 0` (official code: ``theta_step``; 0 freezes :math:`\theta`).
    hvp : {"shifted", "exact", "fd"}
        How to compute the tilted score (module docstring).
    hvp_fn : callable, optional
        :math:`(x, v) \mapsto \nabla^2\log\pi(x) v`, required for ``hvp="exact"``.
    fd_eps : float
        Step :math:`h` of the ``"fd"`` difference (relative to :math:`\|v\|`).
    alpha_schedule : {"linear", "constant", "rational"}
        ``"linear"`` (default): :math:`\alpha_n = \alpha \min(1, n / W)`, a warm-up of ``alpha_warmup``
        steps (the official code's ``alpha_warmup_steps``); ``"constant"``: :math:`\alpha_n = \alpha`;
        ``"rational"``: the official "adaptive" :math:`\alpha_n = n / (C + n/\alpha)`. Without a warm-up
        the feedback :math:`\theta_{n+1} \approx (1 - \gamma_n(1 + \alpha))\theta_n` of a unit-precision
        direction is unstable while :math:`\gamma_n (1 + \alpha) > 2` (the first ~17 steps at
        :math:`\alpha = 10`), and 5 of 20 chains diverged on :math:`\mathcal N(0, I_{10})` (issue 18).
    alpha_c : float
        :math:`C > 0` of the rational schedule.
    alpha_warmup : int, optional
        :math:`W \ge 1` of the linear schedule. Default 100 with ``base="mala"``, 1000 with
        ``base="fisher-mala"``: FisherMALA's step size adapts over its first ~1000 steps (rate
        :math:`(n+1)^{-0.6}`; it grew ~15x on a :math:`\kappa = 100` Gaussian once the preconditioner was on),
        and a repulsion ramped in over 100 steps meanwhile let 28% of the chains run away at
        :math:`\alpha = 5` (issue 18's claim check; none with 1000).
    fisher_warmup, fisher_clip :
        Warm-up and outlier clipping of the Fisher estimate (defaults ``10 d`` and 5), see
        :mod:`geode.probabilistic.fisher`; used with ``base="fisher-mala"`` and by GA-SRMC's metric.
    damping, refresh_every, target_accept, adapt_step_size :
        FisherMALA's options (``base="fisher-mala"``), see :class:`~geode.probabilistic.FisherMALA`.

    Examples
    --------
    >>> k = SRMC(lambda x: -0.5 * (x**2).sum(-1), lambda x: -x, step_size=0.3, alpha=1.0)
    >>> state = k.init(np.zeros((4, 2)))  # four chains
    >>> state, info = k.step(np.random.default_rng(0), state)
    >>> state.theta.shape
    (4, 2)
    """

    def __init__(
        self,
        log_prob: Callable,
        grad_log_prob: Callable,
        step_size: float,
        alpha: Any,
        *,
        base: str = "mala",
        rho: float = 0.6,
        theta_step: float = 1.0,
        hvp: str = "shifted",
        hvp_fn: Callable | None = None,
        fd_eps: float = 1e-5,
        alpha_schedule: str = "linear",
        alpha_c: float = 1000.0,
        alpha_warmup: int | None = None,
        damping: float = 1.0,
        refresh_every: int | None = None,
        fisher_warmup: int | None = None,
        fisher_clip: float | None = 5.0,
        target_accept: float = 0.574,
        adapt_step_size: bool = True,
    ) -> None:
        self.log_prob = _check_callable("log_prob", log_prob)
        self.grad_log_prob = _check_callable("grad_log_prob", grad_log_prob)
        self.step_size = check_positive("step_size", step_size)
        self.alpha = _check_alpha(alpha)
        self.base = check_choice("base", base, BASES)
        self.rho = check_real("rho", rho, low=0.5, high=1.0, low_inclusive=False)
        self.theta_step = check_real("theta_step", theta_step, low=0.0)
        self.hvp = check_choice("hvp", hvp, HVPS)
        if hvp == "exact":
            if hvp_fn is None:
                raise ValueError('hvp="exact" needs hvp_fn(x, v), the Hessian-vector product of log_prob')
            _check_callable("hvp_fn", hvp_fn)
        self.hvp_fn = hvp_fn
        self.fd_eps = check_positive("fd_eps", fd_eps)
        self.alpha_schedule = check_choice("alpha_schedule", alpha_schedule, ALPHA_SCHEDULES)
        self.alpha_c = check_positive("alpha_c", alpha_c)
        if alpha_warmup is None:
            alpha_warmup = 1000 if self.base == "fisher-mala" else 100
        self.alpha_warmup = check_int("alpha_warmup", alpha_warmup, low=0)
        if self.alpha_schedule == "linear" and self.alpha_warmup == 0:
            raise ValueError('alpha_schedule="linear" needs alpha_warmup >= 1 (the length of the ramp)')
        self.estimator = _fisher_estimator(damping, refresh_every, fisher_warmup, fisher_clip)
        self.target_accept = check_probability("target_accept", target_accept, open_interval=True)
        self.adapt_step_size = bool(adapt_step_size)

    # -- hooks: the repulsion metric M (identity here; GA-SRMC overrides) -------------------------

    def _init_metric(self, x: np.ndarray, fisher: FisherEstimate | None) -> Any:
        """Extra state the metric needs (none for :math:`M = I`)."""
        return None

    def _direction(self, state: SRMCState) -> np.ndarray:
        """:math:`M\\theta_n`; here :math:`M = I`."""
        return state.theta

    def _update_metric(self, metric: Any, score: np.ndarray) -> Any:
        """The metric's extra state after a step whose new state has score ``score``."""
        return metric

    # ---------------------------------------------------------------------------------------------

    def init(self, position: Any, theta: Any = None) -> SRMCState:
        """State at ``position`` ((d,) or (c, d)) with :math:`\\theta_0` = ``theta`` (default 0)."""
        x = _check_position(position)
        if np.ndim(self.alpha) == 1 and (x.ndim != 2 or self.alpha.shape[0] != x.shape[0]):
            raise ValueError(
                f"an array alpha of shape {self.alpha.shape} needs positions of shape ({self.alpha.shape[0]}, d); "
                f"got {x.shape}"
            )
        lp, g = _evaluate(self.log_prob, self.grad_log_prob, x)
        th = np.zeros_like(x) if theta is None else check_array("theta", theta, shape=x.shape)
        fisher = self.estimator.init(x.shape[-1], x.shape[:-1]) if self.base == "fisher-mala" else None
        tau = np.full(x.shape[:-1], self.step_size) if self.base == "fisher-mala" else self.step_size
        return SRMCState(x, lp, g, th, 0, tau, fisher, self._init_metric(x, fisher))

    def current_alpha(self, n: int) -> Any:
        """:math:`\\alpha_n` at step ``n`` (1-based)."""
        if self.alpha_schedule == "constant":
            return self.alpha
        if self.alpha_schedule == "linear":  # α_n = α min(1, n / W)
            f = min(1.0, n / self.alpha_warmup)
            return f * self.alpha
        a = np.asarray(self.alpha, dtype=float)  # rational: α_n = n / (C + n/α), and 0 for α = 0
        out = np.where(a > 0, n / (self.alpha_c + n / np.where(a > 0, a, 1.0)), 0.0)
        return float(out) if out.ndim == 0 else out

    def _tilted_score(self, x: np.ndarray, g: np.ndarray, v: np.ndarray, zero: bool) -> np.ndarray:
        """:math:`s_\\theta(x) = s(x) - \\nabla^2\\log\\pi(x)\\, v` (exactly ``g`` when ``v = 0``)."""
        if zero:
            return g
        if self.hvp == "shifted":
            return np.asarray(self.grad_log_prob(x - v), dtype=float)
        if self.hvp == "exact":
            return g - np.asarray(self.hvp_fn(x, v), dtype=float)
        norm = np.sqrt(np.sum(v * v, axis=-1, keepdims=True))
        h = self.fd_eps / np.where(norm > 0, norm, 1.0)
        return g - (np.asarray(self.grad_log_prob(x + h * v), dtype=float) - g) / h

    def step(self, rng: np.random.Generator, state: SRMCState) -> tuple[SRMCState, SRMCInfo]:
        """One tilted Langevin transition, then the updates of :math:`\\theta`, Fisher estimate and step size."""
        x, lp, g, theta = state.position, state.logdensity, state.logdensity_grad, state.theta
        n, tau = state.count, state.step_size
        alpha = self.current_alpha(n + 1)
        v = (alpha if np.ndim(alpha) == 0 else alpha[:, None]) * self._direction(state)  # v = α M θ
        zero = not np.any(v)
        pre = (state.fisher.factor, state.fisher.scale) if state.fisher is not None else None
        with np.errstate(over="ignore", invalid="ignore"):
            lpt_x = lp - np.sum(v * g, axis=-1)  # log π_θ(x) = log π(x) - vᵀ s(x)
            gt_x = self._tilted_score(x, g, v, zero)
            y, xi, z = _propose(rng, x, gt_x, tau, pre)
            lp_y = np.asarray(self.log_prob(y), dtype=float)
            g_y = np.asarray(self.grad_log_prob(y), dtype=float)
            lpt_y = lp_y - np.sum(v * g_y, axis=-1)
            gt_y = self._tilted_score(y, g_y, v, zero)
            log_ratio = (lpt_y - lpt_x) + _log_q_ratio(xi, z, gt_x, gt_y, tau, pre)
        prob, acc, div = _accept(rng, log_ratio)
        x1, lp1, g1 = _select(acc, y, x), np.where(acc, lp_y, lp), _select(acc, g_y, g)
        gamma = self.theta_step * (n + 1) ** -self.rho
        theta1 = theta + gamma * (g1 - theta)  # θ_{n+1} = θ_n + γ_{n+1}(s(X_{n+1}) - θ_n)
        fisher = state.fisher
        if fisher is not None:
            fisher = self.estimator.update(fisher, g1)
            if self.adapt_step_size:
                tau = _adapt_step_size(tau, prob, n, self.target_accept)
        metric = self._update_metric(state.metric, g1)
        new = SRMCState(x1, lp1, g1, theta1, n + 1, tau, fisher, metric)
        return new, SRMCInfo(prob, acc, div, alpha)
