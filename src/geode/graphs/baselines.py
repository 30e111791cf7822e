"""Node-classification baselines of the graphs field, and one full-batch training loop for all of them.

GCN and APPNP are PyG's own layers (``GCNConv``, ``APPNP``); PyG has no GPR-GNN and no ACM-GCN, so
:class:`GPRProp`/:class:`GPRGNN` (Chien et al., ICLR 2021) and :class:`ACMGCN` (Luan et al., NeurIPS
2022, the node-wise low-pass/high-pass/identity mixer) are written here as PyG ``MessagePassing``
modules. Every model maps ``(x, edge_index) -> logits``; ``x`` may be a sparse COO tensor (bag-of-words
features of the citation graphs), in which case the first linear map is a sparse product and the
input dropout is skipped.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from geode.core.validation import check_real
from geode.graphs.pyg import APPNP, GCNConv, MessagePassing, gcn_norm

__all__ = [
    "ACMGCN",
    "GCN",
    "GPRGNN",
    "MLP",
    "APPNPNet",
    "FitResult",
    "GPRProp",
    "NormProp",
    "fit_node_classifier",
    "input_dropout",
    "linear",
]


def linear(lin: nn.Linear, x: Tensor) -> Tensor:
    """``lin(x)`` for a dense or a sparse COO ``x`` (sparse: ``x @ W^T + b`` without densifying ``x``)."""
    if x.is_sparse:
        out = torch.sparse.mm(x, lin.weight.t())
        return out + lin.bias if lin.bias is not None else out
    return lin(x)


def input_dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """Dropout on the input features; on a sparse ``x`` it drops stored entries (zeros stay zeros, as dense)."""
    if not x.is_sparse:
        return F.dropout(x, p=p, training=training)
    if not training or p == 0.0:
        return x
    x = x.coalesce()
    return torch.sparse_coo_tensor(
        x.indices(), F.dropout(x.values(), p=p, training=True), x.shape, check_invariants=False
    )


def _check_dims(**dims: Any) -> None:
    for k, v in dims.items():
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{k} must be a positive int, got {v!r}")


def _check_p(dropout: float) -> None:
    check_real("dropout", dropout, low=0.0, high=1.0, high_inclusive=False)


def check_nodes(name: str, x: Any, dim: int | None = None) -> None:
    """Node features ``[N >= 1, dim]`` (dense or sparse): the type and shape only, no scan of the values.

    The models' forwards run at every training step, so NaN or infinity in the features propagates like
    torch's own layers (the class docstrings say so); :func:`fit_node_classifier` checks its data once.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a tensor of node features [N, {dim or 'F'}]; got {type(x).__name__}")
    if x.dim() != 2 or x.size(0) == 0 or (dim is not None and x.size(1) != dim):
        raise ValueError(f"{name} must have shape [N >= 1, {dim or 'F'}]; got {tuple(x.shape)}")


class MLP(nn.Module):
    """Two-layer perceptron on the node features alone (the graph-free control).

    Its forward checks the features' type and shape only; NaN propagates like torch's own layers.
    """

    def __init__(self, in_dim: int, hidden: int, out_dim: int, dropout: float = 0.5) -> None:
        super().__init__()
        _check_dims(in_dim=in_dim, hidden=hidden, out_dim=out_dim)
        _check_p(dropout)
        self.lin1, self.lin2, self.dropout = nn.Linear(in_dim, hidden), nn.Linear(hidden, out_dim), dropout

    def forward(self, x: Tensor, edge_index: Tensor | None = None) -> Tensor:
        check_nodes("x", x, self.lin1.in_features)
        x = F.relu(linear(self.lin1, input_dropout(x, self.dropout, self.training)))
        return self.lin2(F.dropout(x, self.dropout, self.training))


