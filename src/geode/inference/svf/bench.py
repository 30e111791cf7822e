"""Benchmark of SVF: simulating a loaded server under SVF against the time-centric baselines FCFS and SJF.

The hot path of the method is the scheduler's priority queue inside the serving simulator; the ratio says
what SVF's volume ordering costs per simulated request against FCFS and SJF (> 1: SVF is faster). The
load is the claim's heavy setting, 90% of the server's measured capacity (steady state).
"""

from __future__ import annotations

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": 2_000, "quick": 20_000, "full": 200_000}
KV_SLOTS = 30_000
LOAD = 0.9  # fraction of measured capacity


def cases(size: str) -> list[BenchCase]:
    """One case: ``n`` Azure-conversation-like requests at 90% of measured capacity on a 30k-slot KV cache."""
    import numpy as np

    from geode.inference import FCFS, SJF, SVF, simulate
    from geode.inference.serving import Workload
    from geode.inference.workloads import measured_capacity, sample_lengths

    n = _SIZES[size]
    rng = np.random.default_rng(0)
    prompt, output = sample_lengths("azure-conv", n, rng)
    rate = LOAD * measured_capacity(prompt, output, KV_SLOTS)
    arrivals = np.cumsum(np.concatenate([[0.0], rng.exponential(1.0 / rate, n - 1)]))
    work = Workload(arrivals, prompt, output, name="azure-conv")
    return [
        BenchCase(
            f"simulate {n} requests, 90% of measured capacity",
            candidate=lambda: simulate(work, SVF(), KV_SLOTS),
            baselines={
                "FCFS": lambda: simulate(work, FCFS(), KV_SLOTS),
                "SJF": lambda: simulate(work, SJF(), KV_SLOTS),
            },
            differs={"*": "other scheduling policies (FCFS, SJF): other simulated request timelines by design"},
        )
    ]
