"""Graph learning: node-classification generators and loaders, the field's baselines, and its papers.

Papers: ``castor`` (a self-tuning graph filter) and ``connectome_eiv`` (connectome GNNs as an
errors-in-variables problem; numpy and scikit-learn only). The field needs PyTorch Geometric (the
``graphs`` extra). What several papers reuse sits here: CSBM and mixed-homophily generators, edge
homophily, the offline loaders of the real benchmark graphs, and the baselines MLP, GCN, APPNP, GPR-GNN
and an ACM-GCN-style mixer with one full-batch training loop.
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