class NormProp(MessagePassing):
    """The symmetric-normalised propagation ``Â X`` with ``Â = D^{-1/2}(A + I)D^{-1/2}`` (normalisation cached).

    Its forward checks the features' type and shape only; NaN propagates like torch's own layers.
    """

    def __init__(self) -> None:
        super().__init__(aggr="add")
        self._cache: tuple[Tensor, Tensor, Tensor] | None = None

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        check_nodes("x", x)
        ei, w = _cached_norm(self, edge_index, x.size(0))
        return self.propagate(ei, x=x, edge_weight=w)

    def message(self, x_j: Tensor, edge_weight: Tensor) -> Tensor:
        return edge_weight.view(-1, 1) * x_j


class GCN(nn.Module):
    """Kipf and Welling's GCN: ``layers`` graph convolutions ``Â H W`` with ReLU and dropout between them.

    The first layer is computed as ``Â (X W) + b`` (so a sparse ``X`` is never densified); the others are
    PyG ``GCNConv`` layers.

    Its forward checks the features' type and shape only; NaN propagates like torch's own layers.
    """

    def __init__(self, in_dim: int, hidden: int, out_dim: int, dropout: float = 0.5, layers: int = 2) -> None:
        super().__init__()
        _check_dims(in_dim=in_dim, hidden=hidden, out_dim=out_dim)
        if not isinstance(layers, int) or layers < 2:
            raise ValueError(f"layers must be an int >= 2, got {layers!r}")
        _check_p(dropout)
        self.lin_in = nn.Linear(in_dim, hidden)
        self.prop = NormProp()
        self.convs = nn.ModuleList(
            [GCNConv(hidden, hidden, cached=True) for _ in range(layers - 2)] + [GCNConv(hidden, out_dim, cached=True)]
        )
        self.dropout = dropout

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        check_nodes("x", x, self.lin_in.in_features)
        h = linear(self.lin_in, input_dropout(x, self.dropout, self.training))
        h = F.relu(self.prop(h - self.lin_in.bias, edge_index) + self.lin_in.bias)
        for i, conv in enumerate(self.convs):
            h = conv(F.dropout(h, self.dropout, self.training), edge_index)
            if i < len(self.convs) - 1:
                h = F.relu(h)
        return h


class APPNPNet(nn.Module):
    """APPNP (Gasteiger et al., ICLR 2019): an MLP, then PyG's ``APPNP`` personalised-PageRank propagation.

    Its forward checks the features' type and shape only; NaN propagates like torch's own layers.
    """

    def __init__(
        self, in_dim: int, hidden: int, out_dim: int, dropout: float = 0.5, hops: int = 10, alpha: float = 0.1
    ) -> None:
        super().__init__()
        _check_dims(in_dim=in_dim, hidden=hidden, out_dim=out_dim, hops=hops)
        _check_p(dropout)
        alpha = check_real("alpha", alpha, low=0.0, high=1.0, low_inclusive=False)
        self.mlp = MLP(in_dim, hidden, out_dim, dropout)
        self.prop = APPNP(hops, alpha, cached=True)

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        check_nodes("x", x, self.mlp.lin1.in_features)
        return self.prop(self.mlp(x), edge_index)


class GPRProp(MessagePassing):
    """GPR-GNN's propagation ``sum_k gamma_k Â^k Z`` with learnable ``gamma`` initialised to PPR weights.

    ``gamma_k = alpha (1 - alpha)^k`` for ``k < K`` and ``(1 - alpha)^K`` at ``k = K`` (Chien et al.'s
    ``PPR`` initialisation), ``Â = D^{-1/2}(A + I)D^{-1/2}``.

    Its forward checks the features' type and shape only; NaN propagates like torch's own layers.
    """

    def __init__(self, hops: int = 10, alpha: float = 0.1) -> None:
        super().__init__(aggr="add")
        _check_dims(hops=hops)
        alpha = check_real("alpha", alpha, low=0.0, high=1.0, low_inclusive=False)
        g = [alpha * (1 - alpha) ** k for k in range(hops)] + [(1 - alpha) ** hops]
        self.hops = hops
        self.gamma = nn.Parameter(torch.tensor(g, dtype=torch.float32))
        self._cache: tuple[Tensor, Tensor, Tensor] | None = None

    def forward(self, z: Tensor, edge_index: Tensor) -> Tensor:
        check_nodes("z", z)
        ei, w = _cached_norm(self, edge_index, z.size(0))
        out = self.gamma[0] * z
        for k in range(1, self.hops + 1):
            z = self.propagate(ei, x=z, edge_weight=w)
            out = out + self.gamma[k] * z
        return out

    def message(self, x_j: Tensor, edge_weight: Tensor) -> Tensor:
        return edge_weight.view(-1, 1) * x_j


