"""The simulator's engine: the event loop of :func:`geode.inference.simulate` (see its docstring for the rules).

The loop advances in *stretches* of steps between events. Within a stretch the running set is fixed,
so a request admitted at step :math:`p` with (current) prompt :math:`s` holds :math:`c + k` slots at
step :math:`k` with :math:`c = s + 1 - p`, the total is :math:`C + b k` (:math:`C = \\sum c`, :math:`b` the
batch), and every quantity of the stretch is in closed form. A stretch ends at the first of: a
completion, a needed preemption (:math:`C + b k > M`), an arrival that would go ahead of the blocked
head of the queue, or the first step at which that head passes the admission check
(:func:`_earliest_fit`, computed as the first point outside a union of intervals).
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

__all__ = ["run_engine"]


class _Running:
    r"""The running set as parallel numpy buffers, with the sorted view the future-peak check needs.

    For running request ``i``: ``c[i]`` such that its memory at step ``k`` is ``c[i] + k``; ``end[i]``
    its true last step; ``pend[i]`` its predicted last step; ``rank[i]`` its priority rank. ``fmax`` is
    an upper bound on the running set's highest predicted memory :math:`\max_E F(E)` (exact right after
    :meth:`profile_view` rebuilds; adding a request raises it by that request's predicted peak; removing
    one only lowers the profile).
    """

    __slots__ = ("_buf", "_derived", "_sorted", "fmax", "n", "total_c")

    def __init__(self, capacity: int = 64) -> None:
        self._buf = np.zeros((5, capacity), np.int64)  # rows: ids, c, end, pend, rank
        self.n = 0
        self.total_c = 0
        self.fmax = 0
        self._derived: tuple[np.ndarray, ...] | None = None
        self._sorted: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return self.n

    @property
    def ids(self) -> np.ndarray:
        return self._buf[0, : self.n]

    @property
    def c(self) -> np.ndarray:
        return self._buf[1, : self.n]

    @property
    def end(self) -> np.ndarray:
        return self._buf[2, : self.n]

    @property
    def pend(self) -> np.ndarray:
        return self._buf[3, : self.n]

    @property
    def rank(self) -> np.ndarray:
        return self._buf[4, : self.n]

    def add(self, rid: int, c: int, end: int, pend: int, rank: int) -> None:
        if self.n == self._buf.shape[1]:
            self._buf = np.concatenate([self._buf, np.zeros_like(self._buf)], axis=1)
        self._buf[:, self.n] = (rid, c, end, pend, rank)
        self.n += 1
        self.total_c += c
        self.fmax += c + pend  # F_new(E) <= F_old(E) + (c + pend): stays an upper bound
        self._sorted = None

    def keep(self, mask: np.ndarray) -> None:
        kept = self._buf[:, : self.n][:, mask]
        self.n = kept.shape[1]
        self._buf[:, : self.n] = kept
        self.total_c = int(kept[1].sum())
        self._sorted = None

    def profile_view(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(pend ascending, suffix sums of c in that order, F at each pend)``.

        ``F(E) = sum_{pend_i >= E} (c_i + E)`` is the predicted memory of the running set at step ``E``
        (counting only requests predicted to still run then).
        """
        if self._sorted is None:
            b = self.n
            pend = self._buf[3, :b]
            order = np.argsort(pend, kind="stable")
            pe = pend[order]
            suf = np.zeros(b + 1, np.int64)
            suf[:b] = self._buf[1, :b][order][::-1].cumsum()[::-1]
            idx = pe.searchsorted(pe)  # first position of each value: ties share F
            f_at = suf[idx] + (b - idx) * pe
            self._sorted = (pe, suf, f_at)
            self._derived = None
            self.fmax = int(f_at.max())
        return self._sorted

    def derived(self) -> tuple[np.ndarray, ...]:
        """Arrays of the interval form of the peak check: ``pe - 1``, ``pe + F(pe)``, the first step of each
        piece of F (``pe[i-1] + 1``), the suffix sums ``S_i`` and counts ``n_i`` on each piece."""
        if self._derived is None:
            pe, suf, f_at = self.profile_view()
            b = self.n
            e_prev = np.empty(b, np.int64)
            e_prev[0] = _NEVER
            e_prev[1:] = pe[:-1] + 1
            self._derived = (pe - 1, pe + f_at, e_prev, suf[:-1], b - np.arange(b))
        return self._derived


_NEVER = np.iinfo(np.int64).min // 4


