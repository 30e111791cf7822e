r"""Exact successor-representation spectra of grid-world random walks with action repetition.

With a one-step transition matrix :math:`P` (row-stochastic), action repetition ``k`` (each primitive
action is repeated ``k`` times; for the uniformly random policy this is the macro kernel :math:`P^k`) and
discount :math:`\gamma` per primitive step, the successor representation over macro steps is

.. math::

    \Psi_k = \sum_{t \ge 0} (\gamma^k P^k)^t = (I - \gamma^k P^k)^{-1} .

For a reversible walk the eigenvalues :math:`\lambda` of :math:`P` become :math:`1/(1 - \gamma^k\lambda^k)`:
the components with :math:`|\lambda| < 1` (high spatial frequency) are pulled towards 1 as ``k`` grows while
the stationary one keeps :math:`1/(1-\gamma^k)`, so the spectrum is low-pass filtered. The value of a reward
``r`` collected per macro step is :math:`V = \Psi_k r`; with the best rank-``d`` approximation
:math:`\Psi_{k,d}` (truncated SVD), :math:`\|V - \Psi_{k,d} r\|_2 \le \sigma_{d+1}(\Psi_k)\,\|r\|_2`.

Inferred details (the paper's code is not public): the random walk picks one of four moves uniformly, a
move into a wall or an obstacle leaves the agent in place; with repetition the random policy draws one
action and repeats it ``k`` times (the macro kernel is :math:`\frac14\sum_a P_a^k`, not :math:`P^k`, when
``repeat_action=True``; ``False`` gives :math:`P^k`, a fresh action per step). Effective rank is the
entropy effective rank of :func:`geode.core.effective_rank`.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from geode.core import effective_rank
from geode.core.validation import check_array, check_int, check_real

__all__ = ["grid_walk", "low_rank_error", "sr_spectrum", "successor_representation"]

_MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k (action repetition) must be an integer >= 1; got {k!r}")
    return int(k)


def _check_discount(discount: Any) -> float:
    if isinstance(discount, bool) or not isinstance(discount, numbers.Real):
        raise TypeError(f"discount must be a real number in (0, 1); got {type(discount).__name__} {discount!r}")
    g = float(discount)
    if not np.isfinite(g) or not 0.0 < g < 1.0:
        raise ValueError(f"discount must lie in the open interval (0, 1); got {discount!r}")
    return g


def grid_walk(height: int, width: int, obstacles: float = 0.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    r"""Per-action transition matrices of a 4-connected grid world.

    Parameters
    ----------
    height, width : int
        Grid size (>= 2 each).
    obstacles : float
        Fraction of cells blocked at random (from ``seed``), in ``[0, 0.5)``; blocked cells are removed.
    seed : int
        Seed of the obstacle layout.

    Returns
    -------
    actions : ndarray, shape (4, n, n)
        :math:`P_a` for up, down, left, right over the ``n`` free cells (bumping leaves the agent in place).
    cells : ndarray, shape (n, 2)
        Coordinates of the free cells.
    """
    height = check_int("height", height, low=2)
    width = check_int("width", width, low=2)
    obstacles = check_real("obstacles", obstacles, low=0.0, high=0.5, high_inclusive=False)
    seed = check_int("seed", seed, low=0)
    rng = np.random.default_rng(seed)
    free = np.ones((height, width), bool)
    n_block = int(round(obstacles * height * width))
    if n_block:
        free.flat[rng.choice(height * width, n_block, replace=False)] = False
    cells = np.argwhere(free)
    index = -np.ones((height, width), int)
    index[free] = np.arange(len(cells))
    n = len(cells)
    actions = np.zeros((4, n, n))
    for a, (di, dj) in enumerate(_MOVES):
        for s, (i, j) in enumerate(cells):
            ii, jj = i + di, j + dj
            ok = 0 <= ii < height and 0 <= jj < width and free[ii, jj]
            actions[a, s, index[ii, jj] if ok else s] = 1.0
    return actions, cells


def successor_representation(p: Any, discount: float, k: int = 1, *, include_current: bool = True) -> np.ndarray:
    r"""Successor representation :math:`(I - \gamma^k P^k)^{-1}` of a macro step of ``k`` primitive steps.

    With ``include_current=False`` it is FB's successor measure :math:`P^k(I - \gamma^k P^k)^{-1}`
    (:math:`\sum_{t\ge0}\gamma^{kt}P^{k(t+1)}`, the object :math:`M = FB^\top` fits: the FB loss's target
    starts at the next state), whose eigenvalues :math:`\lambda^k/(1-\gamma^k\lambda^k)` vanish for
    high-frequency components as ``k`` grows.

    Parameters
    ----------
    p : array, shape (n, n) or (A, n, n)
        A row-stochastic transition matrix, or per-action matrices :math:`P_a` of a uniformly random policy
        that repeats its action ``k`` times (macro kernel :math:`\frac1A\sum_a P_a^k`).
    discount : float
        :math:`\gamma` per primitive step, in (0, 1).
    k : int
        Action repetition, >= 1.
    """
    k = _check_k(k)
    g = _check_discount(discount)
    p = check_array("p", p, ndim=(2, 3))
    if p.ndim == 2:
        p = p[None]
    if p.shape[1] != p.shape[2] or 0 in p.shape:
        raise ValueError(f"p must have shape (n, n) or (A, n, n) with A, n >= 1; got {p.shape}")
    if not np.allclose(p.sum(-1), 1.0) or (p < 0).any():
        raise ValueError("p must be row-stochastic (non-negative rows summing to 1)")
    macro = np.mean([np.linalg.matrix_power(pa, k) for pa in p], axis=0)
    n = macro.shape[0]
    sr = np.linalg.solve(np.eye(n) - g**k * macro, np.eye(n))
    return sr if include_current else macro @ sr


def _check_sr(sr: Any) -> np.ndarray:
    """``sr`` as a finite, non-empty, not all-zero 2-D float array (checked before any SVD: NaN can hang it)."""
    sr = check_array("sr", sr, ndim=2)
    if 0 in sr.shape:
        raise ValueError(f"sr must be a non-empty matrix; got shape {sr.shape}")
    if not np.any(sr):
        raise ValueError("sr must not be all zeros (its relative errors are 0/0)")
    return sr


def low_rank_error(sr: np.ndarray, d: int) -> float:
    r"""Relative Frobenius error :math:`\|\Psi - \Psi_d\|_F / \|\Psi\|_F` of the best rank-``d`` approximation.

    ``sr`` is a finite, non-empty, not all-zero matrix; ``d`` an integer >= 1 (``d >= min(sr.shape)`` gives 0).
    """
    sr = _check_sr(sr)
    d = check_int("d", d, low=1)
    s = np.linalg.svd(sr, compute_uv=False)
    return float(np.sqrt((s[d:] ** 2).sum() / (s**2).sum()))


def sr_spectrum(sr: np.ndarray, d: int, rewards: np.ndarray | None = None) -> dict[str, float]:
    r"""Effective rank, rank-``d`` error, and (given rewards) rank-``d`` value error with its bound.

    Returns ``effective_rank``, ``rank_d_error``; with ``rewards`` (shape (n, m), one reward per column)
    also ``value_error`` (mean over columns of :math:`\|(\Psi-\Psi_d)r\|/\|\Psi r\|`) and
    ``bound_slack`` (the minimum over columns of :math:`\sigma_{d+1}\|r\| - \|(\Psi-\Psi_d)r\|`, >= 0 when
    the bound holds).

    ``sr`` is a finite, non-empty, not all-zero matrix (square when ``rewards`` are given), ``d`` an integer
    >= 1 (< ``n`` with ``rewards``: the bound uses :math:`\sigma_{d+1}`); ``rewards`` is finite, of shape (n,)
    or (n, m) with m >= 1, and no column may have a zero value :math:`\Psi r` (its relative error is 0/0).
    """
    sr = _check_sr(sr)
    d = check_int("d", d, low=1)
    if rewards is not None:
        n = sr.shape[0]
        if sr.shape[1] != n:
            raise ValueError(f"sr must be square (n, n) when rewards are given; got shape {sr.shape}")
        if d >= n:
            raise ValueError(f"d must be < n = {n} when rewards are given (the bound uses sigma_(d+1)); got {d}")
        rewards = check_array("rewards", rewards, ndim=(1, 2))
        if rewards.shape[0] != n or rewards.size == 0:
            raise ValueError(f"rewards must have shape (n,) or (n, m) with n = {n}, m >= 1; got {rewards.shape}")
    u, s, vt = np.linalg.svd(sr)
    out = {"effective_rank": float(effective_rank(sr)), "rank_d_error": low_rank_error(sr, d)}
    if rewards is not None:
        r = rewards.reshape(sr.shape[0], -1)
        approx = (u[:, :d] * s[:d]) @ vt[:d]
        v, dv = sr @ r, (sr - approx) @ r
        if not np.all(np.linalg.norm(v, axis=0) > 0):
            raise ValueError("rewards must have no column r with a zero value sr @ r (its relative error is 0/0)")
        err = np.linalg.norm(dv, axis=0)
        out["value_error"] = float(np.mean(err / np.linalg.norm(v, axis=0)))
        out["bound_slack"] = float(np.min(s[d] * np.linalg.norm(r, axis=0) - err))
    return out