def _cached_norm(mod: Any, edge_index: Tensor, n: int) -> tuple[Tensor, Tensor]:
    c = getattr(mod, "_cache", None)
    if c is None or c[0] is not edge_index:
        ei, w = gcn_norm(edge_index, None, n, add_self_loops=True)
        mod._cache = (edge_index, ei, w)
    return mod._cache[1], mod._cache[2]


class GPRGNN(nn.Module):
    """GPR-GNN: an MLP, then :class:`GPRProp` (dropout on the MLP's output before propagating, ``dprate``).

    Its forward checks the features' type and shape only; NaN propagates like torch's own layers.
    """

    def __init__(
        self, in_dim: int, hidden: int, out_dim: int, dropout: float = 0.5, hops: int = 10, alpha: float = 0.1
    ) -> None:
        super().__init__()
        _check_dims(in_dim=in_dim, hidden=hidden, out_dim=out_dim, hops=hops)
        _check_p(dropout)
        self.mlp = MLP(in_dim, hidden, out_dim, dropout)
        self.prop = GPRProp(hops, alpha)
        self.dropout = dropout

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        check_nodes("x", x, self.mlp.lin1.in_features)
        return self.prop(F.dropout(self.mlp(x), self.dropout, self.training), edge_index)


class _ACMLayer(MessagePassing):
    """One ACM-GCN layer: ``H = diag(a_L) Â X W_L + diag(a_H) (I - Â) X W_H + diag(a_I) X W_I``.

    The node-wise weights follow ACM's adaptive channel mixing: ``s_c = sigmoid(H_c w_c)`` per channel,
    then ``a = softmax([s_L, s_H, s_I] W_mix / T)`` with ``T = 3``.
    """

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__(aggr="add")
        self.low, self.high, self.ident = (nn.Linear(in_dim, out_dim) for _ in range(3))
        self.score = nn.ModuleList(nn.Linear(out_dim, 1) for _ in range(3))
        self.mix = nn.Linear(3, 3, bias=False)
        self._cache: tuple[Tensor, Tensor, Tensor] | None = None

    def forward(self, x: Tensor, edge_index: Tensor, act: bool) -> Tensor:
        ei, w = _cached_norm(self, edge_index, x.size(0))
        hl = self.propagate(ei, x=linear(self.low, x), edge_weight=w)
        xh = linear(self.high, x)
        hh = xh - self.propagate(ei, x=xh, edge_weight=w)
        hi = linear(self.ident, x)
        if act:
            hl, hh, hi = F.relu(hl), F.relu(hh), F.relu(hi)
        s = torch.cat([torch.sigmoid(f(h)) for f, h in zip(self.score, (hl, hh, hi), strict=True)], dim=1)
        a = torch.softmax(self.mix(s) / 3.0, dim=1)
        return a[:, :1] * hl + a[:, 1:2] * hh + a[:, 2:3] * hi

    def message(self, x_j: Tensor, edge_weight: Tensor) -> Tensor:
        return edge_weight.view(-1, 1) * x_j


