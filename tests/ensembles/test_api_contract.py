"""geode.ensembles' public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

import geode.ensembles as ens


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def _t(*shape, seed=0):
    return torch.randn(*shape, generator=_g(seed))


def _P(m=3, n=6, c=3, seed=0):
    z = np.random.default_rng(seed).normal(size=(m, n, c))
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def _p(n=6, c=3, seed=0):
    return _P(1, n, c, seed)[0]


def _y(n=6, c=3):
    return np.arange(n) % c


def _x(n, d, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _sd(seed=0):
    return {"w": _t(3, 2, seed=seed), "b": _t(3, seed=seed + 10)}


def _lin(seed=0):
    torch.manual_seed(seed)
    return nn.Linear(4, 3)


class _Clf(nn.Module):
    def __init__(self, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        return self.lin(x)


def _head(seed):
    torch.manual_seed(seed)
    return nn.Linear(3, 3)


# main methods, as wrappers whose parameters carry the method's own argument names
def _layerwise_fit(base, taus, data):
    backbone = nn.Linear(4, 3)
    heads = [_head(k) for k in range(len(taus))]
    return ens.LayerwiseMerger(steps=1).fit(backbone, base, taus, heads, data)


def _mutual_fit(x, y=None):
    return ens.MutualCorrection("naive", rounds=1, epochs=1, batch_size=4).fit(_Clf(0), _Clf(1), x, y=y)[2]


def _safecut_rounds_fit(x, y=None):
    return ens.SafeCutRounds(k=2, rounds=1, epochs=1, batch_size=4).fit(_Clf(0), _Clf(1), x, y=y)[2]


def _safecut_fit(x, y=None):
    return ens.SafeCut(k=2, epochs=1, batch_size=4).fit(_Clf(0), _Clf(1), x, y=y)[2]


def _ts_fit(p, y):
    return ens.TemperatureScaling().fit(p, y).temperature_


def _ts_transform(p):
    return ens.TemperatureScaling().fit(_p(), _y()).transform(p)


def _pots_fit(P, y):
    return ens.PerOracleTemperatureScaling().fit(P, y).temperatures_


def _pots_transform(P):
    return ens.PerOracleTemperatureScaling().fit(_P(), _y()).transform(P)


def _cr_fit(P):
    return ens.ComparabilityRecovery().fit(P).scales_


def _cr_transform(P):
    return ens.ComparabilityRecovery().fit(_P()).transform(P)


def _cr_fuse(P, weights=None):
    return ens.ComparabilityRecovery().fit(_P()).fuse(P, weights=weights)


def _mda_merge(base, finetuned_models, data=None):
    heads = None if data is None else [_head(k) for k in range(len(finetuned_models))]
    return ens.MDA(steps=1).merge(base, finetuned_models, data=data, heads=heads)


def _gate_weights(z_t, z_v):
    return ens.SafeCutGate(1.0).weights(z_t, z_v)


METHODS = {
    "LayerwiseMerger.fit": _layerwise_fit,
    "MutualCorrection.fit": _mutual_fit,
    "SafeCutRounds.fit": _safecut_rounds_fit,
    "SafeCut.fit": _safecut_fit,
    "TemperatureScaling.fit": _ts_fit,
    "TemperatureScaling.transform": _ts_transform,
    "PerOracleTemperatureScaling.fit": _pots_fit,
    "PerOracleTemperatureScaling.transform": _pots_transform,
    "ComparabilityRecovery.fit": _cr_fit,
    "ComparabilityRecovery.transform": _cr_transform,
    "ComparabilityRecovery.fuse": _cr_fuse,
    "MDA.merge": _mda_merge,
    "SafeCutGate.weights": _gate_weights,
}


def _taus():
    base = {k: v for k, v in _lin(0).state_dict().items()}
    return [{k: v - base[k] for k, v in _lin(s).state_dict().items()} for s in (1, 2)]


CALLS = {  # -> (args, kwargs), built fresh each time
    # merging
    "LayerwiseMerger": lambda: ((), {"init": 0.3, "lr": 0.01, "steps": 2}),
    "LayerwiseMerger.fit": lambda: ((dict(_lin(0).state_dict()), _taus(), [_t(5, 4), _t(5, 4, seed=1)]), {}),
    "average_merge": lambda: ((_sd(), [_sd(1), _sd(2)]), {}),
    "check_state_dicts": lambda: ((_sd(), [_sd(1), _sd(2)]), {}),
    "task_arithmetic": lambda: ((_sd(), [_sd(1), _sd(2)]), {"lam": 0.3}),
    "task_vectors": lambda: ((_sd(), [_sd(1), _sd(2)]), {}),
    "ties_merge": lambda: ((_sd(), [_sd(1), _sd(2)]), {"density": 0.5, "lam": 1.0}),
    "ties_tensor": lambda: ((_t(3, 2), [_t(3, 2, seed=1), _t(3, 2, seed=2)]), {"density": 0.5, "lam": 1.0}),
    # mda
    "MDA": lambda: ((), {"lam": 0.3, "rank_frac": 1.0, "lr": 0.01, "steps": 1, "beta": 0.1, "gamma": 1.0}),
    "MDA.merge": lambda: ((_lin(0), [_lin(1), _lin(2)]), {"data": [_t(5, 4), _t(5, 4, seed=1)]}),
    "align_task_vectors": lambda: (([_t(4, 3), _t(4, 3, seed=1)],), {"rank_frac": 1.0}),
    "mda_tensor": lambda: ((_t(4, 3), [_t(4, 3, seed=1), _t(4, 3, seed=2)]), {"lam": 1.0, "rank_frac": 1.0}),
    "polar": lambda: ((_t(4, 3),), {}),
    # simplex
    "accuracy": lambda: ((_p(), _y()), {}),
    "as_oracle_stack": lambda: (("P", _P()), {"atol": 1e-6}),
    "check_simplex": lambda: (("p", _p()), {"atol": 1e-6}),
    "clr": lambda: ((_p(),), {"eps": 1e-6}),
    "expected_calibration_error": lambda: ((_p(), _y()), {"n_bins": 5}),
    "kl_divergence": lambda: ((_p(), _p(seed=1)), {"eps": 1e-6}),
    "nll": lambda: ((_p(), _y()), {"eps": 1e-6}),
    "softmax": lambda: ((_x(4, 3),), {}),
    # fusion
    "PerOracleTemperatureScaling": lambda: ((), {"eps": 1e-6, "bounds": (1e-3, 1e3)}),
    "PerOracleTemperatureScaling.fit": lambda: ((_P(), _y()), {}),
    "PerOracleTemperatureScaling.transform": lambda: ((_P(),), {}),
    "TemperatureScaling": lambda: ((), {"eps": 1e-6, "bounds": (1e-3, 1e3)}),
    "TemperatureScaling.fit": lambda: ((_p(), _y()), {}),
    "TemperatureScaling.transform": lambda: ((_p(),), {}),
    "direct_fusion": lambda: ((_P(),), {"rule": "mean", "weights": np.array([0.2, 0.3, 0.5])}),
    "fit_inverse_temperature": lambda: ((_x(6, 3), _y()), {"bias": np.zeros(3), "low": 1e-3, "high": 1e3}),
    "log_pool": lambda: ((_P(),), {"weights": np.array([0.2, 0.3, 0.5]), "eps": 1e-6}),
    "majority_vote": lambda: ((_P(),), {"weights": np.array([0.2, 0.3, 0.5])}),
    "mean_fusion": lambda: ((_P(),), {"weights": np.array([0.2, 0.3, 0.5])}),
    # mutual
    "MutualCorrection": lambda: (("naive",), {"rounds": 1, "epochs": 1, "lr": 1e-3, "im_weight": 0.1}),
    "MutualCorrection.fit": lambda: ((_t(8, 4),), {"y": np.arange(8) % 3}),
    "confidence_gate": lambda: ((np.array([0.2, 0.9, 0.5]), np.array([0.4, 0.1, 0.5])), {}),
    "mutual_targets": lambda: (
        (np.array([0, 1, 2]), np.array([1, 1, 0]), np.array([0.0, 0.5, 1.0]), 3),
        {},
    ),
    # comparability fusion
    "ComparabilityRecovery": lambda: ((), {"scale_bounds": (0.01, 100.0), "tol": 1e-6, "eps": 1e-6}),
    "ComparabilityRecovery.fit": lambda: ((_P(),), {}),
    "ComparabilityRecovery.transform": lambda: ((_P(),), {}),
    "ComparabilityRecovery.fuse": lambda: ((_P(),), {"weights": np.array([0.2, 0.3, 0.5])}),
    "geometry_descriptor": lambda: ((_P(),), {"eps": 1e-6, "support_floor": 1e-4}),
    "project_log_scales": lambda: ((np.array([0.5, -0.2, 1.0]), -1.0, 1.0), {}),
    # safecut
    "SafeCut": lambda: ((), {"k": 2, "tau_sim": 0.1, "beta": 6.0, "lr": 1e-3, "ema_start": 0.7}),
    "SafeCut.fit": lambda: ((_t(8, 4),), {"y": np.arange(8) % 3}),
    "SafeCutGate": lambda: ((1.0,), {}),
    "SafeCutGate.weights": lambda: ((np.array([0.2, -1.0, 0.5]), np.array([0.4, 0.1, 0.5])), {}),
    "SafeCutRounds": lambda: ((), {"k": 2, "tau": 1.0, "rounds": 1, "epochs": 1}),
    "SafeCutRounds.fit": lambda: ((_t(8, 4),), {"y": np.arange(8) % 3}),
    "cut_reliability": lambda: ((_x(8, 3), np.arange(8) % 2), {"k": 3, "tau_sim": 0.1, "isolated": 0.1}),
    "cut_statistic": lambda: ((_x(8, 3), np.arange(8) % 2), {"k": 3}),
    "diversity_loss": lambda: ((torch.softmax(_t(5, 3), 1),), {"eps": 1e-8}),
    "iic_loss": lambda: ((torch.softmax(_t(5, 3), 1), torch.softmax(_t(5, 3, seed=1), 1)), {"eps": 1e-8}),
    "knn_graph": lambda: ((_x(8, 3), 3), {}),
    "mutual_mask": lambda: ((np.array([[1, 2], [0, 2], [0, 1]]),), {}),
}
NOT_CALLED = {
    "CutStatistic": "a result container built by cut_statistic (which validates the inputs)",
    "RoundState": "a result container built by MutualCorrection.fit (which validates x and y) for the gates",
}
_EMPTY_BATCH = "a row-wise map: an empty batch gives an empty output (documented)"
_LOSS = {  # per-step training losses: shapes checked, values not scanned (documented in the docstrings)
    ("probs", "nan"): "a per-step training loss: NaN propagates as in torch's own losses (documented)",
    ("probs", "inf"): "a per-step training loss: inf propagates as in torch's own losses (documented)",
}
OK: dict[str, dict[tuple[str, str], str]] = {
    "SafeCutGate": {("tau", "inf"): "tau = inf turns every weight off (documented)"},
    "SafeCutRounds": {("tau", "inf"): "tau = inf turns every weight off (SafeCutGate, documented)"},
    "check_simplex": {("p", "empty"): "a validation helper: an empty batch is returned as it is (documented)"},
    "TemperatureScaling.transform": {("p", "empty"): _EMPTY_BATCH},
    "clr": {("p", "empty"): _EMPTY_BATCH},
    "softmax": {
        ("z", "empty"): _EMPTY_BATCH,
        ("z", "wrong shape"): "softmax along an axis of size one gives ones (any shape is accepted, documented)",
    },
    "diversity_loss": _LOSS,
    "iic_loss": {
        **{(f"probs_{s}", k): r for s in "ab" for (_, k), r in _LOSS.items()},
        ("probs_a", "empty"): "a batch of fewer than two rows gives a loss of 0 (documented)",
    },
}


PACKAGE = ens


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []


# the audit's repros (reliability audit 2026-12-02, section 4): each failed silently before the fix
def test_audit_ties_merge_nan_in_finetuned_tensor():
    # was {'w': [0, 0, 0]}: the NaN and the real values beside it vanished in the trimming
    with pytest.raises(ValueError, match=r"finetuned\[0\] tensor 'w'.*finite"):
        ens.ties_merge({"w": torch.zeros(3)}, [{"w": torch.tensor([math.nan, 1.0, 2.0])}])


def test_audit_ties_tensor_nan_in_tensors():
    with pytest.raises(ValueError, match=r"tensors\[0\].*finite"):
        ens.ties_tensor(torch.zeros(3), [torch.tensor([math.nan, 1.0, 2.0])])


def test_audit_softmax_inf():
    # was all NaN
    with pytest.raises(ValueError, match="z must contain only finite values"):
        ens.softmax(np.array([np.inf, 1.0, 2.0]))


def test_audit_softmax_nan():
    # was NaN in, NaN out without a check
    with pytest.raises(ValueError, match="z must contain only finite values"):
        ens.softmax(np.array([np.nan, 1.0, 2.0]))


def test_valid_calls_unchanged():
    z = np.array([[0.0, 1.0, 2.0], [3.0, -1.0, 0.5]])
    e = np.exp(z - z.max(-1, keepdims=True))
    assert np.array_equal(ens.softmax(z), e / e.sum(-1, keepdims=True))
    base, ft = {"w": torch.zeros(4)}, [{"w": torch.tensor([1.0, -2.0, 0.5, 3.0])}, {"w": torch.ones(4)}]
    assert torch.equal(ens.ties_merge(base, ft, density=1.0)["w"], torch.tensor([1.0, -2.0, 0.75, 2.0]))
