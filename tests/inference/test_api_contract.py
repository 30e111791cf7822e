"""geode.inference's public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import functools
import tempfile

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import geode.inference as inf  # noqa: E402
from geode.models.tiny_lm import build_tiny_lm  # noqa: E402


@functools.cache
def _lm():
    torch.manual_seed(0)
    return build_tiny_lm(12, d_model=8, n_layers=4, n_heads=2, n_kv_heads=1, max_positions=32, seed=3).eval()


def _rng(seed=0):
    return np.random.default_rng(seed)


def _lengths():
    return np.array([4.0, 0.0, 1.0]), np.array([2.0, 6.0, 1.0])


def _work():
    return inf.Workload(np.array([0.0, 0.5, 1.0]), np.array([4, 0, 1]), np.array([2, 6, 1]))


def _tree():
    t = inf.DraftTree.root(1)
    a = t.add(0, 2, -0.1)
    t.add(0, 3, -0.5)
    t.add(a, 4, -0.2)
    return t


def _probs(n=4, v=6, seed=0):
    p = _rng(seed).random((n, v)) + 0.1
    return p / p.sum(1, keepdims=True)


def _trace_file():
    f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False, prefix="geode-api-")
    f.write("arrival,prompt_tokens,output_tokens\n0.0,4,2\n0.5,1,3\n")
    f.close()
    return f.name


def _dag():
    k = inf.Kernel("k", 2, 10.0, reads=[inf.Access("a", np.array([0, 1]), np.array([0, 0]), np.array([64.0, 64.0]))])
    return inf.KernelDAG({"a": 4096}, [k])


def _gpu():
    return inf.ChipletGPU(chiplets=2, cus=2)


def _plan():
    return inf.Plan([np.array([0, 1])], np.array([0]), np.zeros(1, bool))


def _drafter_data(n=2, t=8, seed=0):
    lm = _lm()
    v, h = lm.config.vocab_size, lm.config.hidden_size
    g = torch.Generator().manual_seed(seed)
    toks = torch.randint(0, v, (n, t), generator=g)
    probs = torch.nn.functional.one_hot(torch.roll(toks, -1, 1), v).float()
    return torch.randn(n, t, 3 * h, generator=g), toks, probs


def _spec_drafter():
    torch.manual_seed(0)
    return inf.SpecBlockDrafter(_lm(), k=2, n_layers=1)


def _loss_args(b=3):
    lm = _lm()
    v, h = lm.config.vocab_size, lm.config.hidden_size
    g = torch.Generator().manual_seed(0)
    feat = torch.randn(b, 3 * h, generator=g)
    toks = torch.randint(0, v, (b, 3), generator=g)
    probs = torch.softmax(torch.randn(b, 2, v, generator=g), -1)
    return feat, toks, probs


# main methods, as wrappers whose parameters carry the method's own argument names
def _workload_with_predicted(predicted):
    return _work().with_predicted(predicted)


def _cost_step_time(prefill_tokens, batch_size):
    return inf.CostModel().step_time(prefill_tokens, batch_size)


def _svf_priority(prompt, predicted_output, arrival):
    return inf.SVF(aging=0.1).priority(prompt, predicted_output, arrival)


def _onebit_priority(prompt, predicted_output, arrival):
    return inf.OneBitSVF(threshold=5.0).priority(prompt, predicted_output, arrival)


def _fcfs_priority(prompt, predicted_output, arrival):
    return inf.FCFS().priority(prompt, predicted_output, arrival)


def _sjf_priority(prompt, predicted_output, arrival):
    return inf.SJF().priority(prompt, predicted_output, arrival)


def _bandit_update(arm, saving_per_token):
    b = inf.CostAwareBandit({"rank_head": 5.0})
    b.update(arm, saving_per_token)
    return b.select(100.0)


def _bandit_select(remaining_tokens):
    return inf.CostAwareBandit({"rank_head": 5.0}).select(remaining_tokens)


def _skip_layers(model, skip):
    with inf.skip_layers(model, skip) as m:
        return len(m.model.layers)


def _drafter_windows(n, t, j):
    return inf.DrafterData(*_drafter_data()).windows(n, t, j)


PRI = lambda: ((np.array([4.0, 0.0, 1.0]), np.array([2.0, 6.0, 1.0]), np.array([0.0, 0.5, 1.0])), {})  # noqa: E731

CALLS = {  # -> (args, kwargs), built fresh each time
    # serving
    "FCFS": lambda: ((), {}),
    "SJF": lambda: ((), {}),
    "Policy": lambda: ((), {}),
    "CostModel": lambda: ((1.0, 0.001, 0.01), {}),
    "CostModel.step_time": lambda: ((16, 2), {}),
    "Workload": lambda: ((np.array([0.0, 0.5, 1.0]), np.array([4, 0, 1]), np.array([2, 6, 1])), {}),
    "Workload.with_predicted": lambda: ((np.array([2.0, 5.0, 1.0]),), {}),
    "SimResult": lambda: (
        (
            "fcfs",
            7,
            np.array([0.0, 1.0]),
            np.array([1.0, 2.0]),
            np.array([2.0, 4.0]),
            np.array([2, 3]),
            np.array([0, 0]),
            4,
            5,
        ),
        {},
    ),
    "simulate": lambda: ((_work(), inf.FCFS(), 8), {"cost": inf.CostModel()}),
    "volume": lambda: (_lengths(), {}),
    "FCFS.priority": PRI,
    "SJF.priority": PRI,
    "SVF.priority": PRI,
    "OneBitSVF.priority": PRI,
    # workloads
    "arrival_times": lambda: ((5, 2.0), {"cv": 1.5}),
    "load_trace": lambda: ((_trace_file(),), {}),
    "measured_capacity": lambda: ((*_lengths(), 8), {"trim": 0.1}),
    "predict_output_lengths": lambda: ((np.array([2.0, 6.0, 1.0]), 0.5), {}),
    "rate_for_load": lambda: (("azure-conv", 0.9, 20_000), {}),
    "synthetic_workload": lambda: (("azure-conv", 5), {"rate": 1.0, "cv": 1.0, "predictor_error": 0.2}),
    # bounds
    "batch_lower_bound": lambda: ((*_lengths(), 8), {}),
    "optimal_batch_cost": lambda: ((*_lengths(), 8), {"time_limit": 10.0}),
    "adversarial_batch_ratio": lambda: ((inf.SJF(), 2), {"iters": 2, "restarts": 1, "max_len": 3, "alpha": 1.0}),
    # svf
    "SVF": lambda: ((), {"aging": 0.1}),
    "OneBitSVF": lambda: ((), {"threshold": 5.0, "quantile": 0.5}),
    "vllm_priority": lambda: (("svf", np.array([4.0, 0.0, 1.0]), np.array([2.0, 6.0, 1.0])), {}),
    # chord
    "CLAP": lambda: ((), {"group": 2, "locality": 0.5}),
    "LADM": lambda: ((), {}),
    "RR": lambda: ((), {}),
    "Access": lambda: (("a", np.array([0, 1]), np.array([0, 0]), np.array([64.0, 64.0])), {}),
    "ChipletGPU": lambda: ((2, 2, 100.0, 100.0, 50.0, 0.5, 1.5, 2.0), {}),
    "ChipletSimResult": lambda: (
        (
            1.0,
            np.zeros(1),
            np.ones(1),
            np.ones(1),
            np.zeros(1, bool),
            64.0,
            0.0,
            64.0,
            np.ones(1),
            np.ones(2),
        ),
        {},
    ),
    "ChordPolicy": lambda: (("static",), {"capacity": 1.5}),
    "Kernel": lambda: (
        ("k", 2, np.array([10.0, 10.0])),
        {"reads": [inf.Access("a", np.array([0, 1]), np.array([0, 0]), np.array([64.0, 64.0]))]},
    ),
    "KernelDAG": lambda: (({"a": 4096}, [_dag().kernels[0]]), {}),
    "Plan": lambda: (([np.array([0, 1])], np.array([0]), np.zeros(1, bool)), {}),
    "make_workload": lambda: (("mlp", _rng()), {}),
    "simulate_chiplets": lambda: ((_dag(), _gpu(), _plan()), {}),
    "tile_pages": lambda: (((8, 64), (0, 4), (0, 32), 2, 4096), {}),
    "ChordPolicy.plan": lambda: ((_dag(), _gpu()), {}),
    # speculative core
    "DraftTree": lambda: (
        ([1, 2],),
        {"parents": [-1, 0], "depths": [0, 1], "scores": [0.0, -0.1], "proposals": [None, None]},
    ),
    "SpecCostModel": lambda: ((0.03, 0.02, 0.004), {}),
    "SpecStats": lambda: ((), {"accepted": [2, 1], "tree_sizes": [3, 3], "calls": [1, 1], "tokens": 3}),
    "TargetSession": lambda: ((_lm(), [1, 2, 3]), {}),
    "acceptance_probs": lambda: ((_probs(1, 6)[0], [3, 0, 1]), {}),
    "autoregressive_decode": lambda: ((_lm(), [1, 2], 2), {"temperature": 1.0}),
    "speculative_decode": lambda: ((_lm(), _spec_drafter(), [1, 2], 2), {"budget": 3, "temperature": 1.0}),
    "verify_greedy": lambda: ((_tree(), [2, 0, 4, 5]), {}),
    "verify_sampling": lambda: ((_tree(), _probs()), {"rng": _rng()}),
    # spirit
    "DecodeStats": lambda: ((), {"target_forwards": 1, "accepted": [2], "cost": 1.0, "tokens": 2}),
    "SpiritPolicy": lambda: ((_lm(),), {"ratios": (0.5,), "refine": 1, "drop": 0.2}),
    "StaticPolicy": lambda: (((1,),), {}),
    "SwiftPolicy": lambda: ((_lm(),), {"ratio": 0.5, "n_cand": 1, "max_iters": 1}),
    "greedy_decode": lambda: ((_lm(), [1, 2], 2), {}),
    "matchness": lambda: ((_lm(), [1, 2, 3, 4], 2, (1,)), {}),
    "run_stream": lambda: ((_lm(), [([1, 2], 2)], inf.StaticPolicy((1,))), {"max_new": 2, "overhead": 0.1}),
    "self_speculative_decode": lambda: ((_lm(), [1, 2], 2, (1,)), {"k": 2, "overhead": 0.1}),
    "skip_layers": lambda: ((_lm(), (1,)), {}),
    "skippable_layers": lambda: ((_lm(),), {}),
    "step_cost": lambda: ((4, 1), {"overhead": 0.1}),
    # specblock
    "CostAwareBandit": lambda: (({"rank_head": 5.0},), {"prior_gain": 0.01, "beta": 1.0, "noise": 0.01}),
    "CostAwareBandit.update": lambda: (("rank_head", 0.05), {}),
    "CostAwareBandit.select": lambda: ((100.0,), {}),
    "DrafterData": lambda: (_drafter_data(), {}),
    "DrafterData.windows": lambda: ((np.array([0, 1]), np.array([0, 1]), 3), {}),
    "EagleDrafter": lambda: ((_lm(),), {"depth": 2, "topk": 2}),
    "ParallelDrafter": lambda: ((_lm(),), {"k": 2, "topk": 2, "n_layers": 1}),
    "SpecBlockDrafter": lambda: ((_lm(),), {"k": 2, "n_layers": 1}),
    "drafter_loss": lambda: ((_spec_drafter(), *_loss_args()), {"n_blocks": 1, "position_weight": 0.8}),
    "evaluate_drafter": lambda: ((_lm(), _spec_drafter(), [[1, 2]], 2, 3), {}),
    "make_drafter_data": lambda: ((_lm(), [[1, 2, 3]], 2), {}),
    "prune_tree": lambda: ((_tree(), 2), {}),
    "rank_buckets": lambda: (
        (torch.randn(3, 20, generator=torch.Generator().manual_seed(0)), torch.tensor([0, 2, 7])),
        {},
    ),
    "rank_features": lambda: ((torch.randn(3, 20, generator=torch.Generator().manual_seed(0)),), {}),
    "train_drafter": lambda: (
        (_spec_drafter(), inf.DrafterData(*_drafter_data())),
        {"steps": 1, "lr": 1e-3, "batch": 2, "j": 4},
    ),
}

METHODS = {
    "Workload.with_predicted": _workload_with_predicted,
    "CostModel.step_time": _cost_step_time,
    "FCFS.priority": _fcfs_priority,
    "SJF.priority": _sjf_priority,
    "SVF.priority": _svf_priority,
    "OneBitSVF.priority": _onebit_priority,
    "CostAwareBandit.update": _bandit_update,
    "CostAwareBandit.select": _bandit_select,
    "DrafterData.windows": _drafter_windows,
    "ChordPolicy.plan": lambda dag, gpu: inf.ChordPolicy("static").plan(dag, gpu),
    "skip_layers": _skip_layers,
}

NOT_CALLED = {
    "TRACES": "a table of trace statistics (a dict), not callable",
    "WORKLOADS": "a tuple of workload names, not callable",
    "BRANCH_WIDTHS": "a tuple of children per rank bucket, not callable",
}

_RECORD = "a plain record of a simulator's or decoder's output: it stores what it is given (documented)"
_EMPTY_SKIP = "an empty skip set is the full model (documented)"


def _all(*names, kinds=("nan", "inf", "empty", "wrong shape", "wrong type"), why=_RECORD):
    return {(n, k): why for n in names for k in kinds}


_HOT = "checked for shape, not values: it runs at every step; NaN propagates like torch's own ops (documented)"

OK = {
    "SimResult": _all("arrival", "first_token", "finish"),
    "ChipletSimResult": _all(
        "makespan",
        "start",
        "finish",
        "kernel_time",
        "local_bytes",
        "remote_bytes",
        "requested_bytes",
        "fetched",
        "busy",
    ),
    "DecodeStats": {
        **_all("cost"),
        ("accepted", "empty"): "a record with no steps yet (the default, documented)",
    },
    "SpecStats": _all(
        "accepted", "tree_sizes", "calls", kinds=("empty",), why="a record with no iterations (default)"
    ),
    "Access": {
        ("nbytes", "wrong shape"): "wg, page and nbytes are flattened: any shape of the right size (documented)"
    },
    "Kernel": {("reads", "empty"): "a kernel that reads nothing (the default)"},
    "Plan": {("dispatch", "empty"): "a plain record; simulate_chiplets checks it against the DAG (documented)"},
    "acceptance_probs": {("candidates", "empty"): "no candidates: nothing accepted, the residual is p (documented)"},
    "predict_output_lengths": {("output", "empty"): "an empty output gives an empty array (documented)"},
    "StaticPolicy": {("skip", "empty"): _EMPTY_SKIP},
    "skip_layers": {("skip", "empty"): _EMPTY_SKIP},
    "self_speculative_decode": {("skip", "empty"): _EMPTY_SKIP},
    "matchness": {("skip", "empty"): _EMPTY_SKIP},
    "drafter_loss": _all("feat", "probs", kinds=("nan", "inf"), why=_HOT),
    "rank_buckets": {
        **_all("logits", kinds=("nan", "inf"), why=_HOT),
        ("logits", "empty"): "checked for shape: an empty batch gives an empty output (documented)",
    },
    "rank_features": {
        **_all("logits", kinds=("nan", "inf"), why=_HOT),
        ("logits", "empty"): "an empty batch gives an empty output (documented)",
    },
}


PACKAGE = inf


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []


# ------------------------------------------------------------------------------------------- the audit's repros
def test_audit_acceptance_probs_candidate_out_of_range():
    """A candidate token 7 for a 3-token distribution was an IndexError deep in the loop."""
    with pytest.raises(ValueError, match="candidates"):
        inf.acceptance_probs(np.array([0.2, 0.3, 0.5]), [7])


def test_audit_batch_lower_bound_empty():
    """Empty arrays gave numpy's "zero-size array to reduction operation maximum which has no identity"."""
    with pytest.raises(ValueError, match="prompt"):
        inf.batch_lower_bound(np.array([], dtype=int), np.array([], dtype=int), 8)
