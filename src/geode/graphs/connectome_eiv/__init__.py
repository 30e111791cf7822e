"""GNNs on connectomes as an errors-in-variables problem (NeurIPS 2026; no code released).

Claim: with the latent connectome observed only through a finite-time-series correlation estimate, one
graph convolution improves a ridge prediction only for community-smooth targets and only for
time-series lengths T inside a window (between the graph-estimation and raw-noise limits); a graph built
from the same noisy matrix as the features (double dipping) does worse than an independently estimated
one; for a rough (within-community) target the graph hurts.

The module gives the latent community model (:class:`LatentCommunityModel`: time series of length T ->
noisy correlation matrices, plus an independent second scan), graph construction (kNN on the oracle,
an independent scan or the same sample), one linear graph convolution ``Â Ĉ`` read out by ridge, the
graph-agnostic ridge on ``Ĉ``, and the three-mechanism decomposition read empirically from the four
pipelines (:func:`eiv_decomposition`). Inferred (the paper was not found; the abstract and the project's
prototype notes):

- loadings ``L_ij = a_{i,k(j)} + delta_ij`` with ``a ~ U(0.2, 0.8)``, ``delta ~ N(0, 0.15^2)``, clipped to
  ``|L| <= 0.95``; community factors with correlation 0.2 between communities;
- kNN graph on ``|M|`` (k = 8 in the claim), union-symmetrised, ``Â = D^{-1/2}(A+I)D^{-1/2}``;
- the linear GCN is one propagation of the correlation rows, flattened, with ridge (the paper's
  "linear asymptotic setting"); the nonlinear GNN of the paper's real-data part is not included;
- the decomposition is empirical (the contrasts oracle - raw, independent - oracle, same - independent),
  not the paper's asymptotic formulas, which we do not have.

Examples
--------
Sixty subjects with 16 regions in 4 communities, scans of 40 time points; a community-smooth target
(the subjects' mean community loading) read out by ridge from the raw correlations and from one graph
convolution, on a kNN graph from an independent scan, the oracle connectome, or the same noisy scan:

>>> from geode.graphs import LatentCommunityModel, cv_r2, eiv_decomposition, gcn_features, raw_features
>>> s = LatentCommunityModel(p=16, K=4).sample(n=60, T=40, rng=0)
>>> y = s.a.mean(axis=1)
>>> r2 = [cv_r2(raw_features(s.corr), y)] + [
...     cv_r2(gcn_features(s.corr, graph_from, k=3), y) for graph_from in (s.true_corr, s.corr_indep, s.corr)
... ]
>>> r2[2] > r2[0]                               # the graph (from an independent scan) helps here
True
>>> sorted(eiv_decomposition(*r2))              # the three mechanisms; they add up to "total"
['double_dipping', 'graph_estimation', 'smoothing', 'total']
"""

from __future__ import annotations

from geode.graphs.connectome_eiv.model import (
    ConnectomeSample,
    LatentCommunityModel,
    cv_r2,
    eiv_decomposition,
    gcn_features,
    knn_graph,
    normalized_adjacency,
    raw_features,
    sample_correlation,
)

__all__ = [
    "ConnectomeSample",
    "LatentCommunityModel",
    "cv_r2",
    "eiv_decomposition",
    "gcn_features",
    "knn_graph",
    "normalized_adjacency",
    "raw_features",
    "sample_correlation",
]
