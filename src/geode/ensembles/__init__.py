"""Ensembles: decision-level fusion of soft outputs, and mutual correction between two models.

* :mod:`geode.ensembles.simplex`: simplex validation, clr / softmax, KL, NLL, ECE;
* :mod:`geode.ensembles.fusion`: the fusion baselines (linear and logarithmic pools, majority vote, direct
  fusion, global and per-oracle temperature scaling);
* :mod:`geode.ensembles.mutual`: rounds of gated pseudo-label exchange between a target model and a partner,
  with the baselines self-training, teacher -> student, naive exchange and confidence gating;
* :mod:`geode.ensembles.comparability_fusion`: comparability recovery before soft fusion (paper
  ``comparability-fusion``);
* :mod:`geode.ensembles.safecut`: the cut statistic and cut-gated mutual correction (paper ``safecut``);
* :mod:`geode.ensembles.merging`: model merging baselines (averaging, task arithmetic, TIES, AdaMerging);
* :mod:`geode.ensembles.mda`: merging with directional alignment (paper ``mda``).

Importing this package needs numpy only (torch is imported when a model is trained).

Papers and their names
----------------------
Every name below is importable from the field package and from its paper's package.

``comparability-fusion`` (``geode.ensembles.comparability_fusion``)::

    from geode.ensembles import ComparabilityRecovery, geometry_descriptor, project_log_scales

- ``ComparabilityRecovery``: the method, an sklearn estimator: ``fit(P)`` on (oracles, N, C), ``transform``, ``fuse``;
- ``geometry_descriptor``: each oracle's geometry descriptor (sharpness) of its soft outputs;
- ``project_log_scales``: the projection of log-scales onto the gauge constraint (sum zero, bounded).

``mda`` (``geode.ensembles.mda``)::

    from geode.ensembles import MDA, align_task_vectors, mda_tensor, polar

- ``MDA``: the merger: ``merge(base, finetuned_models, data=None, heads=None)``, both stages;
- ``align_task_vectors``: the data-free stage on one tensor's task vectors (orthogonal task subspaces);
- ``mda_tensor``: the data-free merge of one tensor (mergekit convention);
- ``polar``: the orthogonal polar factor (Procrustes) of a matrix.

``safecut`` (``geode.ensembles.safecut``)::

    from geode.ensembles import (
        CutStatistic, SafeCut, SafeCutGate, SafeCutRounds, cut_reliability, cut_statistic, diversity_loss,
        iic_loss, knn_graph, mutual_mask,
    )

- ``SafeCut``: the released method: reliability-gated mutual distillation, ``fit(target, partner, x)``;
- ``cut_reliability``: the reliability exp(-cut) of pseudo-labels on a mutual cosine kNN graph;
- ``knn_graph``: exact k nearest neighbours (brute, sklearn or torch backend);
- ``mutual_mask``: which kNN edges are mutual;
- ``iic_loss``: IIC's mutual-information loss between two models' predictions;
- ``diversity_loss``: the batch-diversity loss;
- ``cut_statistic``: revision 1's standardised cut statistic Z;
- ``CutStatistic``: the parts of ``cut_statistic`` per sample;
- ``SafeCutGate``: revision 1's one-directional gate from the Z statistics;
- ``SafeCutRounds``: revision 1's rounds of gated hard-label exchange.
"""

from __future__ import annotations

from geode.ensembles import comparability_fusion as _comparability_fusion
from geode.ensembles import mda as _mda
from geode.ensembles import safecut as _safecut
from geode.ensembles.comparability_fusion import *  # noqa: F403
from geode.ensembles.fusion import (
    PerOracleTemperatureScaling,
    TemperatureScaling,
    direct_fusion,
    fit_inverse_temperature,
    log_pool,
    majority_vote,
    mean_fusion,
)
from geode.ensembles.mda import *  # noqa: F403
from geode.ensembles.merging import (
    LayerwiseMerger,
    average_merge,
    check_state_dicts,
    task_arithmetic,
    task_vectors,
    ties_merge,
    ties_tensor,
)
from geode.ensembles.mutual import MutualCorrection, RoundState, confidence_gate, mutual_targets
from geode.ensembles.safecut import *  # noqa: F403
from geode.ensembles.simplex import (
    accuracy,
    as_oracle_stack,
    check_simplex,
    clr,
    expected_calibration_error,
    kl_divergence,
    nll,
    softmax,
)

__all__ = [
    "LayerwiseMerger",
    "MutualCorrection",
    "PerOracleTemperatureScaling",
    "RoundState",
    "TemperatureScaling",
    "accuracy",
    "as_oracle_stack",
    "average_merge",
    "check_simplex",
    "check_state_dicts",
    "clr",
    "confidence_gate",
    "direct_fusion",
    "expected_calibration_error",
    "fit_inverse_temperature",
    "kl_divergence",
    "log_pool",
    "majority_vote",
    "mean_fusion",
    "mutual_targets",
    "nll",
    "softmax",
    "task_arithmetic",
    "task_vectors",
    "ties_merge",
    "ties_tensor",
]
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_comparability_fusion.__all__, *_mda.__all__, *_safecut.__all__]
