"""Timing for benchmarks: a method against its strongest baseline, in one process, as a ratio.

Absolute times on shared machines are noise; the ratio of two medians measured side by side,
interleaved, is what geode reports.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from geode.core.validation import check_int

__all__ = ["speed_ratio", "time_callable"]


def _sync(x: Any) -> None:
    # touch the result so that lazy work (e.g. asynchronous GPU kernels) is finished
    if hasattr(x, "device") and getattr(getattr(x, "device", None), "type", "cpu") == "cuda":  # pragma: no cover
        import torch

        torch.cuda.synchronize()


def time_callable(fn: Callable[[], Any], *, repeats: int = 7, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` in seconds over ``repeats`` runs after ``warmup`` runs."""
    check_int("repeats", repeats, low=1)
    check_int("warmup", warmup, low=0)
    for _ in range(warmup):
        _sync(fn())
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        _sync(fn())
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def speed_ratio(
    candidate: Callable[[], Any], baseline: Callable[[], Any], *, repeats: int = 7, warmup: int = 1
) -> dict[str, float]:
    """Time ``candidate`` and ``baseline`` interleaved; ``speedup = baseline time / candidate time``.

    Returns
    -------
    dict with ``candidate_s``, ``baseline_s`` (medians) and ``speedup`` (> 1 means the candidate is faster).
    """
    check_int("repeats", repeats, low=1)
    check_int("warmup", warmup, low=0)
    for _ in range(warmup):
        _sync(candidate())
        _sync(baseline())
    tc, tb = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        _sync(candidate())
        tc.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        _sync(baseline())
        tb.append(time.perf_counter() - t0)
    c, b = statistics.median(tc), statistics.median(tb)
    return {"candidate_s": c, "baseline_s": b, "speedup": b / c if c > 0 else float("inf")}
