"""Verdicts over seeds: aggregation, validity floors, negative controls, flags, stability."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats

from geode.claims import Threshold, evaluate
from geode.claims.verdict import aggregate


def _runs(**cols):
    n = len(next(iter(cols.values())))
    return [{k: v[i] for k, v in cols.items()} for i in range(n)]


@pytest.mark.parametrize(
    "agg, op, expected",
    [
        ("mean", ">=", statistics.fmean([1.0, 2.0, 4.0])),
        ("median", ">=", 2.0),
        ("geomean", ">=", 2.0),
        ("bound95", ">=", statistics.fmean([1, 2, 4]) - stats.t.ppf(0.95, 2) * statistics.stdev([1, 2, 4]) / 3**0.5),
        ("bound95", "<=", statistics.fmean([1, 2, 4]) + stats.t.ppf(0.95, 2) * statistics.stdev([1, 2, 4]) / 3**0.5),
        ("geobound95", ">=", math.exp(0.0 + math.log(2) - stats.t.ppf(0.95, 2) * math.log(2) / 3**0.5)),
        ("all", ">=", 2 / 3),  # 2 of 3 values reach 1.5
        ("2 of 3", ">=", 2 / 3),
    ],
)
def test_aggregates_match_their_definitions(agg, op, expected):
    t = Threshold("t", "m", op, 1.5, agg=agg)
    assert aggregate([1.0, 2.0, 4.0], t) == pytest.approx(expected, rel=1e-12)


def test_a_bound_is_harder_than_the_mean_and_needs_two_seeds():
    t_mean = Threshold("t", "m", ">=", 1.0)
    t_bound = Threshold("t", "m", ">=", 1.0, agg="bound95")
    runs = _runs(m=[0.2, 1.9, 1.3])  # mean 1.13 passes, the lower bound does not
    assert evaluate([t_mean], runs).verdict == "reproduced"
    assert evaluate([t_bound], runs).verdict == "not reproduced"
    assert aggregate([3.0], t_bound) is None


def test_k_of_n_counts_seeds():
    t = Threshold("t", "m", ">=", 1.0, agg="4 of 5")
    assert evaluate([t], _runs(m=[2, 2, 2, 2, 0])).verdict == "reproduced"
    assert evaluate([t], _runs(m=[2, 2, 2, 0, 0])).verdict == "not reproduced"
    with pytest.raises(ValueError, match="k <= n"):
        Threshold("t", "m", ">=", 1.0, agg="6 of 5")
    with pytest.raises(ValueError, match="agg must be one of"):
        Threshold("t", "m", ">=", 1.0, agg="mode")


def test_a_failed_floor_makes_the_verdict_inconclusive_and_is_named():
    ts = [Threshold("win", "gain", ">=", 0.1), Threshold("learns", "acc", ">=", 0.8)]
    ev = evaluate(ts, _runs(gain=[0.5, 0.5, 0.5], acc=[0.9, 0.5, 0.6]), validity="learns")
    assert ev.verdict == "inconclusive" and ev.failed_floors == ["learns"]
    assert "learns" in ev.reasons[0]
    ok = evaluate(ts, _runs(gain=[0.5, 0.5, 0.5], acc=[0.9, 0.9, 0.9]), validity="learns")
    assert ok.verdict == "reproduced" and ok.failed_floors == []
    # floors are left out of the default reproduced rule
    assert [c["role"] for c in ok.checks] == ["verdict", "floor"]


def test_too_few_seeds_is_inconclusive():
    t = Threshold("t", "m", ">=", 1.0)
    ev = evaluate([t], _runs(m=[2.0]), min_seeds=3)
    assert ev.verdict == "inconclusive" and "needs at least 3" in ev.reasons[0]
    assert ev.seed_verdicts == ["reproduced"]


def test_controls_decide_whether_a_threshold_discriminates_and_flag_the_verdict():
    good = Threshold("good", "gain", ">=", 0.1, control="untrained_gain")
    weak = Threshold("weak", "gain", ">=", 0.0, control=("random_gain", "fcfs_gain"))
    bare = Threshold("bare", "gain", ">=", 0.05)
    runs = _runs(gain=[0.3] * 3, untrained_gain=[-0.1] * 3, random_gain=[-0.2] * 3, fcfs_gain=[0.01] * 3)
    ev = evaluate([good, weak, bare], runs, reproduced="good", partial="weak")
    disc = {c["name"]: c["discrimination"] for c in ev.checks}
    assert disc == {"good": "discriminates", "weak": "does not discriminate", "bare": "no control"}
    assert ev.verdict == "reproduced" and ev.carried_by == ["good"] and ev.flags == []
    ev = evaluate([good, weak, bare], runs, reproduced="weak")
    assert any("does not discriminate" in f and "fcfs_gain" in f for f in ev.flags)
    ev = evaluate([good, weak, bare], runs, reproduced="bare")
    assert any("no negative control" in f for f in ev.flags)


def test_a_control_is_aggregated_like_its_threshold():
    t = Threshold("t", "gain", ">=", 0.0, agg="bound95", control="ctrl")
    noisy_control = _runs(gain=[0.5, 0.6, 0.55], ctrl=[0.4, -0.4, 0.1])  # mean > 0, lower bound < 0
    assert evaluate([t], noisy_control).checks[0]["discrimination"] == "discriminates"


def test_disagreeing_seeds_are_unstable():
    t = Threshold("t", "m", ">=", 1.0)
    ev = evaluate([t], _runs(m=[2.0, 0.5, 2.0]))
    assert (
        ev.verdict == "reproduced"
        and ev.unstable
        and ev.seed_verdicts == ["reproduced", "not reproduced", "reproduced"]
    )
    assert any(f.startswith("unstable") for f in ev.flags)


def test_missing_or_non_finite_values_fail():
    t = Threshold("t", "m", ">=", 1.0)
    assert evaluate([t], [{"m": 2.0}, {}, {"m": 2.0}]).verdict == "not reproduced"
    assert evaluate([t], [{"m": 2.0}, {"m": math.nan}, {"m": 2.0}]).verdict == "not reproduced"
    assert not Threshold("t", "m", ">=", 1.0).holds(None)
