from __future__ import annotations

import math

import numpy as np
import pytest

from geode.claims import Outcome, Rules, Threshold, evaluate

T = (
    Threshold("strong", "ratio", ">=", 2.0),
    Threshold("rises", "rises", ">=", 1.0),
    Threshold("weak", "ratio", ">=", 1.2),
)


def _verdict(reproduced, partial, metrics, floors=()):
    rules = Rules(thresholds=T, floors=tuple(floors), reproduced=reproduced, partial=partial)
    return evaluate(rules, [metrics], single=True).verdict


@pytest.mark.parametrize(
    ("metrics", "expected"),
    [
        ({"ratio": 3.0, "rises": 1.0}, "reproduced"),
        ({"ratio": 3.0, "rises": 0.0}, "partial"),
        ({"ratio": 1.5, "rises": 1.0}, "partial"),
        ({"ratio": 1.0, "rises": 1.0}, "not reproduced"),
        ({"rises": 1.0}, "inconclusive"),  # a missing metric is unknown, never a pass or a fail
    ],
)
def test_verdict_follows_the_rules(metrics, expected):
    assert _verdict("strong and rises", "weak", metrics) == expected


def test_default_rules_are_all_thresholds_and_never_partial():
    assert _verdict(None, None, {"ratio": 3.0, "rises": 1.0}) == "reproduced"
    assert _verdict(None, None, {"ratio": 1.5, "rises": 1.0}) == "not reproduced"


def test_rules_support_or_not_and_parentheses():
    rule = "(strong or weak) and not rises"
    assert _verdict(rule, None, {"ratio": 1.3, "rises": 0.0}) == "reproduced"
    assert _verdict(rule, None, {"ratio": 1.3, "rises": 1.0}) == "not reproduced"


def test_three_valued_rules_follow_kleene_logic():
    from geode.claims.types import eval_rule3, parse_rule

    tree = parse_rule("a and (b or not c)", {"a", "b", "c"}, "r")
    assert eval_rule3(tree, {"a": False, "b": None, "c": None}) is False
    assert eval_rule3(tree, {"a": True, "b": True, "c": None}) is True
    assert eval_rule3(tree, {"a": True, "b": False, "c": None}) is None
    assert eval_rule3(tree, {"a": None, "b": True, "c": False}) is None


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
        Rules(thresholds=T, reproduced="strong and bogus")
    with pytest.raises(ValueError, match="may use only"):
        Rules(thresholds=T, reproduced="__import__('os')")
    with pytest.raises(ValueError, match="not a valid expression"):
        Rules(thresholds=T, reproduced="strong and")


def test_threshold_round_trips_through_a_dict():
    t = Threshold("t", "m", "<", 0.25, "small error")
    assert Threshold.from_dict(t.to_dict()) == t
    v3 = Threshold("t", "m", ">", "other", agg="bound95", ablation="abl", arms=("a", "b"), requires="f")
    assert Threshold.from_dict(v3.to_dict()) == v3 and v3.requires == ("f",) and v3.paired


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


def test_a_failed_floor_gives_inconclusive_for_one_run():
    floor = Threshold("floor", "acc", ">=", 0.8)
    assert _verdict(None, None, {"ratio": 3.0, "rises": 1.0, "acc": 0.5}, [floor]) == "inconclusive"
    # a floor is never part of the reproduced rule
    assert _verdict(None, None, {"ratio": 3.0, "rises": 1.0, "acc": 0.9}, [floor]) == "reproduced"


def _claim(**kw):
    from geode.claims import Claim

    rules = {k: kw.pop(k) for k in ("thresholds", "reproduced", "partial", "min_seeds") if k in kw}
    base = dict(
        slug="_x",
        title="x",
        field="_test",
        claim="c",
        paper_figure="f",
        baselines=(),
        rules=Rules(**{"thresholds": T, "min_seeds": 3, **rules}),
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


def test_the_definition_hash_follows_what_run_measures_not_how_it_is_judged():
    base = _claim().definition_hash()
    assert _claim(doc="other words", paper_figure="other figure").definition_hash() == base
    assert _claim(revision=2).definition_hash() != base
    assert _claim(slug="_y").definition_hash() != base
    # rules are always taken from the current definition, so a changed rule re-judges without re-running
    assert _claim(thresholds=(Threshold("strong", "ratio", ">=", 2.5), *T[1:])).definition_hash() == base
    assert _claim(partial="weak").definition_hash() == base


def test_a_claim_knows_every_metric_it_needs():
    t = Threshold("t", "m", ">", "base", control="ctrl", ablation="abl")
    c = _claim(thresholds=(t,))
    assert c.metrics_needed() == {"m", "base", "ctrl", "abl", "ratio"}
    assert c.missing_metrics({"m": 1.0, "base": 0.0}) == ["abl", "ctrl", "ratio"]
