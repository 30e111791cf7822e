"""geode.analysis's public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

import geode.analysis as analysis


def _x(n, d, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _orth(d, k, seed=0):
    return np.linalg.qr(_x(d, k, seed))[0]


def _metrics(n=6, d=2, seed=0):
    a = np.random.default_rng(seed).normal(size=(n, 3, d))
    return np.einsum("nki,nkj->nij", a, a)


def _spd(d=4, seed=0):
    a = _x(6, d, seed)
    return a.T @ a


def _sae(d_in=4, d_sae=6):
    return analysis.SparseAutoencoder(d_in, d_sae, seed=0, dtype=torch.float64)


def _lin():
    a = torch.tensor([[1.0, 0.5], [0.0, 2.0], [0.3, 0.0]], dtype=torch.float64)
    return lambda z: torch.tanh(z @ a.T)


def _lang():
    return analysis.AgreementLanguage(n_nouns=2, n_lemmas=2, n_distractors=3, n_slots=2)


def _tiny():
    lang = _lang()
    return analysis.TinyTransformer(lang.vocab_size, lang.length, d=8, n_layers=1, heads=2, seed=0)


def _ids(n=3):
    return torch.as_tensor(_lang().sample(n, np.random.default_rng(0))[0])


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))


def _pf():
    return analysis.planted_features(0, d=8, m=10, k_active=2, p_active=0.3, noise=0.02)


# main methods of the modules, as wrappers whose parameters carry the method's own argument names
def _sae_forward(x):
    return _sae()(x)


def _sae_encode(x):
    return _sae().encode(x)


def _sae_decode(a):
    return _sae().decode(a)


def _gae_fit(sae, X_ood, X_id=None):
    return analysis.GAE(mode="direct", energy=0.9).fit(sae, X_ood, X_id=X_id)


def _tiny_forward(ids):
    return _tiny()(ids)


def _quantile_forward(x):
    return analysis.QuantileReLU(0.5)(x)


def _relu2_forward(x):
    return analysis.ReLU2()(x)


def _gelu2_forward(x):
    return analysis.GELU2()(x)


def _clipped_relu2_forward(x):
    return analysis.ClippedReLU2(50.0)(x)


def _clipped_gelu2_forward(x):
    return analysis.ClippedGELU2(50.0)(x)


METHODS = {
    "SparseAutoencoder.forward": _sae_forward,
    "SparseAutoencoder.encode": _sae_encode,
    "SparseAutoencoder.decode": _sae_decode,
    "GAE.fit": _gae_fit,
    "TinyTransformer.forward": _tiny_forward,
    "QuantileReLU.forward": _quantile_forward,
    "ReLU2.forward": _relu2_forward,
    "GELU2.forward": _gelu2_forward,
    "ClippedReLU2.forward": _clipped_relu2_forward,
    "ClippedGELU2.forward": _clipped_gelu2_forward,
}

_PAIR = lambda: ((_x(10, 3), _x(10, 2, seed=1)), {})  # noqa: E731

CALLS = {  # -> (args, kwargs), built fresh each time
    # shared: similarity
    "canonical_correlations": _PAIR,
    "cca": _PAIR,
    "check_pair": _PAIR,
    "linear_cka": _PAIR,
    "procrustes_distance": _PAIR,
    "pwcca": _PAIR,
    "rbf_cka": lambda: ((_x(10, 3), _x(10, 2, seed=1)), {"bandwidth": 1.0}),
    "rdm": lambda: ((_x(6, 3),), {}),
    "rsa": _PAIR,
    "svcca": lambda: ((_x(10, 3), _x(10, 2, seed=1)), {"keep": 0.99}),
    # shared: pullback
    "jacobians": lambda: ((_lin(), _x(5, 2)), {}),
    "pullback_metric": lambda: ((_lin(), _x(5, 2)), {}),
    "metric_from_samples": lambda: ((_x(20, 2), _x(20, 3, seed=1)), {}),
    # shared: sae
    "SparseAutoencoder": lambda: ((4, 6), {"activation": "topk", "k": 2}),
    "SparseAutoencoder.forward": lambda: ((torch.as_tensor(_x(5, 4)),), {}),
    "SparseAutoencoder.encode": lambda: ((torch.as_tensor(_x(5, 4)),), {}),
    "SparseAutoencoder.decode": lambda: ((torch.as_tensor(np.abs(_x(5, 6))),), {}),
    "fvu": lambda: ((_sae(), _x(10, 4)), {}),
    "train_sae": lambda: ((_x(10, 4), 6), {"steps": 2, "batch_size": 4, "l1_coeff": 0.01, "lr": 1e-3}),
    # agop-engagement
    "AgreementLanguage": lambda: ((), {"n_nouns": 2, "p_attractor": 0.5}),
    "TinyTransformer": lambda: ((10, 5), {"d": 8, "n_layers": 1, "heads": 2}),
    "TinyTransformer.forward": lambda: ((_ids(),), {}),
    "agop": lambda: ((_tiny(), _ids(), "blocks.0"), {"batch_size": 2}),
    "agop_loop": lambda: ((_tiny(), _ids(), "blocks.0"), {}),
    "concept_subspace": lambda: ((_x(20, 4), np.arange(20) % 2), {"C": 1.0}),
    "engagement": lambda: ((_spd(), _orth(4, 2)), {}),
    "layer_names": lambda: ((_tiny(),), {}),
    "next_token_loss": lambda: (
        (torch.randn(2, 5, 7, generator=torch.Generator().manual_seed(0)), torch.arange(10).reshape(2, 5) % 7),
        {},
    ),
    "subspace_alignment": lambda: ((_spd(), _orth(4, 2)), {}),
    # gae
    "GAE": lambda: ((), {"mode": "direct", "energy": 0.9, "ridge": 0.1}),
    "GAE.fit": lambda: ((_sae(), _x(12, 4)), {"X_id": _x(12, 4, seed=1)}),
    "active_subspace": lambda: ((_x(20, 4),), {"energy": 0.9}),
    "dictionary_subspace": lambda: ((_sae(), _x(10, 4), 2), {}),
    "direct_rotation": lambda: ((_orth(4, 2), _orth(4, 2, seed=1)), {"tol": 1e-10}),
    "faithfulness_gap": lambda: ((_orth(4, 2), _orth(4, 2, seed=1)), {}),
    "mean_shift_adapt": lambda: ((_sae(), _x(10, 4)), {}),
    "planted_features": lambda: ((0,), {"d": 8, "m": 10, "k_active": 2, "p_active": 0.3, "noise": 0.02}),
    "refit_decoder": lambda: ((_sae(), _x(10, 4)), {"ridge": 0.1}),
    "rotation_towards": lambda: ((_pf(), 30.0), {}),
    "run_shift_study": lambda: (
        (0,),
        {
            "shifts": (("rotation", 10.0),),
            "tune_shift": ("rotation", 30.0),
            "grids": {
                "gae_theory": {"energy": [0.9]},
                "gae_direct": {"ridge": [0.1]},
                "refit": {"ridge": [0.1]},
                "finetune": {"lr": [1e-3]},
            },
            "retrain_at": (("rotation", 10.0),),
            "n_id": 40,
            "n_ood": 20,
            "n_test": 20,
            "val_fraction": 0.2,
            "k": 2,
            "l1_coeff": 0.05,
            "d_sae": 32,
            "steps": 1,
            "finetune_steps": 1,
            "batch_size": 8,
            "lr": 1e-3,
        },
    ),
    "sample_activations": lambda: ((_pf(), 5, 0), {"theta_deg": 10.0, "scale": 1.0}),
    "shifted_activations": lambda: ((_pf(), 5, 0, "warp", 0.5), {}),
    # msa
    "estimate_intrinsic_dim": lambda: ((_x(20, 3),), {"n_neighbors": 5, "variance": 0.9}),
    "local_chart_metrics": lambda: ((_x(20, 3), _x(20, 3, seed=1), 2), {"n_neighbors": 6}),
    "msa_distance": lambda: ((_x(20, 3), _x(20, 3, seed=1), _x(20, 2, seed=2)), {"eps": 1e-6, "rank": "ignore"}),
    "msa_from_metrics": lambda: ((_metrics(), _metrics(seed=1)), {"eps": 1e-6, "rank": "ignore"}),
    "spectral_ratios": lambda: ((_metrics(), _metrics(seed=1)), {"eps": 1e-6}),
    # weight-drift
    "ClippedGELU2": lambda: ((), {"clip": 50.0}),
    "ClippedGELU2.forward": lambda: ((torch.randn(4, 3, generator=torch.Generator().manual_seed(0)),), {}),
    "ClippedReLU2": lambda: ((), {"clip": 50.0}),
    "ClippedReLU2.forward": lambda: ((torch.randn(4, 3, generator=torch.Generator().manual_seed(0)),), {}),
    "GELU2": lambda: ((), {}),
    "GELU2.forward": lambda: ((torch.randn(4, 3, generator=torch.Generator().manual_seed(0)),), {}),
    "QuantileReLU": lambda: ((0.5,), {"mode": "mask"}),
    "QuantileReLU.forward": lambda: ((torch.randn(4, 3, generator=torch.Generator().manual_seed(0)),), {}),
    "ReLU2": lambda: ((), {}),
    "ReLU2.forward": lambda: ((torch.randn(4, 3, generator=torch.Generator().manual_seed(0)),), {}),
    "SparsityMonitor": lambda: ((_mlp(),), {"eps": 0.0}),
    "downstream_drift": lambda: (
        ([[torch.randn(3, 2, generator=torch.Generator().manual_seed(s)), torch.randn(4)] for s in range(3)],),
        {},
    ),
    "expected_preactivation_gradient": lambda: (
        (_mlp(), torch.randn(6, 3, generator=torch.Generator().manual_seed(0)), torch.tensor([0, 1, 0, 1, 1, 0])),
        {"loss": "ce"},
    ),
    "make_activation": lambda: (("clipped_relu2",), {"clip": 50.0}),
}
NOT_CALLED = {
    "SHIFT_KINDS": "a constant (tuple of names)",
    "ACTIVATIONS": "a constant (name -> activation class)",
    "SingularMetricWarning": "a warning class",
}
_ACT = {  # elementwise activations follow torch's own (documented in each class docstring)
    ("x", "nan"): "like torch's activations, NaN propagates (no per-step scan of the input)",
    ("x", "inf"): "inf follows the formula (clipped to c where the activation clips)",
    ("x", "empty"): "an empty tensor gives an empty output",
    ("x", "wrong shape"): "elementwise on a tensor of any shape",
}
_EMPTY_BATCH = "an empty batch gives an empty output (documented)"
OK: dict[str, dict[tuple[str, str], str]] = {
    **{f"{c}.forward": _ACT for c in ("ReLU2", "ClippedReLU2", "GELU2", "ClippedGELU2")},
    "QuantileReLU.forward": {("x", "wrong shape"): "any shape with the batch along dimension 0 (documented)"},
    "SparseAutoencoder.encode": {("x", "empty"): _EMPTY_BATCH},
    "SparseAutoencoder.decode": {("a", "empty"): _EMPTY_BATCH},
    "SparseAutoencoder.forward": {("x", "empty"): _EMPTY_BATCH},
    "run_shift_study": {("retrain_at", "empty"): "no retraining at any shift (documented)"},
}


PACKAGE = analysis


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []
