"""Batch-arrival benchmarks for serving schedulers: a lower bound on the optimum and the exact optimum.

In the batch setting every request arrives at time 0 and every step takes one time unit, so a
schedule's cost is its total completion time :math:`\\sum_i C_i` in steps (:math:`C_i` = number of steps
until request :math:`i` has produced its last token). The competitive ratio of a policy is its cost over
the optimal cost; :func:`batch_lower_bound` bounds the optimum from below for any size, and
:func:`optimal_batch_cost` computes it exactly for small instances.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from geode.core.validation import check_int, check_real
from geode.inference.serving import _request_lengths, as_lengths

__all__ = ["adversarial_batch_ratio", "batch_lower_bound", "optimal_batch_cost"]


def _instance(prompt: Any, output: Any, kv_slots: Any) -> tuple[np.ndarray, np.ndarray, int]:
    s, o = _request_lengths(prompt, output)
    m = check_int("kv_slots", kv_slots, low=1)
    if (s + o).max() > m:
        i = int(np.argmax(s + o))
        raise ValueError(f"kv_slots={m} is smaller than the peak memory s+o={int(s[i] + o[i])} of request {i}")
    return s, o, m


def batch_lower_bound(prompt: Any, output: Any, kv_slots: int) -> float:
    """A lower bound on the optimal total completion time (in steps) when all requests arrive at once.

    .. math::

        \\mathrm{LB} = \\sum_{k=1}^{n}
        \\max\\Big(o_{(k)},\\ \\Big\\lceil \\frac{1}{M} \\sum_{i=1}^{k} V_{(i)} \\Big\\rceil\\Big)

    with :math:`o_{(k)}` the :math:`k`-th smallest output length and :math:`V_{(i)}` the :math:`i`-th
    smallest volume :math:`V = s\\,o + o(o+1)/2`. Proof: let :math:`C_{[k]}` be the :math:`k`-th smallest
    completion time of any feasible schedule. The :math:`k` requests done by then each took at least
    their own output length, so :math:`C_{[k]} \\ge o_{(k)}`; they also used their whole volumes of
    slot-steps out of at most :math:`M` per step, so :math:`M C_{[k]} \\ge \\sum_{i \\le k} V_{(i)}`.
    Preemption (recompute) only adds volume, so the bound holds for preemptive schedules too.

    Parameters
    ----------
    prompt, output : array_like of int, shape (n,)
        Prompt (>= 0) and output (>= 1) lengths.
    kv_slots : int
        Cache size :math:`M` (at least every request's peak :math:`s + o`).

    Returns
    -------
    float

    Examples
    --------
    >>> batch_lower_bound([1, 1], [1, 1], kv_slots=4)  # both fit together: each needs one step
    2.0
    """
    s, o, m = _instance(prompt, output, kv_slots)
    v = np.sort(s * o + o * (o + 1) // 2)
    by_volume = -(-np.cumsum(v) // m)  # ceil
    return float(np.maximum(np.sort(o), by_volume).sum())


def optimal_batch_cost(
    prompt: Any, output: Any, kv_slots: int, *, max_requests: int = 12, time_limit: float = 60.0
) -> tuple[float, np.ndarray]:
    """The optimal total completion time (steps) of a small batch instance, by integer programming.

    Non-preemptive schedules (a started request runs to completion, the model of the competitive
    analysis) as a time-indexed integer program solved with HiGHS (``scipy.optimize.milp``):

    .. math::

        \\min \\sum_{i,t} (t + o_i)\\, x_{it} \\quad \\text{s.t.} \\quad \\sum_t x_{it} = 1, \\qquad
        \\sum_i \\sum_{t = \\tau - o_i + 1}^{\\tau} (s_i + \\tau - t + 1)\\, x_{it} \\le M \\ \\ \\forall \\tau,
        \\qquad x_{it} \\in \\{0, 1\\},

    where :math:`x_{it} = 1` when request :math:`i` starts at step :math:`t`. An optimal schedule never
    idles (removing an idle step shifts later requests without changing memory), so start steps
    :math:`t \\le \\sum_i o_i - o_i` suffice.

    Parameters
    ----------
    prompt, output : array_like of int, shape (n,)
        Prompt and output lengths.
    kv_slots : int
        Cache size :math:`M`.
    max_requests : int
        Refuse instances larger than this (the program grows as :math:`n \\sum_i o_i`).
    time_limit : float
        Seconds for the solver; a ``RuntimeError`` is raised if it does not prove optimality in time.

    Returns
    -------
    cost : float
        The optimal :math:`\\sum_i C_i`.
    starts : numpy.ndarray of int64, shape (n,)
        An optimal start step per request.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    s, o, m = _instance(prompt, output, kv_slots)
    n = s.shape[0]
    check_int("max_requests", max_requests, low=1)
    if n > max_requests:
        raise ValueError(f"optimal_batch_cost is for small instances: {n} requests > max_requests={max_requests}")
    time_limit = check_real("time_limit", time_limit, low=0.0, low_inclusive=False)
    horizon = int(o.sum())
    var_i, var_t = [], []
    for i in range(n):
        ts = np.arange(horizon - o[i] + 1)
        var_i.append(np.full(ts.shape[0], i))
        var_t.append(ts)
    vi = np.concatenate(var_i)
    vt = np.concatenate(var_t)
    nv = vi.shape[0]
    cost = (vt + o[vi]).astype(float)
    # assignment rows
    a_rows = [vi]
    a_cols = [np.arange(nv)]
    a_vals = [np.ones(nv)]
    # memory rows: variable (i, t) occupies steps t..t+o_i-1 with s_i + (tau - t) + 1 slots
    span = o[vi]
    rep = np.repeat(np.arange(nv), span)
    offset = np.arange(rep.shape[0]) - np.repeat(np.cumsum(span) - span, span)  # tau - t
    a_rows.append(n + vt[rep] + offset)
    a_cols.append(rep)
    a_vals.append((s[vi[rep]] + offset + 1).astype(float))
    mat = coo_matrix(
        (np.concatenate(a_vals), (np.concatenate(a_rows), np.concatenate(a_cols))), shape=(n + horizon, nv)
    ).tocsr()
    lower = np.concatenate([np.ones(n), np.full(horizon, -np.inf)])
    upper = np.concatenate([np.ones(n), np.full(horizon, float(m))])
    res = milp(
        cost,
        constraints=LinearConstraint(mat, lower, upper),
        integrality=np.ones(nv),
        bounds=Bounds(0, 1),
        options={"time_limit": time_limit},
    )
    if res.status != 0 or res.x is None:
        raise RuntimeError(f"the integer program did not reach a proven optimum: {res.message}")
    x = res.x > 0.5
    starts = np.zeros(n, np.int64)
    starts[vi[x]] = vt[x]
    return float(np.sum(starts + o)), starts


def adversarial_batch_ratio(
    policy: Any,
    n: int = 5,
    *,
    iters: int = 200,
    restarts: int = 4,
    max_len: int = 8,
    alpha: float = 1.0,
    starts: Any = (),
    seed: int | np.random.Generator | None = 0,
) -> tuple[float, dict[str, Any]]:
    """Search small batch instances for a large ratio of ``policy``'s total completion time to the optimum.

    Random instances cannot test a worst-case bound (issue 18: FCFS passed "CR <= 5" on them too). This
    hill-climbs over instances of ``n`` requests with prompt lengths in ``[0, max_len]``, output lengths in
    ``[1, max_len]`` and a cache :math:`M = \\lceil \\max_i(s_i + o_i) / \\alpha \\rceil + e`, :math:`e \\in [0,
    \\text{max\\_len}]` (so every peak is at most :math:`\\alpha M`, the hypothesis of SVF's bound
    :math:`1 + 2/(1 - \\alpha)`): each step changes one length (or :math:`e`) by a small random amount and
    keeps the change when the ratio :math:`\\sum_i C_i^{\\mathrm{policy}} / \\mathrm{OPT}` does not decrease
    (unit-time steps, batch arrival at time 0, OPT by :func:`optimal_batch_cost`); ``restarts`` independent
    climbs share the ``iters`` budget.
    Climbs may also start from given instances (``starts``, e.g. the predecessors' lower-bound
    constructions, which random starts on small instances do not reach); their moves stay within the
    start's own length ranges. The result is a lower bound on the policy's competitive ratio on such
    instances, not the ratio itself.

    Parameters
    ----------
    policy : Policy
        A scheduling policy of :mod:`geode.inference.serving` (FCFS, SJF, SVF, ...).
    n : int
        Requests per instance (the integer program grows as :math:`n \\sum_i o_i`; keep it <= 8).
    iters : int
        Evaluations in all (each solves one small integer program).
    restarts : int
        Independent climbs from random instances (may be 0 when ``starts`` are given).
    max_len : int
        Largest prompt and output length (of random starts), and largest slack :math:`e` of the cache.
    alpha : float
        Largest peak over cache, :math:`\\alpha \\in (0, 1]` (see :math:`M` above). ``alpha=1`` (default)
        lets one request fill the cache; SVF's bound :math:`1 + 2/(1-\\alpha)` is 5 at ``alpha=0.5``.
    starts : sequence of (prompt, output, slack), optional
        Instances to climb from first (each climb gets ``iters // (restarts + len(starts))`` evaluations).
    seed : int, numpy Generator or None
        Randomness of the starts and the moves.

    Returns
    -------
    ratio : float
        The largest ratio found.
    instance : dict
        ``prompt``, ``output`` (int arrays), ``kv_slots``, ``policy_cost`` and ``opt``.
    """
    from geode.core import as_generator
    from geode.inference.serving import CostModel, Workload, simulate

    n = check_int("n", n, low=1, high=12)
    iters = check_int("iters", iters, low=1)
    restarts = check_int("restarts", restarts, low=0)
    max_len = check_int("max_len", max_len, low=1)
    alpha = check_real("alpha", alpha, low=0.0, high=1.0, low_inclusive=False)
    rng = as_generator(seed)
    unit = CostModel.unit()
    begin: list[tuple[np.ndarray, np.ndarray, int]] = []
    for k, start in enumerate(starts):
        s0, o0, e0 = start
        s0 = as_lengths(f"starts[{k}] prompt", np.atleast_1d(s0), low=0)
        o0 = as_lengths(f"starts[{k}] output", np.atleast_1d(o0), low=1)
        if s0.shape != (n,) or o0.shape != (n,):
            raise ValueError(f"starts[{k}] must have n={n} prompts and outputs; got {s0.shape[0]} and {o0.shape[0]}")
        begin.append((s0, o0, check_int(f"starts[{k}] slack", e0, low=0)))
    if restarts + len(begin) == 0:
        raise ValueError("restarts must be >= 1 when no starts are given")

    def slots(s: np.ndarray, o: np.ndarray, extra: int) -> int:
        return int(math.ceil(int((s + o).max()) / alpha - 1e-9)) + extra

    def ratio(s: np.ndarray, o: np.ndarray, m: int) -> tuple[float, float, float]:
        opt, _ = optimal_batch_cost(s, o, m)
        cost = float(simulate(Workload(np.zeros(n), s, o), policy, m, cost=unit).finish.sum())
        return cost / opt, cost, opt

    for _ in range(restarts):
        begin.append(
            (rng.integers(0, max_len + 1, n), rng.integers(1, max_len + 1, n), int(rng.integers(0, max_len + 1)))
        )
    best: tuple[float, dict[str, Any]] = (0.0, {})
    per = max(1, iters // len(begin))
    for s, o, extra in begin:
        s_hi, o_hi = max(max_len, int(s.max())), max(max_len, int(o.max()))
        r, c, opt = ratio(s, o, slots(s, o, extra))
        for _ in range(per - 1):
            s2, o2, extra2 = s.copy(), o.copy(), extra
            what = int(rng.integers(0, 2 * n + 1))
            step = int(rng.choice([-3, -2, -1, 1, 2, 3]))
            if what < n:
                s2[what] = int(np.clip(s2[what] + step, 0, s_hi))
            elif what < 2 * n:
                o2[what - n] = int(np.clip(o2[what - n] + step, 1, o_hi))
            else:
                extra2 = int(np.clip(extra2 + step, 0, max_len))
            r2, c2, opt2 = ratio(s2, o2, slots(s2, o2, extra2))
            if r2 >= r:
                s, o, extra, r, c, opt = s2, o2, extra2, r2, c2, opt2
        if r > best[0]:
            best = (r, {"prompt": s, "output": o, "kv_slots": slots(s, o, extra), "policy_cost": c, "opt": opt})
    return best
