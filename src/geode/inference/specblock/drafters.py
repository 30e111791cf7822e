r"""SpecBlock's block-iterative drafter and the EAGLE-like (autoregressive) and Medusa-like (parallel) drafters.

All three condition on the target's feature :math:`f_i` (its low, middle and high hidden layers
concatenated, EAGLE-3 style) at the last verified position and on the root token :math:`x_{i+1}`, and
draft the positions after it. They share the input projection ``cond_proj`` (:math:`3H \to d`), the token
embedding (copied from the target), a final RMSNorm and an LM head (initialised from the target's).

* :class:`EagleDrafter` (EAGLE-like, autoregressive): one residual block per call; step :math:`j` reads
  :math:`(c_j, e(x_{i+1+j}))` with :math:`c_0 = W_c f_i` and :math:`c_j = h_{j-1}` its own previous
  hidden state (EAGLE-3's training-time test), and predicts :math:`x_{i+2+j}`. One call per tree depth;
  the tree is EAGLE-2's dynamic tree (each depth expands the ``topk`` best frontier nodes by ``topk``
  children, the best ``budget`` nodes by path log-probability are kept).
* :class:`ParallelDrafter` (Medusa-like): one call predicts :math:`K` positions, slot :math:`k` from
  :math:`(c_0, e(x_{i+1}), q_k)` with a learned position query :math:`q_k`, every slot independent of
  the others (no shift, no cross-slot attention); the tree is the best ``budget`` paths of the product of
  the slots' top-``topk`` sets.
* :class:`SpecBlockDrafter`: one call (a *block*) predicts :math:`K` *dependent* positions. Slot inputs are
  :math:`W_{in}[c; e(x); q_k]`; before every layer :math:`\ell > 0` the **layer-wise shift**
  :math:`h_k \leftarrow W^{\ell}_{s}[h_k; h_{k-1}]` carries the previous slot's hidden state into the layer
  (slot 0 receives zeros), and each layer has causal attention across the block's slots. **Cross-block
  inheritance**: a new block may start at any node of a previous block, with that slot's hidden state as
  its condition and the node's token as its input. A **rank head**
  :math:`\mathrm{MLP}(H + 15 \to 4)` on the detached hidden state plus 15 features of the slot's draft
  distribution (top-10 log-probabilities, the gaps 1-2, 1-3, 1-5, :math:`p_{\text{top1}}`, entropy of the
  top-20) predicts the bucket of the target token's rank in the draft distribution (1, 2-4, 5-10, > 10),
  which sets the branching: continue with the top-1 (bucket 0), branch into the top-4 or top-10 and start
  new blocks from them (buckets 1, 2), or stop the branch (bucket 3). The best ``budget`` nodes by path
  log-probability are kept (the same final selection as the EAGLE-like tree).

Training (:func:`drafter_loss`): soft cross-entropy (KL up to a constant) to the target's next-token
distributions, position weights :math:`0.8^k`; SpecBlock adds the **valid-prefix mask** (slot :math:`k`'s
loss counts only where slots :math:`< k` of its block are top-1 correct), multi-block training-time test
(:math:`M \sim U\{1..K\}`, the next block starts from slot :math:`M-1`'s hidden state; no filter between
blocks, as in the release), and the co-trained rank loss: soft cross-entropy against asymmetric ordinal
smoothing :math:`\kappa(c, t) \propto (1 + |c - t| + \max(t - c, 0))^{-2}`, times the distance weight
:math:`1 + |t - p| + \max(t - p, 0)`, with per-slot frequency reweighting :math:`\min(1, b / n_c)` and the
rank chain mask (slots up to the first wrong rank prediction, inclusive).

Deliberate differences from the authors' code (``shiweijiezero/SpecBlock``): decoder layers are residual
MLP blocks with attention across the slots of one block only, not over the context (the target feature
already summarises the context, and the tiny CPU targets see short windows); no reduced draft vocabulary
(``d2t``); the rank head's hidden width is 64 (not 256); one training phase (no rank-head warm-up phase);
the root block always keeps at least its top-1 slot-0 token (a stop at the root would waste an iteration);
the pending block starts of one round are expanded in one batched call, at most ``beam`` of them (by path
score), for at most ``max_blocks`` rounds.
"""

