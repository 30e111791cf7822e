"""Serving workloads: request-length distributions from public trace statistics, arrivals, CSV traces.

Request lengths are drawn by inverse-transform sampling from a quantile table written in the code:
the quantile function is interpolated linearly in :math:`\\log` length between the knots,

.. math::

    x(u) = \\exp\\Big(\\log x_k + \\frac{u - u_k}{u_{k+1} - u_k}\\,(\\log x_{k+1} - \\log x_k)\\Big),
    \\qquad u_k \\le u \\le u_{k+1},

then rounded to a whole token count (at least 1). Prompt and output lengths are drawn independently.
The knots at the published quantiles reproduce them exactly; the end points and any extra knots
(marked ``inferred`` in :data:`TRACES`) were chosen by us so that the means come close to the published
means. Statistics (from the processed CSVs of the Vidur repository):

========================  ===============================================  ==========================================
trace                     prompt tokens                                    output tokens
========================  ===============================================  ==========================================
``azure-conv`` (2023)     mean 1155, p10 207, p50 1020, p90 2734, p99 4142  mean 211, p10 54, p50 129, p90 424, p99 601
``azure-code`` (2023)     mean 2048, p50 1469, p90 5186                     mean 28, p50 13, p90 55
``arxiv-summarization``   mean 2588, p50 2730                               mean 291, p50 167, p99 3270
========================  ===============================================  ==========================================

Arrivals are a renewal process with Gamma inter-arrival times of mean :math:`1/\\lambda` and coefficient
of variation ``cv`` (shape :math:`1/\\mathrm{cv}^2`): ``cv=1`` is a Poisson process, larger values are
burstier (the Azure code trace has a CV near 13).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_choice, check_int, check_real
from geode.inference.serving import Workload

__all__ = [
    "TRACES",
    "TraceTable",
    "UnsortedTraceError",
    "arrival_times",
    "expected_volume",
    "load_trace",
    "measured_capacity",
    "predict_output_lengths",
    "rate_for_load",
    "sample_lengths",
    "synthetic_workload",
]


@dataclass(frozen=True)
class TraceTable:
    """Quantile tables of a trace's prompt and output lengths.

    Attributes
    ----------
    name : str
        The trace's name.
    prompt, output : tuple of (float, float)
        Knots ``(u, x)``: the ``u``-quantile of the length is ``x``; ``u`` runs from 0 to 1.
    source : str
        Where the published numbers come from, and which knots we inferred.
    """

    name: str
    prompt: tuple[tuple[float, float], ...]
    output: tuple[tuple[float, float], ...]
    source: str

    def quantile(self, which: str, u: np.ndarray) -> np.ndarray:
        """Lengths at quantile levels ``u`` (log-linear interpolation, not rounded)."""
        knots = self.prompt if which == "prompt" else self.output
        p = np.array([k[0] for k in knots])
        logx = np.log(np.array([k[1] for k in knots], dtype=float))
        return np.exp(np.interp(u, p, logx))


TRACES: dict[str, TraceTable] = {
    "azure-conv": TraceTable(
        "azure-conv",
        prompt=((0.0, 4), (0.1, 207), (0.5, 1020), (0.75, 1450), (0.9, 2734), (0.99, 4142), (1.0, 4300)),
        output=((0.0, 2), (0.1, 54), (0.5, 129), (0.75, 330), (0.9, 424), (0.95, 540), (0.99, 601), (1.0, 3000)),
        source="Azure LLM inference 2023, conversation (19,366 requests); p0, p75, p95 and p100 inferred "
        "(means 1166 / 207 vs published 1155 / 211)",
    ),
    "azure-code": TraceTable(
        "azure-code",
        prompt=((0.0, 4), (0.1, 230), (0.5, 1469), (0.9, 5186), (0.99, 7400), (1.0, 7900)),
        output=((0.0, 1), (0.1, 3), (0.5, 13), (0.9, 55), (0.99, 200), (1.0, 800)),
        source="Azure LLM inference 2023, code (8,819 requests); p0, p10, p99 and p100 inferred "
        "(means 2089 / 29 vs published 2048 / 28)",
    ),
    "arxiv-summarization": TraceTable(
        "arxiv-summarization",
        prompt=((0.0, 200), (0.1, 1300), (0.5, 2730), (0.9, 4000), (0.99, 4500), (1.0, 4600)),
        output=((0.0, 1), (0.1, 35), (0.5, 167), (0.75, 260), (0.9, 450), (0.99, 3270), (1.0, 3500)),
        source="arXiv summarization (28k requests); all but prompt p50 and output p50/p99 inferred "
        "(means 2587 / 301 vs published 2588 / 291)",
    ),
}


def _trace(trace: str | TraceTable) -> TraceTable:
    if isinstance(trace, TraceTable):
        return trace
    return TRACES[check_choice("trace", trace, tuple(TRACES))]


def sample_lengths(
    trace: str | TraceTable, n: int, seed: int | np.random.Generator | None = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n`` independent ``(prompt, output)`` lengths from a trace's quantile tables.

    Returns
    -------
    prompt, output : numpy.ndarray of int64, shape (n,)
        Both >= 1.
    """
    table = _trace(trace)
    n = check_int("n", n, low=1)
    rng = as_generator(seed)
    u = rng.random((2, n))
    prompt = np.maximum(1, np.rint(table.quantile("prompt", u[0]))).astype(np.int64)
    output = np.maximum(1, np.rint(table.quantile("output", u[1]))).astype(np.int64)
    return prompt, output


