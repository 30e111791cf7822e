"""Shared mathematics used by two or more methods: validation, seeding, spectral and subspace measures.

Everything here is small, documented and property-tested (``tests/core``). A function moves here
only once a second paper needs it; a paper's own math stays in its folder.
"""

from __future__ import annotations

from geode.core.calibration import expected_calibration_error, negative_log_likelihood
from geode.core.ess import autocorrelation, autocorrelation_ess, ess_mse
from geode.core.linalg import effective_rank, polar, principal_angles, sign_fixed_qr, stable_rank
from geode.core.random import as_generator, seed_everything, set_single_thread, torch_generator
from geode.core.timing import speed_ratio, time_callable
from geode.core.validation import (
    check_array,
    check_choice,
    check_finite,
    check_int,
    check_positive,
    check_probability,
    check_real,
)

__all__ = [
    "as_generator",
    "autocorrelation",
    "autocorrelation_ess",
    "check_array",
    "check_choice",
    "check_finite",
    "check_int",
    "check_positive",
    "check_probability",
    "check_real",
    "effective_rank",
    "ess_mse",
    "expected_calibration_error",
    "negative_log_likelihood",
    "polar",
    "principal_angles",
    "seed_everything",
    "set_single_thread",
    "sign_fixed_qr",
    "speed_ratio",
    "stable_rank",
    "time_callable",
    "torch_generator",
]
