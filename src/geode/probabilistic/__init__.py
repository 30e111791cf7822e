r"""Probabilistic inference: samplers in blackjax's kernel idiom, their targets and shared baselines.

Kernels have ``init(position) -> state`` and ``step(rng, state) -> (state, info)`` and run many
chains at once (positions of shape (c, d)); :func:`sample` drives any of them from one seed.

Baselines shared by the field's papers: :class:`MALA`, :class:`FisherMALA` (online Fisher
preconditioner, :class:`OnlineFisher`) and :class:`SRMC` (score-repellent Monte Carlo). Targets:
anisotropic Gaussians and Bayesian logistic-regression posteriors (:mod:`geode.probabilistic.targets`).

Papers: :class:`GASRMC` (``ga_srmc``); the solver-free OT sampling error, intrinsic dimension and
Richardson-debiased Wasserstein estimators (``ot_sampling_error``), POT-style functions on arrays;
neural quantum state tomography with the max-sliced W1 (``neural_qst``).

Papers and their names
----------------------
``ga-srmc`` (:mod:`geode.probabilistic.ga_srmc`): ``from geode.probabilistic import GASRMC, normalise_metric``

- ``GASRMC``: the GA-SRMC kernel (``init``/``step``), SRMC with the repulsion :math:`\alpha\,\theta^\top M s(x)`.
- ``normalise_metric``: checks a metric :math:`M` is SPD and rescales it to :math:`\operatorname{tr} M = d`.

``neural-qst`` (:mod:`geode.probabilistic.neural_qst`): ``from geode.probabilistic import HomodyneData,
MaxSlicedW1Loss, MeasurementModel, NeuralWavefunction, QSTResult, QuadratureGrid, fidelity, fit_cholesky,
fit_neural, hermite_functions, imle, max_sliced_w1, simulate_homodyne, sliced_w1_per_direction, two_mode_cat,
uniform_directions, wasserstein_1d_w1``

- ``fit_neural``: trains a ``NeuralWavefunction`` on the max-sliced W1 (the method) or the binned NLL.
- ``NeuralWavefunction``: the overparameterised MLP whose output is the pure state :math:`\psi`.
- ``MaxSlicedW1Loss``: the msW1 loss between the model's measured distribution and the shots.
- ``max_sliced_w1``: POT-style max-sliced W1 between weighted point clouds (numpy or torch).
- ``sliced_w1_per_direction``, ``wasserstein_1d_w1``, ``uniform_directions``: the 1-D W1 per direction, exact 1-D
  W1, and unit directions in POT's ``projections`` layout.
- ``MeasurementModel``, ``QuadratureGrid``: the homodyne measurement model (loss, electronic noise) on bins.
- ``simulate_homodyne``, ``HomodyneData``: simulated two-mode homodyne shots and their container.
- ``two_mode_cat``, ``hermite_functions``, ``fidelity``: the cat state, the Fock-basis wavefunctions, the fidelity.
- ``imle``, ``fit_cholesky``, ``QSTResult``: the baselines (iterative MLE, Cholesky GD-QST) and the result type.

``ot-sampling-error`` (:mod:`geode.probabilistic.ot_sampling_error`): ``from geode.probabilistic import
OTIntrinsicDimension, calibrate_sinkhorn_eps, intrinsic_dimension, mle_dimension, multiscale_errors,
richardson_extrapolate, richardson_wasserstein, sampling_error, twonn_dimension, wasserstein_pp``

- ``sampling_error``: the solver-free OT sampling error (the semi-dual at the zero potential), weights ``a, b``.
- ``intrinsic_dimension``, ``OTIntrinsicDimension``: intrinsic dimension from its multi-scale decay (function and
  scikit-learn-style estimator); ``multiscale_errors``: the decay itself.
- ``richardson_wasserstein``: the Richardson-debiased :math:`W_p^p` estimate, weights ``a, b``;
  ``richardson_extrapolate``: the bare formula.
- ``wasserstein_pp``: the plug-in :math:`W_p^p` (exact or entropic), POT's ``emd2`` with weights ``a, b``.
- ``calibrate_sinkhorn_eps``: a Sinkhorn :math:`\varepsilon` matched to the sample's sampling error.
- ``twonn_dimension``, ``mle_dimension``: the TwoNN and Levina-Bickel baselines.
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
