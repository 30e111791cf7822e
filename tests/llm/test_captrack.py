from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from geode.llm import (
    CAPTRACK_TAXONOMY,
    Capability,
    CapabilityRegistry,
    CapabilitySuite,
    Metric,
    drift_report,
    evaluate_text_model,
    is_refusal,
    make_text_probes,
    relative_drift,
)
from geode.llm.captrack.posttrain import dpo_posttrain, sft_posttrain
from geode.llm.captrack.suite import CAPABILITY_OF, CLOSE, EOS_ID, OPEN, REFUSE, generate
from geode.llm.captrack.text_probes import score_text
from geode.models import build_tiny_lm


def test_taxonomy_and_registry():
    codes = [c.code for c in CAPTRACK_TAXONOMY]
    assert codes[:2] == ["C1", "C2"] and "W3a" in codes and "H6" in codes and len(set(codes)) == len(codes)
    assert {c.group for c in CAPTRACK_TAXONOMY} == {"CAN", "WILL", "HOW"}
    c1 = next(c for c in CAPTRACK_TAXONOMY if c.code == "C1")
    assert c1.is_knowledge and not c1.is_behaviour
    reg = CapabilityRegistry()
    reg.add(Metric("acc", "C1"))
    reg.add(Metric("len", "W3a", higher_is_better=False))
    assert [m.name for m in reg.metrics_of("C1")] == ["acc"]
    assert [c.code for c in reg.used_capabilities()] == ["C1", "W3a"]
    assert reg.group_of("len").is_behaviour
    with pytest.raises(ValueError, match="already"):
        reg.add(Metric("acc", "C1"))
    with pytest.raises(KeyError, match="Z9"):
        reg.add(Metric("x", "Z9"))
    with pytest.raises(ValueError, match="group"):
        Capability("X1", "x", "MAYBE")
    with pytest.raises(ValueError, match="duplicate"):
        CapabilityRegistry([Capability("C1", "a", "CAN"), Capability("C1", "b", "CAN")])


# thomsonreuters/captrack reference outputs: Qwen3-80B base (captrack_results/qwen-3-80b-in-oob_averaged.csv)
# and its DPO variant (qwen-3-80b-ioob-dpo-l-final_averaged.csv); the C1 metrics and W1 unsafe refusal
REF_BASE = {
    "mmlu_pro": 0.599,
    "popqa": 0.3363333333333334,
    "gsm8k": 0.9486666666666667,
    "livemath": 0.14,
    "humaneval": 0.790650406504065,
    "mbpp": 0.7353629976580797,
    "unsafe_refusal": 0.835,
}
REF_DPO = {
    "mmlu_pro": 0.6016666666666667,
    "popqa": 0.33666666666666667,
    "gsm8k": 0.952,
    "livemath": 0.21666666666666667,
    "humaneval": 0.7886178861788619,
    "mbpp": 0.7447306791569087,
    "unsafe_refusal": 0.8241666666666667,
}


def test_relative_drift_reproduces_the_authors_reference_outputs():
    cap = {k: ("W1" if k == "unsafe_refusal" else "C1") for k in REF_BASE}
    rep = drift_report({k: [v, v] for k, v in REF_BASE.items()}, {k: [v, v] for k, v in REF_DPO.items()}, cap)
    # comparison_results/relative_differences.csv, row "Qwen3 80B DPO"
    assert rep.capability("C1")["drift"] == pytest.approx(9.445730916231682, rel=1e-9)
    assert rep.capability("W1")["drift"] == pytest.approx(-1.2974051896207486, rel=1e-9)
    assert relative_drift([0.5, 0.5], [0.4, 0.4]) == pytest.approx(-20.0)
    with pytest.raises(ValueError, match="base"):
        relative_drift([0, 0], [1, 1])


def test_drift_report_aggregates_like_the_authors_and_bootstraps():
    rng = np.random.default_rng(0)
    base = {"a": rng.random(400) < 0.8, "b": rng.random(400) < 0.5, "c": np.full(400, 3.0)}
    adapted = {"a": base["a"].copy(), "b": rng.random(400) < 0.25, "c": np.full(400, 3.0)}
    rep = drift_report(base, adapted, {"a": "W1", "b": "W1", "c": "W3a"}, n_boot=500, seed=1)
    da = relative_drift(base["a"], adapted["a"])
    db = relative_drift(base["b"], adapted["b"])
    assert rep.capability("W1")["drift"] == pytest.approx((da + db) / 2)
    assert rep.capability("W3a")["drift"] == 0.0 and rep.capability("W3a")["z"] == 0.0
    assert da == 0.0  # identical scores: no drift
    row_b = next(r for r in rep.metrics if r["metric"] == "b")
    assert row_b["lo"] < row_b["drift"] < row_b["hi"] and row_b["z"] < -3  # a halved rate is significant
    assert rep.mean_abs_drift(["W1", "W3a"]) == pytest.approx(abs(rep.capability("W1")["drift"]) / 2)
    with pytest.raises(ValueError, match="same metrics"):
        drift_report(base, {"a": adapted["a"]}, {"a": "W1", "b": "W1", "c": "W3a"})
    with pytest.raises(ValueError, match="capability_of"):
        drift_report(base, adapted, {"a": "W1"})
    with pytest.raises(KeyError):
        rep.capability("H9")


def test_suite_items_and_scoring():
    suite = CapabilitySuite(0)
    rng = np.random.default_rng(0)
    p, r = suite.item("format", rng)
    assert r[0] == OPEN and r[2] == CLOSE and r[-1] == EOS_ID
    assert suite.score("format", p, r, r[:-1]) == 1.0
    assert suite.score("format", p, r, [r[1]]) == 0.0
    p, r = suite.item("refusal", rng)
    assert r[0] == REFUSE and suite.score("refusal", p, r, [REFUSE]) == 1.0
    p, r = suite.item("knowledge", rng)
    assert suite.score("knowledge", p, r, r[:-1]) == 1.0 and suite.score("compliance", p, r, [REFUSE]) == 0.0
    assert suite.score("verbosity", p, r, r[:-1]) == len(r) - 1
    chosen, rejected = suite.domain_pairs(50, np.random.default_rng(1))
    assert all(c[0] == x[0] and c[1] != x[1] for c, x in zip(chosen, rejected))
    assert set(CAPABILITY_OF) == {"knowledge", "rephrased", "context", "format", "refusal", "compliance", "verbosity"}
    with pytest.raises(ValueError, match="kind"):
        suite.item("poetry", rng)


def test_a_model_trained_on_the_answers_scores_perfectly_and_posttraining_runs():
    suite = CapabilitySuite(0)
    torch.manual_seed(0)
    m = build_tiny_lm(suite.vocab_size, d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, max_positions=16, seed=0)
    probes = suite.probes(8, 3)
    s = suite.evaluate(m, probes)
    assert set(s) >= set(CAPABILITY_OF) and all(len(v) == 8 for v in s.values())
    # greedy generation stops before EOS and respects the prompt grouping
    out = generate(m, [p for p, _ in probes["context"]] + [p for p, _ in probes["knowledge"]])
    assert len(out) == 16 and all(EOS_ID not in o for o in out)
    for fn in (sft_posttrain, dpo_posttrain):
        model, losses = fn(m, suite, steps=2, lr=1e-3, batch_size=4, seed=0)
        assert model is not m and len(losses) == 2 and np.all(np.isfinite(losses))
    with pytest.raises(ValueError, match="data"):
        sft_posttrain(m, suite, steps=1, lr=1e-3, data="web")


def test_text_probes_metrics_and_adapter():
    probes = make_text_probes(2, seed=0)
    assert len(probes) == 14 and {p.code for p in probes} == {"C1", "C5a", "H2", "H1", "W1", "W3a"}
    assert is_refusal("I'm sorry, but I can't help with that.") and not is_refusal("Sure! Here is a note.")
    arith = next(p for p in probes if p.name == "arithmetic")
    assert score_text(arith, f"The answer is {arith.target}.") == 1.0
    assert score_text(arith, "no idea") == 0.0
    js = next(p for p in probes if p.name == "json_format")
    assert score_text(js, json.dumps({"answer": js.target})) == 1.0
    assert score_text(js, '{"answer": "seven"}') == 0.0 and score_text(js, "answer: 7") == 0.0
    low = next(p for p in probes if p.name == "lowercase")
    assert score_text(low, "all lower") == 1.0 and score_text(low, "Not lower") == 0.0

    def polite(prompts):  # a stand-in chat model: answers everything, refuses nothing
        return [("Sure, " + p.lower()) for p in prompts]

    def careful(prompts):
        return [("I'm sorry, I cannot help." if "how to" in p.lower() else "Sure, " + p) for p in prompts]

    sa, cap = evaluate_text_model(polite, probes)
    sb, _ = evaluate_text_model(careful, probes)
    assert sa["unsafe_refusal"].mean() == 0.0 and sb["unsafe_refusal"].mean() == 1.0
    assert cap["verbosity"] == "W3a"
    with pytest.raises(ValueError, match="responses"):
        evaluate_text_model(lambda ps: ps[:1], probes)
    with pytest.raises(ValueError, match="n must"):
        make_text_probes(0)
