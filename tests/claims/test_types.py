from __future__ import annotations

import math

import numpy as np
import pytest

from geode.claims import Outcome, Threshold, evaluate_verdict

T = (
    Threshold("strong", "ratio", ">=", 2.0),
    Threshold("rises", "rises", ">=", 1.0),
    Threshold("weak", "ratio", ">=", 1.2),
)


@pytest.mark.parametrize(
    ("metrics", "expected"),
    [
        ({"ratio": 3.0, "rises": 1.0}, "reproduced"),
        ({"ratio": 3.0, "rises": 0.0}, "partial"),
        ({"ratio": 1.5, "rises": 1.0}, "partial"),
        ({"ratio": 1.0, "rises": 1.0}, "not reproduced"),
        ({"rises": 1.0}, "not reproduced"),  # a missing metric fails its thresholds
    ],
)
def test_verdict_follows_the_rules(metrics, expected):
    verdict, checks = evaluate_verdict(T, "strong and rises", "weak", metrics)
    assert verdict == expected
    assert [c["name"] for c in checks] == ["strong", "rises", "weak"]
    assert all(c["passed"] == t.passes(metrics) for c, t in zip(checks, T))


def test_default_rules_are_all_thresholds_and_never_partial():
    assert evaluate_verdict(T, None, None, {"ratio": 3.0, "rises": 1.0})[0] == "reproduced"
    assert evaluate_verdict(T, None, None, {"ratio": 1.5, "rises": 1.0})[0] == "not reproduced"


def test_rules_support_or_not_and_parentheses():
    rule = "(strong or weak) and not rises"
    assert evaluate_verdict(T, rule, None, {"ratio": 1.3, "rises": 0.0})[0] == "reproduced"
    assert evaluate_verdict(T, rule, None, {"ratio": 1.3, "rises": 1.0})[0] == "not reproduced"


@pytest.mark.parametrize(
    "op,value,x,ok", [(">", 1, 1, False), (">=", 1, 1, True), ("<", 1, 0.5, True), ("<=", 1, 2, False)]
)
def test_threshold_operators(op, value, x, ok):
    assert Threshold("t", "m", op, value).passes({"m": x}) is ok


def test_threshold_rejects_bad_definitions():
    with pytest.raises(ValueError, match="op must be"):
        Threshold("t", "m", "==", 1.0)
    with pytest.raises(ValueError, match="identifier"):
        Threshold("not", "m", ">", 1.0)
    with pytest.raises(ValueError, match="finite"):
        Threshold("t", "m", ">", math.nan)


def test_rules_reject_unknown_names_and_code():
    with pytest.raises(ValueError, match="unknown threshold"):
        evaluate_verdict(T, "strong and bogus", None, {})
    with pytest.raises(ValueError, match="may use only"):
        evaluate_verdict(T, "__import__('os')", None, {})
    with pytest.raises(ValueError, match="not a valid expression"):
        evaluate_verdict(T, "strong and", None, {})


def test_threshold_round_trips_through_a_dict():
    t = Threshold("t", "m", "<", 0.25, "small error")
    assert Threshold.from_dict(t.to_dict()) == t


def test_outcome_requires_finite_metrics_and_plain_tables():
    o = Outcome(metrics={"a": np.float32(1.5), "b": 2}, table=[{"x": np.int64(3), "y": np.float64(0.5)}])
    assert o.metrics == {"a": 1.5, "b": 2.0}
    assert o.table == [{"x": 3, "y": 0.5}]
    assert type(o.table[0]["x"]) is int
    with pytest.raises(ValueError, match="metric 'a' must be finite"):
        Outcome(metrics={"a": float("nan")})
    with pytest.raises(TypeError, match="metric 'a' must be a real number"):
        Outcome(metrics={"a": "high"})
    with pytest.raises(ValueError, match="one-line"):
        Outcome(metrics={}, summary="two\nlines")
    with pytest.raises(ValueError, match="figure names"):
        Outcome(metrics={}, figures={"a b": None})


def test_registered_runs_check_mode_and_seed():
    from geode.claims.registry import load_claim

    run = load_claim("_seeded", "geode.claims._testing").run
    assert run("smoke", 1).metrics == {"value": 0.3}
    with pytest.raises(ValueError, match="mode must be one of 'smoke', 'quick', 'full'; got 'medium'"):
        run("medium", 0)
    with pytest.raises(ValueError, match="seed must be >= 0"):
        run("smoke", -2)
    with pytest.raises(TypeError, match="seed must be an integer"):
        run("smoke", 1.5)


def test_threshold_with_aggregation_and_controls_round_trips():
    t = Threshold("t", "m", ">=", 0.1, "gain", agg="bound95", control=("c1", "c2"))
    assert Threshold.from_dict(t.to_dict()) == t and t.controls == ("c1", "c2")
    assert Threshold("u", "m", ">=", 0.1, control="c").controls == ("c",)
    with pytest.raises(ValueError, match="own metric"):
        Threshold("t", "m", ">=", 0.1, control="m")
    with pytest.raises(ValueError, match="malformed|lacks"):
        Threshold.from_dict({"name": "t"})


def test_a_failed_validity_rule_gives_inconclusive_for_one_run():
    ts = (*T, Threshold("floor", "acc", ">=", 0.8))
    assert evaluate_verdict(ts, None, None, {"ratio": 3.0, "rises": 1.0, "acc": 0.5}, "floor")[0] == "inconclusive"
    # the floor is not part of the default reproduced rule
    assert evaluate_verdict(ts, None, None, {"ratio": 3.0, "rises": 1.0, "acc": 0.9}, "floor")[0] == "reproduced"


def _claim(**kw):
    from geode.claims import Claim

    base = dict(
        slug="_x",
        title="x",
        field="_test",
        claim="c",
        paper_figure="f",
        baselines=(),
        thresholds=T,
        reproduced=None,
        partial=None,
        key_metric="ratio",
        run=lambda mode, seed: None,
        module="m",
    )
    return Claim(**{**base, **kw})


def test_claims_need_three_seeds_or_say_how_they_replicate():
    assert _claim().min_seeds == 3
    with pytest.raises(ValueError, match="replication"):
        _claim(min_seeds=1)
    assert _claim(min_seeds=1, replication="60 repetitions x 3 draws").min_seeds == 1
    with pytest.raises(ValueError, match="validity"):
        _claim(validity="nothing_like_this")


def test_the_definition_hash_follows_what_decides_the_verdict():
    base = _claim().definition_hash()
    assert _claim(doc="other words", paper_figure="other figure").definition_hash() == base
    assert _claim(revision=2).definition_hash() != base
    assert _claim(thresholds=(Threshold("strong", "ratio", ">=", 2.5), *T[1:])).definition_hash() != base
    assert _claim(partial="weak").definition_hash() != base
