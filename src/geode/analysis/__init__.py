"""Representation analysis: similarity measures, pullback metrics, sparse dictionaries.

The paper folders live below (``geode.analysis.msa``, ``geode.analysis.gae``); what several of them can
reuse sits here: the extrinsic similarity measures the field compares against (linear and RBF CKA,
CCA, SVCCA, PWCCA, RSA, the Procrustes distance), the pullback metric of a network on a data manifold
(exact, from Jacobians, or from samples), and a small sparse-autoencoder trainer (ReLU and TopK) with
its fidelity measure (ReLU, TopK and JumpReLU; pretrained dictionaries load from SAELens or GemmaScope files).
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
