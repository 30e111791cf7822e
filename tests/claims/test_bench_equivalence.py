"""Every bench's candidate and baselines compute the same thing (issue 44), at ``smoke`` size.

For each paper with a ``bench.py``: build ``cases("smoke")``, call the candidate and each baseline once, and
compare the outputs with the case's ``compare`` (default :func:`geode.claims.bench.assert_same_output`). A
baseline that computes something else by design (another method, another random stream) is named in the
case's ``differs`` with the reason, and is only checked to run.
"""

from __future__ import annotations

import pytest

from geode import catalog
from geode.claims.bench import BenchCase, bench_module, has_bench

SLUGS = [p.slug for p in catalog.papers(status="implemented") if has_bench(p.slug)]


@pytest.mark.parametrize("slug", SLUGS)
def test_candidate_and_baselines_compute_the_same_thing(slug):
    import importlib

    from geode.core.random import set_single_thread

    set_single_thread()
    cases = importlib.import_module(bench_module(slug)).cases("smoke")
    assert cases and all(isinstance(c, BenchCase) for c in cases)
    for case in cases:
        out = case.candidate()
        for name, fn in case.baselines.items():
            got = fn()
            if name in case.same_output_baselines():
                case.check_same_output(out, name, got)
            else:
                why = case.differs.get(name) or case.differs.get("*")
                assert why and why.strip()


def test_a_bench_without_a_declared_comparison_is_compared_by_default():
    case = BenchCase("toy", lambda: [1.0, 2.0], {"same": lambda: (1.0, 2.0), "off": lambda: [1.0, 2.5]})
    case.check_same_output(case.candidate(), "same", case.baselines["same"]())
    with pytest.raises(AssertionError, match="candidate vs off"):
        case.check_same_output(case.candidate(), "off", case.baselines["off"]())
    assert case.same_output_baselines() == ["same", "off"]
    assert BenchCase("t", lambda: 1, {"b": lambda: 2}, differs={"*": "another method"}).same_output_baselines() == []


def test_differs_must_name_a_baseline_and_give_a_reason():
    with pytest.raises(ValueError, match="not a baseline"):
        BenchCase("t", lambda: 1, {"b": lambda: 2}, differs={"c": "why"})
    with pytest.raises(ValueError, match="reason"):
        BenchCase("t", lambda: 1, {"b": lambda: 2}, differs={"b": " "})
