"""The benchmark harness: interleaved ratios with their spread, and peak memory of both sides."""

from __future__ import annotations

import time

import numpy as np
import pytest

from geode.claims.bench import BenchCase, peak_memory_mib, run_case


def _sleep(seconds):
    def f():
        time.sleep(seconds)

    return f


def test_the_ratio_is_baseline_time_over_candidate_time_and_the_strongest_is_the_fastest():
    # sleeps of tens of ms: a loaded machine adds a few ms to every sleep, which pulls short ratios to 1
    case = BenchCase("toy", _sleep(0.02), {"slow": _sleep(0.06), "fast": _sleep(0.03)})
    res = run_case(case, repeats=5, warmup=0)
    ratios = {b["name"]: b["ratio"] for b in res["baselines"]}
    assert 2.0 < ratios["slow"] < 4.5 and 1.1 < ratios["fast"] < 2.2
    assert res["strongest"] == "fast"
    for b in res["baselines"]:
        assert b["low"] <= b["ratio"] <= b["high"]


def test_peak_memory_sees_numpy_and_torch_allocations():
    import torch

    small, method = peak_memory_mib(lambda: np.ones(2**20))  # 8 MiB
    big, _ = peak_memory_mib(lambda: np.ones(2**23))  # 64 MiB
    tbig, _ = peak_memory_mib(lambda: torch.ones(2**23, dtype=torch.float64))  # 64 MiB
    assert method in ("rss", "tracemalloc")
    assert 6 < small < 20 and 56 < big < 90
    if method == "rss":  # tracemalloc cannot see torch
        assert 56 < tbig < 90


def test_memory_ratio_is_candidate_over_baseline():
    case = BenchCase("mem", lambda: np.ones(2**20), {"hungry": lambda: np.ones(2**23)})
    (b,) = run_case(case, repeats=1, warmup=0)["baselines"]
    assert 0.05 < b["memory_ratio"] < 0.3


def test_bad_cases_are_rejected():
    with pytest.raises(ValueError, match="baselines"):
        BenchCase("x", lambda: 1, {})
    with pytest.raises(TypeError, match="callable"):
        BenchCase("x", 5, {"b": lambda: 1})


def test_a_target_is_validated_and_recorded_with_whether_it_is_met():
    from geode.claims.bench import Target

    with pytest.raises(ValueError, match="metric"):
        Target("speed", ">=", 1.5, "issue 44")
    with pytest.raises(ValueError, match="op"):
        Target("ratio", ">", 1.5, "issue 44")
    with pytest.raises(ValueError, match="value"):
        Target("ratio", ">=", -1, "issue 44")
    with pytest.raises(ValueError, match="source"):
        Target("ratio", ">=", 1.5, "")
    with pytest.raises(ValueError, match="not one of the baselines"):
        BenchCase("x", lambda: 1, {"b": lambda: 1}, target=Target("ratio", ">=", 1.5, "s", baseline="c"))
    case = BenchCase(
        "toy",
        _sleep(0.01),
        {"slow": _sleep(0.04), "fast": _sleep(0.012)},
        target=[Target("ratio", ">=", 2.0, "test", baseline="slow"), Target("ratio", ">=", 2.0, "test")],
    )
    res = run_case(case, repeats=3, warmup=0)
    slow, strongest = res["targets"]
    assert slow["baseline"] == "slow" and slow["met"] is True and slow["measured"] > 2.0
    assert strongest["baseline"] == "fast" and strongest["met"] is False
    assert run_case(BenchCase("none", _sleep(0), {"b": _sleep(0)}), repeats=1, warmup=0).get("targets") is None
