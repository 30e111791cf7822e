r"""COMPOSE's modules: two graph encoders, a bridge, bidirectional zero-initialised fusion, a gated decoder.

Following the authors' ``code/train_dual.py`` and ``code/model_clean.py`` (``david-busbib/COMPOSE``), at small
scale:

- :class:`SimpleGNN`: directed message passing with separate mean aggregations over out-neighbours ("papers I
  cite", "theorems I depend on") and in-neighbours, a sigmoid-gated residual and LayerNorm per layer, then a
  projection to a structural vector. A :class:`GraphEncoder` outputs ``[x, SimpleGNN(x)]`` per node (the
  authors concatenate E5 1024 + GNN 128 = 1152 for papers, DeepSeek 4096 + GNN 128 = 4224 for theorems).
- :class:`BridgeProjection`: ``Linear -> GELU -> Linear -> LayerNorm`` lifting paper nodes into the formal
  width (1152 -> 2048 -> 4224 in the paper).
- type embeddings (paper 0, theorem 1; normal, std 0.02) and :class:`FusionCrossAttention`: papers attend to
  theorems and theorems to papers, ``LN(x + O(attn))`` with the output projections ``O`` **zero-initialised**,
  so fusion starts neutral.
- graph dropout (whole context vectors zeroed with probability 0.2 in training, never all of a sample's),
  attention pooling (a zero-initialised linear score, so it starts as the mean) to ``fused_pool``.
- :class:`GraphConditionedDecoder`: a small from-scratch causal transformer whose every layer cross-attends to
  the fused context through a gated residual.
- the loss (:meth:`ComposeModel.loss`), stage 2: :math:`L = \mathrm{CE} + 0.1\,\mathrm{InfoNCE}(W_f
  \,\mathrm{pool}, \mathrm{sg}[\bar h_{\mathrm{target}}]) + 0.05\,\mathrm{InfoNCE}_{\times}`, with
  :math:`\tau = 0.05` and a 512-entry FIFO memory bank of past targets as extra negatives; stage 1 pretrains
  the encoders (decoder untouched) with InfoNCE between the pooled context and the target claim's text
  embedding (the authors' "E5 alignment" term) plus the same cross term.

Deliberate differences from the authors' code (small scale and the issue's test of zero-initialisation):

- the decoder's cross-attention gate is Flamingo's ``tanh(g)`` with ``g = 0`` at initialisation, so the
  graph-conditioned model equals the decoder alone at initialisation; the authors gate with ``sigmoid(g)``,
  ``g = 0`` (0.5) and copy Q/O from the pretrained self-attention, which a from-scratch decoder does not have.
- cross-attention into every decoder layer (the authors: layers 3, 7, ..., 31 of 32); no LoRA (the decoder is
  trained from scratch).
- the cross term ``InfoNCE_x`` pairs the mean-pooled paper-graph and formal-graph encodings of the same anchor
  (the authors pair a paper's own theorem statements with matched Mathlib theorems, not available here).
- the release's training loop also adds a graph-margin term and generated-text E5/theorem alignments and uses
  weights 0.5/0.2 (``CONTRASTIVE_W``/``CROSS_CONTR_W``); we follow the weights 0.1/0.05 of the docstring of
  ``train_dual.py`` and the notes. Stage 1 drops the link-prediction term (weight 0.4 in the release).
- the root of each graph (the anchor paper; the top-1 retrieved theorem) is marked by a learned root embedding
  added to its node (the authors place the root at position 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from geode.core.validation import check_int, check_positive, check_probability, check_tensor

__all__ = [
    "BridgeProjection",
    "ComposeModel",
    "FusionCrossAttention",
    "GraphBatch",
    "GraphConditionedDecoder",
    "GraphEncoder",
    "SimpleGNN",
    "batch_graphs",
    "info_nce",
]


@dataclass
class GraphBatch:
    """A padded batch of small directed graphs (a plain record, built by :func:`batch_graphs`; the encoders check it).

    Attributes
    ----------
    x : Tensor of shape (B, N, D)
        Node features (zero at padding).
    adj : Tensor of shape (B, N, N)
        ``adj[b, u, v] = 1`` for an edge ``u -> v`` ("u cites v", "u depends on v").
    mask : bool Tensor of shape (B, N)
        True at real nodes.
    root : long Tensor of shape (B,)
        Index of each graph's root node.
    """

    x: torch.Tensor
    adj: torch.Tensor
    mask: torch.Tensor
    root: torch.Tensor

    def to(self, device: Any) -> GraphBatch:
        """The batch on ``device``."""
        return GraphBatch(self.x.to(device), self.adj.to(device), self.mask.to(device), self.root.to(device))

    def index(self, idx: Any) -> GraphBatch:
        """The sub-batch of rows ``idx`` (a tensor or list of indices)."""
        return GraphBatch(self.x[idx], self.adj[idx], self.mask[idx], self.root[idx])


def batch_graphs(
    features: list[Any], edges: list[Any], roots: list[int] | None = None, *, max_nodes: int | None = None
) -> GraphBatch:
    """Pad a list of graphs into a :class:`GraphBatch`, checking every graph.

    Parameters
    ----------
    features : list of array_like, each of shape (n_i, D)
        Node features of each graph; every graph needs at least one node and all the same width D.
    edges : list of array_like, each of shape (e_i, 2)
        Directed edges ``(u, v)`` with ``0 <= u, v < n_i``.
    roots : list of int, optional
        Root node of each graph (default 0).
    max_nodes : int, optional
        Pad to this many nodes (default: the largest graph).

    Returns
    -------
    GraphBatch

    Raises
    ------
    ValueError
        For an empty list, a graph without nodes, mismatched widths, edges out of range or a bad root.
    """
    if not isinstance(features, (list, tuple)) or not features:
        raise ValueError("features must be a non-empty list of (n_i, D) node-feature arrays")
    if not isinstance(edges, (list, tuple)) or len(edges) != len(features):
        raise ValueError(f"edges must be a list with one (e_i, 2) array per graph ({len(features)}); got {edges!r}")
    xs = []
    for i, f in enumerate(features):
        a = torch.as_tensor(np.asarray(f, dtype=np.float32))
        if a.ndim != 2 or a.shape[0] == 0:
            raise ValueError(f"features[{i}] must be a non-empty (n_nodes, D) array; got shape {tuple(a.shape)}")
        if not torch.isfinite(a).all():
            raise ValueError(f"features[{i}] must be finite")
        xs.append(a)
    d = xs[0].shape[1]
    if any(a.shape[1] != d for a in xs):
        raise ValueError(f"features must all have the same width; got {sorted({a.shape[1] for a in xs})}")
    n = max(a.shape[0] for a in xs)
    if max_nodes is not None:
        max_nodes = check_int("max_nodes", max_nodes, low=1)
        if max_nodes < n:
            raise ValueError(f"max_nodes ({max_nodes}) is smaller than the largest graph ({n} nodes)")
        n = max_nodes
    roots = [0] * len(xs) if roots is None else list(roots)
    if len(roots) != len(xs):
        raise ValueError(f"roots must have one entry per graph ({len(xs)}); got {len(roots)}")
    b = len(xs)
    x = torch.zeros(b, n, d)
    adj = torch.zeros(b, n, n)
    mask = torch.zeros(b, n, dtype=torch.bool)
    for i, (a, e) in enumerate(zip(xs, edges)):
        ni = a.shape[0]
        x[i, :ni] = a
        mask[i, :ni] = True
        ee = np.asarray(e, dtype=np.int64).reshape(-1, 2) if len(e) else np.zeros((0, 2), dtype=np.int64)
        if ee.size and (ee.min() < 0 or ee.max() >= ni):
            raise ValueError(
                f"edges[{i}] must index nodes 0..{ni - 1} of graph {i}; got an edge out of range "
                f"(min {int(ee.min())}, max {int(ee.max())})"
            )
        adj[i, ee[:, 0], ee[:, 1]] = 1.0
        r = roots[i]
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or not 0 <= int(r) < ni:
            raise ValueError(f"roots[{i}] must be a node index in 0..{ni - 1}; got {r!r}")
    return GraphBatch(x, adj, mask, torch.as_tensor([int(r) for r in roots], dtype=torch.long))


def _check_graph(name: str, g: GraphBatch, width: int) -> None:
    if not isinstance(g, GraphBatch):
        raise TypeError(f"{name} must be a GraphBatch (see batch_graphs); got {type(g).__name__}")
    if g.x.ndim != 3 or g.x.shape[-1] != width:
        raise ValueError(f"{name}.x must have shape (B, N, {width}); got {tuple(g.x.shape)}")
    b, n = g.x.shape[:2]
    if tuple(g.adj.shape) != (b, n, n) or tuple(g.mask.shape) != (b, n):
        raise ValueError(f"{name}: adj must be (B, N, N) and mask (B, N) for x of shape {tuple(g.x.shape)}")
    if n == 0 or not bool(g.mask.any(dim=1).all()):
        raise ValueError(f"{name}: every graph needs at least one node")


class SimpleGNN(nn.Module):
    """Directed message passing (separate in/out mean aggregation), gated residual, LayerNorm; then a projection.

    For an edge ``u -> v`` node ``u`` receives an "outgoing" message from ``v`` and ``v`` an "incoming" one from
    ``u``; per layer ``m = mean_out(h) + mean_in(h)``, ``h' = relu(W m)``, ``g = sigmoid(w [h, h'])``,
    ``h = LN(g h' + (1 - g) h)``. The output is ``W_s h``. Permutation equivariant: relabelling the nodes
    relabels the output rows. As in the release, the two directions share one transform and are summed, so
    reversing every edge leaves the output unchanged; direction enters through the separate normalisation of
    the out- and in-neighbourhoods (a node citing two papers and cited by one sees ``mean(out) + in``).

    Parameters
    ----------
    dim : int
        Node feature width (kept through the layers).
    struct_dim : int
        Width of the output structural vector.
    num_layers : int
        Message-passing layers (hops).
    """

    def __init__(self, dim: int, struct_dim: int, num_layers: int = 2) -> None:
        super().__init__()
        dim = check_int("dim", dim, low=1)
        struct_dim = check_int("struct_dim", struct_dim, low=1)
        num_layers = check_int("num_layers", num_layers, low=0)
        self.dim = dim
        self.msg = nn.ModuleList(nn.Linear(dim, dim) for _ in range(num_layers))
        self.gate = nn.ModuleList(nn.Linear(2 * dim, 1) for _ in range(num_layers))
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(num_layers))
        self.out = nn.Linear(dim, struct_dim)

    def forward(self, x: torch.Tensor, adj: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Structural vectors of shape ``(B, N, struct_dim)`` (zero at padding) for ``x`` (B, N, dim).

        Shapes and types are checked, values are not (this runs at every step): NaN propagates like torch's own
        layers.
        """
        check_tensor("x", x, finite=False, nonempty=False, floating=True)
        check_tensor("adj", adj, finite=False, nonempty=False)
        if x.ndim != 3 or x.shape[-1] != self.dim or x.shape[0] == 0:
            raise ValueError(f"x must have shape (B >= 1, N, {self.dim}); got {tuple(x.shape)}")
        if adj.shape != x.shape[:2] + (x.shape[1],):
            raise ValueError(
                f"adj must have shape {tuple(x.shape[:2]) + (x.shape[1],)} (x's B, N, N); got {tuple(adj.shape)}"
            )
        adj_in = adj.transpose(1, 2)
        deg_out = adj.sum(-1, keepdim=True) + 1e-6
        deg_in = adj_in.sum(-1, keepdim=True) + 1e-6
        h = x
        for lin, gate, norm in zip(self.msg, self.gate, self.norms):
            m = adj @ h / deg_out + adj_in @ h / deg_in
            h_new = F.relu(lin(m))
            g = torch.sigmoid(gate(torch.cat([h, h_new], dim=-1)))
            h = norm(g * h_new + (1 - g) * h)
        out = self.out(h)
        if mask is not None:
            out = out * mask.unsqueeze(-1)
        return out


class GraphEncoder(nn.Module):
    """Encode each node as ``[x + root_flag * r, SimpleGNN(x + root_flag * r)]`` (width ``dim + struct_dim``)."""

    def __init__(self, dim: int, struct_dim: int, num_layers: int = 2) -> None:
        super().__init__()
        self.gnn = SimpleGNN(dim, struct_dim, num_layers)
        self.root_embed = nn.Parameter(torch.randn(dim) * 0.02)
        self.dim, self.out_dim = dim, dim + struct_dim

    def forward(self, g: GraphBatch) -> torch.Tensor:
        """Node encodings of shape ``(B, N, dim + struct_dim)``, zero at padding."""
        _check_graph("graph", g, self.dim)
        flag = F.one_hot(g.root, g.x.shape[1]).to(g.x.dtype).unsqueeze(-1)
        x = g.x + flag * self.root_embed
        return torch.cat([x, self.gnn(x, g.adj, g.mask)], dim=-1) * g.mask.unsqueeze(-1)


class BridgeProjection(nn.Module):
    """``Linear(in, mid) -> GELU -> Linear(mid, out) -> LayerNorm``: paper nodes into the formal width."""

    def __init__(self, in_dim: int, out_dim: int, mid_dim: int | None = None) -> None:
        super().__init__()
        mid = mid_dim or 2 * max(in_dim, out_dim)
        self.proj = nn.Sequential(nn.Linear(in_dim, mid), nn.GELU(), nn.Linear(mid, out_dim), nn.LayerNorm(out_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Project ``(..., in_dim)`` to ``(..., out_dim)``.

        The shape is checked, values are not (it runs at every step): NaN propagates like torch's own layers; an
        empty batch gives an empty output.
        """
        n_in = self.proj[0].in_features
        check_tensor("x", x, finite=False, nonempty=False, floating=True)
        if x.ndim < 1 or x.shape[-1] != n_in:
            raise ValueError(f"x must have {n_in} features on its last axis; got shape {tuple(x.shape)}")
        return self.proj(x)


def _mha(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads: int, key_mask: torch.Tensor | None) -> torch.Tensor:
    b, nq, d = q.shape
    nk = k.shape[1]
    hd = d // heads
    q = q.view(b, nq, heads, hd).transpose(1, 2)
    k = k.view(b, nk, heads, hd).transpose(1, 2)
    v = v.view(b, nk, heads, hd).transpose(1, 2)
    s = q @ k.transpose(-2, -1) / math.sqrt(hd)
    if key_mask is not None:
        s = s.masked_fill(~key_mask[:, None, None, :], float("-inf"))
    return (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(b, nq, d)


class FusionCrossAttention(nn.Module):
    """Bidirectional cross-attention between paper and theorem nodes with zero-initialised output projections.

    ``p' = LN_p(p + O_p attn(Q_p p, K_t t, V_t t))`` and ``t' = LN_t(t + O_t attn(Q_t t, K_p p, V_p p))``. With
    ``O_p = O_t = 0`` (the initialisation) each side is only its own LayerNorm: fusion starts neutral.
    """

    def __init__(self, dim: int, num_heads: int = 8) -> None:
        super().__init__()
        dim = check_int("dim", dim, low=1)
        num_heads = check_int("num_heads", num_heads, low=1)
        if dim % num_heads:
            raise ValueError(f"dim ({dim}) must be divisible by num_heads ({num_heads})")
        self.dim, self.heads = dim, num_heads
        names = ("q_paper", "k_theorem", "v_theorem", "o_paper", "q_theorem", "k_paper", "v_paper", "o_theorem")
        for n in names:
            setattr(self, n, nn.Linear(dim, dim, bias=False))
        nn.init.zeros_(self.o_paper.weight)
        nn.init.zeros_(self.o_theorem.weight)
        self.norm_paper, self.norm_theorem = nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(
        self, paper: torch.Tensor, theorem: torch.Tensor, paper_mask: torch.Tensor, theorem_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Fused ``(paper', theorem')`` of the shapes of ``paper`` (B, N, dim) and ``theorem`` (B, M, dim).

        Shapes and types are checked, values are not (it runs at every step): NaN propagates like torch's own layers.
        """
        for name, t in (("paper", paper), ("theorem", theorem)):
            check_tensor(name, t, finite=False, floating=True)
            if t.ndim != 3 or t.shape[-1] != self.dim:
                raise ValueError(f"{name} must have shape (B, *, {self.dim}); got {tuple(t.shape)}")
        if paper.shape[0] != theorem.shape[0]:
            raise ValueError(
                f"paper and theorem must have one batch size; got {paper.shape[0]} and {theorem.shape[0]}"
            )
        for name, m, t in (("paper_mask", paper_mask, paper), ("theorem_mask", theorem_mask, theorem)):
            check_tensor(name, m, shape=tuple(t.shape[:2]), finite=False)
        p_ctx = _mha(self.q_paper(paper), self.k_theorem(theorem), self.v_theorem(theorem), self.heads, theorem_mask)
        t_ctx = _mha(self.q_theorem(theorem), self.k_paper(paper), self.v_paper(paper), self.heads, paper_mask)
        return self.norm_paper(paper + self.o_paper(p_ctx)), self.norm_theorem(theorem + self.o_theorem(t_ctx))


class _DecoderLayer(nn.Module):
    def __init__(self, d: int, heads: int, ctx_dim: int, dropout: float) -> None:
        super().__init__()
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.self_attn = nn.MultiheadAttention(d, heads, dropout=dropout, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(
            d, heads, dropout=dropout, batch_first=True, kdim=ctx_dim, vdim=ctx_dim
        )
        self.gate = nn.Parameter(torch.zeros(()))  # tanh(0) = 0: the layer starts as the decoder alone
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.drop = nn.Dropout(dropout)

    def forward(
        self, h: torch.Tensor, causal: torch.Tensor, ctx: torch.Tensor | None, ctx_mask: torch.Tensor | None
    ) -> torch.Tensor:
        a = self.ln1(h)
        h = h + self.drop(self.self_attn(a, a, a, attn_mask=causal, need_weights=False)[0])
        if ctx is not None:
            c = self.cross_attn(self.ln2(h), ctx, ctx, key_padding_mask=~ctx_mask, need_weights=False)[0]
            h = h + torch.tanh(self.gate) * self.drop(c)
        return h + self.drop(self.mlp(self.ln3(h)))


class GraphConditionedDecoder(nn.Module):
    """A small causal transformer decoder whose layers cross-attend to a context through ``tanh(g)``-gated residuals.

    Parameters
    ----------
    vocab_size, d_model, n_layers, n_heads : int
    ctx_dim : int
        Width of the context vectors.
    max_len : int
        Longest token sequence.
    dropout : float
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        ctx_dim: int = 64,
        max_len: int = 16,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.vocab_size = check_int("vocab_size", vocab_size, low=2)
        self.max_len = check_int("max_len", max_len, low=2)
        d_model = check_int("d_model", d_model, low=1)
        n_heads = check_int("n_heads", n_heads, low=1)
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.layers = nn.ModuleList(
            _DecoderLayer(d_model, n_heads, ctx_dim, check_probability("dropout", dropout))
            for _ in range(check_int("n_layers", n_layers, low=1))
        )
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(
        self,
        tokens: torch.Tensor,
        ctx: torch.Tensor | None = None,
        ctx_mask: torch.Tensor | None = None,
        *,
        return_hidden: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(B, T, vocab)`` (and the final hidden states) for ``tokens`` (B, T); no context: decoder alone."""
        if tokens.ndim != 2 or tokens.shape[1] > self.max_len or tokens.shape[1] == 0:
            raise ValueError(f"tokens must have shape (B, T) with 1 <= T <= {self.max_len}; got {tuple(tokens.shape)}")
        if int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab_size:
            raise ValueError(f"tokens must lie in 0..{self.vocab_size - 1}")
        if ctx is not None and ctx_mask is None:
            ctx_mask = torch.ones(ctx.shape[:2], dtype=torch.bool, device=ctx.device)
        t = tokens.shape[1]
        h = self.tok(tokens) + self.pos(torch.arange(t, device=tokens.device))
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool, device=tokens.device), 1)
        for layer in self.layers:
            h = layer(h, causal, ctx, ctx_mask)
        h = self.ln(h)
        logits = self.head(h)
        return (logits, h) if return_hidden else logits


def info_nce(
    query: torch.Tensor, key: torch.Tensor, tau: float = 0.05, *, negatives: torch.Tensor | None = None
) -> torch.Tensor:
    """InfoNCE of paired rows: ``CE(q_i . [k; n]^T / tau, i)`` on L2-normalised vectors.

    Parameters
    ----------
    query, key : Tensor of shape (B, D)
        Row ``i`` of ``key`` is the positive of row ``i`` of ``query``; the other rows are negatives.
    tau : float
        Temperature (0.05 in COMPOSE).
    negatives : Tensor of shape (K, D), optional
        Extra negatives (COMPOSE's memory bank of past targets).

    A training loss run at every step: types and shapes are checked, values are not (a NaN propagates like torch's
    own losses).
    """
    tau = check_positive("tau", tau)
    check_tensor("query", query, finite=False, floating=True)
    check_tensor("key", key, finite=False, floating=True)
    if query.ndim != 2 or query.shape != key.shape:
        raise ValueError(f"query and key must be paired (B, D) arrays; got {tuple(query.shape)}, {tuple(key.shape)}")
    q, k = F.normalize(query, dim=-1), F.normalize(key, dim=-1)
    if negatives is not None and negatives.shape[0]:
        k = torch.cat([k, F.normalize(negatives, dim=-1)], dim=0)
    logits = q @ k.T / tau
    return F.cross_entropy(logits, torch.arange(q.shape[0], device=q.device))


class ComposeModel(nn.Module):
    """COMPOSE: a claim decoder conditioned on a citation graph and a formal dependency graph.

    Parameters
    ----------
    paper_dim, formal_dim : int
        Widths of the paper-node and theorem-node text embeddings.
    vocab_size : int
        Decoder vocabulary (token 0 is padding).
    use_paper, use_formal : bool
        Which graphs condition the decoder (the single-graph ablations switch one off).
    fusion : bool
        Bidirectional fusion cross-attention; False is the "no fusion" ablation (the two node sets are only
        concatenated, as the authors' ``no_fusion``).
    struct_dim, formal_struct_dim : int
        Structural widths of the two GNNs; the fused width is ``formal_dim + formal_struct_dim``.
    d_model, n_layers, n_heads, fusion_heads, gnn_layers, max_len : int
        Decoder and encoder sizes.
    graph_dropout : float
        Probability of zeroing a context vector in training (0.2; the paper: 20-30%).
    tau, w_contrastive, w_cross : float
        InfoNCE temperature and the weights of the two contrastive terms (0.05, 0.1, 0.05).
    bank_size : int
        Memory bank of past decoder targets (512).
    claim_dim : int, optional
        Width of the target-claim embedding of stage 1 (needed for ``stage=1``).

    Examples
    --------
    >>> import torch
    >>> from geode.llm.compose import ComposeModel, batch_graphs
    >>> paper = batch_graphs([torch.randn(3, 8)], [[(0, 1), (0, 2)]])
    >>> formal = batch_graphs([torch.randn(2, 6)], [[(0, 1)]])
    >>> m = ComposeModel(8, 6, vocab_size=10)
    >>> m(torch.tensor([[1, 4, 5]]), paper, formal).shape
    torch.Size([1, 3, 10])
    """

    def __init__(
        self,
        paper_dim: int,
        formal_dim: int,
        vocab_size: int,
        *,
        use_paper: bool = True,
        use_formal: bool = True,
        fusion: bool = True,
        struct_dim: int = 32,
        formal_struct_dim: int = 40,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        fusion_heads: int = 8,
        gnn_layers: int = 2,
        max_len: int = 16,
        graph_dropout: float = 0.2,
        tau: float = 0.05,
        w_contrastive: float = 0.1,
        w_cross: float = 0.05,
        bank_size: int = 512,
        claim_dim: int | None = None,
    ) -> None:
        super().__init__()
        if not (use_paper or use_formal):
            raise ValueError("use_paper and use_formal cannot both be False: the model needs a graph")
        self.paper_dim = check_int("paper_dim", paper_dim, low=1)
        self.formal_dim = check_int("formal_dim", formal_dim, low=1)
        self.use_paper, self.use_formal = bool(use_paper), bool(use_formal)
        self.fusion_on = bool(fusion) and self.use_paper and self.use_formal
        self.graph_dropout = check_probability("graph_dropout", graph_dropout)
        self.tau = check_positive("tau", tau)
        self.w_contrastive = check_positive("w_contrastive", w_contrastive) if w_contrastive else 0.0
        self.w_cross = check_positive("w_cross", w_cross) if w_cross else 0.0
        fd = self.formal_dim + check_int("formal_struct_dim", formal_struct_dim, low=1)
        self.fused_dim = fd
        if self.fused_dim % fusion_heads:
            raise ValueError(f"fused width {fd} must be divisible by fusion_heads ({fusion_heads})")
        self.paper_encoder = GraphEncoder(self.paper_dim, struct_dim, gnn_layers) if use_paper else None
        self.bridge = BridgeProjection(self.paper_encoder.out_dim, fd) if use_paper else None
        self.formal_encoder = GraphEncoder(self.formal_dim, formal_struct_dim, gnn_layers) if use_formal else None
        self.type_embed = nn.Embedding(2, fd)
        nn.init.normal_(self.type_embed.weight, std=0.02)
        self.fusion = FusionCrossAttention(fd, fusion_heads) if self.fusion_on else None
        self.pool_attn = nn.Linear(fd, 1)
        nn.init.zeros_(self.pool_attn.weight)
        nn.init.zeros_(self.pool_attn.bias)
        self.decoder = GraphConditionedDecoder(vocab_size, d_model, n_layers, n_heads, fd, max_len)
        self.fused_proj = nn.Linear(fd, d_model, bias=False)
        self.cross_proj_paper = nn.Linear(self.paper_encoder.out_dim, 32, bias=False) if use_paper else None
        self.cross_proj_formal = nn.Linear(fd, 32, bias=False) if use_formal else None
        self.align_proj = nn.Linear(fd, check_int("claim_dim", claim_dim, low=1), bias=False) if claim_dim else None
        self.bank_size = check_int("bank_size", bank_size, low=0)
        self.register_buffer("mem_bank", torch.zeros(self.bank_size, d_model))
        self.register_buffer("mem_count", torch.zeros((), dtype=torch.long))

    # ------------------------------------------------------------------ encoding
    def encode(
        self, paper: GraphBatch | None = None, formal: GraphBatch | None = None, *, generator: Any = None
    ) -> dict[str, torch.Tensor]:
        """Fused context ``ctx`` (B, N+M, fused), its ``mask``, ``pool`` (B, fused) and the per-graph encodings."""
        out: dict[str, torch.Tensor] = {}
        parts, masks = [], []
        if self.use_paper:
            if paper is None:
                raise ValueError("paper must be given: this model conditions on the citation graph")
            _check_graph("paper", paper, self.paper_dim)
            pe = self.paper_encoder(paper)
            out["paper_enc"], out["paper_mask"] = pe, paper.mask
            parts.append(self.bridge(pe) + self.type_embed.weight[0])
            masks.append(paper.mask)
        if self.use_formal:
            if formal is None:
                raise ValueError("formal must be given: this model conditions on the formal graph")
            _check_graph("formal", formal, self.formal_dim)
            fe = self.formal_encoder(formal)
            out["formal_enc"], out["formal_mask"] = fe, formal.mask
            parts.append(fe + self.type_embed.weight[1])
            masks.append(formal.mask)
        if self.use_paper and self.use_formal and paper.x.shape[0] != formal.x.shape[0]:
            raise ValueError(f"paper and formal batches differ in size ({paper.x.shape[0]} vs {formal.x.shape[0]})")
        if self.fusion is not None:
            parts = list(self.fusion(parts[0], parts[1], masks[0], masks[1]))
        ctx, mask = torch.cat(parts, dim=1), torch.cat(masks, dim=1)
        if self.training and self.graph_dropout > 0:
            u = torch.rand(mask.shape, generator=generator, device=mask.device) if generator is not None else None
            drop = (u if u is not None else torch.rand(mask.shape, device=mask.device)) < self.graph_dropout
            drop &= mask
            all_gone = (mask & ~drop).sum(1) == 0
            if bool(all_gone.any()):  # never drop all of a sample's context: keep its first real vector
                first = mask.float().argmax(1)
                drop[all_gone, first[all_gone]] = False
            ctx = ctx.masked_fill(drop.unsqueeze(-1), 0.0)
        w = self.pool_attn(ctx).squeeze(-1).masked_fill(~mask, float("-inf")).softmax(-1)
        out.update(ctx=ctx * mask.unsqueeze(-1), mask=mask, pool=(w.unsqueeze(-1) * ctx).sum(1))
        return out

    def forward(
        self, tokens: torch.Tensor, paper: GraphBatch | None = None, formal: GraphBatch | None = None
    ) -> torch.Tensor:
        """Next-token logits ``(B, T, vocab)`` of ``tokens`` conditioned on the graphs."""
        enc = self.encode(paper, formal)
        return self.decoder(tokens, enc["ctx"], enc["mask"])

    # ------------------------------------------------------------------ losses
    def _cross_term(self, enc: dict[str, torch.Tensor]) -> torch.Tensor | None:
        if not (self.use_paper and self.use_formal and self.w_cross) or enc["pool"].shape[0] < 2:
            return None

        def mean(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
            return (x * m.unsqueeze(-1)).sum(1) / m.sum(1, keepdim=True)

        zp = self.cross_proj_paper(mean(enc["paper_enc"], enc["paper_mask"]))
        zf = self.cross_proj_formal(mean(enc["formal_enc"], enc["formal_mask"]))
        return info_nce(zp, zf, self.tau)

    def loss(
        self,
        tokens: torch.Tensor,
        paper: GraphBatch | None = None,
        formal: GraphBatch | None = None,
        *,
        stage: int = 2,
        claim_target: torch.Tensor | None = None,
        generator: Any = None,
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """The training loss of one batch and its parts.

        Parameters
        ----------
        tokens : long Tensor of shape (B, T)
            ``BOS claim EOS`` padded with 0; the CE covers every non-padding token after BOS.
        paper, formal : GraphBatch
        stage : {1, 2}
            1: encoder pretraining, ``InfoNCE(align_proj(pool), claim_target) + w_cross InfoNCE_x``;
            2: ``CE + w_contrastive InfoNCE(fused_proj(pool), sg[mean target hidden]; bank) + w_cross InfoNCE_x``.
        claim_target : Tensor of shape (B, claim_dim)
            Text embedding of each target claim (stage 1).
        """
        if stage not in (1, 2):
            raise ValueError(f"stage must be 1 or 2; got {stage!r}")
        enc = self.encode(paper, formal, generator=generator)
        cross = self._cross_term(enc)
        parts: dict[str, float] = {}
        if stage == 1:
            if self.align_proj is None or claim_target is None:
                raise ValueError("stage 1 needs claim_target and a model built with claim_dim")
            if claim_target.shape != (enc["pool"].shape[0], self.align_proj.out_features):
                raise ValueError(f"claim_target must have shape (B, {self.align_proj.out_features})")
            total = info_nce(self.align_proj(enc["pool"]), claim_target, self.tau)
            parts["align"] = float(total.detach())
        else:
            logits, hidden = self.decoder(tokens, enc["ctx"], enc["mask"], return_hidden=True)
            tgt = tokens[:, 1:]
            ce = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=0)
            total = ce
            parts["ce"] = float(ce.detach())
            if self.w_contrastive and tokens.shape[0] >= 2:
                m = (tokens[:, 1:] != 0).unsqueeze(-1).to(hidden.dtype)
                target = ((hidden[:, 1:] * m).sum(1) / m.sum(1).clamp_min(1)).detach()
                n_bank = int(min(int(self.mem_count), self.bank_size))
                con = info_nce(self.fused_proj(enc["pool"]), target, self.tau, negatives=self.mem_bank[:n_bank])
                total = total + self.w_contrastive * con
                parts["contrastive"] = float(con.detach())
                self._push_bank(target)
        if cross is not None:
            total = total + self.w_cross * cross
            parts["cross"] = float(cross.detach())
        parts["total"] = float(total.detach())
        return total, parts

    @torch.no_grad()
    def _push_bank(self, target: torch.Tensor) -> None:
        if not self.training or self.bank_size == 0:
            return
        n = target.shape[0]
        start = int(self.mem_count) % self.bank_size
        idx = (torch.arange(n, device=target.device) + start) % self.bank_size
        self.mem_bank[idx] = target[-self.bank_size :] if n > self.bank_size else target
        self.mem_count += n

    # ------------------------------------------------------------------ generation
    @torch.no_grad()
    def generate(
        self, paper: GraphBatch | None, formal: GraphBatch | None, *, bos: int, eos: int, max_new: int = 8
    ) -> torch.Tensor:
        """Greedy decoding from ``bos``; returns the generated ids ``(B, <= max_new)`` (0 after ``eos``)."""
        enc = self.encode(paper, formal)
        b = enc["ctx"].shape[0]
        seq = torch.full((b, 1), int(bos), dtype=torch.long, device=enc["ctx"].device)
        done = torch.zeros(b, dtype=torch.bool, device=seq.device)
        for _ in range(min(int(max_new), self.decoder.max_len - 1)):
            nxt = self.decoder(seq, enc["ctx"], enc["mask"])[:, -1].argmax(-1)
            nxt = nxt.masked_fill(done, 0)
            seq = torch.cat([seq, nxt[:, None]], dim=1)
            done |= nxt == eos
            if bool(done.all()):
                break
        return seq[:, 1:]