def expected_volume(trace: str | TraceTable) -> float:
    """Mean volume :math:`E[s\\,o + o(o+1)/2] = E[s]E[o] + (E[o^2] + E[o])/2` of a trace's requests.

    Computed by midpoint quadrature of the (rounded) quantile functions on 200,000 levels: deterministic.
    """
    table = _trace(trace)
    u = (np.arange(200_000) + 0.5) / 200_000
    s = np.maximum(1, np.rint(table.quantile("prompt", u)))
    o = np.maximum(1, np.rint(table.quantile("output", u)))
    return float(s.mean() * o.mean() + (np.mean(o**2) + o.mean()) / 2)


def rate_for_load(trace: str | TraceTable, load: float, kv_slots: int) -> float:
    """Arrival rate :math:`\\lambda = \\rho M / E[V]` giving offered KV-memory load :math:`\\rho`.

    :math:`\\rho = \\lambda E[V] / M` is the cache's slot-steps demanded per step over those it has: at
    :math:`\\rho \\ge 1` no scheduler keeps up (with unit-time steps), and admission that reserves room for
    future growth saturates earlier.
    """
    load = check_real("load", load, low=0.0, low_inclusive=False)
    kv_slots = check_int("kv_slots", kv_slots, low=1)
    return load * kv_slots / expected_volume(trace)


def measured_capacity(
    prompt: Any,
    output: Any,
    kv_slots: int,
    policy: Any = None,
    *,
    cost: Any = None,
    trim: float = 0.1,
) -> float:
    """The server's measured capacity: completed requests per time unit when it is never starved of work.

    :func:`rate_for_load`'s :math:`\rho = \\lambda E[V] / M` counts only the decode slot-steps; prefill time and
    the memory that future-peak admission keeps in reserve are not counted, so :math:`\rho = 0.8` was
    88-92% of the real capacity of the claim's server (issue 18). Here every request arrives at time 0 and
    is served by ``policy`` (default FCFS) with the simulator's cost model; the capacity is the completion
    rate between the ``trim`` and ``1 - trim`` quantiles of the completion times (warm-up and drain
    discarded). A load defined against it, :math:`\\lambda = \text{load} \times \text{capacity}`, is the
    fraction of what the server can actually sustain.

    Parameters
    ----------
    prompt, output : array_like of int, shape (n,)
        A sample of request lengths (a few thousand; the same distribution as the workload).
    kv_slots : int
        Cache size :math:`M`.
    policy : Policy, optional
        The order of service (default FCFS). Keep FCFS, whose order is independent of the lengths: a
        length-aware order finishes its small requests first, so the completion *count* in the trimmed
        window overstates the sustainable rate (on the Azure-conversation lengths, M = 30000: 0.094
        requests per unit under FCFS, 0.137 under SVF).
    cost : CostModel, optional
        The simulator's step-time model (default: the simulator's default).
    trim : float
        Fraction of completions discarded at each end, in [0, 0.5).

    Returns
    -------
    float
        Requests per time unit.
    """
    from geode.inference.serving import FCFS, _request_lengths, simulate

    trim = check_real("trim", trim, low=0.0, high=0.5, high_inclusive=False)
    s, o = _request_lengths(prompt, output)
    work = Workload(np.zeros(s.shape[0]), s, output, name="saturated")
    res = simulate(work, FCFS() if policy is None else policy, kv_slots, cost=cost)
    fin = np.sort(res.finish)
    lo, hi = int(math.floor(trim * fin.shape[0])), int(math.ceil((1 - trim) * fin.shape[0])) - 1
    if hi <= lo or fin[hi] <= fin[lo]:
        return float(fin.shape[0] / max(fin[-1], 1e-12))
    done = np.searchsorted(fin, [fin[lo], fin[hi]], side="right")  # completions in (t_lo, t_hi]
    return float((done[1] - done[0]) / (fin[hi] - fin[lo]))


