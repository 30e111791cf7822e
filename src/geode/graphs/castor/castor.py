"""Castor: a per-node router over low-pass, high-pass and identity at every hop, with per-hop momentum."""

from __future__ import annotations

import warnings
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from geode.core.validation import check_real
from geode.graphs.baselines import check_nodes, input_dropout, linear
from geode.graphs.pyg import MessagePassing, gcn_norm, is_sparse, to_edge_index

__all__ = ["Castor", "CastorConv"]

LOW, HIGH, IDENT = 0, 1, 2  # the three primitives, in the router's output order


class CastorConv(MessagePassing):
    r"""The Castor propagation block: ``K`` routed steps with heavy-ball momentum, as a PyG ``MessagePassing``.

    With :math:`\hat A = D^{-1/2}(A+I)D^{-1/2}` (:math:`A` the, optionally weighted, adjacency; self-loops of
    weight 1, as PyG's ``gcn_norm``) and the initial state :math:`Z^{(0)}` (the input),
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
        Initial per-hop bias: the smoothing-then-preserve prior above, or zeros (a uniform router at start).
    beta_init : float
        Initial value of every per-hop momentum :math:`\beta_k` (ignored when ``momentum=False``). The default
        0 starts as first-order propagation, as in the authors' code; a positive value starts with heavy-ball
        momentum.

    Notes
    -----
    The graph is given as in PyG: ``forward(z0, edge_index, edge_weight=None)``, or a sparse adjacency
    ``adj_t`` (a ``torch.sparse`` tensor or a ``torch_sparse.SparseTensor``, row = target) in place of
    ``edge_index``. The normalised graph is cached while the same ``edge_index`` (and ``edge_weight``) tensors
    come back unmodified; edge weights that require grad are renormalised at every call.

    The low-pass/high-pass split presumes an undirected graph (a symmetric :math:`\hat A`, whose spectrum lies
    in :math:`(-1, 1]`). A directed ``edge_index``, or weights with :math:`w_{ij} \ne w_{ji}`, is still
    propagated as PyG's ``GCNConv`` would (in-degree normalisation), but with a ``UserWarning``, not an error:
    directed propagation is a legitimate PyG input, only the filter reading of the router's choices is lost.
    Symmetrise it with ``torch_geometric.utils.to_undirected`` to silence the warning.

    ``forward`` checks the state's type and shape (and new edge weights once, when the graph is normalised); NaN in
    ``z0`` propagates like torch's own layers (no scan at every training step).

    Examples
    --------
    >>> import torch
    >>> from torch_geometric.nn import APPNP
    >>> ei = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])           # the path 0-1-2, both directions
    >>> w = torch.tensor([1.0, 1.0, 0.5, 0.5])                     # symmetric edge weights
    >>> conv = CastorConv(2, hops=3, momentum=False)
    >>> with torch.no_grad():                                      # force the low-pass filter at every hop
    ...     _ = conv.router.weight.zero_(), conv.router.bias.zero_(), conv.hop_bias.fill_(0.0)
    ...     _ = conv.hop_bias[:, 0].fill_(50.0)
    >>> z = torch.randn(3, 2)
    >>> bool(torch.allclose(conv(z, ei, w), APPNP(K=3, alpha=0.0)(z, ei, w), atol=1e-5))
    True
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
        beta_init = check_real("beta_init", beta_init)
        self.beta = nn.Parameter(torch.full((hops,), float(beta_init))) if momentum else None
        self._cache: tuple[tuple[Any, ...], Tensor, Tensor] | None = None

    def _norm(self, edge_index: Any, edge_weight: Tensor | None, n: int) -> tuple[Tensor, Tensor]:
        learnable = edge_weight is not None and edge_weight.requires_grad
        # the cache holds the tensors themselves (so their ids cannot be reused) and their in-place versions
        key = (
            edge_index,
            getattr(edge_index, "_version", None),
            n,
            edge_weight,
            getattr(edge_weight, "_version", None),
        )
        if learnable or self._cache is None or not _same_key(self._cache[0], key):
            if is_sparse(edge_index):  # PyG's adj_t (row = target): back to (source, target) pairs
                if edge_weight is not None:
                    raise ValueError(
                        "pass edge_weight with an edge_index, not with a sparse adjacency (it holds them)"
                    )
                ei, edge_weight = to_edge_index(edge_index)
                edge_index = ei.flip(0)
            _check_graph(edge_index, edge_weight, n)
            ei, w = gcn_norm(edge_index, edge_weight, n, add_self_loops=True)
            if learnable:
                return ei, w
            self._cache = (key, ei, w)
        return self._cache[1], self._cache[2]

    def forward(
        self, z0: Tensor, edge_index: Any, edge_weight: Tensor | None = None, return_weights: bool = False
    ) -> Any:
        """Propagate ``z0`` ``K`` steps over the graph.

        Parameters
        ----------
        z0 : Tensor, shape [N, channels]
            The initial state :math:`Z^{(0)}` (PyG's ``x``).
        edge_index : LongTensor [2, E], or a sparse adjacency
            The graph, as for any PyG conv: edges (source, target), or ``adj_t`` (``torch.sparse`` or
            ``torch_sparse.SparseTensor``, row = target, its values the edge weights). It should be undirected
            (each edge in both directions); a directed one warns (class Notes).
        edge_weight : Tensor [E], optional
            Non-negative edge weights (default 1), symmetric for an undirected graph.
        return_weights : bool
            Also return the router's weights, ``[K, N, 3]`` (low-pass, high-pass, identity).

        Returns
        -------
        Tensor [N, channels], or (Tensor, Tensor [K, N, 3]) with ``return_weights``
        """
        if isinstance(edge_weight, bool):  # the former signature forward(z0, edge_index, return_weights)
            edge_weight, return_weights = None, edge_weight
        check_nodes("z0", z0, self.channels)
        if edge_weight is not None and not isinstance(edge_weight, Tensor):
            raise TypeError(
                f"edge_weight must be a tensor [E] of edge weights (or None); got {type(edge_weight).__name__}"
            )
        ei, w = self._norm(edge_index, edge_weight, z0.size(0))
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


def _same_key(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return all(x is y or (not isinstance(x, Tensor) and x == y) for x, y in zip(a, b))


def _check_graph(edge_index: Tensor, edge_weight: Tensor | None, n: int) -> None:
    """Shape checks, and a UserWarning when the graph is directed (an edge without its reverse, or w_ij != w_ji)."""
    if not isinstance(edge_index, Tensor) or edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must be a [2, E] integer tensor or a sparse adjacency; got {type(edge_index)}")
    if edge_weight is not None and (edge_weight.dim() != 1 or edge_weight.numel() != edge_index.size(1)):
        raise ValueError(
            f"edge_weight must have shape [E] = [{edge_index.size(1)}] (one weight per edge); "
            f"got {tuple(edge_weight.shape)}"
        )
    if edge_weight is not None and not bool(edge_weight.detach().isfinite().all()):
        raise ValueError("edge_weight must contain only finite values (found NaN or inf)")
    if edge_index.numel() == 0:
        return
    src, dst = edge_index[0].long(), edge_index[1].long()
    fwd, rev = src * n + dst, dst * n + src
    order = torch.argsort(fwd)
    pos = torch.searchsorted(fwd[order], rev).clamp(max=fwd.numel() - 1)
    found = fwd[order][pos] == rev
    why = ""
    if not bool(found.all()):
        why = f"{int((~found).sum())} of {fwd.numel()} edges have no reverse edge"
    elif edge_weight is not None:
        w = edge_weight.detach()
        if not torch.allclose(w, w[order][pos], rtol=1e-5, atol=1e-8):
            why = "some edge weights differ from their reverse edge's (w_ij != w_ji)"
    if why:
        warnings.warn(
            f"CastorConv got a directed graph ({why}). Castor's low-/high-pass split presumes an undirected graph "
            "(a symmetric normalised adjacency); the propagation runs (in-degree normalisation, as GCNConv), but the "
            "router's filters lose their spectral meaning. Symmetrise it with torch_geometric.utils.to_undirected.",
            UserWarning,
            stacklevel=4,
        )


class Castor(nn.Module):
    """Castor node classifier: a two-layer encoder to ``Z^(0)`` (class logits), then :class:`CastorConv`.

    ``Castor(in_dim, hidden, out_dim, hops)`` maps ``(x, edge_index[, edge_weight])`` to logits ``[N, out_dim]``. The
    encoder is ``Z^(0) = W_2 Drop(ReLU(W_1 Drop(X)))`` followed by dropout; the propagated state has
    width ``out_dim`` (the authors' class-logit variant). Keyword arguments go to :class:`CastorConv`.
    The router, hop bias and ``beta`` are the parameters named in :attr:`no_decay` (trained without
    weight decay, as in the authors' code). The forward checks the features' type and shape only; NaN propagates
    like torch's own layers.
    """

    no_decay: tuple[str, ...] = ("conv.router", "conv.hop_bias", "conv.beta")

    def __init__(
        self, in_dim: int, hidden: int, out_dim: int, hops: int = 10, *, dropout: float = 0.5, **conv_kwargs: Any
    ) -> None:
        super().__init__()
        for k, v in (("in_dim", in_dim), ("hidden", hidden), ("out_dim", out_dim)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{k} must be a positive int, got {v!r}")
        check_real("dropout", dropout, low=0.0, high=1.0, high_inclusive=False)
        self.lin1, self.lin2 = nn.Linear(in_dim, hidden), nn.Linear(hidden, out_dim)
        self.conv = CastorConv(out_dim, hops, **conv_kwargs)
        self.dropout = dropout

    def encode(self, x: Tensor) -> Tensor:
        """``Z^(0)`` from the raw features."""
        h = F.relu(linear(self.lin1, input_dropout(x, self.dropout, self.training)))
        return F.dropout(self.lin2(F.dropout(h, self.dropout, self.training)), self.dropout, self.training)

    def forward(
        self, x: Tensor, edge_index: Any, edge_weight: Tensor | None = None, return_weights: bool = False
    ) -> Any:
        """Logits ``[N, out_dim]`` (and the router's weights with ``return_weights``); see ``CastorConv.forward``."""
        if isinstance(edge_weight, bool):  # the former signature forward(x, edge_index, return_weights)
            edge_weight, return_weights = None, edge_weight
        check_nodes("x", x, self.lin1.in_features)
        return self.conv(self.encode(x), edge_index, edge_weight, return_weights=return_weights)
