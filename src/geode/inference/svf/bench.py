"""Benchmark of SVF: simulating a loaded server under SVF against the time-centric baselines FCFS and SJF.

The hot path of the method is the scheduler's priority queue inside the serving simulator; the ratio says
what SVF's volume ordering costs per simulated request against FCFS and SJF (> 1: SVF is faster).
"""

from __future__ import annotations

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": 2_000, "quick": 20_000, "full": 200_000}
KV_SLOTS = 30_000


def cases(size: str) -> list[BenchCase]:
    """One case: ``n`` Azure-conversation-like requests at load 1.2 on a 30k-slot KV cache."""
    from geode.inference import FCFS, SJF, SVF, simulate
    from geode.inference.workloads import synthetic_workload

    n = _SIZES[size]
    work = synthetic_workload("azure-conv", n, load=1.2, kv_slots=KV_SLOTS, seed=0)
    return [
        BenchCase(
            f"simulate {n} requests, load 1.2",
            candidate=lambda: simulate(work, SVF(), KV_SLOTS),
            baselines={
                "FCFS": lambda: simulate(work, FCFS(), KV_SLOTS),
                "SJF": lambda: simulate(work, SJF(), KV_SLOTS),
            },
        )
    ]
