"""geode.probabilistic's public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import numpy as np
import torch

import geode.probabilistic as prob


def _lp(x):
    return -0.5 * (np.asarray(x) ** 2).sum(-1)


def _glp(x):
    return -np.asarray(x)


def _pts(n=8, d=2, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _grid():
    return prob.QuadratureGrid(n_bins=4, half_width=3.0, eta=0.9, sigma_e=0.1)


_PHASES = np.array([[0.0, 0.0], [0.5, 0.5]])
_PSI = np.array([1.0, 0.0, 0.0, 1.0]) / np.sqrt(2.0)  # a real two-mode state, cutoff 2


def _model():
    return prob.MeasurementModel(_grid(), 2, _PHASES)


def _data(seed=0):
    return prob.simulate_homodyne(_PSI, _PHASES, 6, _grid(), seed=seed)


def _w(n, seed=0):
    w = np.random.default_rng(seed).random(n) + 0.1
    return w / w.sum()


# main methods, as wrappers whose parameters carry the method's own argument names
def _mala_init(position):
    return prob.MALA(_lp, _glp, 0.5).init(position)


def _fisher_mala_init(position):
    return prob.FisherMALA(_lp, _glp, 0.5).init(position)


def _srmc_init(position, theta=None):
    return prob.SRMC(_lp, _glp, 0.3, 1.0).init(position, theta)


def _gasrmc_init(position, theta=None):
    return prob.GASRMC(_lp, _glp, 0.3, 1.0).init(position, theta)


def _online_fisher_update(u):
    est = prob.OnlineFisher(refresh_every=1)
    return est.update(est.init(2, (3,)), u)


def _gaussian_log_prob(x):
    return prob.GaussianTarget(np.zeros(2), np.diag([1.0, 2.0])).log_prob(x)


def _logistic_log_prob(beta):
    return prob.LogisticRegressionTarget(_pts(6, 2), np.arange(6) % 2).log_prob(beta)


def _loss_call(probs):
    return prob.MaxSlicedW1Loss(_grid(), _data().samples, n_directions=2)(probs)


def _probs_pure(psi):
    return _model().probs_pure(psi)


def _ot_id_fit(X):
    return prob.OTIntrinsicDimension(p=2.0, scales=[8, 4], seed=0).fit(X).dimension_


METHODS = {
    "MALA.init": _mala_init,
    "FisherMALA.init": _fisher_mala_init,
    "SRMC.init": _srmc_init,
    "GASRMC.init": _gasrmc_init,
    "OnlineFisher.update": _online_fisher_update,
    "GaussianTarget.log_prob": _gaussian_log_prob,
    "LogisticRegressionTarget.log_prob": _logistic_log_prob,
    "MaxSlicedW1Loss.__call__": _loss_call,
    "MeasurementModel.probs_pure": _probs_pure,
    "OTIntrinsicDimension.fit": _ot_id_fit,
}

CALLS = {  # -> (args, kwargs), built fresh each time
    # samplers
    "MALA": lambda: ((_lp, _glp, 0.5), {}),
    "MALA.init": lambda: ((_pts(3, 2),), {}),
    "FisherMALA": lambda: ((_lp, _glp, 0.5), {"damping": 1.0, "target_accept": 0.5, "fisher_clip": 5.0}),
    "FisherMALA.init": lambda: ((_pts(3, 2),), {}),
    "SRMC": lambda: (
        (_lp, _glp, 0.3, 1.0),
        {"rho": 0.6, "theta_step": 1.0, "fd_eps": 1e-5, "alpha_c": 1000.0, "damping": 1.0, "target_accept": 0.5},
    ),
    "SRMC.init": lambda: ((_pts(3, 2),), {"theta": _pts(3, 2, seed=1)}),
    "GASRMC": lambda: ((_lp, _glp, 0.3, 1.0), {"metric": np.diag([1.0, 2.0]), "rho": 0.6}),
    "GASRMC.init": lambda: ((_pts(3, 2),), {"theta": _pts(3, 2, seed=1)}),
    "OnlineFisher": lambda: ((1.0,), {"clip": 5.0}),
    "OnlineFisher.update": lambda: ((_pts(3, 2),), {}),
    "sample": lambda: ((prob.MALA(_lp, _glp, 0.5), _pts(2, 2), 3), {"seed": 0}),
    "fisher_from_samples": lambda: ((_pts(6, 2),), {}),
    # targets
    "GaussianTarget": lambda: ((np.zeros(2), np.diag([1.0, 2.0])), {}),
    "GaussianTarget.log_prob": lambda: ((_pts(3, 2),), {}),
    "LogisticRegressionTarget": lambda: ((_pts(6, 2), (np.arange(6) % 2).astype(float)), {"prior_scale": 1.0}),
    "LogisticRegressionTarget.log_prob": lambda: ((_pts(3, 2),), {}),
    "anisotropic_gaussian": lambda: ((10.0,), {"dim": 3, "mean": np.zeros(3)}),
    "breast_cancer_logistic": lambda: ((), {"prior_scale": 1.0}),
    "digits_logistic": lambda: (((0, 1),), {"max_rows": 20, "prior_scale": 1.0}),
    "synthetic_logistic": lambda: ((), {"n": 20, "dim": 3, "seed": 0}),
    # ga-srmc
    "normalise_metric": lambda: ((np.diag([1.0, 3.0]),), {}),
    # neural-qst
    "QuadratureGrid": lambda: ((), {"n_bins": 4, "half_width": 3.0, "eta": 0.9, "sigma_e": 0.1}),
    "HomodyneData": lambda: ((_data().phases, _data().samples, _data().counts), {}),
    "MeasurementModel": lambda: ((_grid(), 2, _PHASES.copy()), {}),
    "MeasurementModel.probs_pure": lambda: ((torch.tensor(_PSI, dtype=torch.complex128),), {}),
    "MaxSlicedW1Loss": lambda: ((_grid(), _data().samples), {"n_directions": 2}),
    "MaxSlicedW1Loss.__call__": lambda: ((torch.full((2, 16), 1.0 / 16, dtype=torch.float64),), {}),
    "NeuralWavefunction": lambda: ((4,), {"width": 4, "depth": 1, "n_input": 3}),
    "fidelity": lambda: ((_PSI.copy(), np.array([1.0, 0.0, 0.0, 0.0])), {}),
    "hermite_functions": lambda: ((3, np.linspace(-1.0, 1.0, 5)), {}),
    "two_mode_cat": lambda: ((1.0, 3), {}),
    "simulate_homodyne": lambda: ((_PSI.copy(), _PHASES.copy(), 4, _grid()), {"seed": 0}),
    "fit_neural": lambda: (
        (_model(), _data(), _data(1)),
        {"steps": 1, "lr": 0.01, "width": 4, "depth": 1, "n_directions": 2, "psi_true": _PSI.copy()},
    ),
    "fit_cholesky": lambda: ((_model(), _data(), _data(1)), {"steps": 1, "lr": 0.01, "psi_true": _PSI.copy()}),
    "imle": lambda: ((_model(), _data(), _data(1)), {"iterations": 1, "dilution": 1.0, "psi_true": _PSI.copy()}),
    "uniform_directions": lambda: ((4,), {"d": 3, "seed": 0}),
    "wasserstein_1d_w1": lambda: ((_pts(4, 1)[:, 0], _pts(5, 1, 1)[:, 0], _w(4), _w(5, 1)), {}),
    "sliced_w1_per_direction": lambda: ((_pts(4), _pts(5, seed=1), _w(4), _w(5, 1)), {"n_projections": 3}),
    "max_sliced_w1": lambda: (
        (_pts(4), _pts(5, seed=1), _w(4), _w(5, 1)),
        {"projections": prob.uniform_directions(3)},
    ),
    # ot-sampling-error
    "OTIntrinsicDimension": lambda: ((), {"p": 2.0, "scales": [8, 4], "seed": 0}),
    "OTIntrinsicDimension.fit": lambda: ((_pts(16, 2),), {}),
    "calibrate_sinkhorn_eps": lambda: ((_pts(8, 2),), {"p": 2.0, "factor": 1.0}),
    "intrinsic_dimension": lambda: ((_pts(16, 2),), {"p": 2.0, "scales": [8, 4], "seed": 0}),
    "multiscale_errors": lambda: ((_pts(16, 2),), {"p": 2.0, "scales": [8, 4], "seed": 0}),
    "mle_dimension": lambda: ((_pts(8, 2),), {"k": 3}),
    "twonn_dimension": lambda: ((_pts(8, 2),), {"discard_fraction": 0.1}),
    "sampling_error": lambda: ((_pts(8, 2), _w(8)), {"p": 2.0}),
    "wasserstein_pp": lambda: ((_pts(4), _pts(4, seed=1), _w(4), _w(4, 1)), {"p": 2.0, "reg": 0.5}),
    "richardson_extrapolate": lambda: ((1.1, 1.2, 0.5), {}),
    "richardson_wasserstein": lambda: (
        (_pts(8), _pts(8, seed=1), _w(8), _w(8, 1)),
        {"p": 2.0, "d_int": 2.0, "n_bags": 2, "seed": 0},
    ),
}
NOT_CALLED = {
    "FisherEstimate": "a state container (NamedTuple) made by OnlineFisher.init/update",
    "FisherMALAState": "a state container (NamedTuple) made by FisherMALA.init/step",
    "MALAInfo": "a per-step record (NamedTuple) made by the kernels' step",
    "MALAState": "a state container (NamedTuple) made by MALA.init/step",
    "SRMCInfo": "a per-step record (NamedTuple) made by SRMC.step",
    "SRMCState": "a state container (NamedTuple) made by SRMC.init/step",
    "SampleResult": "a result container (dataclass) made by sample",
    "QSTResult": "a result container (dataclass) made by fit_neural, fit_cholesky and imle",
}
_HOT_PATH = "log_prob is the samplers' hot path: not scanned for NaN/inf (documented); kernels flag a divergence"
_EMPTY_BATCH = "an empty batch of positions gives an empty result (documented)"
OK: dict[str, dict[tuple[str, str], str]] = {
    "GaussianTarget.log_prob": {("x", "nan"): _HOT_PATH, ("x", "inf"): _HOT_PATH, ("x", "empty"): _EMPTY_BATCH},
    "LogisticRegressionTarget.log_prob": {
        ("beta", "nan"): _HOT_PATH,
        ("beta", "inf"): _HOT_PATH,
        ("beta", "empty"): _EMPTY_BATCH,
    },
    "hermite_functions": {("x", "empty"): "an empty x gives an empty (cutoff, 0) table (documented)"},
    "imle": {("dilution", "inf"): "dilution=inf is the undiluted R rho R iteration (documented)"},
}


PACKAGE = prob


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []
