"""Benchmark: serving-simulator throughput (simulated requests per second) per policy, and SVF's cost vs baselines.

Simulates ``--n`` requests (default 100,000) of the Azure-conversation-like workload on a 30,000-slot KV
cache at a moderate and an overload offered load, once per policy, and reports requests simulated per
second of wall time (goal: >= 20,000 on one core) and of process CPU time (less sensitive to a shared
machine). Then times SVF against FCFS and SJF side by side with :func:`geode.core.speed_ratio`
(``speedup`` > 1 means simulating SVF is faster).

Run with one thread: ``OMP_NUM_THREADS=1 python benchmarks/bench_svf.py [--n 100000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from geode.core import speed_ratio  # noqa: E402
from geode.inference import FCFS, SJF, SVF, OneBitSVF, simulate  # noqa: E402
from geode.inference.workloads import synthetic_workload  # noqa: E402

KV_SLOTS = 30_000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="requests per simulation")
    ap.add_argument("--repeats", type=int, default=3, help="repeats of the side-by-side ratio")
    args = ap.parse_args()
    policies = {"FCFS": FCFS(), "SJF": SJF(), "SVF": SVF(), "1-bit SVF": OneBitSVF()}
    print(f"serving simulator: {args.n} azure-conv requests, M = {KV_SLOTS} slots, one thread")
    print(
        f"{'load':>5} {'policy':<10} {'wall s':>8} {'req/s wall':>11} {'req/s cpu':>10} {'steps':>9} {'mean lat':>9}"
    )
    workloads = {
        load: synthetic_workload("azure-conv", args.n, load=load, kv_slots=KV_SLOTS, seed=0) for load in (0.8, 1.2)
    }
    for load, work in workloads.items():
        for name, pol in policies.items():
            t0, c0 = time.perf_counter(), time.process_time()
            res = simulate(work, pol, KV_SLOTS)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            print(
                f"{load:>5} {name:<10} {wall:>8.2f} {args.n / wall:>11.0f} {args.n / cpu:>10.0f} {res.steps:>9d} "
                f"{res.latency.mean():>9.1f}"
            )
    work = workloads[1.2]
    for base in ("FCFS", "SJF"):
        r = speed_ratio(
            lambda: simulate(work, policies["SVF"], KV_SLOTS),
            lambda b=base: simulate(work, policies[b], KV_SLOTS),
            repeats=args.repeats,
            warmup=0,
        )
        print(
            f"SVF vs {base} (load 1.2, {args.n} requests): {r['candidate_s']:.2f} s vs {r['baseline_s']:.2f} s, "
            f"speedup {r['speedup']:.2f}x"
        )


if __name__ == "__main__":
    main()
