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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BENCH_SIZES", "BenchCase", "bench_module", "has_bench", "peak_memory_mib", "run_bench", "write_bench"]

BENCH_SIZES: tuple[str, ...] = ("smoke", "quick", "full")


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
    """

    name: str
    candidate: Callable[[], Any]
    baselines: Mapping[str, Callable[[], Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("BenchCase name must be a non-empty string")
        if not callable(self.candidate):
            raise TypeError(f"BenchCase {self.name!r}: candidate must be callable")
        if not self.baselines or not all(callable(f) for f in self.baselines.values()):
            raise ValueError(f"BenchCase {self.name!r}: baselines must be a non-empty dict of callables")


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
    return {
        "name": case.name,
        "candidate_s": statistics.median(tc),
        "candidate_peak_mib": mem["__candidate__"][0],
        "memory_method": mem["__candidate__"][1],
        "repeats": repeats,
        "baselines": baselines,
        "strongest": strongest["name"],
    }


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
