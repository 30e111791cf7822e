"""Benchmarks as part of the product: each paper's hot path against its strongest baseline, as ratios.

A paper's benchmark lives beside its claim, in ``geode/<field>/<paper>/bench.py``, and defines::

    def cases(size: str) -> list[BenchCase]:
        '''size is "smoke" (the tests), "quick" (geode bench's default, seconds) or "full".'''
        x = ...
        return [BenchCase("forward, 64k tokens", candidate=lambda: ours(x),
                          baselines={"per-document FFT loop": lambda: loop(x), "padded batch": lambda: pad(x)})]

:func:`run_bench` times every case in one process, one thread, the candidate and each baseline interleaved
repetition by repetition, and reports per baseline the median of the per-repetition ratios
``baseline time / candidate time`` (> 1: the paper's method is faster) with its interquartile range, and
the peak memory of each side (resident-set growth over one call after ``malloc_trim``, from
``/proc/self/status``; ``tracemalloc`` where that is unavailable). The *strongest* baseline of a case is
the fastest one; the headline is the first case against its strongest baseline. ``geode bench`` stores
the result as ``results/<slug>/bench.json``; the report shows the headline's speed and memory ratio.

A case may carry a :class:`Target` (issue 44), a stated goal such as "at least 1.5x the per-document loop"
or "peak memory at most 1.5x dense SDPA's"; the record then holds the target, the measured value and
whether it is met, and the report and ``geode bench`` print "met" / "not met" beside the ratio.

A case also says how its sides compare (:attr:`BenchCase.compare`, :attr:`BenchCase.differs`): every
baseline is meant to compute the candidate's output (``tests/claims/test_bench_equivalence.py`` checks
it at ``smoke`` size with :func:`assert_same_output` or the case's own ``compare``), unless ``differs``
names it with the reason (a different method by design, a different random stream, ...).

Timing never decides a verdict unless the claim is a speed claim, and then the claim measures it itself
(protocol section 4).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
import importlib
import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "BENCH_SIZES",
    "BenchCase",
    "Target",
    "assert_same_output",
    "bench_module",
    "has_bench",
    "peak_memory_mib",
    "relative_error_at_most",
    "run_bench",
    "write_bench",
]

BENCH_SIZES: tuple[str, ...] = ("smoke", "quick", "full")
TARGET_METRICS: tuple[str, ...] = ("ratio", "memory_ratio")
TARGET_OPS: tuple[str, ...] = (">=", "<=")


@dataclass(frozen=True)
class Target:
    """A stated goal for one case, judged against one baseline.

    Parameters
    ----------
    metric : {"ratio", "memory_ratio"}
        ``ratio`` is the speed-up, baseline time / candidate time (median of the interleaved repetitions);
        ``memory_ratio`` is candidate peak memory / baseline peak memory.
    op : {">=", "<="}
        The comparison the measured value must satisfy against ``value``.
    value : float
        The bound (finite, > 0).
    source : str
        Where the target comes from ("issue 44: ..."); non-empty.
    baseline : str or None
        The baseline it is judged against, by name; ``None``: the case's strongest (fastest) baseline.
    """

    metric: str
    op: str
    value: float
    source: str
    baseline: str | None = None

    def __post_init__(self) -> None:
        if self.metric not in TARGET_METRICS:
            raise ValueError(f"Target metric must be one of {', '.join(TARGET_METRICS)}; got {self.metric!r}")
        if self.op not in TARGET_OPS:
            raise ValueError(f"Target op must be one of {', '.join(TARGET_OPS)}; got {self.op!r}")
        v = self.value
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < float(v) < float("inf")):
            raise ValueError(f"Target value must be a finite number > 0; got {v!r}")
        object.__setattr__(self, "value", float(v))
        if not isinstance(self.source, str) or not self.source.strip():
            raise ValueError("Target source must be a non-empty string (where the target is stated)")
        if self.baseline is not None and (not isinstance(self.baseline, str) or not self.baseline.strip()):
            raise ValueError(f"Target baseline must be a baseline's name or None; got {self.baseline!r}")

    def text(self) -> str:
        """``speed-up >= 1.5x`` / ``memory ratio <= 1.5x``."""
        return target_text(self.as_dict())

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "op": self.op,
            "value": self.value,
            "baseline": self.baseline,
            "source": self.source,
        }

    def judge(self, measured: float | None) -> bool | None:
        """Whether ``measured`` meets the target; ``None`` when there is no measurement."""
        if measured is None or measured != measured:
            return None
        return measured >= self.value if self.op == ">=" else measured <= self.value


def target_text(t: Mapping[str, Any]) -> str:
    """A target record as text: ``speed-up >= 1.5x`` or ``memory ratio <= 1.5x``."""
    what = "speed-up" if t.get("metric") == "ratio" else "memory ratio"
    v = t.get("value")
    num = f"{v:.3g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)
    return f"{what} {t.get('op', '?')} {num}x"


def met_text(met: Any) -> str:
    """``met``, ``not met`` or ``not measured``."""
    return "met" if met is True else "not met" if met is False else "not measured"


def _close(a: Any, b: Any, rtol: float, atol: float, where: str) -> None:
    import numpy as np

    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if set(a) != set(b):
            raise AssertionError(f"{where}: keys {sorted(a)} != {sorted(b)}")
        for k in a:
            _close(a[k], b[k], rtol, atol, f"{where}[{k!r}]")
        return
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        if len(a) != len(b):
            raise AssertionError(f"{where}: lengths {len(a)} != {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, rtol, atol, f"{where}[{i}]")
        return

    def arr(x: Any) -> Any:
        if hasattr(x, "detach"):  # a torch tensor
            x = x.detach().cpu()
            x = x.to_dense() if getattr(x, "is_sparse", False) else x
            return x.double().numpy() if not x.is_complex() else x.numpy()
        return np.asarray(x)

    x, y = arr(a), arr(b)
    if x.shape != y.shape:
        raise AssertionError(f"{where}: shapes {x.shape} != {y.shape}")
    if x.dtype.kind in "biuf c" and y.dtype.kind in "biufc":
        if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
            err = float(np.max(np.abs(x.astype(complex) - y.astype(complex)))) if x.size else 0.0
            raise AssertionError(f"{where}: outputs differ (max abs difference {err:.3g}; rtol {rtol}, atol {atol})")
    elif not np.array_equal(x, y):
        raise AssertionError(f"{where}: outputs differ")


def relative_error_at_most(tol: float) -> Callable[[Any, Any], None]:
    """A ``compare`` for sides that compute the same thing up to an approximation (a quantised weight, a
    discretised time): the same shapes, and ``||candidate - baseline|| <= tol * ||baseline||`` (Frobenius,
    over every array of the output)."""
    import numpy as np

    def compare(candidate: Any, baseline: Any) -> None:
        def flat(x: Any) -> list[Any]:
            if isinstance(x, Mapping):
                return [a for k in sorted(x) for a in flat(x[k])]
            if isinstance(x, (tuple, list)):
                return [a for v in x for a in flat(v)]
            return [np.asarray(x.detach().cpu().double() if hasattr(x, "detach") else x, dtype=float)]

        a, b = flat(candidate), flat(baseline)
        if [x.shape for x in a] != [y.shape for y in b]:
            raise AssertionError(f"output: shapes {[x.shape for x in a]} != {[y.shape for y in b]}")
        num = sum(float(np.sum((x - y) ** 2)) for x, y in zip(a, b)) ** 0.5
        den = sum(float(np.sum(y**2)) for y in b) ** 0.5
        if not num <= tol * den:
            raise AssertionError(f"output: relative error {num / max(den, 1e-300):.3g} > {tol}")

    return compare


def assert_same_output(candidate: Any, baseline: Any, *, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """Raise ``AssertionError`` unless two sides' outputs agree: numbers, numpy arrays and torch tensors up
    to ``rtol``/``atol`` (``numpy.allclose``), tuples/lists/dicts of them element by element."""
    _close(candidate, baseline, rtol, atol, "output")


@dataclass
class BenchCase:
    """One benchmark point: the paper's method and the baselines it is timed against.

    Parameters
    ----------
    name : str
        What is measured ("forward+backward, 64k tokens, mixed packing").
    candidate : callable
        The paper's method, called with no arguments.
    baselines : dict of str to callable
        The baselines, by name; at least one.
    target : Target or sequence of Target, optional
        The case's stated goal(s) (issue 44), e.g. one per baseline; each is recorded with whether it is met.
    compare : callable, optional
        ``compare(candidate_output, baseline_output)`` raises ``AssertionError`` when the two sides did not
        compute the same thing; default :func:`assert_same_output` (``allclose``, rtol 1e-4, atol 1e-5).
        Used by the equivalence test at ``smoke`` size, never while timing.
    differs : dict of str to str, optional
        The baselines that compute something else by design (a different method, another random stream),
        by name (``"*"``: all of them), each with the reason; the equivalence test skips them.
    """

    name: str
    candidate: Callable[[], Any]
    baselines: Mapping[str, Callable[[], Any]] = field(default_factory=dict)
    target: Target | Sequence[Target] | None = None
    compare: Callable[[Any, Any], None] | None = None
    differs: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("BenchCase name must be a non-empty string")
        if not callable(self.candidate):
            raise TypeError(f"BenchCase {self.name!r}: candidate must be callable")
        if not self.baselines or not all(callable(f) for f in self.baselines.values()):
            raise ValueError(f"BenchCase {self.name!r}: baselines must be a non-empty dict of callables")
        for t in self.targets:
            if not isinstance(t, Target):
                raise TypeError(f"BenchCase {self.name!r}: target must be a Target or a list of them; got {t!r}")
            if t.baseline is not None and t.baseline not in self.baselines:
                raise ValueError(
                    f"BenchCase {self.name!r}: target baseline {t.baseline!r} is not one of the baselines "
                    f"({', '.join(map(repr, self.baselines))})"
                )
        if self.compare is not None and not callable(self.compare):
            raise TypeError(f"BenchCase {self.name!r}: compare must be callable or None")
        if not isinstance(self.differs, Mapping):
            raise TypeError(f"BenchCase {self.name!r}: differs must be a dict of baseline name -> reason")
        for k, why in self.differs.items():
            if k != "*" and k not in self.baselines:
                raise ValueError(f"BenchCase {self.name!r}: differs names {k!r}, which is not a baseline")
            if not isinstance(why, str) or not why.strip():
                raise ValueError(f"BenchCase {self.name!r}: differs[{k!r}] must give the reason as a non-empty string")

    @property
    def targets(self) -> tuple[Any, ...]:
        """``target`` as a tuple (empty when the case has none)."""
        if self.target is None:
            return ()
        return tuple(self.target) if isinstance(self.target, (list, tuple)) else (self.target,)

    def same_output_baselines(self) -> list[str]:
        """The baselines meant to compute the candidate's output (those ``differs`` does not exempt)."""
        if "*" in self.differs:
            return []
        return [n for n in self.baselines if n not in self.differs]

    def check_same_output(self, candidate_output: Any, baseline: str, baseline_output: Any) -> None:
        """Raise ``AssertionError`` when ``baseline``'s output is not the candidate's (see ``compare``)."""
        try:
            (self.compare or assert_same_output)(candidate_output, baseline_output)
        except AssertionError as exc:
            raise AssertionError(f"{self.name}: candidate vs {baseline}: {exc}") from None