from __future__ import annotations

import heapq
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from geode.core.validation import check_int, check_real, check_tensor
from geode.inference.speculative import DraftTree, SpecCostModel, check_budget

__all__ = [
    "BRANCH_WIDTHS",
    "EagleDrafter",
    "ParallelDrafter",
    "SpecBlockDrafter",
    "drafter_loss",
    "prune_tree",
    "rank_buckets",
    "rank_features",
]

BRANCH_WIDTHS = (1, 4, 10, 0)  # children per rank bucket: rank 1, 2-4, 5-10, > 10 (stop)


def _check_logits(logits: Any, *, nonempty: bool) -> None:
    check_tensor("logits", logits, finite=False, nonempty=nonempty, floating=True)
    if logits.ndim < 1 or logits.shape[-1] < 2:
        raise ValueError(f"logits must have a vocabulary of at least 2 on its last axis; got {tuple(logits.shape)}")


def rank_buckets(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Bucket of ``target``'s rank in ``logits`` (last axis): 0 (rank 1), 1 (2-4), 2 (5-10), 3 (> 10).

    ``target`` has the shape of ``logits`` without its last axis. Shapes are checked, values are not (this runs
    at every training step): a NaN logit is ranked as :func:`torch.topk` ranks it, like torch's own ops. An
    empty batch gives an empty output.
    """
    _check_logits(logits, nonempty=False)
    check_tensor("target", target, finite=False, nonempty=False)
    if tuple(target.shape) != tuple(logits.shape[:-1]):
        raise ValueError(
            f"target must have the shape of logits without its last axis {tuple(logits.shape[:-1])}; "
            f"got {tuple(target.shape)}"
        )
    top = logits.topk(min(10, logits.shape[-1]), dim=-1).indices
    match = top == target.unsqueeze(-1)
    pos = match.float().argmax(-1)
    inside = match.any(-1)
    return torch.where(~inside, 3, torch.where(pos == 0, 0, torch.where(pos <= 3, 1, 2))).long()


def rank_features(logits: torch.Tensor) -> torch.Tensor:
    """The 15 distribution features of the rank head: top-10 log-probs, gaps 1-2/1-3/1-5, p_top1, top-20 entropy.

    Shapes are checked, values are not (this runs at every drafting step): NaN propagates like torch's own ops.
    An empty batch gives an empty output.
    """
    _check_logits(logits, nonempty=False)
    logp = F.log_softmax(logits.float(), dim=-1)
    v = logp.shape[-1]
    top = logp.topk(min(20, v), dim=-1).values
    if top.shape[-1] < 20:
        top = torch.cat([top, top[..., -1:].expand(*top.shape[:-1], 20 - top.shape[-1]) - 30.0], dim=-1)
    t10 = top[..., :10]
    gaps = torch.stack([t10[..., 0] - t10[..., 1], t10[..., 0] - t10[..., 2], t10[..., 0] - t10[..., 4]], -1)
    p20 = top.exp()
    p20n = p20 / p20.sum(-1, keepdim=True)
    ent = -(p20n * p20n.clamp_min(1e-12).log()).sum(-1, keepdim=True)
    return torch.cat([t10, gaps, t10[..., :1].exp(), ent], dim=-1)


class _Block(nn.Module):
    """Pre-norm residual block: optional causal attention across slots, then a SiLU MLP."""

    def __init__(self, d: int, slot_attention: bool) -> None:
        super().__init__()
        self.slot_attention = slot_attention
        if slot_attention:
            self.norm_a = nn.RMSNorm(d)
            self.qkv = nn.Linear(d, 3 * d, bias=False)
            self.out = nn.Linear(d, d, bias=False)
        self.norm_m = nn.RMSNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # h: (N, K, d) or (N, d)
        if self.slot_attention and h.dim() == 3:
            q, k, v = self.qkv(self.norm_a(h)).chunk(3, dim=-1)
            h = h + self.out(F.scaled_dot_product_attention(q, k, v, is_causal=True))
        return h + self.mlp(self.norm_m(h))


class _DrafterBase(nn.Module):
    n_layers: int = 1

    def __init__(self, target: Any, *, d_model: int | None = None, layers: tuple[int, ...] | None = None) -> None:
        super().__init__()
        cfg = target.config
        h = int(cfg.hidden_size)
        self.vocab_size = int(cfg.vocab_size)
        self.d = int(d_model or h)
        n_feat = 3 if layers is None else len(layers)
        self.cond_proj = nn.Linear(n_feat * h, self.d)
        self.embed = nn.Embedding(self.vocab_size, h)
        self.embed.weight.data.copy_(target.get_input_embeddings().weight.detach())
        self.embed.weight.requires_grad_(False)  # copied from the target and frozen, as in the release
        self.emb_proj = nn.Identity() if h == self.d else nn.Linear(h, self.d, bias=False)
        self.norm = nn.RMSNorm(self.d)
        self.head = nn.Linear(self.d, self.vocab_size, bias=False)
        if h == self.d:
            self.head.weight.data.copy_(target.get_output_embeddings().weight.detach())
        self.cost = SpecCostModel()

    def emb(self, tok: torch.Tensor) -> torch.Tensor:
        return self.emb_proj(self.embed(tok))

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(h))

    def call_cost(self) -> float:
        return self.cost.call(self.n_layers)


# ------------------------------------------------------------------------------------------------ EAGLE-like
class EagleDrafter(_DrafterBase):
    """EAGLE-like autoregressive drafter: one residual block, one call per tree depth.

    Parameters
    ----------
    target : HF causal LM
        Provides the width, vocabulary, embedding and LM-head initialisation.
    depth : int
        Tree depth (drafter calls per iteration).
    topk : int
        Frontier width and children per frontier node (EAGLE-2's dynamic tree).
    """

    n_layers = 1

    def __init__(self, target: Any, *, depth: int = 6, topk: int = 4, d_model: int | None = None) -> None:
        super().__init__(target, d_model=d_model)
        self.depth = check_int("depth", depth, low=1)
        self.topk = check_int("topk", topk, low=1)
        self.fuse = nn.Linear(2 * self.d, self.d)
        self.block = _Block(self.d, slot_attention=False)

    def step(self, cond: torch.Tensor, tok: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One drafter call: hidden state and logits of the next position, for a batch of (condition, token)."""
        h = self.block(self.fuse(torch.cat([cond, self.emb(tok)], dim=-1)))
        return h, self.logits(h)

    def unroll(self, feat: torch.Tensor, toks: torch.Tensor) -> torch.Tensor:
        """Training-time test: logits ``(B, J, V)`` of ``J`` steps fed ground-truth tokens ``toks`` ``(B, J)``."""
        cond = self.cond_proj(feat)
        out = []
        for j in range(toks.shape[1]):
            cond, lg = self.step(cond, toks[:, j])
            out.append(lg)
        return torch.stack(out, 1)

    def build_tree(self, feature: torch.Tensor, token: int, budget: int) -> tuple[DraftTree, int, float]:
        budget = check_budget(budget)
        tree = DraftTree.root(token)
        frontier = [(0, 0.0)]  # (node, path log-prob)
        cond = self.cond_proj(feature.unsqueeze(0))
        calls = 0
        for _ in range(self.depth):
            toks = torch.tensor([tree.tokens[n] for n, _ in frontier], device=feature.device)
            h, lg = self.step(cond, toks)
            calls += 1
            lp = F.log_softmax(lg, -1)
            top = lp.topk(min(self.topk, self.vocab_size), -1)
            cands = []
            for r, (node, s) in enumerate(frontier):
                for v, t in zip(top.values[r].tolist(), top.indices[r].tolist()):
                    cands.append((s + v, node, t, r))
            new = []
            for s, node, t, r in cands:
                new.append((tree.add(node, t, s), s, r))
            best = sorted(new, key=lambda x: -x[1])[: self.topk]
            frontier = [(n, s) for n, s, _ in best]
            cond = h[[r for _, _, r in best]]
        return prune_tree(tree, budget), calls, calls * self.call_cost()


# ------------------------------------------------------------------------------------------------ block drafters
class _BlockDrafter(_DrafterBase):
    def __init__(self, target: Any, *, k: int, n_layers: int, shift: bool, slot_attention: bool, d_model: int | None):
        super().__init__(target, d_model=d_model)
        self.K = check_int("k", k, low=1)
        self.n_layers = check_int("n_layers", n_layers, low=1)
        self.use_shift = bool(shift)
        self.pos_query = nn.Parameter(torch.randn(self.K, self.d) * 0.02)
        self.in_proj = nn.Linear(3 * self.d, self.d)
        self.layers = nn.ModuleList(_Block(self.d, slot_attention) for _ in range(self.n_layers))
        if self.use_shift:
            self.shift_proj = nn.ModuleList(nn.Linear(2 * self.d, self.d) for _ in range(self.n_layers - 1))
            for lin in self.shift_proj:  # start at "keep h, ignore the shift" so the shift is learned, not imposed
                nn.init.zeros_(lin.weight)
                nn.init.zeros_(lin.bias)
                lin.weight.data[:, : self.d] = torch.eye(self.d)

    def block(self, cond: torch.Tensor, tok: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One call: hidden states ``(N, K, d)`` and logits ``(N, K, V)`` of the K slots after each start."""
        n = cond.shape[0]
        x = torch.cat(
            [
                cond.unsqueeze(1).expand(n, self.K, -1),
                self.emb(tok).unsqueeze(1).expand(n, self.K, -1),
                self.pos_query.unsqueeze(0).expand(n, -1, -1),
            ],
            dim=-1,
        )
        h = self.in_proj(x)
        for ell, layer in enumerate(self.layers):
            if ell > 0 and self.use_shift:  # layer-wise shift: slot k receives slot k-1's previous-layer output
                prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], dim=1)
                h = self.shift_proj[ell - 1](torch.cat([h, prev], dim=-1))
            h = layer(h)
        return h, self.logits(h)


class ParallelDrafter(_BlockDrafter):
    """Medusa-like parallel drafter: K independent positions from one call (no shift, no cross-slot attention).

    Parameters
    ----------
    target : HF causal LM
    k : int
        Positions per call (the tree's depth).
    topk : int
        Candidates per position; the tree keeps the best ``budget`` paths of their product.
    n_layers : int
        Residual blocks (2, as SpecBlock's, so the two differ only in dependence).
    """

    def __init__(self, target: Any, *, k: int = 4, topk: int = 4, n_layers: int = 2, d_model: int | None = None):
        super().__init__(target, k=k, n_layers=n_layers, shift=False, slot_attention=False, d_model=d_model)
        self.topk = check_int("topk", topk, low=1)

    def build_tree(self, feature: torch.Tensor, token: int, budget: int) -> tuple[DraftTree, int, float]:
        budget = check_budget(budget)
        _, lg = self.block(self.cond_proj(feature.unsqueeze(0)), torch.tensor([token], device=feature.device))
        lp = F.log_softmax(lg[0], -1)
        top = lp.topk(min(self.topk, self.vocab_size), -1)
        tree = DraftTree.root(token)
        beam = [(0, 0.0)]
        for k in range(self.K):
            new = []
            for node, s in beam:
                for v, t in zip(top.values[k].tolist(), top.indices[k].tolist()):
                    new.append((tree.add(node, t, s + v), s + v))
            beam = sorted(new, key=lambda x: -x[1])[:budget]
        return prune_tree(tree, budget), 1, self.call_cost()


class SpecBlockDrafter(_BlockDrafter):
    """SpecBlock: block-iterative drafting with the layer-wise shift, cross-block inheritance and a rank head.

    Parameters
    ----------
    target : HF causal LM
    k : int
        Dependent positions per drafter call (a block; K = 4 in the paper).
    n_layers : int
        Decoder (residual) blocks (2 in the release).
    max_blocks : int
        Rounds of block expansion per iteration (each round is one batched call).
    beam : int
        Most pending block starts expanded per round (best path scores first).
    shift, rank_head : bool
        Ablation switches: without the rank head the branching is a fixed top-``fixed_topk`` at slot 0 of
        every block (a fixed top-k tree); without the shift the slots share no layer-wise state.
    slots_used : int, optional
        Use only the first ``slots_used`` slots of every block (default all K); 1 turns block-iterative
        drafting into autoregressive drafting with the same network (a control of the cost saving).
    """

    def __init__(
        self,
        target: Any,
        *,
        k: int = 4,
        n_layers: int = 2,
        max_blocks: int = 3,
        beam: int = 4,
        shift: bool = True,
        rank_head: bool = True,
        fixed_topk: int = 4,
        slots_used: int | None = None,
        d_model: int | None = None,
    ) -> None:
        super().__init__(target, k=k, n_layers=n_layers, shift=shift, slot_attention=True, d_model=d_model)
        self.slots_used = self.K if slots_used is None else check_int("slots_used", slots_used, low=1, high=self.K)
        self.max_blocks = check_int("max_blocks", max_blocks, low=1)
        self.beam = check_int("beam", beam, low=1)
        self.use_rank_head = bool(rank_head)
        self.fixed_topk = check_int("fixed_topk", fixed_topk, low=1)
        self.rank_head = nn.Sequential(nn.Linear(self.d + 15, 64), nn.SiLU(), nn.Linear(64, 4))

    def call_cost(self) -> float:
        # each shift projection Linear(2H, H) reads 2 H^2 = 33.5 M weights at H = 4096: 0.0045 target forwards
        return self.cost.call(self.n_layers) + (0.0045 * (self.n_layers - 1) if self.use_shift else 0.0)

    def rank_logits(self, h: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        """Rank-bucket logits from the detached hidden state and the draft distribution's features."""
        return self.rank_head(torch.cat([self.norm(h).detach(), rank_features(logits.detach())], dim=-1))

    def build_tree(self, feature: torch.Tensor, token: int, budget: int) -> tuple[DraftTree, int, float]:
        budget = check_budget(budget)
        tree = DraftTree.root(token)
        pending: list[tuple[float, int, int, torch.Tensor]] = [(0.0, 0, 0, self.cond_proj(feature))]
        calls, counter = 0, 1
        for _ in range(self.max_blocks):
            if not pending:
                break
            starts = heapq.nsmallest(self.beam, pending)
            pending = []
            cond = torch.stack([c for *_, c in starts])
            toks = torch.tensor([tree.tokens[n] for _, _, n, _ in starts], device=feature.device)
            h, lg = self.block(cond, toks)
            calls += 1
            lp = F.log_softmax(lg, -1)
            if self.use_rank_head:
                buckets = self.rank_logits(h, lg).argmax(-1)
            else:
                buckets = torch.zeros(lp.shape[:2], dtype=torch.long, device=lp.device)
                buckets[:, 0] = 1
            for r, (neg, _, node, _) in enumerate(starts):
                s = -neg
                for k in range(self.slots_used):
                    width = BRANCH_WIDTHS[int(buckets[r, k])]
                    if not self.use_rank_head and k == 0:
                        width = self.fixed_topk
                    if width == 0 and node == 0 and k == 0:
                        width = 1  # the root block keeps at least its top-1 token
                    if width == 0:
                        break
                    top = lp[r, k].topk(min(width, self.vocab_size))
                    if width == 1:
                        s += float(top.values[0])
                        node = tree.add(node, int(top.indices[0]), s)
                        if k == self.slots_used - 1:  # block finished on a confident path: continue from its last slot
                            pending.append((-s, counter, node, h[r, k]))
                            counter += 1
                        continue
                    for v, t in zip(top.values.tolist(), top.indices.tolist()):
                        child = tree.add(node, t, s + v)
                        pending.append((-(s + v), counter, child, h[r, k]))
                        counter += 1
                    break
        return prune_tree(tree, budget), calls, calls * self.call_cost()


# ------------------------------------------------------------------------------------------------ tree pruning
def prune_tree(tree: DraftTree, budget: int) -> DraftTree:
    """Keep the ``budget`` draft nodes of highest path log-probability (ancestor-closed), renumbered.

    Path log-probabilities never increase along a path, so the selection (ties broken towards shallower,
    earlier nodes) holds every kept node's ancestors; the root is always kept.
    """
    budget = check_budget(budget)
    order = sorted(range(1, len(tree)), key=lambda i: (-tree.scores[i], tree.depths[i], i))
    keep = set([0])
    for i in order:
        if len(keep) > budget:
            break
        if tree.parents[i] in keep:
            keep.add(i)
    out = DraftTree.root(tree.tokens[0])
    new_index = {0: 0}
    for i in sorted(keep - {0}, key=lambda i: (tree.depths[i], i)):
        new_index[i] = out.add(new_index[tree.parents[i]], tree.tokens[i], tree.scores[i], tree.proposals[i])
    return out


# ------------------------------------------------------------------------------------------------ training loss
def _soft_ce(logits: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    return -(p * F.log_softmax(logits, -1)).sum(-1)


def _rank_loss(
    rank_logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, budget_per_class: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rank loss of one slot: smoothed soft CE x distance weight x frequency reweighting; returns (sum, weight)."""
    dev = rank_logits.device
    c = torch.arange(4, dtype=torch.float32, device=dev)
    diff = labels.float().unsqueeze(-1) - c
    soft = 1.0 / (1.0 + diff.abs() + diff.clamp(min=0.0)).square()
    soft = soft / soft.sum(-1, keepdim=True)
    ce = -(soft * F.log_softmax(rank_logits, -1)).sum(-1)
    pred = rank_logits.argmax(-1)
    d = (labels - pred).float()
    dist_w = 1.0 + d.abs() + d.clamp(min=0.0)
    counts = torch.zeros(4, device=dev).index_add_(0, labels, mask)
    freq_w = (
        (budget_per_class / counts.clamp_min(1.0)).clamp(max=1.0)
        if budget_per_class > 0
        else torch.ones(4, device=dev)
    )
    w = freq_w[labels] * mask
    return (ce * dist_w * w).sum(), w.sum()


def drafter_loss(
    drafter: nn.Module,
    feat: torch.Tensor,
    toks: torch.Tensor,
    probs: torch.Tensor,
    *,
    position_weight: float = 0.8,
    chain_mask: bool = True,
    n_blocks: int = 2,
    rank_weight: float = 1.0,
    budget_per_class: int = 64,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Training loss of a drafter on a batch of windows.

    Parameters
    ----------
    drafter : EagleDrafter, ParallelDrafter or SpecBlockDrafter
    feat : Tensor, shape (B, F)
        Target feature :math:`f_i` at each window's start position.
    toks : Tensor, shape (B, J + 1)
        The tokens :math:`x_{i+1}, \\dots, x_{i+1+J}` (the target's own continuation).
    probs : Tensor, shape (B, J, V)
        Target next-token distributions :math:`P_{i+1}, \\dots, P_{i+J}` (the soft labels).
    position_weight : float
        Weight :math:`w^k` of draft position :math:`k` (0.8 in the release).
    chain_mask : bool
        SpecBlock's valid-prefix mask (ignored by the other drafters).
    n_blocks : int
        SpecBlock's training-time-test blocks per window (the release uses 3; each later block starts at
        :math:`M \\sim U\\{1..K\\}` slots after the previous one's start).
    rank_weight : float
        Weight of the rank loss (SpecBlock).
    budget_per_class : int
        Frequency-reweighting budget of the rank loss (<= 0 disables it).
    generator : torch.Generator, optional
        Draws the block offsets M.

    Notes
    -----
    The shapes and types of ``feat``, ``toks`` and ``probs`` are checked, but not their values: this runs at every
    training step, so a NaN or inf in ``feat`` or ``probs`` propagates to the loss like torch's own losses.
    """
    check_real("position_weight", position_weight, low=0.0, high=1.0)
    check_tensor("feat", feat, ndim=2, floating=True, finite=False)
    check_tensor("toks", toks, ndim=2, finite=False)
    check_tensor("probs", probs, ndim=3, floating=True, finite=False)
    if toks.is_floating_point():
        raise TypeError(f"toks must hold integer token ids; got dtype {toks.dtype}")
    if not feat.shape[0] == toks.shape[0] == probs.shape[0]:
        raise ValueError(
            f"feat, toks and probs must have one row per window; got {feat.shape[0]}, {toks.shape[0]} and "
            f"{probs.shape[0]}"
        )
    n_feat = drafter.cond_proj.in_features if isinstance(drafter, _DrafterBase) else feat.shape[1]
    if feat.shape[1] != n_feat:
        raise ValueError(f"feat must have the drafter's {n_feat} features per window; got {feat.shape[1]}")
    j_total = probs.shape[1]
    dev = feat.device
    if toks.shape[1] != j_total + 1:
        raise ValueError(f"toks: need J + 1 = {j_total + 1} tokens per window; got {toks.shape[1]}")
    if isinstance(drafter, EagleDrafter):
        lg = drafter.unroll(feat, toks[:, :j_total])
        w = position_weight ** torch.arange(j_total, dtype=torch.float32, device=dev)
        return (_soft_ce(lg, probs).mean(0) * w).sum() / w.sum()
    if not isinstance(drafter, _BlockDrafter):
        raise TypeError(f"drafter: expected one of the geode drafters; got {type(drafter).__name__}")
    kk = drafter.K
    w = position_weight ** torch.arange(kk, dtype=torch.float32, device=dev)
    if isinstance(drafter, ParallelDrafter):
        if j_total < kk:
            raise ValueError(f"probs: need at least K = {kk} positions; got {j_total}")
        _, lg = drafter.block(drafter.cond_proj(feat), toks[:, 0])
        return (_soft_ce(lg, probs[:, :kk]).mean(0) * w).sum() / w.sum()
    n_blocks = check_int("n_blocks", n_blocks, low=1)
    if j_total < n_blocks * kk:
        raise ValueError(f"probs: {n_blocks} blocks of K = {kk} need {n_blocks * kk} positions; got {j_total}")
    b = feat.shape[0]
    cond = drafter.cond_proj(feat)
    offset = torch.zeros(b, dtype=torch.long, device=dev)
    ar = torch.arange(b, device=dev)
    total = torch.zeros((), device=dev)
    norm = 0.0
    rank_sum, rank_w = torch.zeros((), device=dev), torch.zeros((), device=dev)
    for blk in range(n_blocks):
        h, lg = drafter.block(cond, toks[ar, offset])
        idx = offset.unsqueeze(1) + torch.arange(kk, device=dev)  # (B, K) positions of the block's targets
        p = probs[ar.unsqueeze(1), idx]  # (B, K, V)
        ce = _soft_ce(lg, p)
        tgt = p.argmax(-1)
        correct = (lg.argmax(-1) == tgt).float()
        if chain_mask:  # valid prefix: slot k counts where slots < k were top-1 correct
            mask = torch.cat([torch.ones(b, 1, device=dev), torch.cumprod(correct, 1)[:, :-1]], dim=1).detach()
        else:
            mask = torch.ones(b, kk, device=dev)
        total = total + ((ce * mask).sum(0) / mask.sum(0).clamp_min(1.0) * w).sum()
        norm += float(w.sum())
        if drafter.use_rank_head:
            rl = drafter.rank_logits(h, lg)
            labels = rank_buckets(lg.detach(), tgt)
            chain = torch.ones(b, device=dev)
            for k in range(kk):
                s, c = _rank_loss(rl[:, k], labels[:, k], chain, budget_per_class)
                rank_sum, rank_w = rank_sum + s, rank_w + c
                chain = chain * (rl[:, k].argmax(-1) == labels[:, k]).float()
        if blk + 1 < n_blocks:
            m = torch.randint(1, kk + 1, (b,), generator=generator).to(dev)  # drawn on the CPU generator
            cond = h[ar, m - 1]  # cross-block inheritance: the next block starts from slot M-1
            offset = offset + m
    loss = total / norm
    if drafter.use_rank_head and rank_weight > 0:
        loss = loss + rank_weight * rank_sum / rank_w.clamp_min(1.0)
    return loss
