"""PyTorch Geometric, imported once for the graphs field, so that the field imports without it.

With the ``graphs`` extra this module re-exports the PyG names the field builds on. Without it, the same names
stand for placeholders: a class built on ``MessagePassing`` (``CastorConv``, ``GPRProp``, ...) or a PyG layer
(``GCNConv``, ``APPNP``) raises an ``ImportError`` naming the extra when it is instantiated, and a PyG function
raises it when called; ``import geode.graphs``, ``geode list`` and ``geode show`` keep working.
"""

from __future__ import annotations

from typing import Any

from torch import nn

__all__ = ["APPNP", "HAVE_PYG", "INSTALL", "GCNConv", "MessagePassing", "gcn_norm", "is_sparse", "to_edge_index"]

INSTALL = "pip install 'geode[graphs]'"

try:
    from torch_geometric.nn import APPNP, GCNConv, MessagePassing
    from torch_geometric.nn.conv.gcn_conv import gcn_norm
    from torch_geometric.utils import is_sparse, to_edge_index

    HAVE_PYG = True
except ImportError:
    HAVE_PYG = False

    class MessagePassing(nn.Module):  # type: ignore[no-redef]
        """Stands for PyG's ``MessagePassing`` without the ``graphs`` extra: instantiating refuses."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise ImportError(f"{type(self).__name__} needs PyTorch Geometric: {INSTALL}")

    class GCNConv(MessagePassing):  # type: ignore[no-redef]
        """Stands for PyG's ``GCNConv`` without the ``graphs`` extra."""

    class APPNP(MessagePassing):  # type: ignore[no-redef]
        """Stands for PyG's ``APPNP`` without the ``graphs`` extra."""

    def _missing(*args: Any, **kwargs: Any) -> Any:
        raise ImportError(f"this needs PyTorch Geometric: {INSTALL}")

    gcn_norm = is_sparse = to_edge_index = _missing  # type: ignore[assignment]
