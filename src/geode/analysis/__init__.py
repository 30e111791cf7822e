"""Representation analysis: similarity measures, pullback metrics, sparse dictionaries.

The paper folders live below (``geode.analysis.msa``, ``geode.analysis.gae``); what several of them can
reuse sits here: the extrinsic similarity measures the field compares against (linear and RBF CKA,
CCA, SVCCA, PWCCA, RSA, the Procrustes distance), the pullback metric of a network on a data manifold
(exact, from Jacobians, or from samples), and a small sparse-autoencoder trainer (ReLU and TopK) with
its fidelity measure (ReLU, TopK and JumpReLU; pretrained dictionaries load from SAELens or GemmaScope files).

Papers and their names
----------------------
Each paper's names are re-exported here; ``geode show <slug>`` prints the same with a runnable example.

``agop-engagement``: optimization engagement, the loss's AGOP against a probe's concept subspace::

    from geode.analysis import (AgreementLanguage, TinyTransformer, agop, agop_loop, concept_subspace,
                                engagement, layer_names, next_token_loss, subspace_alignment)

- ``agop``: average gradient outer product of a loss w.r.t. one layer's output (batched backward passes)
- ``agop_loop``: the same AGOP, one backward pass per sequence (the benchmark's naive baseline)
- ``concept_subspace``: orthonormal basis spanned by a linear probe's weights for some labels
- ``engagement``: share of the AGOP's trace inside a subspace, relative to a random one (1 = chance)
- ``subspace_alignment``: mean squared cosine between a subspace and the AGOP's top eigenvectors
- ``next_token_loss``: summed next-token cross-entropy, the default loss of ``agop``
- ``layer_names``: the submodule names ``agop`` accepts as ``layer``
- ``AgreementLanguage``: synthetic subject-verb agreement data with distractors and attractors
- ``TinyTransformer``: a small causal transformer whose blocks are ``blocks.<i>``

``gae``: the Geometry-Adaptive Explainer, realigning a sparse dictionary to OOD activations without training::

    from geode.analysis import (GAE, SHIFT_KINDS, active_subspace, dictionary_subspace, direct_rotation,
                                faithfulness_gap, mean_shift_adapt, planted_features, refit_decoder,
                                rotation_towards, run_shift_study, sample_activations, shifted_activations)

- ``GAE``: the explainer, ``GAE().fit(sae, X_ood).adapted_`` (closed form; ``mode="theory"`` or ``"direct"``)
- ``active_subspace``: top principal subspace of activations (the OOD-active subspace)
- ``dictionary_subspace``: a dictionary's active subspace, from its usage-weighted decoder
- ``faithfulness_gap``: projection distance between two subspaces (the paper's gap)
- ``direct_rotation``: the minimal rotation taking one subspace onto another
- ``mean_shift_adapt``: baseline, move the decoder bias to the OOD mean
- ``refit_decoder``: baseline, closed-form ridge refit of the decoder on OOD data
- ``planted_features``: ground-truth sparse features in a low-dimensional subspace (synthetic data)
- ``sample_activations``: activations from planted features, optionally rotated and rescaled
- ``shifted_activations``: OOD activations under one of ``SHIFT_KINDS``
- ``rotation_towards``: the planted rotation of the active subspace by an angle
- ``SHIFT_KINDS``: the shift kinds, ``("rotation", "stretch", "new_features", "warp")``
- ``run_shift_study``: the claim's study (train a dictionary, adapt at each shift, evaluate)

``msa``: metric similarity analysis, comparing the intrinsic (pullback-metric) geometry of two representations::

    from geode.analysis import (SingularMetricWarning, estimate_intrinsic_dim, local_chart_metrics,
                                msa_distance, msa_from_metrics, spectral_ratios)

- ``msa_distance``: MSA distance between two paired representations, from samples (0 = same geometry)
- ``msa_from_metrics``: MSA distance between two fields of metric tensors (e.g. from ``pullback_metric``)
- ``spectral_ratios``: per-point generalised eigenvalues of two metric fields
- ``local_chart_metrics``: both metrics in local orthonormal charts of ``X`` (when no coordinates are given)
- ``estimate_intrinsic_dim``: intrinsic dimension by local PCA
- ``SingularMetricWarning``: warns when a metric is (near-)singular at some points

``geode.analysis.msa`` is the paper's package; its distance was named ``msa`` until issue 43 (``msa_distance`` now).

``weight-drift``: negative weight drift, activation sparsity and spikes ("Bug or Feature²")::

    from geode.analysis import (ACTIVATIONS, GELU2, ClippedGELU2, ClippedReLU2, QuantileReLU, ReLU2,
                                SparsityMonitor, expected_preactivation_gradient, make_activation, downstream_drift)

- ``downstream_drift``: drift of the mean of each weight matrix over a training history, in initial-std units
- ``expected_preactivation_gradient``: the paper's statistic E[dL/dz | z > 0] at every activation module
- ``SparsityMonitor``: forward hooks recording each activation's sparsity and spike ratio
- ``QuantileReLU``: a ReLU thresholded at the batch quantile (a target sparsity)
- ``ReLU2``, ``GELU2``: squared ReLU and squared GELU
- ``ClippedReLU2``, ``ClippedGELU2``: the squares clipped at ``c`` (zero gradient above it)
- ``make_activation``: an activation module by name
- ``ACTIVATIONS``: the names ``make_activation`` accepts

Shared by the field (no paper of its own): ``linear_cka``, ``rbf_cka``, ``cca``, ``svcca``, ``pwcca``,
``canonical_correlations``, ``rsa``, ``rdm``, ``procrustes_distance``, ``check_pair``, ``jacobians``,
``pullback_metric``, ``metric_from_samples``, ``SparseAutoencoder``, ``train_sae``, ``fvu``.
"""

from __future__ import annotations

from geode.analysis import agop_engagement as _agop_engagement
from geode.analysis import gae as _gae
from geode.analysis import msa as _msa
from geode.analysis import weight_drift as _weight_drift
from geode.analysis.agop_engagement import *  # noqa: F403
from geode.analysis.gae import *  # noqa: F403
from geode.analysis.msa import *  # noqa: F403
from geode.analysis.pullback import jacobians, metric_from_samples, pullback_metric
from geode.analysis.sae import SparseAutoencoder, fvu, train_sae
from geode.analysis.similarity import (
    canonical_correlations,
    cca,
    check_pair,
    linear_cka,
    procrustes_distance,
    pwcca,
    rbf_cka,
    rdm,
    rsa,
    svcca,
)
from geode.analysis.weight_drift import *  # noqa: F403

__all__ = [
    "SparseAutoencoder",
    "canonical_correlations",
    "cca",
    "check_pair",
    "fvu",
    "jacobians",
    "linear_cka",
    "metric_from_samples",
    "procrustes_distance",
    "pullback_metric",
    "pwcca",
    "rbf_cka",
    "rdm",
    "rsa",
    "svcca",
    "train_sae",
]
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_agop_engagement.__all__, *_gae.__all__, *_msa.__all__, *_weight_drift.__all__]
