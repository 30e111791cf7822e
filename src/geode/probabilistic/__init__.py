"""Probabilistic inference: samplers in blackjax's kernel idiom, their targets and shared baselines.

Kernels have ``init(position) -> state`` and ``step(rng, state) -> (state, info)`` and run many
chains at once (positions of shape (c, d)); :func:`sample` drives any of them from one seed.

Baselines shared by the field's papers: :class:`MALA`, :class:`FisherMALA` (online Fisher
preconditioner, :class:`OnlineFisher`) and :class:`SRMC` (score-repellent Monte Carlo). Targets:
anisotropic Gaussians and Bayesian logistic-regression posteriors (:mod:`geode.probabilistic.targets`).

Papers: :class:`GASRMC` (``ga_srmc``); the solver-free OT sampling error, intrinsic dimension and
Richardson-debiased Wasserstein estimators (``ot_sampling_error``), POT-style functions on arrays;
neural quantum state tomography with the max-sliced W1 (``neural_qst``).
"""

from __future__ import annotations

from geode.probabilistic import ga_srmc as _ga_srmc
from geode.probabilistic import neural_qst as _neural_qst
from geode.probabilistic import ot_sampling_error as _ot_sampling_error
from geode.probabilistic.fisher import FisherEstimate, OnlineFisher, fisher_from_samples
from geode.probabilistic.ga_srmc import *  # noqa: F403
from geode.probabilistic.mala import MALA, FisherMALA, FisherMALAState, MALAInfo, MALAState
from geode.probabilistic.neural_qst import *  # noqa: F403
from geode.probabilistic.ot_sampling_error import *  # noqa: F403
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
    "MALA",
    "SRMC",
    "FisherEstimate",
    "FisherMALA",
    "FisherMALAState",
    "GaussianTarget",
    "LogisticRegressionTarget",
    "MALAInfo",
    "MALAState",
    "OnlineFisher",
    "SRMCInfo",
    "SRMCState",
    "SampleResult",
    "anisotropic_gaussian",
    "breast_cancer_logistic",
    "digits_logistic",
    "fisher_from_samples",
    "sample",
    "synthetic_logistic",
]
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_ga_srmc.__all__, *_neural_qst.__all__, *_ot_sampling_error.__all__]