class ACMGCN(nn.Module):
    """ACM-GCN-style mixer: two layers that mix low-pass, high-pass and identity channels per node.

    Its forward checks the features' type and shape only; NaN propagates like torch's own layers.
    """

    def __init__(self, in_dim: int, hidden: int, out_dim: int, dropout: float = 0.5) -> None:
        super().__init__()
        _check_dims(in_dim=in_dim, hidden=hidden, out_dim=out_dim)
        _check_p(dropout)
        self.l1, self.l2, self.dropout = _ACMLayer(in_dim, hidden), _ACMLayer(hidden, out_dim), dropout

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        check_nodes("x", x, self.l1.low.in_features)
        h = self.l1(input_dropout(x, self.dropout, self.training), edge_index, act=True)
        return self.l2(F.dropout(h, self.dropout, self.training), edge_index, act=False)


@dataclass
class FitResult:
    """Best-validation epoch's accuracies (``val``, ``test``), the epoch, and whether the loss stayed finite."""

    val: float
    test: float
    epoch: int
    finite: bool
    model: Any = None


def fit_node_classifier(
    model: nn.Module,
    data: Any,
    masks: tuple[Tensor, Tensor, Tensor],
    *,
    lr: float = 0.01,
    weight_decay: float = 5e-4,
    epochs: int = 200,
    patience: int = 50,
    no_decay: tuple[str, ...] = (),
    keep_model: bool = False,
) -> FitResult:
    """Full-batch Adam with cross-entropy on the train mask; keep the epoch of best validation accuracy.

    Parameters whose name contains one of ``no_decay`` get no weight decay (Castor's router, hop bias and
    momentum, as in the authors' code). Stops after ``patience`` epochs without a better validation
    accuracy. The test accuracy is read at the selected epoch only (never used to select).

    Raises
    ------
    ValueError
        If ``data.edge_index`` has edges outside the node range or is not symmetric (undirected).
    """
    if epochs < 1 or patience < 1:
        raise ValueError(f"epochs and patience must be >= 1, got {epochs}, {patience}")
    lr = check_real("lr", lr, low=0.0, low_inclusive=False)
    weight_decay = check_real("weight_decay", weight_decay, low=0.0)
    if not isinstance(masks, (tuple, list)) or len(masks) != 3:
        raise ValueError(f"masks must be three node masks (train, val, test); got {type(masks).__name__}")
    n = int(data.y.numel())
    for what, m in zip(("train", "val", "test"), masks):
        if not isinstance(m, Tensor) or m.shape[:1] != (n,):
            got = tuple(m.shape) if isinstance(m, Tensor) else type(m).__name__
            raise ValueError(f"masks must be node masks of shape [{n}]; the {what} mask is {got}")
    check_nodes("data.x", data.x)
    values = data.x if data.x.layout == torch.strided else data.x.values()
    if not bool(values.isfinite().all()):
        raise ValueError("data.x must contain only finite values (found NaN or inf)")
    train, val, test = masks
    from geode.graphs.data import validate_edge_index

    # Â = D^{-1/2}(A+I)D^{-1/2} is the symmetric normalisation of an undirected graph: check it once
    validate_edge_index(data.edge_index, int(data.y.numel()), symmetric=True, name="data.edge_index")
    decay = [p for n, p in model.named_parameters() if not any(s in n for s in no_decay)]
    free = [p for n, p in model.named_parameters() if any(s in n for s in no_decay)]
    groups = [{"params": decay, "weight_decay": weight_decay}]
    if free:
        groups.append({"params": free, "weight_decay": 0.0})
    opt = torch.optim.Adam(groups, lr=lr)
    x, ei, y = data.x, data.edge_index, data.y
    best = FitResult(-1.0, float("nan"), 0, True)
    state = None
    since = 0
    for epoch in range(epochs):
        model.train()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x, ei)[train], y[train])
        if not math.isfinite(float(loss.detach())):
            best.finite = False
            break
        loss.backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            pred = model(x, ei).argmax(1)
        v = float((pred[val] == y[val]).float().mean())
        if v > best.val:
            best = FitResult(v, float((pred[test] == y[test]).float().mean()), epoch, True)
            since = 0
            if keep_model:
                state = copy.deepcopy(model.state_dict())
        else:
            since += 1
            if since >= patience:
                break
    if keep_model and state is not None:
        model.load_state_dict(state)
        best.model = model
    return best