def _earliest_fit(run: _Running, k_from: int, first_mem: int, rho: int, kv_slots: int, peak: bool) -> int | None:
    """The first step ``k >= k_from`` at which a candidate passes the admission check, or None.

    The running set is taken as fixed (the caller uses the answer only before the next completion).
    ``first_mem`` is the candidate's memory in its first step (prompt incl. recomputed tokens, plus 1)
    and ``rho`` its predicted remaining output.

    Each constraint of the future-peak check rules out an *interval* of start steps, so the answer is the
    first point at or after ``k_from`` outside a union of intervals, below the last start at which the
    current step still fits:

    * this step: :math:`C + b k + m_c \\le M`, i.e. :math:`k \\le \\lfloor (M - C - m_c)/b \\rfloor`;
    * the predicted last step :math:`E_j` of running request :math:`j`, where the running set alone needs
      :math:`R_j = F(E_j)`: violated for
      :math:`E_j - \\rho + 1 \\le k \\le \\min(E_j - 1, E_j + R_j + m_c - M - 1)` (for every :math:`k < E_j`
      if :math:`R_j > M`);
    * the candidate's own last step :math:`E = k + \\rho - 1`: on each piece :math:`(E_{(i-1)}, E_{(i)}]` of
      the sorted predicted ends, :math:`F(E) = S_i + n_i E` is linear, so the violating :math:`E` form a suffix
      of the piece.
    """
    b = run.n
    if b == 0:
        return k_from  # alone, a request always fits (s + rho <= M by the clipping of predictions)
    limit = (kv_slots - run.total_c - first_mem) // b  # last k at which the current step fits
    if limit < k_from:
        return None
    if not peak:
        return k_from
    # quick accept: even the running set's highest predicted peak leaves room for the candidate's peak
    now = run.total_c + b * k_from
    if max(run.fmax, now) + first_mem + rho - 1 <= kv_slots:
        return k_from
    pe, suf, f_at = run.profile_view()  # (makes fmax exact)
    if max(run.fmax, now) + first_mem + rho - 1 <= kv_slots:
        return k_from
    pe_m1, pe_f, e_prev, suf_head, n_i = run.derived()
    # running requests' predicted last steps E_j: bad starts in [E_j - rho + 1, min(E_j - 1, E_j + R_j + m_c - M - 1)]
    hi = np.minimum(pe_m1, pe_f + (first_mem - kv_slots - 1))
    lo = pe - (rho - 1)
    if run.fmax > kv_slots:  # the running set alone overflows at E_j: every start before E_j is bad
        over = f_at > kv_slots
        lo = np.where(over, _NEVER, lo)
        hi = np.where(over, pe_m1, hi)
    if rho >= 2:  # the candidate's own last step E = k + rho - 1, piece by piece: a suffix of each piece
        e_lo = np.maximum(e_prev, (kv_slots - first_mem - rho + 1 - suf_head) // n_i + 1)
        lo = np.concatenate([lo, e_lo - (rho - 1)])
        hi = np.concatenate([hi, pe - (rho - 1)])
    # the first point at or after k_from outside every interval [lo, hi]
    x = k_from
    while True:
        cover = (lo <= x) & (hi >= x)
        if not cover.any():
            break
        x = int(hi[cover].max()) + 1
        if x > limit:
            return None
    return x


def run_engine(
    arrival: np.ndarray,
    prompt: np.ndarray,
    output: np.ndarray,
    predicted: np.ndarray,
    order: np.ndarray,
    m_slots: int,
    tb: float,
    tp: float,
    td: float,
    *,
    peak: bool,
    record_memory: bool,
) -> dict[str, Any]:
    """Run the event loop on validated inputs.

    ``order`` lists request indices in ascending priority (the waiting queue's order and, reversed, the
    preemption order); ``predicted`` is already clipped to ``M - prompt``; ``tb, tp, td`` are the cost
    model's coefficients; ``peak`` selects the future-peak admission check.

    Returns
    -------
    dict with ``first_token``, ``finish``, ``generated``, ``preempted`` (arrays), ``steps``,
    ``peak_memory`` (ints) and ``memory_trace`` (dict or None).
    """
    n = arrival.shape[0]
    peak_mode = peak
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n)
    order_l = order.tolist()

    # per-request scalars as Python lists (fast scalar access in the loop)
    arr_l = arrival.tolist()
    s_cur = prompt.tolist()  # prompt incl. recomputed tokens
    rem = output.tolist()  # true remaining output
    prem = predicted.tolist()  # predicted remaining output
    done = [0] * n
    rank_l = rank.tolist()
    first_token = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    generated = np.zeros(n, np.int64)
    n_pre = np.zeros(n, np.int64)
    start = [0] * n

    run = _Running()
    waiting: list[int] = []  # heap of ranks
    t_now = float(arrival[0])
    k = 0
    nxt = 0
    n_done = 0
    peak_mem = 0
    tr_step: list[int] = []
    tr_n: list[int] = []
    tr_time: list[float] = []
    tr_mem: list[int] = []
    tr_b: list[int] = []

    while n_done < n:
        while nxt < n and arr_l[nxt] <= t_now:
            heapq.heappush(waiting, rank_l[nxt])
            nxt += 1
        b = len(run)
        if b == 0 and not waiting:
            t_now = max(t_now, arr_l[nxt])
            continue

        # 2. preemption (recompute): evict the lowest-priority running request while this step overflows
        preempted = False
        while run.total_c + b * k > m_slots:
            j = int(np.argmax(run.rank))
            rid = int(run.ids[j])
            made = k - start[rid]  # tokens generated in this run
            done[rid] += made
            s_cur[rid] += made
            rem[rid] -= made
            prem[rid] = max(prem[rid] - made, 1)
            n_pre[rid] += 1
            mask = np.ones(b, bool)
            mask[j] = False
            run.keep(mask)
            heapq.heappush(waiting, rank_l[rid])
            b -= 1
            preempted = True

        # 3. admission, in priority order, stopping at the first request that does not fit
        prefill = 0
        fresh: list[int] = []
        head_fit: int | None = None  # first step at which the blocked head of the queue fits
        if not preempted:
            while waiting:
                rid = order_l[waiting[0]]
                head_fit = _earliest_fit(run, k, s_cur[rid] + 1, prem[rid], m_slots, peak_mode)
                if head_fit != k:
                    break
                heapq.heappop(waiting)
                start[rid] = k
                run.add(rid, s_cur[rid] + 1 - k, k + rem[rid] - 1, k + prem[rid] - 1, rank_l[rid])
                prefill += s_cur[rid]
                if done[rid] == 0:
                    fresh.append(rid)
            b = len(run)

        # 4. length of the stretch: steps until the next event
        dt0 = tb + tp * prefill + td * b
        dt = tb + td * b
        n_steps = int(run.end.min()) - k + 1  # up to and including the next completion
        # first step at which memory would overflow (needs a preemption)
        n_steps = min(n_steps, (m_slots - run.total_c - b * k) // b + 1)
        head_rank = n  # rank of the blocked head of the queue (n: the queue is empty)
        if waiting:
            head_rank = waiting[0]
            if preempted and n_steps > 1:  # admission was skipped in this step: the head may fit at the next
                rid = order_l[head_rank]
                head_fit = _earliest_fit(run, k + 1, s_cur[rid] + 1, prem[rid], m_slots, peak_mode)
            # (greedy admission only gets harder as memory grows: _earliest_fit answers k or None)
            if head_fit is not None and head_fit > k:
                n_steps = min(n_steps, head_fit - k)
        # the next arrival that can change a decision: one that would go ahead of the blocked head (an
        # arrival ranked behind it waits behind it, so the stretch need not stop for it)
        j = nxt
        while j < n and n_steps > 1:
            a = arr_l[j]
            d_a = 1 if a <= t_now + dt0 else 1 + math.ceil((a - t_now - dt0) / dt)
            if d_a >= n_steps:
                break
            if rank_l[j] < head_rank:
                n_steps = d_a
                break
            j += 1

        # 5. run the stretch
        k_last = k + n_steps - 1
        t_end = t_now + dt0 + (n_steps - 1) * dt
        if fresh:
            first_token[fresh] = t_now + dt0
        mem_last = run.total_c + b * k_last
        if mem_last > peak_mem:
            peak_mem = mem_last
        if record_memory:
            tr_step.append(k)
            tr_n.append(n_steps)
            tr_time.append(t_now)
            tr_mem.append(run.total_c + b * k)
            tr_b.append(b)
        ending = run.end == k_last
        if ending.any():
            fin = run.ids[ending]
            finish[fin] = t_end
            for rid in fin.tolist():
                generated[rid] = done[rid] + rem[rid]
            n_done += int(fin.shape[0])
            run.keep(~ending)
        k = k_last + 1
        t_now = t_end

    trace = None
    if record_memory:
        trace = {
            "step": np.asarray(tr_step, np.int64),
            "n_steps": np.asarray(tr_n, np.int64),
            "time": np.asarray(tr_time, float),
            "memory": np.asarray(tr_mem, np.int64),
            "batch": np.asarray(tr_b, np.int64),
        }
    return {
        "first_token": first_token,
        "finish": finish,
        "generated": generated,
        "preempted": n_pre,
        "steps": k,
        "peak_memory": int(peak_mem),
        "memory_trace": trace,
    }
