"""Castor: a per-node router over low-pass, high-pass and identity at every hop, with per-hop momentum."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from geode.graphs.baselines import input_dropout, linear

__all__ = ["Castor", "CastorConv"]

LOW, HIGH, IDENT = 0, 1, 2  # the three primitives, in the router's output order


class CastorConv(MessagePassing):
    r"""The Castor propagation block: ``K`` routed steps with heavy-ball momentum, as a PyG ``MessagePassing``.

    With :math:`\hat A = D^{-1/2}(A+I)D^{-1/2}` and the initial state :math:`Z^{(0)}` (the input),
    step :math:`k = 0, \dots, K-1` computes

    .. math::

        S &= \hat A H^{(k)}, \qquad R = H^{(k)} - S \quad \text{(low-pass, high-pass)}\\
        \pi_v &= \operatorname{softmax}\big(\rho([R_v \,\|\, Z^{(0)}_v]) + b_k\big) \in \Delta^2\\
        U &= \pi_{\mathrm{low}} \odot S + \pi_{\mathrm{high}} \odot R + \pi_{\mathrm{id}} \odot H^{(k)}\\
        H^{(k+1)} &= U + \beta_k \big(H^{(k)} - H^{(k-1)}\big) \quad (\text{no momentum at } k = 0)

    :math:`\rho` is a linear map (``router_hidden=None``) or a one-hidden-layer ReLU MLP, :math:`b_k` a
    learnable per-hop bias initialised to the authors' smoothing-then-preserve prior
    :math:`b_k = \tfrac12((K-1-k)/(K-1), 0, k/(K-1))`, and :math:`\beta_k` a free real per-hop
    coefficient initialised to 0; ``beta_k = 0`` (or ``momentum=False``) is first-order propagation.

    Parameters
    ----------
    channels : int
        Width of the propagated state.
    hops : int
        Number of steps ``K``.
    router_hidden : int or None
        Hidden width of the router; None: a linear router (the authors' configs for the small graphs).
    momentum : bool
        Learn the per-hop ``beta_k`` (False: ``beta = 0`` fixed).
    router_input : {"residual", "current"}
        What the router reads beside ``Z^(0)``: the high-pass residual ``R`` (the authors' code) or the
        current state ``H^(k)`` (the paper's abstract).
    hop_bias : {"default", "zero"}
        Initial per-hop bias.
    """

    def __init__(
        self,
        channels: int,
        hops: int = 10,
        *,
        router_hidden: int | None = None,
        momentum: bool = True,
        router_input: str = "residual",
        hop_bias: str = "default",
        beta_init: float = 0.0,
    ) -> None:
        super().__init__(aggr="add")
        if not isinstance(channels, int) or channels < 1:
            raise ValueError(f"channels must be a positive int, got {channels!r}")
        if not isinstance(hops, int) or hops < 1:
            raise ValueError(f"hops must be a positive int, got {hops!r}")
        if router_input not in ("residual", "current"):
            raise ValueError(f"router_input must be 'residual' or 'current', got {router_input!r}")
        if hop_bias not in ("default", "zero"):
            raise ValueError(f"hop_bias must be 'default' or 'zero', got {hop_bias!r}")
        if router_hidden is not None and (not isinstance(router_hidden, int) or router_hidden < 1):
            raise ValueError(f"router_hidden must be None or a positive int, got {router_hidden!r}")
        self.channels, self.hops, self.router_input = channels, hops, router_input
        if router_hidden is None:
            self.router: nn.Module = nn.Linear(2 * channels, 3)
        else:
            self.router = nn.Sequential(nn.Linear(2 * channels, router_hidden), nn.ReLU(), nn.Linear(router_hidden, 3))
        bias = torch.zeros(hops, 3)
        if hop_bias == "default":
            t = torch.arange(hops, dtype=torch.float32) / max(hops - 1, 1)
            bias[:, LOW], bias[:, IDENT] = 0.5 * (1 - t), 0.5 * t
        self.hop_bias = nn.Parameter(bias)
        self.beta = nn.Parameter(torch.full((hops,), float(beta_init))) if momentum else None
        self._cache: tuple[Tensor, Tensor, Tensor] | None = None

    def _norm(self, edge_index: Tensor, n: int) -> tuple[Tensor, Tensor]:
        if self._cache is None or self._cache[0] is not edge_index:
            ei, w = gcn_norm(edge_index, None, n, add_self_loops=True)
            self._cache = (edge_index, ei, w)
        return self._cache[1], self._cache[2]

    def forward(self, z0: Tensor, edge_index: Tensor, return_weights: bool = False) -> Any:
        """Propagate ``z0`` (``[N, channels]``) ``K`` steps; with ``return_weights`` also the ``[K, N, 3]`` weights."""
        if z0.dim() != 2 or z0.size(1) != self.channels:
            raise ValueError(f"z0 must have shape [N, {self.channels}], got {tuple(z0.shape)}")
        ei, w = self._norm(edge_index, z0.size(0))
        h, h_prev = z0, z0
        trace = []
        for k in range(self.hops):
            s = self.propagate(ei, x=h, edge_weight=w)  # low-pass Â H
            r = h - s  # high-pass (I - Â) H
            read = r if self.router_input == "residual" else h
            a = torch.softmax(self.router(torch.cat([read, z0], dim=1)) + self.hop_bias[k], dim=1)
            u = a[:, LOW : LOW + 1] * s + a[:, HIGH : HIGH + 1] * r + a[:, IDENT : IDENT + 1] * h
            if self.beta is not None and k > 0:
                u = u + self.beta[k] * (h - h_prev)  # heavy-ball: carry the latest change forward
            h_prev, h = h, u
            if return_weights:
                trace.append(a.detach())
        return (h, torch.stack(trace)) if return_weights else h

    def message(self, x_j: Tensor, edge_weight: Tensor) -> Tensor:
        return edge_weight.view(-1, 1) * x_j

    def betas(self) -> Tensor:
        """The per-hop momentum coefficients (zeros when ``momentum=False``)."""
        return self.beta.detach().clone() if self.beta is not None else torch.zeros(self.hops)


class Castor(nn.Module):
    """Castor node classifier: a two-layer encoder to ``Z^(0)`` (class logits), then :class:`CastorConv`.

    ``Castor(in_dim, hidden, out_dim, hops)`` maps ``(x, edge_index)`` to logits ``[N, out_dim]``. The
    encoder is ``Z^(0) = W_2 Drop(ReLU(W_1 Drop(X)))`` followed by dropout; the propagated state has
    width ``out_dim`` (the authors' class-logit variant). Keyword arguments go to :class:`CastorConv`.
    The router, hop bias and ``beta`` are the parameters named in :attr:`no_decay` (trained without
    weight decay, as in the authors' code).
    """

    no_decay: tuple[str, ...] = ("conv.router", "conv.hop_bias", "conv.beta")

    def __init__(
        self, in_dim: int, hidden: int, out_dim: int, hops: int = 10, *, dropout: float = 0.5, **conv_kwargs: Any
    ) -> None:
        super().__init__()
        for k, v in (("in_dim", in_dim), ("hidden", hidden), ("out_dim", out_dim)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{k} must be a positive int, got {v!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.lin1, self.lin2 = nn.Linear(in_dim, hidden), nn.Linear(hidden, out_dim)
        self.conv = CastorConv(out_dim, hops, **conv_kwargs)
        self.dropout = dropout

    def encode(self, x: Tensor) -> Tensor:
        """``Z^(0)`` from the raw features."""
        h = F.relu(linear(self.lin1, input_dropout(x, self.dropout, self.training)))
        return F.dropout(self.lin2(F.dropout(h, self.dropout, self.training)), self.dropout, self.training)

    def forward(self, x: Tensor, edge_index: Tensor, return_weights: bool = False) -> Any:
        return self.conv(self.encode(x), edge_index, return_weights=return_weights)
