"""Castor: self-tuning graph filter (NeurIPS 2026; authors' code ``amir-ghz/CASTOR``).

Claim: a single Castor instance, a per-node router over low-pass, high-pass and identity at every
propagation step plus a learnable per-hop momentum, ranks top-three on every node-classification
benchmark across the homophily spectrum and has the best average rank.

:class:`CastorConv` is the propagation block as a PyG ``MessagePassing`` module (usable in any PyG model);
:class:`Castor` is the node classifier (encoder + block). Inferred details and deliberate differences
from the authors' code (read, not copied):

- the router reads the high-pass residual ``(I - Â)H`` and the initial state ``Z^(0)`` as in the authors'
  code (the abstract says "current state"; ``router_input="current"`` gives that reading);
- per-hop router bias initialised to the authors' smoothing-then-preserve prior; ``beta_k`` free real
  numbers initialised to 0 (first-order propagation at start), heavy-ball form, no momentum at step 0;
- class-logit state (``state_dim = out_dim``, no head) and no normalisation of the output, as in the
  authors' configs for the small graphs; their wide-state variant with a head is not included;
- the authors' optional curvature gate (BFC), Nesterov mode and channel-group routing are not included.

Examples
--------
:class:`CastorConv` inside a PyG model, after PyG's own ``GCNConv``, with the same ``(x, edge_index,
edge_weight)`` call; the router's weights are per-node points of the simplex, starting from the
smoothing-then-preserve prior:

>>> import torch
>>> from torch_geometric.nn import GCNConv
>>> from torch_geometric.utils import to_undirected
>>> from geode.graphs import Castor, CastorConv
>>> _ = torch.manual_seed(0)
>>> edge_index = to_undirected(torch.randint(0, 30, (2, 60)), num_nodes=30)   # Castor expects undirected
>>> edge_weight = torch.ones(edge_index.size(1))
>>> x = torch.randn(30, 8)
>>> class Net(torch.nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.gcn, self.castor = GCNConv(8, 3), CastorConv(3, hops=4)
...     def forward(self, x, edge_index, edge_weight=None):
...         return self.castor(self.gcn(x, edge_index, edge_weight), edge_index, edge_weight)
>>> net = Net()
>>> net(x, edge_index, edge_weight).shape
torch.Size([30, 3])
>>> _, w = net.castor(net.gcn(x, edge_index), edge_index, return_weights=True)   # [hops, nodes, 3]
>>> w.shape, bool(torch.allclose(w.sum(-1), torch.ones(4, 30)))
(torch.Size([4, 30, 3]), True)
>>> net.castor.hop_bias.detach()                 # low-pass, high-pass, identity per hop, before training
tensor([[0.5000, 0.0000, 0.0000],
        [0.3333, 0.0000, 0.1667],
        [0.1667, 0.0000, 0.3333],
        [0.0000, 0.0000, 0.5000]])
>>> Castor(8, 16, 3, hops=4)(x, edge_index).shape    # the node classifier: encoder + CastorConv
torch.Size([30, 3])
"""

from __future__ import annotations

from geode.graphs.castor.castor import Castor, CastorConv

__all__ = ["Castor", "CastorConv"]
