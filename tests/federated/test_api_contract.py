"""geode.federated's public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import geode.federated as fed


def _x(n, d, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _y(n=12, c=3):
    return np.arange(n) % c


def _t(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3))


def _params(seed=0):
    return [p.detach().numpy().copy() for p in _mlp(seed).state_dict().values()]


def _glob():
    return [np.zeros((2, 3)), np.zeros(3)]


def _clients():
    return [[np.ones((2, 3)), np.ones(3)], [3 * np.ones((2, 3)), 2 * np.ones(3)]]


def _geometry():
    return fed.aggregate_geometry([fed.client_feature_stats(_x(12, 5), _y(), 3)], rank=2)


def _bank():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 3, 3))
    return fed.PriorBank(["a", "b", "c", "d"], _x(4, 6), _x(4, 3), a @ a.transpose(0, 2, 1) + np.eye(3), np.ones(4))


def _moments():
    return fed.class_moments(_x(12, 3), _y(), 3)


class _Client:
    def __init__(self, i):
        self.i = i

    def fit(self, parameters, config):
        return [a + self.i for a in parameters], 1, {}

    def evaluate(self, parameters, config):
        return 0.0, 1, {}


# main methods, as wrappers whose parameters carry the method's own argument names
def _aggregate(strategy):
    def aggregate(global_params, client_params, num_examples, metrics=None):
        return strategy().aggregate(global_params, client_params, num_examples, metrics)

    return aggregate


def _torch_client_fit(parameters):
    return fed.TorchClient(_mlp(), _x(8, 4), _y(8), epochs=1, batch_size=4).fit(parameters, {"seed": 0})[0]


def _torch_client_evaluate(parameters):
    return fed.TorchClient(_mlp(), _x(8, 4), _y(8)).evaluate(parameters, {})[0]


def _batched_fit_many(parameters):
    pool = fed.BatchedTorchClients(_mlp(), [(_x(6, 4), _y(6)), (_x(6, 4, 1), _y(6))], batch_size=3)
    return [r[0] for r in pool.fit_many([0, 1], parameters, [{"seed": 0}, {"seed": 1}])]


def _blsc_forward(z):
    g = _geometry()
    return fed.BLSCLoss(g.basis, g.profile)(z)


def _mrga_forward(z, y):
    return fed.MRGALoss(_geometry().prototypes, tau=0.1)(z, y)


def _bank_retrieve(query, temperature=0.1):
    return fed.PriorBank.retrieve(_bank(), query, k=2, temperature=temperature)


def _bank_prior(idx, weights):
    return _bank().prior(idx, weights)


def _pbc_fit(support_features, support_labels, class_embeddings=None):
    clf = fed.PriorBankClassifier(_bank(), k=2, n_samples=10)
    return clf.fit(support_features, support_labels, class_embeddings).predict(_x(4, 3, 5))


def _dc_fit(support_features, support_labels):
    return (
        fed.DistributionCalibration(_bank(), k=2, n_samples=10)
        .fit(support_features, support_labels)
        .predict(_x(4, 3, 5))
    )


def _protonet_fit(support_features, support_labels):
    return fed.ProtoNet().fit(support_features, support_labels).predict(_x(4, 3, 5))


def _logreg_fit(support_features, support_labels):
    return fed.SupportLogReg(1.0).fit(support_features, support_labels).predict(_x(4, 3, 5))


def _prepare_geometry(client_data, tau=0.1, lr=0.01):
    return fed.RISE.prepare_geometry(_mlp(), client_data, rank=2, tau=tau, lr=lr).clients[0].blsc.profile


def _simulator_run(initial_parameters):
    sim = fed.Simulator([_Client(0), _Client(1)], fed.FedAvg(), initial_parameters, clients_per_round=2)
    return sim.run(1).parameters


def _mean_cov(m):
    return m.mean_cov()


METHODS = {
    **{
        f"{s}.aggregate": _aggregate(c)
        for s, c in (
            ("FedAvg", fed.FedAvg),
            ("FedProx", fed.FedProx),
            ("FedAvgM", fed.FedAvgM),
            ("CRAFT", fed.CRAFT),
            ("RISE", fed.RISE),
        )
    },
    "QFedAvg.aggregate": lambda global_params, client_params, num_examples, metrics=None: fed.QFedAvg(0.1).aggregate(
        global_params, client_params, num_examples, metrics
    ),
    "TorchClient.fit": _torch_client_fit,
    "TorchClient.evaluate": _torch_client_evaluate,
    "BatchedTorchClients.fit_many": _batched_fit_many,
    "BLSCLoss.forward": _blsc_forward,
    "MRGALoss.forward": _mrga_forward,
    "PriorBank.retrieve": _bank_retrieve,
    "PriorBank.prior": _bank_prior,
    "PriorBankClassifier.fit": _pbc_fit,
    "DistributionCalibration.fit": _dc_fit,
    "ProtoNet.fit": _protonet_fit,
    "SupportLogReg.fit": _logreg_fit,
    "RISE.prepare_geometry": _prepare_geometry,
    "Simulator.run": _simulator_run,
}
_AGG = lambda: ((_glob(), _clients(), [3, 1]), {})  # noqa: E731

CALLS = {  # -> (args, kwargs), built fresh each time
    # strategies
    "FedAvg": lambda: ((), {}),
    "FedAvg.aggregate": _AGG,
    "FedAvgM": lambda: ((), {"server_learning_rate": 1.0, "server_momentum": 0.9}),
    "FedAvgM.aggregate": _AGG,
    "FedProx": lambda: ((), {"proximal_mu": 0.01}),
    "FedProx.aggregate": _AGG,
    "QFedAvg": lambda: ((0.1,), {"q": 0.1}),
    "QFedAvg.aggregate": lambda: ((_glob(), _clients(), [3, 1]), {"metrics": [{"train_loss": 1.0}] * 2}),
    "Strategy": lambda: ((), {}),
    "check_client_updates": _AGG,
    "client_update_problem": lambda: ((_glob(), _clients()[0], 3), {}),
    "weighted_average": lambda: ((_clients(), np.array([3.0, 1.0])), {}),
    # simulator
    "Simulator": lambda: (([_Client(0), _Client(1)], fed.FedAvg(), _glob()), {"clients_per_round": 2}),
    "Simulator.run": lambda: ((_glob(),), {}),
    "disparity": lambda: ((np.array([0.5, 0.7, 0.9]),), {}),
    "label_mix_accuracy": lambda: ((_y(6), np.array([0, 1, 1, 0, 1, 2]), np.full((2, 3), 1 / 3)), {}),
    # clients
    "TorchClient": lambda: ((_mlp(), _x(8, 4), _y(8)), {"lr": 0.01, "weight_decay": 0.0}),
    "TorchClient.fit": lambda: ((_params(),), {}),
    "TorchClient.evaluate": lambda: ((_params(),), {}),
    "BatchedTorchClients": lambda: ((_mlp(), [(_x(6, 4), _y(6)), (_x(6, 4, 1), _y(6))]), {"lr": 0.01}),
    "BatchedTorchClients.fit_many": lambda: ((_params(),), {}),
    # partition, secure sum
    "dirichlet_partition": lambda: ((_y(30), 3, 0.5), {}),
    "label_distribution": lambda: ((_y(6), [np.array([0, 1, 2]), np.array([3, 4, 5])]), {}),
    "client_mask": lambda: ((0, 3, 4, 0), {}),
    "decode_fixed_point": lambda: ((np.array([1, 2], dtype=np.uint64),), {}),
    "encode_fixed_point": lambda: ((np.array([0.5, -1.0]),), {}),
    "pairwise_masks": lambda: ((3, 4), {}),
    "secure_sum": lambda: ((_x(3, 4),), {}),
    # craft
    "CRAFT": lambda: ((0.1,), {"rcond": 1e-6, "max_step_norm": 1.0}),
    "CRAFT.aggregate": _AGG,
    "FLSetup": lambda: ((), {"n_clients": 4, "clients_per_round": 2, "rounds": 1, "alpha": 0.1, "lr": 0.05}),
    "craft_direction": lambda: ((_x(3, 5), np.array([1.0, 2.0, 3.0])), {"reference": _x(1, 5)[0]}),
    "load_fl_dataset": lambda: (("digits", 0), {"max_train": 50}),
    "make_mlp": lambda: ((4, (5,), 3, 0), {}),
    "module_groups": lambda: ((_mlp(),), {}),
    # fed prior bank
    "BankSetup": lambda: ((), {"n_clients": 2, "rounds": 1, "alpha": 0.3, "lr": 0.05}),
    "DistributionCalibration": lambda: ((_bank(),), {"alpha": 0.21, "C": 1.0, "tukey_beta": 0.5}),
    "DistributionCalibration.fit": lambda: ((_x(6, 3), _y(6, 2)), {}),
    "PriorBank": lambda: ((["a", "b"], _x(2, 6), _x(2, 3), np.stack([np.eye(3)] * 2), np.ones(2)), {}),
    "PriorBank.retrieve": lambda: ((_x(1, 6)[0],), {"temperature": 0.1}),
    "PriorBank.prior": lambda: ((np.array([0, 1]), np.array([0.4, 0.6])), {}),
    "PriorBankClassifier": lambda: ((_bank(),), {"temperature": 0.1, "kappa0": 1.0, "C": 1.0}),
    "PriorBankClassifier.fit": lambda: ((_x(6, 3), _y(6, 2)), {"class_embeddings": _x(2, 6, 3)}),
    "ProtoNet": lambda: ((), {}),
    "ProtoNet.fit": lambda: ((_x(6, 3), _y(6, 2)), {}),
    "SupportLogReg": lambda: ((1.0,), {}),
    "SupportLogReg.fit": lambda: ((_x(6, 3), _y(6, 2)), {}),
    "class_moments": lambda: ((_x(12, 3), _y(), 3), {}),
    "embed_phrases": lambda: ((["a cat", "a dog"],), {"backend": "hashing"}),
    "federated_class_moments": lambda: (([(_x(6, 3), _y(6)), (_x(6, 3, 1), _y(6))], 3), {}),
    "make_flow_data": lambda: ((0,), {"n_per_base": 4, "n_per_rare": 4, "family_spread": 3.0, "noise_scale": 1.0}),
    "map_shrinkage": lambda: ((_x(3, 2), np.zeros(2), np.eye(2)), {"kappa0": 1.0, "nu0": 8.0}),
    "pack_moments": lambda: ((_moments(),), {}),
    "sample_episode": lambda: ((_y(30), 2, 2, 2, np.random.default_rng(0)), {}),
    "unpack_moments": lambda: ((fed.pack_moments(_moments()), 3, 3), {}),
    # rise
    "RISE": lambda: ((), {"lambda_blsc": 1.0, "lambda_mrga": 1.0}),
    "RISE.aggregate": lambda: (
        (_glob(), _clients(), [3, 1]),
        {"metrics": [{"rise-applied": 1.0}, {"rise-applied": 1.0}]},
    ),
    "RISE.prepare_geometry": lambda: (([(_x(12, 4), _y()), (_x(12, 4, 1), _y())],), {"tau": 0.1, "lr": 0.01}),
    "BLSCLoss": lambda: ((np.eye(4)[:, :2], np.array([0.6, 0.4])), {"eps": 1e-12}),
    "BLSCLoss.forward": lambda: ((_t(6, 5),), {}),
    "FedDecorr": lambda: ((), {"beta": 0.1}),
    "GeometryClient": lambda: (
        (_mlp(), _x(8, 4), _y(8)),
        {"geometry": fed.aggregate_geometry([fed.client_feature_stats(_x(12, 5), _y(), 3)], rank=2), "tau": 0.1},
    ),
    "MRGALoss": lambda: ((_x(3, 5),), {"tau": 0.1}),
    "MRGALoss.forward": lambda: ((_t(6, 5), torch.tensor(_y(6))), {}),
    "ProtoKD": lambda: ((), {"lambda_kd": 1.0}),
    "aggregate_geometry": lambda: (([fed.client_feature_stats(_x(12, 5), _y(), 3)], 2), {}),
    "client_feature_stats": lambda: ((_x(12, 5), _y(), 3), {}),
    "feddecorr_loss": lambda: ((_t(6, 5),), {}),
    "proto_kd_loss": lambda: ((_t(6, 5), torch.tensor(_y(6)), _t(3, 5, seed=1)), {}),
}
_RESULT = "a result container (a dataclass) built by a validated function"
NOT_CALLED = {
    "NDArrays": "a type alias (list of numpy arrays)",
    "History": f"{_RESULT}: Simulator.run",
    "RoundRecord": f"{_RESULT}: Simulator.fit_round",
    "SecureSumResult": f"{_RESULT}: secure_sum",
    "ClassMoments": f"{_RESULT}: class_moments / unpack_moments",
    "PretrainedGeometry": f"{_RESULT}: aggregate_geometry (GeometryClient re-validates it via BLSCLoss and MRGALoss)",
    "RISEFederation": f"{_RESULT} (a NamedTuple): RISE.prepare_geometry",
    "FlowData": f"{_RESULT}: make_flow_data",
    "Client": "a Protocol (the interface a client implements)",
    "to_flower": "needs Flower (the flower extra); covered by make test-flower, and its argument is a Strategy",
    "run_fl_benchmark": "runs a whole benchmark (minutes); takes an FLSetup (covered) and a seed",
    "run_prior_bank_experiment": "runs a whole experiment (minutes); takes a BankSetup (covered) and a seed",
}
_LOSS = "a per-step training loss: values are not scanned, {} propagates as in torch's own losses (documented)"
_SMALL_BATCH = "a batch of fewer than two rows gives a loss of 0 (documented)"


def _loss_ok(*names):
    return {(n, k): _LOSS.format(k.upper() if k == "nan" else k) for n in names for k in ("nan", "inf")}


_PROBLEM = "returns the problem as a sentence instead of raising (documented: the simulator excludes that client)"
_TRUSTED = "global_params is trusted here: check_client_updates validates it once per round (documented)"
_SHAPES = (
    "the simulator does not know the model: clients check the shapes in fit, and a client that rejects them is "
    "recorded as a failure (documented)"
)
OK: dict[str, dict[tuple[str, str], str]] = {
    "BLSCLoss.forward": {**_loss_ok("z"), ("z", "empty"): _SMALL_BATCH},
    "feddecorr_loss": {**_loss_ok("z"), ("z", "empty"): _SMALL_BATCH},
    "MRGALoss.forward": _loss_ok("z"),
    "proto_kd_loss": _loss_ok("z", "prototypes"),
    "client_update_problem": {
        **{("params", k): _PROBLEM for k in ("nan", "inf", "wrong shape", "empty")},
        **{("global_params", k): _TRUSTED for k in ("nan", "inf")},
        **{("global_params", k): _PROBLEM for k in ("wrong shape", "empty")},
    },
    "encode_fixed_point": {
        ("x", "empty"): "elementwise: an empty array gives an empty encoding (documented)",
        ("x", "wrong shape"): "elementwise on an array of any shape (documented)",
    },
    "make_mlp": {("hidden", "empty"): "no hidden layer: a linear model (geode.models.make_mlp)"},
    "Simulator": {("initial_parameters", "wrong shape"): _SHAPES},
    "Simulator.run": {("initial_parameters", "wrong shape"): _SHAPES},
}


PACKAGE = fed


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []


# the audit's repros (reliability audit 2026-12-02, section 4): each failed silently or cryptically before the fix
def test_audit_weighted_average_more_weights_than_clients():
    # was [1.333, 1.333, 1.333]: the weights were normalised over 3, then zip dropped one
    with pytest.raises(ValueError, match="weights must have one entry per client; got 3 for 2"):
        fed.weighted_average([[np.ones(3)], [3 * np.ones(3)]], np.ones(3))


def test_audit_weighted_average_zero_weights():
    # was all NaN
    with pytest.raises(ValueError, match="weights must have a positive sum"):
        fed.weighted_average([[np.ones(3)], [3 * np.ones(3)]], np.zeros(2))


def test_audit_weighted_average_nan_weight():
    # was all NaN
    with pytest.raises(ValueError, match="weights must contain only finite values"):
        fed.weighted_average([[np.ones(3)], [3 * np.ones(3)]], np.array([1.0, np.nan]))


def test_audit_weighted_average_negative_weight():
    # was accepted: an extrapolation, not an average
    with pytest.raises(ValueError, match="weights must be non-negative"):
        fed.weighted_average([[np.ones(3)], [3 * np.ones(3)]], np.array([2.0, -1.0]))


def test_audit_weighted_average_no_clients():
    # was IndexError: list index out of range
    with pytest.raises(ValueError, match="client_params is empty"):
        fed.weighted_average([], np.ones(0))


def test_audit_weighted_average_mismatched_shapes():
    # was a bare numpy broadcast error
    with pytest.raises(ValueError, match=r"client_params\[1\]\[0\] has shape \(2,\); client_params\[0\]\[0\] has"):
        fed.weighted_average([[np.ones(3)], [np.ones(2)]], np.ones(2))


def test_weighted_average_valid_call_unchanged():
    out = fed.weighted_average([[np.ones(2), np.zeros(1)], [np.full(2, 4.0), np.ones(1)]], np.array([3.0, 1.0]))
    assert np.array_equal(out[0], np.array([1.75, 1.75])) and np.array_equal(out[1], np.array([0.25]))
