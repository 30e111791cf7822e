"""geode.core's public functions: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import numpy as np
import pytest

import geode.core as core

_RNG = np.random.default_rng(0)


def _mat(n=6, k=2):
    return np.random.default_rng(0).normal(size=(n, k))


def _probs():
    p = np.random.default_rng(0).dirichlet(np.ones(3), size=8)
    return p, np.arange(8) % 3


CALLS = {
    "autocorrelation": lambda: ((np.random.default_rng(0).normal(size=(50, 2)),), {}),
    "autocorrelation_ess": lambda: ((np.random.default_rng(0).normal(size=(50, 2)),), {}),
    "effective_rank": lambda: ((_mat(),), {}),
    "stable_rank": lambda: ((_mat(),), {}),
    "polar": lambda: ((_mat(3, 3),), {}),
    "sign_fixed_qr": lambda: ((_mat(),), {}),
    "principal_angles": lambda: ((_mat(6, 2), np.random.default_rng(1).normal(size=(6, 2))), {}),
    "ess_mse": lambda: ((np.random.default_rng(0).normal(size=(4, 2)), np.zeros(2), np.full(2, 0.5)), {}),
    "expected_calibration_error": lambda: (_probs(), {}),
    "negative_log_likelihood": lambda: (_probs(), {}),
}
NOT_CALLED = {
    "as_generator": "takes a seed or a generator (no array to corrupt; its own tests cover bad seeds)",
    "check_array": "a validation helper (its errors are the contract)",
    "check_choice": "a validation helper",
    "check_finite": "a validation helper",
    "check_int": "a validation helper",
    "check_positive": "a validation helper",
    "check_probability": "a validation helper",
    "check_real": "a validation helper",
    "seed_everything": "takes a seed (an int)",
    "set_single_thread": "takes no argument",
    "speed_ratio": "takes callables",
    "time_callable": "takes a callable",
    "torch_generator": "takes a seed (an int)",
}
_BATCH = "documented: leading axes are a batch"
OK = {
    "autocorrelation": {("x", "wrong shape"): "documented: every other axis is independent"},
    "autocorrelation_ess": {("x", "wrong shape"): "documented: every other axis is independent"},
    "effective_rank": {("a", "wrong shape"): _BATCH},
    "stable_rank": {("a", "wrong shape"): _BATCH},
    "polar": {("a", "wrong shape"): _BATCH},
    "sign_fixed_qr": {("a", "wrong shape"): _BATCH},
    "ess_mse": {
        ("estimates", "wrong shape"): "documented: truth and variance broadcast against the estimates",
        ("truth", "wrong shape"): "documented: truth broadcasts against the estimates",
        ("variance", "wrong shape"): "documented: variance broadcasts against the estimates",
        ("truth", "empty"): "documented: broadcasting over no coordinate gives an empty result",
        ("variance", "empty"): "documented: broadcasting over no coordinate gives an empty result",
    },
}


PACKAGE = core


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []


def test_principal_angles_refuse_a_rank_deficient_basis():
    with pytest.raises(ValueError, match="a must have full column rank"):
        core.principal_angles(np.zeros((6, 2)), _mat())
    with pytest.raises(ValueError, match="b must have full column rank"):
        core.principal_angles(_mat(), np.ones((6, 2)))  # rank 1


def test_stable_rank_of_an_empty_matrix_names_the_argument():
    with pytest.raises(ValueError, match="a must"):
        core.stable_rank(np.zeros((0, 4)))
