"""geode.llm's public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import geode.llm as llm  # noqa: E402
from geode.models import build_tiny_lm  # noqa: E402

VOCAB = 12
HAND = [b"", b"a", b"b", b"ab", b"abc", b"ba", b"c", b"bab"]


@functools.cache
def _lm_cached():
    return build_tiny_lm(VOCAB, d_model=16, n_layers=1, n_heads=2, n_kv_heads=1, d_ff=32, max_positions=16, seed=0)


def _lm():
    import copy

    return copy.deepcopy(_lm_cached())


def _t(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _lp(n=3, seed=0):
    return -_t(n, seed=seed).abs() - 0.5


def _ids(b=2, t=5, seed=0):
    return torch.randint(1, VOCAB, (b, t), generator=torch.Generator().manual_seed(seed))


@functools.cache
def _vocab():  # one vocabulary: a path's prefix nodes live in the vocabulary that built it
    return llm.ByteVocab(HAND)


def _path():
    return _vocab().path([3, 5, 6])


def _logits3():
    return _t(3, len(HAND), seed=1).double()


def _graphs(seed=0, dp=8, df=6):
    g = torch.Generator().manual_seed(seed)
    paper = llm.batch_graphs(
        [torch.randn(4, dp, generator=g), torch.randn(2, dp, generator=g)], [[(0, 1), (0, 2), (1, 3)], [(0, 1)]]
    )
    formal = llm.batch_graphs([torch.randn(3, df, generator=g), torch.randn(1, df, generator=g)], [[(0, 1)], []])
    return paper, formal


def _compose():
    torch.manual_seed(0)
    return llm.ComposeModel(8, 6, 12, d_model=16, n_layers=1, formal_struct_dim=10, fusion_heads=4, n_heads=2)


def _tok(b=2):
    tok = torch.randint(3, 12, (b, 5), generator=torch.Generator().manual_seed(0))
    tok[:, 0] = 1
    return tok


@functools.cache
def _universe():
    return llm.generate_universe(n_topics=4, n_concepts=8, length=4, papers_per_step=3, n_theorems=30, seed=0)


def _law_data():
    N = np.array([41.0, 41.0, 81.0, 81.0, 161.0, 161.0])
    D = np.array([256.0, 512.0, 256.0, 1024.0, 512.0, 2048.0])
    U = np.array([256.0, 256.0, 256.0, 512.0, 512.0, 512.0])
    L = 2.0 + 50.0 / N**0.3 + 80.0 / D**0.3
    return N, D, U, L


def _reward(prompts, responses, mask=None):
    return torch.zeros(responses.shape[0])


# main methods, as wrappers whose parameters carry the method's own argument names
def _law_fit(N, D, U, loss):
    return llm.ChinchillaLaw(n_starts=1, maxiter=5).fit(N, D, U, loss).params_


def _law_predict(N, D, U):
    return llm.ChinchillaLaw().set_params(e=0.5, a=6.0, b=7.0, alpha=0.34, beta=0.28).predict(N, D, U)


def _bridge_forward(x):
    torch.manual_seed(0)
    return llm.BridgeProjection(6, 4)(x)


def _gnn_forward(x, adj, mask=None):
    torch.manual_seed(0)
    return llm.SimpleGNN(5, 7, num_layers=1)(x, adj, mask)


def _fusion_forward(paper, theorem, paper_mask, theorem_mask):
    torch.manual_seed(0)
    return llm.FusionCrossAttention(8, 2)(paper, theorem, paper_mask, theorem_mask)


def _fp4_forward(x):
    torch.manual_seed(0)
    return llm.FP4Linear(16, 4)(x)


def _retriever_scores(queries, pool):
    return llm.ClaimRetriever(["a b c", "b c d", "c d e", "a e"]).scores(queries, pool)


METHODS = {
    "ChinchillaLaw.fit": _law_fit,
    "ChinchillaLaw.predict": _law_predict,
    "BridgeProjection.forward": _bridge_forward,
    "SimpleGNN.forward": _gnn_forward,
    "FusionCrossAttention.forward": _fusion_forward,
    "FP4Linear.forward": _fp4_forward,
    "ClaimRetriever.scores": _retriever_scores,
}

_DPO = lambda: ((_lp(), _lp(seed=1), _lp(seed=2), _lp(seed=3)), {"beta": 0.1})  # noqa: E731
_BVPO = lambda: (tuple(_lp(seed=s) for s in range(8)), {"alpha": 0.5, "beta": 0.1})  # noqa: E731
_SCORES = lambda: ((np.array([[0.9, 0.5, 0.1], [0.2, 0.8, 0.3]]), np.array([1, 0])), {})  # noqa: E731

CALLS = {  # -> (args, kwargs), built fresh each time
    # bvpo
    "BVPOTrainer": lambda: ((_lm(),), {"alpha": 0.5, "beta": 0.1, "lr": 1e-3}),
    "PreferenceBatch": lambda: ((_ids(), _ids(seed=1), 2), {}),
    "bvpo_loss": _BVPO,
    "dpo_loss": _DPO,
    "mse_optimal_alpha": lambda: ((np.random.default_rng(0).normal(size=(5, 3)), np.zeros(3)), {}),
    "sequence_logprobs": lambda: ((_lm(), _ids(), 2), {}),
    # bytedistill
    "BytePath": lambda: (tuple(getattr(_path(), f) for f in _path().__dataclass_fields__), {}),
    "ByteVocab": lambda: ((HAND,), {}),
    "aligned_chunks": lambda: ((_path(), _path()), {}),
    "blda_from_byte_probs": lambda: (
        (torch.softmax(_t(5, 256, seed=1).double(), -1), torch.log_softmax(_t(5, 256).double(), -1)),
        {},
    ),
    "blda_loss": lambda: ((_logits3()[None], [_path()], _vocab(), _logits3()[None] + 0.1, [_path()], _vocab()), {}),
    "byte_distributions": lambda: ((_logits3(), _path(), _vocab()), {}),
    "byte_level_bytes": lambda: ((), {}),
    "uld_loss": lambda: ((torch.softmax(_t(2, 4).double(), -1), _t(2, 5, seed=1).double()), {"temperature": 1.0}),
    # captrack
    "Capability": lambda: (("X1", "x", "CAN"), {}),
    "CapabilityRegistry": lambda: ((), {}),
    "CapabilitySuite": lambda: ((), {"seed": 0}),
    "DriftReport": lambda: (([{"metric": "a", "drift": 1.0}], [{"capability": "W1", "drift": 1.0}]), {}),
    "Metric": lambda: (("acc", "C1"), {}),
    "TextProbe": lambda: (("p", "W1", "hello"), {}),
    "drift_report": lambda: (
        ({"a": np.array([0.8, 0.6, 0.7])}, {"a": np.array([0.5, 0.4, 0.6])}, {"a": "W1"}),
        {"n_boot": 100},
    ),
    "evaluate_text_model": lambda: ((lambda ps: ["Sure."] * len(ps), llm.make_text_probes(1, seed=0)), {}),
    "is_refusal": lambda: (("I'm sorry, but I can't help with that.",), {}),
    "make_text_probes": lambda: ((1,), {"seed": 0}),
    "relative_drift": lambda: ((np.array([0.5, 0.6]), np.array([0.4, 0.5])), {}),
    # cd_scaling
    "CDScalingLaw": lambda: ((), {"delta": 1e-3, "n_starts": 1}),
    "ChinchillaLaw.fit": lambda: (_law_data(), {}),
    "ChinchillaLaw": lambda: ((), {}),
    "ChinchillaLaw.predict": lambda: (_law_data()[:3], {}),
    "MuennighoffLaw": lambda: ((), {"delta": 1e-3, "n_starts": 1}),
    "effective_data": lambda: ((np.array([512.0, 1024.0]), np.array([256.0, 256.0]), 5.0), {}),
    "estimate_token_effectiveness": lambda: (
        (
            np.array([256.0, 512.0, 1024.0]),
            np.array([3.0, 2.8, 2.6]),
            np.array([1024.0]),
            np.array([512.0]),
            np.array([2.65]),
        ),
        {},
    ),
    "muennighoff_loss": lambda: ((np.array([6.34e9]), np.array([242e9]), np.array([25e9])), {}),
    "token_effectiveness": lambda: ((np.array([512.0, 1024.0]), np.array([256.0, 256.0]), 5.0), {}),
    # compose
    "Anchor": lambda: ((0, [0, 1], np.array([[0, 1]]), [2], np.zeros((0, 2), int), 3, "claim"), {}),
    "BridgeProjection": lambda: ((6, 4), {}),
    "BridgeProjection.forward": lambda: ((_t(2, 6),), {}),
    "ClaimRetriever": lambda: ((["a b c", "b c d", "c d e", "a e"],), {}),
    "ClaimRetriever.scores": lambda: ((["a b"], ["a b c", "d e"]), {}),
    "ComposeModel": lambda: ((8, 6, 12), {"d_model": 16, "n_layers": 1, "formal_struct_dim": 10, "n_heads": 2}),
    "FusionCrossAttention": lambda: ((8, 2), {}),
    "FusionCrossAttention.forward": lambda: (
        (_t(2, 3, 8), _t(2, 4, 8, seed=1), torch.ones(2, 3, dtype=torch.bool), torch.ones(2, 4, dtype=torch.bool)),
        {},
    ),
    "GraphBatch": lambda: (tuple(getattr(_graphs()[0], f) for f in ("x", "adj", "mask", "root")), {}),
    "GraphConditionedDecoder": lambda: ((12,), {"d_model": 16, "n_layers": 1, "n_heads": 2, "ctx_dim": 8}),
    "GraphEncoder": lambda: ((8, 10), {"num_layers": 1}),
    "MathUniverse": lambda: (
        tuple(getattr(_universe(), f) for f in _universe().__dataclass_fields__ if f != "anchors"),
        {},
    ),
    "SimpleGNN": lambda: ((5, 7), {"num_layers": 1}),
    "SimpleGNN.forward": lambda: (
        (_t(1, 6, 5), (torch.rand(1, 6, 6, generator=torch.Generator().manual_seed(0)) < 0.4).float()),
        {},
    ),
    "batch_graphs": lambda: (([_t(4, 8), _t(2, 8, seed=1)], [[(0, 1), (1, 3)], [(0, 1)]]), {}),
    "claim_pool": lambda: ((_universe(), _universe().anchors[:3]), {"hard": 2}),
    "generate_universe": lambda: (
        (),
        {
            "n_topics": 4,
            "n_concepts": 8,
            "length": 4,
            "papers_per_step": 3,
            "n_theorems": 30,
            "noise_cite": 0.3,
            "noise_word": 0.3,
        },
    ),
    "info_nce": lambda: ((_t(4, 6), _t(4, 6, seed=1)), {"tau": 0.05}),
    "mean_reciprocal_rank": _SCORES,
    "oracle_claim": lambda: ((_universe(), _universe().anchors[0]), {}),
    "rank_counts": lambda: (_SCORES()[0], {"tol": 1e-9}),
    "recall_at_k": lambda: ((*_SCORES()[0], 1), {}),
    "tfidf_svd": lambda: ((["a b c", "b c d", "c d e", "a e"], ["a b", "d e"], 2), {}),
    # cpa
    "FP4Linear": lambda: ((16, 4), {}),
    "FP4Linear.forward": lambda: ((_t(3, 16),), {}),
    "LowPrecisionGRPO": lambda: (
        (_lm(), _reward),
        {"group_size": 2, "lr": 1e-3, "max_new_tokens": 2, "tis_cap": 2.0, "temperature": 1.0},
    ),
    "LowPrecisionStats": lambda: ((0.5, 0.1, 0.01, 0.02, 0.0, 0.0, 0.0, True), {}),
    "cpa_logprob_gap": lambda: ((_lp(), _lp(seed=1), torch.ones(3)), {}),
    "cpa_loss": lambda: ((_lp(), _lp(seed=1), torch.ones(3)), {}),
    "cpa_token_objective": lambda: ((_lp(), _lp(seed=1)), {}),
    "fake_quant_disabled": lambda: ((_lm(),), {}),
    "fp4_layers": lambda: ((_lm(),), {}),
    "quantize_model": lambda: ((_lm(),), {}),
    "ste_fp4": lambda: ((_t(4, 16),), {}),
    "truncated_is_weights": lambda: ((_lp(), _lp(seed=1)), {"cap": 2.0}),
    # grpo
    "CompactGRPO": lambda: ((_lm(), _reward), {"group_size": 2, "lr": 1e-3, "beta": 0.04, "max_new_tokens": 2}),
    "StableRankReward": lambda: ((_lm(),), {"eos_token_id": 2}),
    "best_of_n": lambda: ((np.array([0.1, 0.5, 0.3, 0.2]), 2), {}),
    "group_advantages": lambda: ((torch.tensor([0.1, 0.5, 0.3, 0.2]), 2), {}),
    "grpo_loss": lambda: ((_t(2, 3), _t(2, 3, seed=1), torch.tensor([0.5, -0.5]), torch.ones(2, 3)), {}),
    "k3_kl": lambda: ((_lp(), _lp(seed=1)), {}),
    "response_hidden_states": lambda: ((_lm(), _ids(2, 3), _ids(2, 2, seed=1)), {}),
    "response_logprobs": lambda: ((_lm(), _ids(2, 3), _ids(2, 2, seed=1)), {}),
    "response_stable_rank": lambda: ((_t(2, 5, 8),), {}),
    "sample_responses": lambda: ((_lm(), _ids(1, 3)), {"n": 2, "max_new_tokens": 2, "temperature": 1.0}),
}

NOT_CALLED = {
    "CAPTRACK_TAXONOMY": "a tuple of Capability records, not callable",
    "MUENNIGHOFF_C4": "a dict of fitted constants, not callable",
    "CPA_LOSS_TYPES": "a tuple of names, not callable",
    "smollm2_generate": "wraps a Hugging Face chat model and tokenizer (SmolLM2): no data argument to corrupt",
    "tokenizer_vocab_bytes": "reads a Hugging Face tokenizer object: no data argument to corrupt",
}

_RECORD = "a plain record: it stores what it is given without checking (documented)"
_HOT = "a per-step loss or forward: shapes checked, values not; NaN propagates like torch's own (documented)"
_BCAST = "N, D, U broadcast together: any shapes that broadcast (documented)"
_FLAT = "any shape holding the values is flattened (documented)"
_EMPTY = "an empty batch gives an empty output (documented)"


def _all(*names, kinds=("nan", "inf", "empty", "wrong shape", "wrong type"), why=_RECORD):
    return {(n, k): why for n in names for k in kinds}


_NI = ("nan", "inf")

OK = {
    "Anchor": _all("paper_nodes", "formal_nodes", kinds=("empty",)),
    "MathUniverse": _all(
        "concepts", "symbols", "paper_text", "paper_cites", "theorem_deps", "theorem_text", kinds=("empty",)
    ),
    "DriftReport": _all("metrics", "capabilities", kinds=("empty",)),
    "GraphBatch": _all("x", "adj"),
    "LowPrecisionStats": _all(
        "loss",
        "reward_mean",
        "mismatch_mean",
        "mismatch_max",
        "is_weight_var",
        "cpa_gap",
        "cpa_loss",
        kinds=("nan", "inf", "wrong type"),
    ),
    "BridgeProjection.forward": {**_all("x", kinds=_NI, why=_HOT), ("x", "empty"): _EMPTY},
    "FP4Linear.forward": {("x", "empty"): _EMPTY},
    "ste_fp4": {("x", "empty"): _EMPTY},
    "FusionCrossAttention.forward": _all("paper", "theorem", kinds=_NI, why=_HOT),
    "SimpleGNN.forward": _all("x", "adj", kinds=_NI, why=_HOT),
    "blda_from_byte_probs": _all("teacher_probs", "student_log_probs", kinds=_NI, why=_HOT),
    "blda_loss": _all("teacher_logits", "student_logits", kinds=_NI, why=_HOT),
    "byte_distributions": _all("logits", kinds=_NI, why=_HOT),
    "uld_loss": _all("teacher_probs", "student_logits", kinds=_NI, why=_HOT),
    "cpa_logprob_gap": _all("student_logp", "teacher_logp", "mask", kinds=_NI, why=_HOT),
    "cpa_loss": {
        **_all("student_logp", "teacher_logp", "mask", kinds=_NI, why=_HOT),
        **_all("student_logp", "teacher_logp", kinds=("inf",), why="an infinite gap is clipped to +-20 (documented)"),
    },
    "cpa_token_objective": {
        **_all("student_logp", "teacher_logp", kinds=("nan",), why=_HOT),
        **_all("student_logp", "teacher_logp", kinds=("inf",), why="an infinite gap is clipped to +-20 (documented)"),
    },
    "truncated_is_weights": {
        **_all("train_logp", "rollout_logp", kinds=("nan",), why=_HOT),
        **_all("train_logp", "rollout_logp", kinds=("inf",), why="an infinite gap gives the cap or 0 (documented)"),
    },
    "grpo_loss": _all("logp", "ref_logp", "advantages", "mask", kinds=_NI, why=_HOT),
    "k3_kl": _all("logp", "ref_logp", kinds=_NI, why=_HOT),
    "info_nce": _all("query", "key", kinds=_NI, why=_HOT),
    "ChinchillaLaw.predict": _all("N", kinds=("wrong shape",), why=_BCAST),
    "effective_data": {
        **_all("D", "U", kinds=("wrong shape",), why=_BCAST),
        ("r_star", "inf"): "r_star = inf: every derived token counts as fresh (documented)",
    },
    "token_effectiveness": {
        **_all("D", "U", kinds=("wrong shape",), why=_BCAST),
        ("r_star", "inf"): "r_star = inf gives eta = 1 (documented)",
    },
    "muennighoff_loss": {
        **_all("N", "D", "U", kinds=("wrong shape",), why=_BCAST),
        **_all("N", "D", "U", kinds=("empty",), why="empty arrays give an empty result (documented)"),
    },
    "best_of_n": {("scores", "wrong shape"): _FLAT},
    "group_advantages": {("rewards", "wrong shape"): _FLAT},
    "relative_drift": _all("base", "adapted", kinds=("wrong shape",), why="scores of any shape: means (documented)"),
    "response_stable_rank": {
        ("hidden_states", "wrong shape"): "a valid (n, T, d) batch: responses of one token of width 1 (documented)"
    },
}


PACKAGE = llm


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []


# ------------------------------------------------------------------------------------------- the audit's repros
def test_audit_dpo_loss_nan():
    """A NaN log-probability gave a NaN loss without a word; it now raises naming the argument."""
    nan = torch.tensor([float("nan"), -1.0])
    ok = torch.tensor([-1.0, -2.0])
    with pytest.raises(ValueError, match="policy_chosen"):
        llm.dpo_loss(nan, ok, ok, ok)
    with pytest.raises(ValueError, match="ref_rejected"):
        llm.dpo_loss(ok, ok, ok, nan)