def arrival_times(n: int, rate: float, *, cv: float = 1.0, seed: int | np.random.Generator | None = 0) -> np.ndarray:
    """Arrival times of a renewal process with Gamma inter-arrival times.

    Inter-arrival times are :math:`\\mathrm{Gamma}(k = 1/\\mathrm{cv}^2, \\theta = 1/(k\\lambda))`: mean
    :math:`1/\\lambda`, coefficient of variation ``cv``; ``cv=1`` gives a Poisson process. The first
    request arrives at time 0.

    Returns
    -------
    numpy.ndarray of float, shape (n,), non-decreasing.
    """
    n = check_int("n", n, low=1)
    rate = check_real("rate", rate, low=0.0, low_inclusive=False)
    cv = check_real("cv", cv, low=0.0, low_inclusive=False)
    rng = as_generator(seed)
    shape = 1.0 / cv**2
    gaps = rng.gamma(shape, 1.0 / (shape * rate), size=n)
    gaps[0] = 0.0
    return np.cumsum(gaps)


def predict_output_lengths(output: Any, error: float, seed: int | np.random.Generator | None = 0) -> np.ndarray:
    """Noisy output lengths :math:`\\hat o = \\max(1, \\mathrm{round}(o\\, e^{E z}))`, :math:`z \\sim N(0, 1)`.

    ``error`` :math:`E` is the standard deviation of the log-ratio :math:`\\log(\\hat o / o)`; ``error=0``
    returns the exact lengths. (The paper's taxonomy has known, 1-bit and unknown lengths; this knob
    interpolates between known and badly predicted.) An empty ``output`` gives an empty array.
    """
    from geode.inference.serving import as_lengths

    o = as_lengths("output", output, low=1)
    error = check_real("error", error, low=0.0)
    if error == 0.0:
        return o.copy()
    rng = as_generator(seed)
    return np.maximum(1, np.rint(o * np.exp(error * rng.standard_normal(o.shape[0])))).astype(np.int64)


def synthetic_workload(
    trace: str | TraceTable,
    n: int,
    *,
    rate: float | None = None,
    load: float | None = None,
    kv_slots: int | None = None,
    cv: float = 1.0,
    predictor_error: float = 0.0,
    seed: int = 0,
) -> Workload:
    """A synthetic workload: lengths from a trace's tables, Gamma/Poisson arrivals, optional noisy predictions.

    Give either ``rate`` (requests per time unit) or ``load`` with ``kv_slots`` (see
    :func:`rate_for_load`).

    Examples
    --------
    >>> w = synthetic_workload("azure-conv", 1000, load=0.8, kv_slots=30_000, seed=1)
    >>> len(w), bool(np.all(np.diff(w.arrival) >= 0))
    (1000, True)
    """
    table = _trace(trace)
    if (rate is None) == (load is None):
        raise ValueError("give exactly one of rate or load (load also needs kv_slots)")
    if rate is not None:
        check_real("rate", rate, low=0.0, low_inclusive=False)
    check_real("predictor_error", predictor_error, low=0.0)
    if load is not None:
        if kv_slots is None:
            raise ValueError("load needs kv_slots (the offered load is relative to the cache size)")
        rate = rate_for_load(table, load, kv_slots)
    rng = as_generator(seed)
    prompt, output = sample_lengths(table, n, rng)
    arrival = arrival_times(n, float(rate), cv=cv, seed=rng)  # type: ignore[arg-type]
    predicted = predict_output_lengths(output, predictor_error, rng)
    return Workload(arrival, prompt, output, predicted, name=table.name)


_COLUMNS = ("arrival", "prompt_tokens", "output_tokens")