def _sync(x: Any) -> None:
    if getattr(getattr(x, "device", None), "type", "cpu") == "cuda":  # pragma: no cover - GPU only
        import torch

        torch.cuda.synchronize()


def _status_kib(key: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _trim() -> None:
    gc.collect()
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)


def peak_memory_mib(fn: Callable[[], Any]) -> tuple[float, str]:
    """Peak memory growth of one call of ``fn`` in MiB, and how it was measured.

    On Linux: free memory is returned to the system (``malloc_trim``), the resident-set high-water mark is
    reset (``/proc/self/clear_refs``), ``fn`` runs once, and the growth of the high-water mark over the
    resident set before the call is the peak. Elsewhere, ``tracemalloc``'s peak (Python and numpy
    allocations only).
    """
    _trim()
    rss0 = _status_kib("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        reset = True
    except OSError:
        reset = False
    if rss0 is not None and reset:
        out = fn()
        _sync(out)
        hwm = _status_kib("VmHWM")
        del out
        if hwm is not None:
            return max(hwm - rss0, 0) / 1024.0, "rss"
    import tracemalloc

    tracemalloc.start()
    try:
        _sync(fn())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20, "tracemalloc"


def _time(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    _sync(fn())
    return time.perf_counter() - t0


def _quartiles(xs: list[float]) -> tuple[float, float, float]:
    if len(xs) == 1:
        return xs[0], xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], statistics.median(xs), q[2]


def run_case(case: BenchCase, *, repeats: int = 7, warmup: int = 1) -> dict[str, Any]:
    """Time one case (interleaved, rotating the order each repetition) and measure peak memory."""
    fns = {"__candidate__": case.candidate, **dict(case.baselines)}
    for _ in range(warmup):
        for f in fns.values():
            _sync(f())
    names = list(fns)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]  # no side always runs first
        for n in order:
            times[n].append(_time(fns[n]))
    mem = {n: peak_memory_mib(f) for n, f in fns.items()}
    tc = times["__candidate__"]
    baselines = []
    for n in names[1:]:
        ratios = [b / c if c > 0 else float("inf") for b, c in zip(times[n], tc)]
        low, med, high = _quartiles(ratios)
        cm, bm = mem["__candidate__"][0], mem[n][0]
        baselines.append(
            {
                "name": n,
                "ratio": med,
                "low": low,
                "high": high,
                "baseline_s": statistics.median(times[n]),
                "peak_mib": bm,
                "memory_ratio": (cm / bm) if bm > 0.05 else None,  # candidate / baseline; None when ~0
            }
        )
    strongest = min(baselines, key=lambda b: b["ratio"])
    out = {
        "name": case.name,
        "candidate_s": statistics.median(tc),
        "candidate_peak_mib": mem["__candidate__"][0],
        "memory_method": mem["__candidate__"][1],
        "repeats": repeats,
        "baselines": baselines,
        "strongest": strongest["name"],
    }
    if case.targets:
        out["targets"] = []
        for t in case.targets:
            against = next(b for b in baselines if b["name"] == (t.baseline or strongest["name"]))
            measured = against[t.metric]
            out["targets"].append(
                {**t.as_dict(), "baseline": against["name"], "measured": measured, "met": t.judge(measured)}
            )
    return out


