"""Benchmark of CapTrack's drift report against the plain relative difference.

The candidate is :func:`drift_report` (per-metric relative drift, capability aggregation and the paired
bootstrap over probe items that gives each drift its standard error); the baseline is the authors' measure
alone (the relative difference of the mean scores per metric, then the mean per capability, no
uncertainty). The ratio shows what the significance costs. Sizes: ``smoke`` 7 metrics x 64 items, 200
resamples; ``quick`` 7 x 256 items (the claim's probes), 1000 resamples, and 40 metrics x 2048 items;
``full`` 40 x 2048 with 2000 resamples.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]


def _case(n_metrics: int, n_items: int, n_boot: int) -> BenchCase:
    import numpy as np

    from geode.llm.captrack.drift import drift_report, relative_drift

    rng = np.random.default_rng(0)
    names = [f"m{i}" for i in range(n_metrics)]
    base = {m: (rng.random(n_items) < 0.7).astype(float) for m in names}
    adapted = {m: (rng.random(n_items) < 0.6).astype(float) for m in names}
    cap = {m: f"C{i % 5}" for i, m in enumerate(names)}

    def plain() -> Any:
        d = {m: relative_drift(base[m], adapted[m]) for m in names}
        return {c: float(np.mean([d[m] for m in names if cap[m] == c])) for c in set(cap.values())}

    return BenchCase(
        f"{n_metrics} metrics x {n_items} probe items, {n_boot} bootstrap resamples",
        candidate=lambda: drift_report(base, adapted, cap, n_boot=n_boot, seed=0),
        baselines={"relative difference of means (no bootstrap)": plain},
        differs={
            "*": "the plain difference of means has no bootstrap; it returns means, the candidate a drift report"
        },
    )


def cases(size: str) -> list[BenchCase]:
    """Drift report with and without its bootstrap."""
    if size == "smoke":
        return [_case(7, 64, 200)]
    if size == "quick":
        return [_case(7, 256, 1000), _case(40, 2048, 1000)]
    return [_case(40, 2048, 2000)]
