"""Verdicts over seeds (protocol v3): intervals, three-valued rules, scoped floors, coverage, ablations, agreement."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats

from geode.claims import Learned, Rules, Threshold, evaluate
from geode.claims.verdict import aggregate, coverage


def _runs(**cols):
    n = len(next(iter(cols.values())))
    return [{k: v[i] for k, v in cols.items()} for i in range(n)]


def _ev(thresholds, runs, tuned=None, **rules):
    return evaluate(Rules(thresholds=tuple(thresholds), **rules), runs, tuned=tuned)


def _row(method, budget=4, axes="lr:4", edge="", **extra):
    return {
        "method": method,
        "selected": "lr=0.01",
        "budget": budget,
        "extend": 0,
        "axes": axes,
        "edge": edge,
        **extra,
    }


# ------------------------------------------------------------------------------------------ aggregation
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


def test_an_interval_that_contains_the_bound_is_unresolved_not_failed():
    t = Threshold("t", "m", ">=", 1.0, agg="bound95")
    ev = _ev([t], _runs(m=[0.2, 1.9, 1.3]))  # mean 1.13; the 90% interval [-0.3, 2.6] contains 1
    (c,) = ev.checks
    assert c["state"] == "unresolved" and c["interval"][0] < 1.0 < c["interval"][1]
    assert ev.verdict == "inconclusive" and ev.underpowered == ["t"]
    assert ev.label == "inconclusive (underpowered: t)"
    # clear of the bound on either side: resolved
    assert _ev([t], _runs(m=[1.5, 1.6, 1.55])).verdict == "reproduced"
    assert _ev([t], _runs(m=[0.1, 0.2, 0.15])).verdict == "not reproduced"
    # a point statistic has no interval: it is never unresolved (and is flagged when it carries the verdict)
    ev = _ev([Threshold("t", "m", ">=", 1.0)], _runs(m=[0.2, 1.9, 1.3]))
    assert ev.verdict == "reproduced" and any("point statistic" in f for f in ev.flags)


def test_one_seed_has_no_interval_but_judges_itself():
    t = Threshold("t", "m", ">=", 1.0, agg="bound95")
    assert _ev([t], _runs(m=[3.0])).checks[0]["state"] == "unresolved"
    assert evaluate(Rules(thresholds=(t,)), _runs(m=[3.0]), single=True).verdict == "reproduced"


def test_k_of_n_counts_seeds():
    t = Threshold("t", "m", ">=", 1.0, agg="4 of 5")
    assert _ev([t], _runs(m=[2, 2, 2, 2, 0]), agreement=0.6).verdict == "reproduced"
    assert _ev([t], _runs(m=[2, 2, 2, 0, 0])).verdict == "not reproduced"
    with pytest.raises(ValueError, match="k <= n"):
        Threshold("t", "m", ">=", 1.0, agg="6 of 5")
    with pytest.raises(ValueError, match="agg must be one of"):
        Threshold("t", "m", ">=", 1.0, agg="mode")


def test_paired_thresholds_judge_the_per_seed_difference():
    # both arms swing with the seed; their difference is steady: the paired bound resolves where raw scores would not
    runs = _runs(method=[0.60, 0.90, 0.75], base=[0.55, 0.85, 0.70])
    ev = _ev([Threshold("beats", "method", ">", "base", agg="bound95")], runs)
    assert ev.verdict == "reproduced" and ev.checks[0]["per_seed"] == pytest.approx([0.05, 0.05, 0.05])
    ratio = Threshold("ratio", "method", ">", "base", agg="geobound95")
    assert ratio.bound == 1.0 and ratio.statistic({"method": 2.0, "base": 1.0}) == 2.0
    assert ratio.statistic({"method": 2.0, "base": 0.0}) is None


# ------------------------------------------------------------------------ per-seed agreement (the mda case)
def test_partial_reproduced_partial_seeds_give_partial_even_when_the_aggregate_reproduces():
    # mda, quick, seeds 0-2: "best at K=4" held in 2 of 3 seeds, "best at K=8" in 3 of 3, "grows" in 2 of 3, so
    # every threshold passed "2 of 3", but the seeds themselves read partial / reproduced / partial
    ts = [
        Threshold("best_k4", "m4", ">", 0.0, agg="2 of 3"),
        Threshold("best_k8", "m8", ">", 0.0, agg="2 of 3"),
        Threshold("grows", "growth", ">", 0.0, agg="2 of 3"),
    ]
    runs = _runs(m4=[-6.9, 0.9, 9.1], m8=[4.2, 8.3, 6.4], growth=[1.2, 4.5, -5.2])
    ev = _ev(ts, runs, reproduced="best_k4 and best_k8 and grows", partial="best_k4 or best_k8")
    assert ev.seed_verdicts == ["partial", "reproduced", "partial"]
    assert ev.verdict == "partial"
    assert any("the seeds do not agree" in f for f in ev.flags)


def test_agreement_can_be_set_by_the_claim_and_demotes_to_not_reproduced():
    t = Threshold("t", "m", ">=", 1.0, agg="1 of 3")
    runs = _runs(m=[2.0, 0.0, 0.0])
    assert _ev([t], runs).verdict == "not reproduced"  # 1 of 3 seeds: not enough agreement
    assert _ev([t], runs, agreement=1 / 3).verdict == "reproduced"
    with pytest.raises(ValueError, match="agreement"):
        Rules(thresholds=(t,), agreement=0.0)


# ------------------------------------------------------------------------------------ three-valued rules
def test_a_rule_decided_whatever_the_unknown_is_decides():
    ts = [
        Threshold("strong", "a", ">=", 1.0, agg="bound95"),  # unresolved below
        Threshold("weak", "b", ">=", 1.0, agg="all"),
    ]
    runs = _runs(a=[0.2, 1.9, 1.3], b=[0.0, 0.0, 0.0])
    # reproduced needs both: weak is false, so the unknown cannot make it true; partial = weak is false too
    ev = _ev(ts, runs, reproduced="strong and weak", partial="weak")
    assert ev.checks[0]["effective"] == "unknown" and ev.verdict == "not reproduced"
    # reproduced = strong or weak: true if strong is, false otherwise; partial never: the unknown decides
    ev = _ev(ts, runs, reproduced="strong or weak")
    assert ev.verdict == "inconclusive" and ev.underpowered == ["strong"] and ev.at_least == "not reproduced"


def test_an_undecided_rule_says_the_lowest_verdict_it_can_reach():
    ts = [Threshold("strong", "a", ">=", 1.0, agg="bound95"), Threshold("weak", "b", ">=", 0.0, agg="all")]
    ev = _ev(ts, _runs(a=[0.2, 1.9, 1.3], b=[1.0, 1.0, 1.0]), reproduced="strong and weak", partial="weak")
    assert ev.verdict == "inconclusive" and ev.at_least == "partial"
    assert any("partial at least" in r for r in ev.reasons)


# -------------------------------------------------------------------------------------- scoped floors
def test_a_floor_voids_only_the_comparisons_that_need_it():
    # castor: a weak ACM-GCN must not hide Castor losing to GPR-GNN
    ts = [
        Threshold("beats_acm", "vs_acm", ">", 0.0, agg="all", arms=("castor", "acm")),
        Threshold("beats_gpr", "vs_gpr", ">", 0.0, agg="all", arms=("castor", "gpr")),
    ]
    floors = [
        Threshold("acm_learns", "acm_acc", ">=", 0.5, agg="all", arms="acm"),
        Threshold("gpr_learns", "gpr_acc", ">=", 0.5, agg="all", arms="gpr"),
        Threshold("bed_ok", "bed", ">=", 1.0, agg="all"),
    ]
    runs = _runs(vs_acm=[1, 1, 1], vs_gpr=[-2, -3, -1], acm_acc=[0.3] * 3, gpr_acc=[0.8] * 3, bed=[1] * 3)
    untuned = {"castor": "test", "acm": "test", "gpr": "test"}
    ev = _ev(ts, runs, floors=floors, method="castor", untuned=untuned)
    by = {c["name"]: c for c in ev.checks}
    assert by["beats_acm"]["effective"] == "unknown" and "floor acm_learns failed" in by["beats_acm"]["void"]
    assert by["beats_gpr"]["effective"] == "failed" and by["beats_gpr"]["needs"] == ["gpr_learns", "bed_ok"]
    assert ev.verdict == "not reproduced"  # losing to GPR-GNN decides whatever ACM-GCN's comparison is
    # a failed bed floor is needed by every comparison: inconclusive, and no seed can help
    for r in runs:
        r["bed"] = 0
    ev = _ev(ts, runs, floors=floors, method="castor", untuned=untuned)
    assert all(c["effective"] == "unknown" for c in ev.checks if c["role"] == "verdict")
    assert ev.verdict == "inconclusive" and ev.underpowered == []


def test_requires_overrides_what_arms_imply_and_default_arms_need_every_floor():
    floors = [Threshold("f1", "x", ">=", 1.0, agg="all", arms="a"), Threshold("f2", "y", ">=", 1.0, agg="all")]
    t_all = Threshold("t_all", "m", ">", 0.0)
    t_req = Threshold("t_req", "m", ">", 0.0, requires="f2")
    rules = Rules(thresholds=(t_all, t_req), floors=tuple(floors), untuned={"a": "test"})
    assert rules.required_floors(t_all) == ["f1", "f2"]
    assert rules.required_floors(t_req) == ["f2"]
    with pytest.raises(ValueError, match="not floors"):
        Rules(thresholds=(Threshold("t", "m", ">", 0.0, requires="nope"),))


def test_a_floor_on_the_papers_own_method_is_refused():
    t = Threshold("t", "m", ">", 0.0)
    with pytest.raises(ValueError, match="paper's own method"):
        Rules(thresholds=(t,), floors=(Threshold("sama_fits", "e", "<", 1.0, arms="sama"),), method="sama")
    with pytest.raises(ValueError, match="paper's own method"):
        Rules(thresholds=(t,), floors=(Threshold("law_fits", "r2", ">", 0.9, arms="law"),), method=("cd", "law"))
    # the same floor on a baseline is fine
    lora_fits = Threshold("lora_fits", "e", "<", 1.0, arms="lora")
    Rules(thresholds=(t,), floors=(lora_fits,), method="sama", tuned=("sama", "lora"))


def test_every_arm_is_tuned_or_untuned_with_a_reason():
    t = Threshold("t", "m", ">", 0.0, arms=("m1", "b1"))
    with pytest.raises(ValueError, match="not declared: method 'm1'"):
        Rules(thresholds=(t,), method="m1", tuned=("b1",))
    learned = (Learned("enc", "acc", trivial="raw"),)
    with pytest.raises(ValueError, match="learned arm 'enc'"):
        Rules(thresholds=(Threshold("u", "m", ">", 0.0),), method="m1", untuned={"m1": "x"}, learned=learned)
    Rules(thresholds=(t,), method="m1", tuned=("b1",), untuned={"m1": "a closed form"})


def test_a_floor_on_the_method_is_refused_at_registration():
    from geode.claims import register

    with pytest.raises(ValueError, match="claim '_refused'.*paper's own method"):

        @register(
            "_refused",
            claim="c",
            paper_figure="f",
            baselines=("b",),
            thresholds=(Threshold("t", "m", ">", 0.0),),
            floors=(Threshold("m_learns", "acc", ">", 0.5, arms="M"),),
            method="M",
        )
        def run(mode, seed):  # pragma: no cover - never registered
            raise AssertionError


def test_arms_must_be_declared_once_any_is():
    with pytest.raises(ValueError, match="not declared"):
        Rules(thresholds=(Threshold("t", "m", ">", 0.0, arms="ghost"),), tuned=("a",))


def test_learned_arms_must_beat_their_untrained_selves():
    t = Threshold("t", "gain", ">", 0.0, agg="all", arms=("enc", "base"))
    arm = Learned("enc", "enc_acc", untrained="enc_init_acc", trivial="raw_acc")
    rules = Rules(thresholds=(t,), method="enc", untuned={"enc": "test", "base": "test"}, learned=(arm,))
    assert [f.name for f in rules.all_floors] == ["enc_beats_untrained", "enc_beats_trivial"]
    good = _runs(gain=[1.0] * 3, enc_acc=[0.9, 0.91, 0.92], enc_init_acc=[0.3, 0.31, 0.29], raw_acc=[0.5] * 3)
    assert evaluate(rules, good).verdict == "reproduced"
    broken = _runs(gain=[1.0] * 3, enc_acc=[0.45, 0.46, 0.44], enc_init_acc=[0.3, 0.31, 0.29], raw_acc=[0.5] * 3)
    ev = evaluate(rules, broken)
    assert ev.verdict == "inconclusive" and "floor enc_beats_trivial failed" in ev.checks[0]["void"]
    with pytest.raises(ValueError, match="untrained"):
        Learned("enc", "enc_acc")


# ----------------------------------------------------------------------------------------- tuning coverage
def test_a_tuned_table_missing_a_declared_method_makes_its_comparisons_unknown():
    ts = [
        Threshold("beats_a", "vs_a", ">", 0.0, agg="all", arms=("m", "a")),
        Threshold("beats_b", "vs_b", ">", 0.0, agg="all", arms=("m", "b")),
    ]
    runs = _runs(vs_a=[1.0] * 3, vs_b=[1.0] * 3)
    tuned = [[_row("m"), _row("a")]] * 3  # b was never tuned
    ev = evaluate(Rules(thresholds=tuple(ts), method="m", tuned=("m", "a", "b")), runs, tuned=tuned)
    by = {c["name"]: c for c in ev.checks}
    assert by["beats_a"]["effective"] == "passed"
    assert by["beats_b"]["effective"] == "unknown" and by["beats_b"]["void"] == ["b not tuned by the protocol"]
    assert ev.verdict == "inconclusive" and ev.underpowered == []
    assert ev.coverage["b"] == ["not in the tuned table of seed(s): 0, 1, 2"]
    complete = [[_row("m"), _row("a"), _row("b")]] * 3
    assert evaluate(Rules(thresholds=tuple(ts), method="m", tuned=("m", "a", "b")), runs, tuned=complete).verdict == (
        "reproduced"
    )


def test_an_edge_selection_unequal_budgets_or_two_value_knobs_make_comparisons_unknown():
    rules = Rules(thresholds=(Threshold("t", "g", ">", 0.0, agg="all"),), method="m", tuned=("m", "swift"))
    runs = _runs(g=[1.0] * 3)
    fine = [_row("m"), _row("swift")]
    assert evaluate(rules, runs, tuned=[fine] * 3).verdict == "reproduced"
    edge = [_row("m"), _row("swift", edge="ratio=0.5 at the upper edge of [0.1, 0.5]")]
    ev = evaluate(rules, runs, tuned=[fine, edge, fine])
    assert ev.verdict == "inconclusive"
    assert ev.coverage["swift"] == ["selected on a grid edge in 3 tuned row(s): ratio 1x"]
    unequal = [_row("m", budget=8), _row("swift", budget=4)]
    ev = evaluate(rules, runs, tuned=[unequal] * 3)
    assert ev.verdict == "inconclusive" and any("shares no budget" in p for p in ev.coverage["swift"])
    two = [_row("m"), _row("swift", axes="ratio:2")]
    assert coverage(rules, [two])["swift"] == ["knobs with fewer than 3 values: ratio (2)"]
    # budgets are compared within a study (rows sharing their other keys, e.g. K), not across studies
    studies = [_row("m", budget=8, K=8), _row("swift", budget=8, K=8), _row("m", K=4), _row("swift", K=4)]
    assert coverage(rules, [studies]) == {"m": [], "swift": []}


def test_untuned_methods_need_a_reason_and_cannot_also_be_tuned():
    t = Threshold("t", "g", ">", 0.0)
    with pytest.raises(ValueError, match="reason"):
        Rules(thresholds=(t,), untuned={"fcfs": ""})
    with pytest.raises(ValueError, match="both tuned and untuned"):
        Rules(thresholds=(t,), tuned=("fcfs",), untuned={"fcfs": "no knob"})


# ------------------------------------------------------------------------------------------- idea ablation
def test_the_headline_must_beat_its_idea_ablation_or_the_verdict_is_at_most_partial():
    t = Threshold("best", "method_margin", ">", 0.0, agg="all", ablation="ablation_margin")
    beaten = _runs(method_margin=[3.0, 4.0, 5.0], ablation_margin=[1.0, 2.0, 1.0])
    assert _ev([t], beaten).verdict == "reproduced"
    not_beaten = _runs(method_margin=[3.0, 4.0, 5.0], ablation_margin=[6.0, 7.0, 8.0])
    ev = _ev([t], not_beaten)
    assert ev.verdict == "partial" and any("not from the paper's idea" in f for f in ev.flags)
    assert ev.checks[0]["ablation"]["effective"] == "failed"
    # an ablation comparison that is still noisy leaves reproduced-or-partial open
    tb = Threshold("best", "method_margin", ">", 0.0, agg="bound95", ablation="ablation_margin")
    noisy = _runs(method_margin=[3.0, 3.1, 2.9], ablation_margin=[2.0, 4.0, 2.5])
    ev = _ev([tb], noisy)
    assert ev.verdict == "inconclusive" and ev.at_least == "partial" and "best (vs its ablation)" in ev.underpowered


def test_a_reproduced_verdict_without_a_declared_ablation_is_flagged():
    ev = _ev([Threshold("t", "m", ">=", 1.0, agg="all")], _runs(m=[2.0] * 3))
    assert ev.verdict == "reproduced" and any("no idea ablation" in f for f in ev.flags)


# ------------------------------------------------------------------------------------------ other rules
def test_too_few_seeds_is_inconclusive():
    t = Threshold("t", "m", ">=", 1.0)
    ev = _ev([t], _runs(m=[2.0]), min_seeds=3)
    assert ev.verdict == "inconclusive" and "needs at least 3" in ev.reasons[-1]
    assert ev.seed_verdicts == ["reproduced"] and ev.underpowered == []


def test_controls_decide_whether_a_threshold_discriminates_and_flag_the_verdict():
    good = Threshold("good", "gain", ">=", 0.1, control="untrained_gain", agg="all")
    weak = Threshold("weak", "gain", ">=", 0.0, control=("random_gain", "fcfs_gain"), agg="all")
    bare = Threshold("bare", "gain", ">=", 0.05, agg="all")
    runs = _runs(gain=[0.3] * 3, untrained_gain=[-0.1] * 3, random_gain=[-0.2] * 3, fcfs_gain=[0.01] * 3)
    ev = _ev([good, weak, bare], runs, reproduced="good", partial="weak")
    disc = {c["name"]: c["discrimination"] for c in ev.checks}
    assert disc == {"good": "discriminates", "weak": "does not discriminate", "bare": "no control"}
    assert ev.verdict == "reproduced" and ev.carried_by == ["good"]
    assert [f for f in ev.flags if "no idea ablation" not in f] == []
    ev = _ev([good, weak, bare], runs, reproduced="weak")
    assert any("does not discriminate" in f and "fcfs_gain" in f for f in ev.flags)
    ev = _ev([good, weak, bare], runs, reproduced="bare")
    assert any("no negative control" in f for f in ev.flags)


def test_a_control_is_aggregated_like_its_threshold_and_must_be_shown_to_fail():
    t = Threshold("t", "gain", ">=", 0.0, agg="bound95", control="ctrl")
    failing = _runs(gain=[0.5, 0.6, 0.55], ctrl=[-0.4, -0.5, -0.45])  # the control's upper bound < 0
    c = _ev([t], failing).checks[0]
    assert c["discrimination"] == "discriminates" and c["controls"][0]["measured"] < 0  # the easy-side bound
    noisy = _runs(gain=[0.5, 0.6, 0.55], ctrl=[0.4, -0.4, 0.1])  # its interval contains 0: not shown to fail
    ev = _ev([t], noisy)
    assert ev.checks[0]["discrimination"] == "control unresolved"
    assert any("not shown to fail" in f for f in ev.flags)
    missing = _runs(gain=[0.5, 0.6, 0.55])
    assert _ev([t], missing).checks[0]["discrimination"] == "control unresolved"


def test_disagreeing_seeds_are_unstable():
    t = Threshold("t", "m", ">=", 1.0, agg="2 of 3")
    ev = _ev([t], _runs(m=[2.0, 0.5, 2.0]))
    assert ev.verdict == "reproduced" and ev.unstable
    assert ev.seed_verdicts == ["reproduced", "not reproduced", "reproduced"]
    assert any(f.startswith("unstable") for f in ev.flags)


def test_missing_or_non_finite_values_are_unknown_never_passed():
    t = Threshold("t", "m", ">=", 1.0, agg="all")
    for runs in ([{"m": 2.0}, {}, {"m": 2.0}], [{"m": 2.0}, {"m": math.nan}, {"m": 2.0}]):
        ev = _ev([t], runs)
        assert ev.checks[0]["state"] == "missing" and ev.verdict == "inconclusive"
    assert not Threshold("t", "m", ">=", 1.0).holds(None)


def test_rules_round_trip_and_read_schema_2_descriptions():
    rules = Rules(
        thresholds=(Threshold("t", "m", ">", "b", agg="bound95", ablation="abl", arms=("m1", "b1")),),
        floors=(Threshold("f", "x", ">=", 1.0, agg="all", arms="b1"),),
        reproduced="t",
        min_seeds=3,
        method="m1",
        tuned=("b1",),
        untuned={"m1": "closed form"},
        learned=(Learned("b1", "acc", trivial="raw"),),
    )
    assert Rules.from_dict(rules.to_dict()) == rules
    old = {  # schema 2: floors were the thresholds the validity rule named
        "thresholds": [Threshold("t", "m", ">", 0.0).to_dict(), Threshold("f", "x", ">", 0.0).to_dict()],
        "reproduced": "t",
        "validity": "f",
        "min_seeds": 3,
    }
    back = Rules.from_dict(old)
    assert [t.name for t in back.thresholds] == ["t"] and [f.name for f in back.floors] == ["f"]


# ------------------------------------------------------------------------- found by an adversarial review
def test_seeds_inconclusive_on_their_own_make_the_claim_inconclusive_not_negative():
    floors = (Threshold("base_ok", "base_acc", ">=", 0.5),)  # the mean over seeds passes, two seeds fail it
    runs = _runs(gain=[0.3] * 3, base_acc=[0.9, 0.4, 0.45])
    ev = _ev([Threshold("gain", "gain", ">=", 0.1, agg="all")], runs, floors=floors)
    assert ev.seed_verdicts == ["reproduced", "inconclusive", "inconclusive"]
    assert ev.verdict == "inconclusive" and "cannot be judged on their own" in ev.reasons[0]


def test_what_is_left_open_respects_the_seeds_agreement():
    ts = [Threshold("a", "a", ">", 0.0, agg="bound95"), Threshold("b", "b", ">", 0.0)]
    ev = _ev(ts, _runs(a=[1.0, -0.2, 1.2], b=[5.0, -1.0, -1.0]), reproduced="a and b", partial="b")
    # a is unresolved, but whichever way it resolves only one seed reads partial or better
    assert ev.seed_verdicts == ["reproduced", "not reproduced", "not reproduced"]
    assert ev.verdict == "not reproduced" and ev.underpowered == []


def test_a_baseline_given_fewer_configurations_is_not_tuned_equally():
    # spirit: SWIFT's grid was left small while SPIRIT's grew; both in one tune() call share its budget
    rules = Rules(thresholds=(Threshold("t", "g", ">", 0.0),), method="SPIRIT", tuned=("SPIRIT", "SWIFT"))
    rows = [
        {"method": "SPIRIT", "grid": 25, "budget": 25, "trials": 25, "axes": "lr:5, skip:5", "edge": ""},
        {"method": "SWIFT", "grid": 3, "budget": 25, "trials": 3, "axes": "lr:3", "edge": ""},
    ]
    cov = coverage(rules, [rows])
    assert cov["SPIRIT"] == [] and cov["SWIFT"] == ["fewer configurations than the others: 3 vs SPIRIT 25"]
    no_axes = [{k: v for k, v in r.items() if k != "axes"} for r in rows]
    assert any("not recorded" in p for p in coverage(rules, [no_axes])["SPIRIT"])


def test_pattern_arms_are_checked_study_by_study():
    rules = Rules(thresholds=(Threshold("t", "g", ">", 0.0),), method="*: castor", tuned=("*: castor", "*: GCN"))

    def row(key, budget):
        return {"method": key, "grid": budget, "budget": budget, "trials": budget, "axes": "lr:3", "edge": ""}

    crossed = [row("cora: castor", 8), row("cora: GCN", 2), row("citeseer: castor", 2), row("citeseer: GCN", 8)]
    cov = coverage(rules, [crossed])
    assert any("shares no budget" in p and "cora" in p for p in cov["*: GCN"])
    missing = [row("cora: castor", 4), row("cora: GCN", 4), row("citeseer: castor", 4)]
    assert coverage(rules, [missing])["*: GCN"] == ["missing from studies: citeseer (seed 0)"]
    fine = [row("cora: castor", 4), row("cora: GCN", 4), row("citeseer: castor", 4), row("citeseer: GCN", 4)]
    assert coverage(rules, [fine]) == {"*: castor": [], "*: GCN": []}


def test_requires_never_drops_the_learned_floors_of_the_comparisons_own_arms():
    t = Threshold("beats_acm", "gain", ">", 0.0, arms=("castor", "ACM-GCN"), requires=())
    arm = Learned("ACM-GCN", "acm_acc", untrained="acm_init")
    rules = Rules(thresholds=(t,), method="castor", untuned={"castor": "x", "ACM-GCN": "x"}, learned=(arm,))
    assert rules.required_floors(t) == ["ACM_GCN_beats_untrained"]


def test_rules_are_judged_exactly_whatever_the_unknowns_are():
    from geode.claims.types import eval_kleene, eval_rule3, parse_rule

    tree = parse_rule("b or not b", {"b"}, "r")
    assert eval_rule3(tree, {"b": None}) is True and eval_kleene(tree, {"b": None}) is None
    many = [Threshold(f"t{i}", f"m{i}", ">", 0.0, agg="bound95") for i in range(18)]
    runs = [{f"m{i}": (1.0 if i == 0 else [0.5, -0.5, 0.2][j]) for i in range(18)} for j in range(3)]
    ev = _ev(many, runs, reproduced=" or ".join(t.name for t in many))  # t0 passes: decided past 16 unknowns
    assert ev.verdict == "reproduced"


def test_an_ablation_must_differ_from_the_paired_value():
    with pytest.raises(ValueError, match="ablation must name a metric other than"):
        Threshold("t", "m", ">", "base", ablation="base")
