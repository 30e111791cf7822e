"""geode.graphs's public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import geode.graphs as graphs

pytest.importorskip("torch_geometric")

_N, _F, _C = 16, 3, 2


def _g():
    return graphs.csbm(_N, _C, 0.7, degree=3.0, num_features=_F, seed=0)


def _x():
    return torch.randn(_N, _F, generator=torch.Generator().manual_seed(0))


def _ei():
    return _g().edge_index


def _corr(n=4, p=6, seed=0):
    return graphs.LatentCommunityModel(p=p, K=2).sample(n, 20, seed).corr


def _sym(p=5, seed=0):
    a = (np.random.default_rng(seed).uniform(size=(p, p)) < 0.5).astype(float)
    a = np.maximum(a, a.T)
    np.fill_diagonal(a, 0.0)
    return a


# main methods of the modules, as wrappers whose parameters carry the method's own argument names
def _model_forward(cls, **kw):
    def forward(x, edge_index):
        torch.manual_seed(0)
        return cls(_F, 4, _C, **kw)(x, edge_index)

    return forward


def _castor_forward(x, edge_index, edge_weight=None):
    torch.manual_seed(0)
    return graphs.Castor(_F, 4, _C, hops=2)(x, edge_index, edge_weight)


def _castorconv_forward(z0, edge_index, edge_weight=None):
    torch.manual_seed(0)
    return graphs.CastorConv(_C, hops=2)(z0, edge_index, edge_weight)


def _gprprop_forward(z, edge_index):
    return graphs.GPRProp(hops=2)(z, edge_index)


def _normprop_forward(x, edge_index):
    return graphs.NormProp()(x, edge_index)


def _lcm_sample(n, T, rng):
    return graphs.LatentCommunityModel(p=6, K=2).sample(n, T, rng)


METHODS = {
    "MLP.forward": _model_forward(graphs.MLP),
    "GCN.forward": _model_forward(graphs.GCN),
    "APPNPNet.forward": _model_forward(graphs.APPNPNet, hops=2),
    "GPRGNN.forward": _model_forward(graphs.GPRGNN, hops=2),
    "ACMGCN.forward": _model_forward(graphs.ACMGCN),
    "Castor.forward": _castor_forward,
    "CastorConv.forward": _castorconv_forward,
    "GPRProp.forward": _gprprop_forward,
    "NormProp.forward": _normprop_forward,
    "LatentCommunityModel.sample": _lcm_sample,
}


def _masks():
    d = _g()
    return d.train_mask, d.val_mask, d.test_mask


CALLS = {  # -> (args, kwargs), built fresh each time
    # shared: baselines
    "MLP": lambda: ((_F, 4, _C), {"dropout": 0.5}),
    "MLP.forward": lambda: ((_x(), _ei()), {}),
    "GCN": lambda: ((_F, 4, _C), {"dropout": 0.5}),
    "GCN.forward": lambda: ((_x(), _ei()), {}),
    "APPNPNet": lambda: ((_F, 4, _C), {"dropout": 0.5, "hops": 2, "alpha": 0.1}),
    "APPNPNet.forward": lambda: ((_x(), _ei()), {}),
    "GPRGNN": lambda: ((_F, 4, _C), {"dropout": 0.5, "hops": 2, "alpha": 0.1}),
    "GPRGNN.forward": lambda: ((_x(), _ei()), {}),
    "ACMGCN": lambda: ((_F, 4, _C), {"dropout": 0.5}),
    "ACMGCN.forward": lambda: ((_x(), _ei()), {}),
    "GPRProp": lambda: ((2,), {"alpha": 0.1}),
    "GPRProp.forward": lambda: ((_x(), _ei()), {}),
    "NormProp": lambda: ((), {}),
    "NormProp.forward": lambda: ((_x(), _ei()), {}),
    "fit_node_classifier": lambda: (
        (graphs.MLP(_F, 4, _C), _g(), _masks()),
        {"lr": 0.01, "weight_decay": 5e-4, "epochs": 2, "patience": 1},
    ),
    # shared: data
    "csbm": lambda: ((_N, _C, 0.7), {"degree": 3.0, "num_features": _F, "signal": 1.0, "train": 0.6, "val": 0.2}),
    "mixed_homophily_graph": lambda: (
        (_N, _C, (0.8, 0.2)),
        {"degree": 3.0, "num_features": _F, "signal": 1.0, "train": 0.6, "val": 0.2},
    ),
    "edge_homophily": lambda: ((_ei(), _g().y), {}),
    "random_split": lambda: ((10, np.random.default_rng(0)), {"train": 0.6, "val": 0.2}),
    "validate_edge_index": lambda: ((_ei(), _N), {"symmetric": True}),
    # castor
    "Castor": lambda: ((_F, 4, _C, 2), {"dropout": 0.5, "beta_init": 0.1}),
    "Castor.forward": lambda: ((_x(), _ei()), {"edge_weight": torch.ones(_ei().size(1))}),
    "CastorConv": lambda: ((_C, 2), {"beta_init": 0.1}),
    "CastorConv.forward": lambda: ((_x()[:, :_C], _ei()), {"edge_weight": torch.ones(_ei().size(1))}),
    # connectome-eiv
    "LatentCommunityModel": lambda: (
        (6, 2),
        {"loading_range": (0.2, 0.8), "delta_sd": 0.15, "phi": 0.2, "max_loading": 0.95},
    ),
    "LatentCommunityModel.sample": lambda: ((4, 20, 0), {}),
    "cv_r2": lambda: (
        (np.random.default_rng(0).normal(size=(12, 3)), np.random.default_rng(1).normal(size=12)),
        {"folds": 3, "alphas": np.array([0.1, 1.0])},
    ),
    "eiv_decomposition": lambda: ((0.1, 0.3, 0.25, 0.2), {}),
    "gcn_features": lambda: ((_corr(), _corr(seed=1), 2), {}),
    "knn_graph": lambda: ((_corr()[0], 2), {}),
    "normalized_adjacency": lambda: ((_sym(),), {}),
    "raw_features": lambda: ((_corr(),), {}),
    "sample_correlation": lambda: ((np.random.default_rng(0).normal(size=(2, 10, 4)),), {}),
}
NOT_CALLED = {
    "GRAPH_NAMES": "a constant (tuple of names)",
    "FitResult": "a plain record (dataclass) returned by fit_node_classifier",
    "ConnectomeSample": "a plain record (dataclass) returned by LatentCommunityModel.sample",
    "default_graph_dir": "takes no argument",
    "load_graph": "takes a name and folders (strings, no array to corrupt); tests/graphs/test_castor.py covers them",
}
_PROPAGATES = "documented: a per-step forward checks shapes only; NaN/inf propagates like torch's own layers"
_NAN = {("x", "nan"): _PROPAGATES, ("x", "inf"): _PROPAGATES}
OK: dict[str, dict[tuple[str, str], str]] = {
    **{f"{c}.forward": _NAN for c in ("MLP", "GCN", "APPNPNet", "GPRGNN", "ACMGCN", "Castor", "NormProp")},
    "GPRProp.forward": {("z", "nan"): _PROPAGATES, ("z", "inf"): _PROPAGATES},
    "CastorConv.forward": {("z0", "nan"): _PROPAGATES, ("z0", "inf"): _PROPAGATES},
    "normalized_adjacency": {("A", "wrong shape"): "documented: a stack (n, p, p); (N, 1, 1) is N one-node graphs"},
    "raw_features": {("corr", "wrong shape"): "documented: corr is (n, p, p); (N, 1, 1) is N one-region matrices"},
}


PACKAGE = graphs


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []


# ----------------------------------------------------------------------------- the audit's repros (issue 51, F10)
def test_audit_normalized_adjacency_non_square_names_A():
    # a non-square matrix gave a numpy broadcast error
    with pytest.raises(ValueError, match=r"A must be a square \(p, p\) adjacency"):
        graphs.normalized_adjacency(np.ones((3, 4)))


def test_audit_normalized_adjacency_nan_names_A_not_symmetry():
    # NaN gave "A must be symmetric"
    a = _sym()
    a[0, 1] = a[1, 0] = np.nan
    with pytest.raises(ValueError, match="A must contain only finite values"):
        graphs.normalized_adjacency(a)


def test_audit_normalized_adjacency_valid_call_is_unchanged():
    a = _sym()
    ah = a + np.eye(5)
    s = 1.0 / np.sqrt(ah.sum(-1))
    assert np.array_equal(graphs.normalized_adjacency(a), s[:, None] * ah * s[None, :])


def test_audit_edge_homophily_out_of_range_names_the_index():
    # a valid-shaped int array with a node index out of range gave "edge_index must be an integer tensor of shape
    # [2, E]"; the message now names the out-of-range index
    y = np.array([0, 1, 0, 1, 1])
    with pytest.raises(ValueError, match=r"outside the node range \[0, 5\): node index 7 in edge 1"):
        graphs.edge_homophily(np.array([[0, 1, 2], [1, 7, 3]]), y)
    with pytest.raises(ValueError, match="node index 7 in edge 1"):
        graphs.edge_homophily(torch.tensor([[0, 1, 2], [1, 7, 3]]), torch.as_tensor(y))
    assert graphs.edge_homophily(np.array([[0, 1, 2], [2, 3, 4]]), y) == pytest.approx(2 / 3)
