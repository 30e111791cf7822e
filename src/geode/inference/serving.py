"""A discrete-event LLM serving simulator with a KV-cache memory model, in vLLM's vocabulary.

The model (Jaillet et al. 2025, arXiv 2502.07115, and its successors) is the one the serving-scheduling
papers analyse. Request :math:`i` arrives at time :math:`a_i` with a prompt of :math:`s_i` tokens and
produces :math:`o_i \\ge 1` output tokens. Time advances in *steps*; in every step each running request
decodes exactly one token (the step that admits a request prefills its prompt and yields its first
token). While a request decodes its :math:`j`-th output token it holds :math:`s_i + j` KV-cache slots, so
a request admitted at step :math:`p_i` holds, at step :math:`k`,

.. math::

    m_i(k) = s_i + (k - p_i) + 1, \\qquad p_i \\le k \\le p_i + o_i - 1,

and the cache of :math:`M` slots must satisfy :math:`\\sum_{i \\text{ running}} m_i(k) \\le M` at every step.
Its *volume*, the area under that memory curve, is
:math:`V_i = \\sum_{j=1}^{o_i} (s_i + j) = s_i o_i + o_i (o_i + 1) / 2` slot-steps.

One step of the simulator, in order:

1. Requests with :math:`a_i \\le T` (the step's start time) join the waiting queue.
2. **Preemption** (vLLM's recompute mode): while the running requests' memory for this step exceeds
   :math:`M` (possible only with under-predicted output lengths or greedy admission), the running request
   of lowest priority is evicted: its KV cache is freed, it keeps the tokens it generated, and it goes back
   to the waiting queue with its original priority. When it is admitted again its prompt plus generated
   tokens are prefilled anew.
3. **Admission** (skipped in a step that preempted, as vLLM does): waiting requests are taken in the
   policy's order (lowest priority value first, ties by arrival, then by index) while the next one fits,
   stopping at the first that does not (head-of-line, as vLLM's scheduler does). *Fits* is MC-SF's
   future-peak check (``admission="peak"``): with :math:`\\hat e_i` the predicted last step of each running
   request and :math:`\\rho` the candidate's predicted remaining output,

   .. math::

       \\sum_{i:\\, \\max(\\hat e_i, k) \\ge k + \\tau} m_i(k + \\tau) + [\\tau < \\rho]\\,(s + 1 + \\tau) \\le M
       \\qquad \\forall \\tau \\ge 0,

   which, as each term grows between completions, is checked at :math:`\\tau = 0` and at every predicted
   completion. With exact lengths no preemption ever happens. ``admission="greedy"`` checks only
   :math:`\\tau = 0` (vLLM's default: admit while the current step fits, preempt later).
4. The step runs for ``cost.step_time(prefill_tokens, batch_size)`` time units (see :class:`CostModel`);
   every running request gains one token; those that produced their last token finish at the step's end.

Latency (end-to-end) is finish time minus arrival; time to first token (TTFT) is the end of the first
step that admitted the request minus arrival.

The simulator is exact at the step level (a test replays random instances through a step-by-step
reference) but advances in *stretches*: between events (a completion, a needed preemption, an arrival
that would go ahead of the blocked head of the queue, or the step at which that head first fits) the
running set is fixed, memory grows linearly, and the stretch is computed in closed form. Each constraint
of the admission check excludes an interval of start steps, so the step at which the head first fits is
the first point outside a union of intervals, found with a few vectorised numpy operations
(:mod:`geode.inference._engine`). This is what lets 100,000 requests simulate in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from geode.core.validation import check_array, check_choice, check_int, check_real
from geode.inference._engine import run_engine

__all__ = [
    "FCFS",
    "SJF",
    "CostModel",
    "Policy",
    "SimResult",
    "Workload",
    "as_lengths",
    "simulate",
    "volume",
]


def as_lengths(name: str, value: Any, *, low: int) -> np.ndarray:
    """Return ``value`` as a 1-D ``int64`` array of token counts ``>= low``, else raise naming ``name``.

    Integral floats (``3.0``) are accepted; fractional, non-finite or negative counts are rejected with
    the index of the first offending entry.
    """
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of token counts; got shape {arr.shape}")
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"{name} must hold integer token counts; got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"{name} must hold whole token counts; entry {i} is {arr[i]!r}")
    out = arr.astype(np.int64)
    below = out < low
    if below.any():
        i = int(np.argmax(below))
        raise ValueError(f"{name} must be >= {low}; entry {i} is {out[i]}")
    return out


def _request_lengths(prompt: Any, output: Any) -> tuple[np.ndarray, np.ndarray]:
    """Prompt (>= 0) and output (>= 1) token counts of at least one request, one of each per request."""
    s = as_lengths("prompt", np.atleast_1d(prompt), low=0)
    o = as_lengths("output", np.atleast_1d(output), low=1)
    if s.shape != o.shape:
        raise ValueError(f"prompt and output must have the same length; got {s.shape[0]} and {o.shape[0]}")
    if s.shape[0] == 0:
        raise ValueError("prompt and output must hold at least one request; got none")
    return s, o


def volume(prompt: Any, output: Any) -> np.ndarray:
    """KV-cache volume of requests: :math:`V = s\\,o + o(o+1)/2` slot-steps.

    The area under a request's memory curve: it holds :math:`s + j` slots while decoding its
    :math:`j`-th token, for :math:`j = 1, \\dots, o`.

    Parameters
    ----------
    prompt : array_like of int, shape (n,)
        Prompt lengths :math:`s \\ge 0`.
    output : array_like of int, shape (n,)
        Output lengths :math:`o \\ge 1` (exact or predicted).

    Returns
    -------
    numpy.ndarray of int64, shape (n,)

    Examples
    --------
    >>> volume([2, 0], [3, 1]).tolist()  # (3+4+5, 1)
    [12, 1]
    """
    s = as_lengths("prompt", np.atleast_1d(prompt), low=0)
    o = as_lengths("output", np.atleast_1d(output), low=1)
    if s.shape != o.shape:
        raise ValueError(f"prompt and output must have the same length; got {s.shape[0]} and {o.shape[0]}")
    return s * o + o * (o + 1) // 2


# --------------------------------------------------------------------------------------------------
# Policies
# --------------------------------------------------------------------------------------------------


class Policy:
    """A scheduling policy: orders the waiting queue and picks preemption victims (vLLM's vocabulary).

    A policy maps every request to a priority value once, when the simulation starts (as vLLM's
    ``priority`` scheduling does with ``request.priority``). The waiting queue is served in ascending
    ``(priority, arrival, index)``; when memory runs out, the running request with the largest such
    tuple is preempted. Subclasses implement :meth:`priority`.
    """

    name: str = "policy"

    def priority(self, prompt: np.ndarray, predicted_output: np.ndarray, arrival: np.ndarray) -> np.ndarray:
        """Priority values (lower is served first), one per request.

        Parameters
        ----------
        prompt : numpy.ndarray of int64, shape (n,)
            Prompt lengths :math:`s_i`.
        predicted_output : numpy.ndarray of int64, shape (n,)
            The scheduler's knowledge of the output lengths :math:`\\hat o_i` (exact or predicted).
        arrival : numpy.ndarray of float, shape (n,)
            Arrival times.
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def priority_inputs(prompt: Any, predicted_output: Any, arrival: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check the arguments of :meth:`Policy.priority`: token counts and finite arrival times, one per request."""
    s = as_lengths("prompt", np.atleast_1d(prompt), low=0)
    o = as_lengths("predicted_output", np.atleast_1d(predicted_output), low=1)
    a = check_array("arrival", np.atleast_1d(arrival), ndim=1)
    if not s.shape == o.shape == a.shape:
        raise ValueError(
            f"prompt, predicted_output and arrival must have one entry per request; got {s.shape[0]}, "
            f"{o.shape[0]} and {a.shape[0]}"
        )
    return s, o, a


class FCFS(Policy):
    """First come, first served: vLLM's default policy. Priority :math:`= a_i`."""

    name = "FCFS"

    def priority(self, prompt: np.ndarray, predicted_output: np.ndarray, arrival: np.ndarray) -> np.ndarray:
        return priority_inputs(prompt, predicted_output, arrival)[2]


class SJF(Policy):
    """Shortest (predicted) job first, by output length: the order of MC-SF. Priority :math:`= \\hat o_i`."""

    name = "SJF"

    def priority(self, prompt: np.ndarray, predicted_output: np.ndarray, arrival: np.ndarray) -> np.ndarray:
        return priority_inputs(prompt, predicted_output, arrival)[1].astype(float)


# --------------------------------------------------------------------------------------------------
# Cost model and workload
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CostModel:
    """Duration of one engine step.

    .. math::

        t_{\\text{step}} = t_{\\text{base}} + t_{\\text{prefill}} \\cdot P + t_{\\text{decode}} \\cdot B

    with :math:`P` the prompt tokens prefilled in the step (including tokens recomputed after a
    preemption) and :math:`B` the number of requests decoding in it. The default (``1 + P/2048``) measures
    time in units of one memory-bound decode step and charges a 2048-token prefill as one more step,
    which is the shape of a decode-dominated GPU engine. Attention cost proportional to the KV in use is
    not modelled.

    Parameters
    ----------
    t_base : float
        Fixed cost of a step, > 0.
    t_prefill : float
        Cost per prefilled token, >= 0.
    t_decode : float
        Cost per request in the decode batch, >= 0.
    """

    t_base: float = 1.0
    t_prefill: float = 1.0 / 2048.0
    t_decode: float = 0.0

    def __post_init__(self) -> None:
        check_real("t_base", self.t_base, low=0.0, low_inclusive=False)
        check_real("t_prefill", self.t_prefill, low=0.0)
        check_real("t_decode", self.t_decode, low=0.0)

    @classmethod
    def unit(cls) -> CostModel:
        """Every step takes one time unit: latencies are counted in steps (the theory's cost)."""
        return cls(1.0, 0.0, 0.0)

    def step_time(self, prefill_tokens: int, batch_size: int) -> float:
        """Duration of a step with ``prefill_tokens`` prefilled and ``batch_size`` requests decoding."""
        return self.t_base + self.t_prefill * prefill_tokens + self.t_decode * batch_size


@dataclass
class Workload:
    """A list of requests: arrival times, prompt and output lengths, and predicted output lengths.

    Parameters
    ----------
    arrival : array_like of float, shape (n,)
        Arrival times, finite and non-decreasing (use :meth:`sorted` on an unsorted trace).
    prompt : array_like of int, shape (n,)
        Prompt lengths, >= 0.
    output : array_like of int, shape (n,)
        True output lengths, >= 1.
    predicted : array_like of int, shape (n,), optional
        What the scheduler is told about the output lengths (>= 1); defaults to the true lengths
        (the "known lengths" setting of the theory).
    name : str
        A label.
    """

    arrival: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    predicted: np.ndarray | None = None
    name: str = "workload"

    def __post_init__(self) -> None:
        arr = np.asarray(self.arrival)
        if arr.ndim != 1:
            raise ValueError(f"arrival must be a 1-D array of times; got shape {arr.shape}")
        try:
            arr = arr.astype(float)
        except (TypeError, ValueError):
            raise TypeError(f"arrival must hold real numbers; got dtype {arr.dtype}") from None
        if not np.all(np.isfinite(arr)):
            i = int(np.argmax(~np.isfinite(arr)))
            raise ValueError(f"arrival must be finite; entry {i} is {arr[i]!r}")
        self.arrival = arr
        self.prompt = as_lengths("prompt", self.prompt, low=0)
        self.output = as_lengths("output", self.output, low=1)
        self.predicted = (
            self.output.copy() if self.predicted is None else as_lengths("predicted", self.predicted, low=1)
        )
        n = arr.shape[0]
        if n == 0:
            raise ValueError("arrival is empty: a workload needs at least one request")
        for nm in ("prompt", "output", "predicted"):
            if getattr(self, nm).shape[0] != n:
                raise ValueError(f"{nm} must have one entry per request ({n}); got {getattr(self, nm).shape[0]}")
        back = np.diff(arr) < 0
        if back.any():
            i = int(np.argmax(back)) + 1
            raise ValueError(
                f"arrival must be non-decreasing; entry {i} ({arr[i]!r}) comes before entry {i - 1} "
                f"({arr[i - 1]!r}); call Workload.sorted(...) to sort a trace"
            )

    def __len__(self) -> int:
        return int(self.arrival.shape[0])

    @classmethod
    def sorted(cls, arrival: Any, prompt: Any, output: Any, predicted: Any = None, name: str = "workload") -> Workload:
        """A workload from possibly unsorted arrays, stably sorted by arrival time."""
        a = np.asarray(arrival, dtype=float)
        cols = [None if x is None else np.asarray(x) for x in (prompt, output, predicted)]
        if a.ndim != 1 or any(c is not None and c.shape != a.shape for c in cols):
            return cls(a, prompt, output, predicted, name)  # the constructor names the problem
        order = np.argsort(a, kind="stable")
        p, o, pr = (None if c is None else c[order] for c in cols)
        return cls(a[order], p, o, pr, name)

    def batch(self) -> Workload:
        """The same requests, all arriving at time 0 (the batch-arrival setting of the theory)."""
        return Workload(np.zeros(len(self)), self.prompt, self.output, self.predicted, f"{self.name} (batch)")

    def with_predicted(self, predicted: Any) -> Workload:
        """The same requests with the scheduler told ``predicted`` output lengths."""
        return Workload(self.arrival, self.prompt, self.output, predicted, self.name)

    @property
    def volume(self) -> np.ndarray:
        """True volumes :math:`s_i o_i + o_i(o_i+1)/2`."""
        return self.prompt * self.output + self.output * (self.output + 1) // 2


# --------------------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------------------


@dataclass
class SimResult:
    """What :func:`simulate` returns: per-request times and run totals.

    A plain record of the simulator's output: it stores what it is given without checking (build it with
    :func:`simulate`).

    Attributes
    ----------
    policy : str
        The policy's name.
    kv_slots : int
        :math:`M`.
    arrival, first_token, finish : numpy.ndarray of float, shape (n,)
        Per-request times (in the cost model's unit).
    generated : numpy.ndarray of int64, shape (n,)
        Output tokens produced per request (equals the output length: a conservation check).
    preempted : numpy.ndarray of int64, shape (n,)
        How often each request was preempted.
    steps : int
        Engine steps executed (idle time between arrivals is not a step).
    peak_memory : int
        Largest KV-cache occupancy over all steps.
    memory_trace : dict of str to numpy.ndarray, optional
        With ``record_memory=True``: per stretch of steps, ``step`` (first step index), ``n_steps``,
        ``time`` (start time), ``memory`` (occupancy in its first step; it grows by ``batch`` per step)
        and ``batch``.
    """

    policy: str
    kv_slots: int
    arrival: np.ndarray
    first_token: np.ndarray
    finish: np.ndarray
    generated: np.ndarray
    preempted: np.ndarray
    steps: int
    peak_memory: int
    memory_trace: dict[str, np.ndarray] | None = field(default=None, repr=False)

    @property
    def latency(self) -> np.ndarray:
        """End-to-end latency per request: finish minus arrival."""
        return self.finish - self.arrival

    @property
    def ttft(self) -> np.ndarray:
        """Time to first token per request."""
        return self.first_token - self.arrival

    @property
    def preemptions(self) -> int:
        """Total preemptions."""
        return int(self.preempted.sum())

    @property
    def makespan(self) -> float:
        """Last finish minus first arrival."""
        return float(self.finish.max() - self.arrival.min())

    def metrics(self) -> dict[str, float]:
        """Summary metrics as finite floats.

        Keys: ``mean_latency``, ``p50_latency``, ``p90_latency``, ``p99_latency``, ``mean_ttft``,
        ``p50_ttft``, ``p99_ttft``, ``throughput`` (finished requests per time unit over the makespan),
        ``token_throughput`` (output tokens per time unit), ``peak_memory``, ``preemptions``,
        ``n_finished``, ``steps``, ``makespan``.
        """
        lat, ttft = self.latency, self.ttft
        p_lat = np.percentile(lat, [50, 90, 99])
        p_ttft = np.percentile(ttft, [50, 99])
        span = self.makespan
        rate = len(lat) / span if span > 0 else float(len(lat))
        tok_rate = float(self.generated.sum()) / span if span > 0 else float(self.generated.sum())
        return {
            "mean_latency": float(lat.mean()),
            "p50_latency": float(p_lat[0]),
            "p90_latency": float(p_lat[1]),
            "p99_latency": float(p_lat[2]),
            "mean_ttft": float(ttft.mean()),
            "p50_ttft": float(p_ttft[0]),
            "p99_ttft": float(p_ttft[1]),
            "throughput": float(rate),
            "token_throughput": float(tok_rate),
            "peak_memory": float(self.peak_memory),
            "preemptions": float(self.preemptions),
            "n_finished": float(np.isfinite(self.finish).sum()),
            "steps": float(self.steps),
            "makespan": float(span),
        }


def simulate(
    workload: Workload,
    policy: Policy,
    kv_slots: int,
    *,
    cost: CostModel | None = None,
    admission: str = "peak",
    record_memory: bool = False,
) -> SimResult:
    """Serve ``workload`` with ``policy`` on a KV cache of ``kv_slots`` token slots.

    Parameters
    ----------
    workload : Workload
        The requests (arrivals sorted).
    policy : Policy
        Orders the waiting queue and chooses preemption victims (:class:`FCFS`, :class:`SJF`, or the
        papers' policies such as ``geode.inference.svf.SVF``).
    kv_slots : int
        Cache size :math:`M`; must hold every request alone (:math:`s_i + o_i \\le M`).
    cost : CostModel, optional
        Step durations; defaults to ``CostModel()`` (``1 + prefill_tokens/2048``).
    admission : {"peak", "greedy"}
        ``"peak"``: MC-SF's future-peak check with the predicted lengths (default). ``"greedy"``: admit
        while the current step fits (vLLM's default), relying on preemption.
    record_memory : bool
        Keep the per-stretch memory trace in :attr:`SimResult.memory_trace`.

    Returns
    -------
    SimResult

    Notes
    -----
    Predicted lengths are clipped to :math:`\\hat o_i \\le M - s_i` (a request predicted never to fit
    would deadlock; the true :math:`o_i` always satisfies it). A running request that outlives its
    prediction is predicted to finish in the current step. The run is deterministic: ties are broken by
    arrival, then by index.

    Examples
    --------
    Two requests that cannot share a 4-slot cache (peaks 4 and 2, together 3 + 2 slots in the first step):

    >>> w = Workload([0.0, 0.0], prompt=[2, 1], output=[2, 1])
    >>> simulate(w, SJF(), kv_slots=4, cost=CostModel.unit()).finish.tolist()  # short one first
    [3.0, 1.0]
    >>> simulate(w, FCFS(), kv_slots=4, cost=CostModel.unit()).finish.tolist()
    [2.0, 3.0]
    """
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a Workload; got {type(workload).__name__}")
    if not isinstance(policy, Policy):
        raise TypeError(f"policy must be a Policy (e.g. FCFS(), SJF()); got {type(policy).__name__}")
    m_slots = check_int("kv_slots", kv_slots, low=1)
    cost = CostModel() if cost is None else cost
    if not isinstance(cost, CostModel):
        raise TypeError(f"cost must be a CostModel; got {type(cost).__name__}")
    check_choice("admission", admission, ("peak", "greedy"))
    peak_mode = admission == "peak"

    arrival, prompt, output = workload.arrival, workload.prompt, workload.output
    n = len(workload)
    need = prompt + output
    if need.max() > m_slots:
        i = int(np.argmax(need))
        raise ValueError(
            f"kv_slots={m_slots} is smaller than the peak memory s+o={int(need[i])} of request {i} "
            f"(prompt {int(prompt[i])}, output {int(output[i])}); it could never run"
        )
    predicted = np.minimum(workload.predicted, m_slots - prompt)
    prio = np.asarray(policy.priority(prompt, predicted, arrival), dtype=float)
    if prio.shape != (n,) or not np.all(np.isfinite(prio)):
        raise ValueError(f"{policy!r}.priority must return {n} finite values; got shape {prio.shape}")
    order = np.lexsort((np.arange(n), arrival, prio))  # ascending (priority, arrival, index)
    out = run_engine(
        arrival,
        prompt,
        output,
        predicted,
        order,
        m_slots,
        cost.t_base,
        cost.t_prefill,
        cost.t_decode,
        peak=peak_mode,
        record_memory=record_memory,
    )
    return SimResult(
        policy=getattr(policy, "name", type(policy).__name__),
        kv_slots=m_slots,
        arrival=arrival.copy(),
        first_token=out["first_token"],
        finish=out["finish"],
        generated=out["generated"],
        preempted=out["preempted"],
        steps=out["steps"],
        peak_memory=out["peak_memory"],
        memory_trace=out["memory_trace"],
    )
