"""Probabilistic inference: samplers in blackjax's kernel idiom, their targets and shared baselines.

Kernels have ``init(position) -> state`` and ``step(rng, state) -> (state, info)`` and run many
chains at once (positions of shape (c, d)); :func:`sample` drives any of them from one seed.

Baselines shared by the field's papers: :class:`MALA`, :class:`FisherMALA` (online Fisher
preconditioner, :class:`OnlineFisher`) and :class:`SRMC` (score-repellent Monte Carlo). Targets:
anisotropic Gaussians and Bayesian logistic-regression posteriors (:mod:`geode.probabilistic.targets`).

Papers: :class:`GASRMC` (``ga_srmc``); the solver-free OT sampling error, intrinsic dimension and
Richardson-debiased Wasserstein estimators (``ot_sampling_error``), POT-style functions on arrays.
"""

from __future__ import annotations

from geode.probabilistic.fisher import FisherEstimate, OnlineFisher, fisher_from_samples
from geode.probabilistic.ga_srmc import GASRMC, normalise_metric
from geode.probabilistic.mala import MALA, FisherMALA, FisherMALAState, MALAInfo, MALAState
from geode.probabilistic.ot_sampling_error import (
    OTIntrinsicDimension,
    calibrate_sinkhorn_eps,
    intrinsic_dimension,
    mle_dimension,
    multiscale_errors,
    richardson_extrapolate,
    richardson_wasserstein,
    sampling_error,
    twonn_dimension,
    wasserstein_pp,
)
from geode.probabilistic.sampling import SampleResult, sample
from geode.probabilistic.srmc import SRMC, SRMCInfo, SRMCState
from geode.probabilistic.targets import (
    GaussianTarget,
    LogisticRegressionTarget,
    anisotropic_gaussian,
    breast_cancer_logistic,
    digits_logistic,
    synthetic_logistic,
)

__all__ = [
    "GASRMC",
    "MALA",
    "SRMC",
    "FisherEstimate",
    "FisherMALA",
    "FisherMALAState",
    "GaussianTarget",
    "LogisticRegressionTarget",
    "MALAInfo",
    "MALAState",
    "OTIntrinsicDimension",
    "OnlineFisher",
    "SRMCInfo",
    "SRMCState",
    "SampleResult",
    "anisotropic_gaussian",
    "breast_cancer_logistic",
    "calibrate_sinkhorn_eps",
    "digits_logistic",
    "fisher_from_samples",
    "intrinsic_dimension",
    "mle_dimension",
    "multiscale_errors",
    "normalise_metric",
    "richardson_extrapolate",
    "richardson_wasserstein",
    "sample",
    "sampling_error",
    "synthetic_logistic",
    "twonn_dimension",
    "wasserstein_pp",
]