def bench_module(slug: str) -> str:
    """The module that holds paper ``slug``'s benchmark."""
    from geode import catalog

    return f"{catalog.get(slug).module}.bench"


def has_bench(slug: str) -> bool:
    """Whether paper ``slug`` ships a ``bench.py``."""
    import importlib.util

    try:
        return importlib.util.find_spec(bench_module(slug)) is not None
    except (KeyError, ModuleNotFoundError):
        return False


def run_bench(
    slug: str,
    size: str = "quick",
    *,
    repeats: int | None = None,
    on_case: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run paper ``slug``'s benchmark at ``size``; the ``bench.json`` record.

    ``repeats`` defaults to 3 (smoke), 7 (quick) or 11 (full).
    """
    from geode import __version__
    from geode.core.random import set_single_thread
    from geode.core.validation import check_choice, check_int

    check_choice("size", size, BENCH_SIZES)
    repeats = check_int(
        "repeats", repeats if repeats is not None else {"smoke": 3, "quick": 7, "full": 11}[size], low=1
    )
    set_single_thread()
    mod = importlib.import_module(bench_module(slug))
    cases = mod.cases(size)
    if not cases or not all(isinstance(c, BenchCase) for c in cases):
        raise TypeError(f"{mod.__name__}.cases({size!r}) must return a non-empty list of BenchCase")
    started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    done = []
    for case in cases:
        res = run_case(case, repeats=repeats, warmup=0 if size == "smoke" else 1)
        done.append(res)
        if on_case is not None:
            on_case(res)
    first = done[0]
    best = next(b for b in first["baselines"] if b["name"] == first["strongest"])
    judged = [t for c in done for t in c.get("targets", [])]
    return {
        "schema": 1,
        "slug": slug,
        "size": size,
        "repeats": repeats,
        "cases": done,
        "headline": {
            "case": first["name"],
            "baseline": best["name"],
            "ratio": best["ratio"],
            "low": best["low"],
            "high": best["high"],
            "memory_ratio": best["memory_ratio"],
            # the stated targets over all cases: how many, how many met (None: no target)
            "targets": len(judged),
            "targets_met": sum(1 for t in judged if t["met"] is True) if judged else None,
        },
        "started": started,
        "geode_version": __version__,
        "platform": platform.platform(terse=True),
        "threads": int(os.environ.get("OMP_NUM_THREADS", "1") or 1),
    }


def write_bench(store: Any, record: dict[str, Any]) -> Path:
    """Store a bench record as ``results/<slug>/bench.json`` (atomically)."""
    from geode.claims.store import atomic_write_text

    p = store.bench_path(record["slug"])
    atomic_write_text(p, json.dumps(record, indent=2, sort_keys=True, default=float) + "\n")
    return p