class UnsortedTraceError(ValueError):
    """A trace whose arrivals go back in time: the message names the line and how to sort the trace.

    ``fix`` is the advice at the end of the message: the keyword ``sort=True`` of :func:`load_trace` by
    default; a command line that exposes the same switch as a flag passes its name (``serve-sim``: ``--sort``).
    """

    def __init__(self, where: str, fix: str = "pass sort=True") -> None:
        self.where, self.fix = where, fix
        super().__init__(f"{where}; arrivals must be non-decreasing ({fix} to sort the trace)")

    def with_fix(self, fix: str) -> UnsortedTraceError:
        """The same error with other advice (e.g. ``"pass --sort"`` on a command line)."""
        return UnsortedTraceError(self.where, fix)


def load_trace(path: str | Path, *, sort: bool = False, name: str | None = None) -> Workload:
    """Load a user's trace from a CSV file with a header row.

    Required columns: ``arrival`` (time, any unit), ``prompt_tokens`` and ``output_tokens`` (whole
    numbers); an optional ``predicted_output_tokens`` column gives the scheduler's predictions. Other
    columns are ignored. Every row must be complete and no longer than the header: a missing,
    non-numeric or extra value raises a ``ValueError`` naming the file and line, so nothing is dropped
    silently. A file that is not UTF-8 text or not CSV raises a ``ValueError`` naming the file.

    Parameters
    ----------
    path : str or Path
        The CSV file.
    sort : bool
        Sort rows by arrival (stable). By default unsorted arrivals raise :class:`UnsortedTraceError` (a
        ``ValueError``) naming the line.
    name : str, optional
        Label of the workload (default: the file name).
    """
    path = Path(path)
    try:
        return _load_trace(path, sort, name)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a UTF-8 text file ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise ValueError(f"{path}: not a readable CSV file ({exc})") from None


def _load_trace(path: Path, sort: bool, name: str | None) -> Workload:
    if path.is_dir():
        raise ValueError(f"trace file {str(path)!r} is a folder, not a CSV file")
    if not path.exists():
        raise FileNotFoundError(f"trace file {str(path)!r} does not exist")
    if not path.is_file():
        raise ValueError(f"trace file {str(path)!r} is not a regular file")
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh, restkey="__extra__")
        header = [h.strip() for h in (reader.fieldnames or [])]
        if not header:
            raise ValueError(f"{path}: empty file; expected a header with columns {', '.join(_COLUMNS)}")
        reader.fieldnames = header
        missing = [c for c in _COLUMNS if c not in header]
        if missing:
            raise ValueError(f"{path}: missing column(s) {', '.join(missing)}; the header is {', '.join(header)}")
        has_pred = "predicted_output_tokens" in header
        cols: dict[str, list[float]] = {c: [] for c in (*_COLUMNS, "predicted_output_tokens")}
        want = (*_COLUMNS, "predicted_output_tokens") if has_pred else _COLUMNS
        for row in reader:
            line = reader.line_num
            if row.get("__extra__"):
                raise ValueError(
                    f"{path}, line {line}: {len(header) + len(row['__extra__'])} cells under a "
                    f"{len(header)}-column header"
                )
            if all((v is None or not str(v).strip()) for v in row.values()):
                continue  # blank line
            for c in want:
                raw = row.get(c)
                if raw is None or not str(raw).strip():
                    raise ValueError(f"{path}, line {line}: missing value for {c}")
                try:
                    x = float(raw)
                except ValueError:
                    raise ValueError(f"{path}, line {line}: {c} must be a number; got {raw!r}") from None
                if not math.isfinite(x):
                    raise ValueError(f"{path}, line {line}: {c} must be finite; got {raw!r}")
                if c != "arrival":
                    low = 0 if c == "prompt_tokens" else 1
                    if x != round(x) or x < low:
                        raise ValueError(f"{path}, line {line}: {c} must be a whole number >= {low}; got {raw!r}")
                cols[c].append(x)
            cols.setdefault("_line", []).append(float(line))
    if not cols["arrival"]:
        raise ValueError(f"{path}: the trace has a header but no requests")
    arrival = np.asarray(cols["arrival"])
    pred = np.asarray(cols["predicted_output_tokens"]) if has_pred else None
    label = name or path.stem
    back = np.diff(arrival) < 0
    if back.any() and not sort:
        i = int(np.argmax(back)) + 1
        lines = cols["_line"]
        raise UnsortedTraceError(
            f"{path}, line {int(lines[i])}: arrival {float(arrival[i])!r} is earlier than {float(arrival[i - 1])!r} "
            f"on line {int(lines[i - 1])}"
        )
    return Workload.sorted(arrival, cols["prompt_tokens"], cols["output_tokens"], pred, name=label)
