"""Uncertainty: conformal abstention, post-hoc GPs on neural-operator features, diffusion-path OOD detection.

The paper folders live below (``geode.uncertainty.conformal_abstention``, ...); each re-exports its public
names here. The expected calibration error shared with other fields is :func:`geode.core.expected_calibration_error`.

Papers and their names
----------------------
``conformal-abstention`` (:mod:`geode.uncertainty.conformal_abstention`): ``from geode.uncertainty import
GEOMETRY_FEATURES, ConformalAbstention, GeometryCalibrator, geometry_features, hoeffding_bentkus_pvalue,
lm_answer_states, minimum_calibration_size, threshold_grid``

- ``ConformalAbstention``: certifies an answer/abstain threshold by Learn-Then-Test (MAPIE's controller, exact).
- ``threshold_grid``: a threshold grid fixed before calibration (log-spaced towards 1, or held-out quantiles).
- ``GeometryCalibrator``: calibrates correctness on the confidence and the hidden states' geometry.
- ``geometry_features``, ``GEOMETRY_FEATURES``: the four geometry features and their names.
- ``lm_answer_states``: answer confidence and hidden states from a Hugging Face causal LM.
- ``hoeffding_bentkus_pvalue``, ``minimum_calibration_size``: the p-value and the smallest certifiable ``n``.

``reef-gp`` (:mod:`geode.uncertainty.reef_gp`): ``from geode.uncertainty import REEFGP, DeepEnsemble, MCDropout,
PointCloudOperator, PoissonSample, geometry_descriptors, matern52, poisson_dataset, solve_poisson,
train_operator``

- ``REEFGP``: a GP on a frozen operator's embeddings, ``fit`` on calibration data, ``predict -> (mean, std)``.
- ``matern52``, ``geometry_descriptors``: its kernel and the inputs of its heteroscedastic noise.
- ``PointCloudOperator``, ``train_operator``: a point-cloud neural operator and its training.
- ``DeepEnsemble``, ``MCDropout``: the baselines.
- ``poisson_dataset``, ``solve_poisson``, ``PoissonSample``: the claim's Poisson data (scikit-fem, extra ``uq``).

``ufcod`` (:mod:`geode.uncertainty.ufcod`): ``from geode.uncertainty import EnergyOODDetector, TinyUNet,
cosine_alpha_bar, facility_location, train_ddpm, trajectory_features``

- ``EnergyOODDetector``: the few-shot detector (facility-location references, soft-min kNN score).
- ``trajectory_features``: the path and dynamics energies of each image's DDIM reversal.
- ``TinyUNet``, ``train_ddpm``, ``cosine_alpha_bar``: a tiny noise predictor, its training, its schedule.
- ``facility_location``: greedy k-median choice of the references.
"""

from __future__ import annotations

from geode.uncertainty import conformal_abstention as _conformal_abstention
from geode.uncertainty import reef_gp as _reef_gp
from geode.uncertainty import ufcod as _ufcod
from geode.uncertainty.conformal_abstention import *  # noqa: F403
from geode.uncertainty.reef_gp import *  # noqa: F403
from geode.uncertainty.ufcod import *  # noqa: F403

__all__: list[str] = []
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_conformal_abstention.__all__, *_reef_gp.__all__, *_ufcod.__all__]
