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
"""

from __future__ import annotations

from geode.graphs.castor.castor import Castor, CastorConv

__all__ = ["Castor", "CastorConv"]
