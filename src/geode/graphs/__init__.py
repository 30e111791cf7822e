"""Graph learning: node-classification generators and loaders, the field's baselines, and its papers.

Papers: ``castor`` (a self-tuning graph filter) and ``connectome_eiv`` (connectome GNNs as an
errors-in-variables problem; numpy and scikit-learn only). The field needs PyTorch Geometric (the
``graphs`` extra). What several papers reuse sits here: CSBM and mixed-homophily generators, edge
homophily, the offline loaders of the real benchmark graphs, and the baselines MLP, GCN, APPNP, GPR-GNN
and an ACM-GCN-style mixer with one full-batch training loop.

Papers and their names
----------------------
Every name below is importable from the field package and from its paper's package.

``castor`` (``geode.graphs.castor``)::

    from geode.graphs import Castor, CastorConv

- ``CastorConv``: the propagation block, a PyG ``MessagePassing``: ``forward(z0, edge_index, edge_weight=None)``;
- ``Castor``: the node classifier: a two-layer encoder, then ``CastorConv``.

``connectome-eiv`` (``geode.graphs.connectome_eiv``)::

    from geode.graphs import (
        ConnectomeSample, LatentCommunityModel, cv_r2, eiv_decomposition, gcn_features, knn_graph,
        normalized_adjacency, raw_features, sample_correlation,
    )

- ``LatentCommunityModel``: the latent community model of connectomes; ``sample(n, T, rng)``;
- ``ConnectomeSample``: one sampled cohort: loadings, latent and two noisy correlation matrices;
- ``sample_correlation``: Pearson correlations of time series;
- ``knn_graph``: the symmetric kNN graph on absolute correlations;
- ``normalized_adjacency``: the GCN normalisation of an adjacency (with self-loops);
- ``gcn_features``: one linear graph convolution of each subject's correlations, flattened;
- ``raw_features``: the graph-agnostic features (flattened correlations);
- ``cv_r2``: cross-validated R2 of ridge regression;
- ``eiv_decomposition``: the three mechanisms (smoothing, graph estimation, double dipping) from four R2 values.
"""

from __future__ import annotations

from geode.graphs import castor as _castor
from geode.graphs import connectome_eiv as _connectome_eiv
from geode.graphs.baselines import (
    ACMGCN,
    GCN,
    GPRGNN,
    MLP,
    APPNPNet,
    FitResult,
    GPRProp,
    NormProp,
    fit_node_classifier,
)
from geode.graphs.castor import *  # noqa: F403
from geode.graphs.connectome_eiv import *  # noqa: F403
from geode.graphs.data import (
    GRAPH_NAMES,
    csbm,
    default_graph_dir,
    edge_homophily,
    load_graph,
    mixed_homophily_graph,
    random_split,
    validate_edge_index,
)

__all__ = [
    "ACMGCN",
    "GCN",
    "GPRGNN",
    "GRAPH_NAMES",
    "MLP",
    "APPNPNet",
    "FitResult",
    "GPRProp",
    "NormProp",
    "csbm",
    "default_graph_dir",
    "edge_homophily",
    "fit_node_classifier",
    "load_graph",
    "mixed_homophily_graph",
    "random_split",
    "validate_edge_index",
    *_castor.__all__,
    *_connectome_eiv.__all__,
]
