"""The ``sample`` driver: run any geode kernel (``init``/``step``) for a number of steps from one seed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_array, check_int

__all__ = ["SampleResult", "sample"]

_CHECKED_FIELDS = ("position", "logdensity", "logdensity_grad", "theta")


@dataclass
class SampleResult:
    """What :func:`sample` returns.

    Attributes
    ----------
    samples : ndarray or None
        Positions after burn-in: (n_steps, d) for one chain, (n_steps, c, d) for c chains; None
        when ``store=False``.
    mean : ndarray
        Average of the kept positions: (d,) or (c, d).
    acceptance_rate : float
        Mean acceptance probability over the kept steps (and chains).
    chain_acceptance_rate : ndarray
        The same per chain: () or (c,).
    running_means : ndarray or None
        Running averages of the kept positions at ``checkpoints``: (k, d) or (k, c, d).
    checkpoints : ndarray or None
        Numbers of kept steps at which ``running_means`` were recorded.
    final_state : Any
        The kernel's state after the last step (resume from it by passing it as ``x0``).
    """

    samples: np.ndarray | None
    mean: np.ndarray
    acceptance_rate: float
    chain_acceptance_rate: np.ndarray
    running_means: np.ndarray | None
    checkpoints: np.ndarray | None
    final_state: Any


def _check_step(state: Any, info: Any, step: int) -> None:
    div = getattr(info, "is_divergent", None)
    if div is not None and np.any(div):
        chains = np.flatnonzero(np.atleast_1d(div))
        where = f"chain(s) {chains[:5].tolist()}" if np.ndim(state.position) > 1 else "the chain"
        raise FloatingPointError(
            f"{where} produced a non-finite log density or score (NaN) at a proposal at step {step}; "
            "check log_prob and its gradient (use -inf for points outside the support)"
        )
    _check_finite_state(state, step)


def _check_finite_state(state: Any, step: int) -> None:
    for name in _CHECKED_FIELDS:
        value = getattr(state, name, None)
        if value is None:
            continue
        bad = ~np.isfinite(np.asarray(value))
        if np.any(bad):
            per_chain = bad if name == "logdensity" else bad.any(axis=-1)
            chains = np.flatnonzero(np.atleast_1d(per_chain))
            where = f"chain(s) {chains[:5].tolist()}" if np.ndim(state.position) > 1 else "the chain"
            raise FloatingPointError(
                f"{where} produced a non-finite {name} at step {step}; lower the step size "
                "(or the repellence strength) or check log_prob and its gradient"
            )


def sample(
    kernel: Any,
    x0: Any,
    n_steps: int,
    *,
    seed: int | np.random.Generator | None,
    burn_in: int = 0,
    store: bool = True,
    record_every: int | None = None,
) -> SampleResult:
    """Run ``kernel`` from ``x0`` for ``burn_in + n_steps`` steps and keep the last ``n_steps``.

    Every random draw comes from one generator built from ``seed``: the same seed gives the same
    chain. After every step the state's position, log density, score (and SRMC's score history
    :math:`\\theta`) are checked, and so is the proposal (``info.is_divergent``: a NaN log density or
    score); a non-finite value stops the run with a ``FloatingPointError`` naming the step and the chain.

    Parameters
    ----------
    kernel : object with ``init(position)`` and ``step(rng, state)``
        E.g. :class:`~geode.probabilistic.MALA`, :class:`~geode.probabilistic.SRMC`.
    x0 : array_like or state
        Initial position(s), shape (d,) or (c, d) for c chains (finite, non-empty), or a state from
        ``kernel.init``.
    n_steps : int
        Number of kept steps (>= 1).
    seed : int or numpy Generator
        Seed of every draw.
    burn_in : int
        Steps run and discarded first.
    store : bool
        Keep every kept position (memory ``n_steps * c * d`` floats); with False only the means.
    record_every : int, optional
        Record the running mean of the kept positions every this many kept steps (and at the end).

    Returns
    -------
    SampleResult

    Examples
    --------
    >>> from geode.probabilistic import MALA
    >>> k = MALA(lambda x: -0.5 * (x**2).sum(-1), lambda x: -x, step_size=0.5)
    >>> res = sample(k, np.zeros(3), 100, seed=0)
    >>> res.samples.shape, 0 < res.acceptance_rate <= 1
    ((100, 3), True)
    """
    if not (hasattr(kernel, "init") and hasattr(kernel, "step")):
        raise TypeError(f"kernel must have init(position) and step(rng, state); got {type(kernel).__name__}")
    n_steps = check_int("n_steps", n_steps, low=1)
    burn_in = check_int("burn_in", burn_in, low=0)
    if record_every is not None:
        record_every = check_int("record_every", record_every, low=1)
    if not hasattr(x0, "position"):  # positions, not a state: checked here under their own name
        x = check_array("x0", x0, ndim=(1, 2))
        if x.size == 0:
            raise ValueError(f"x0 must hold at least one chain and one coordinate; got shape {x.shape}")
    rng = as_generator(seed)
    state = x0 if hasattr(x0, "position") else kernel.init(x0)
    shape = np.shape(state.position)
    for t in range(burn_in):
        state, info = kernel.step(rng, state)
        _check_step(state, info, t + 1)
    samples = np.empty((n_steps, *shape)) if store else None
    total = np.zeros(shape)
    acc = np.zeros(shape[:-1])
    checkpoints = [] if record_every is not None else None
    running = [] if record_every is not None else None
    for t in range(n_steps):
        state, info = kernel.step(rng, state)
        _check_step(state, info, burn_in + t + 1)
        total += state.position
        acc += info.acceptance_rate
        if samples is not None:
            samples[t] = state.position
        if record_every is not None and ((t + 1) % record_every == 0 or t + 1 == n_steps):
            checkpoints.append(t + 1)
            running.append(total / (t + 1))
    chain_acc = acc / n_steps
    return SampleResult(
        samples=samples,
        mean=total / n_steps,
        acceptance_rate=float(np.mean(chain_acc)),
        chain_acceptance_rate=chain_acc,
        running_means=None if running is None else np.stack(running),
        checkpoints=None if checkpoints is None else np.asarray(checkpoints),
        final_state=state,
    )
