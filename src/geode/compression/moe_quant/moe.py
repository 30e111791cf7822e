r"""A tiny top-k MoE language model, MXFP4 fake quantisation, load-aware compensation and routing replay.

- :func:`mxfp4_quantize` (defined in :mod:`geode.core.quant` since CPA, of the llm field, shares the FP4
  grid; re-exported here unchanged): OCP microscaling FP4. Each block of 32 consecutive input weights shares a
  power-of-two (E8M0) scale :math:`X = 2^{\lfloor \log_2 \max|w| \rfloor - 2}` (2 is the largest exponent
  of E2M1); every element is rounded to the nearest E2M1 value
  :math:`\{0, \pm 0.5, \pm 1, \pm 1.5, \pm 2, \pm 3, \pm 4, \pm 6\} \cdot X`, clipped at :math:`\pm 6X`.
  4.25 bits per weight.
- :class:`MoELM` / :class:`MoELayer`: pre-norm transformer blocks (causal attention + a top-k MoE
  feed-forward). The router gives logits :math:`z = W_r h`, the selected set
  :math:`S = \operatorname{top}_k(z)` and gates :math:`g_e = \operatorname{softmax}(z_S)_e` (Mixtral).
  A layer can be told to *replay* a recorded set :math:`S` (routing replay): the gates are then computed
  from its own router's logits on the replayed set, so gradients still flow through them (as in R3).
- :class:`QuantAdapterLinear`: a frozen quantised weight plus a rank-``r`` adapter,
  :math:`y = Q(W)x + A(Bx) + b`; ``A B`` initialised to the best rank-``r`` approximation of the
  quantisation error :math:`E = W - Q(W)` (truncated SVD, :math:`A = U_r\Sigma_r`, :math:`B = V_r^\top`).
- :func:`allocate_ranks`: load-aware rank allocation. With expert loads :math:`p_e` (the fraction of
  routed token slots) and :math:`\sigma_i(E_e)` the singular values of expert :math:`e`'s error (summed
  over its matrices as :math:`\sum_m \sigma_i(E_{e,m})^2`), choose :math:`r_e`, :math:`\sum_e r_e = R`,
  maximising :math:`\sum_e p_e \sum_{i \le r_e} \sigma_i(E_e)^2`. The gains are non-increasing in
  :math:`i`, so adding one rank at a time to the expert with the largest marginal gain
  :math:`p_e\,\sigma_{r_e+1}(E_e)^2` is optimal (an exchange argument), and each step strictly lowers the
  load-weighted error :math:`\sum_e p_e \|E_e - A_eB_e\|_F^2` while the gain is positive.
- :func:`routing_replay_qat`: quantisation-aware fine-tuning of the adapters. With ``replay=True`` the
  full-precision reference model's routes of every batch are recorded and replayed in the quantised
  model, its routers frozen, and only the expert adapters trained ("limited routing replay"); with
  ``replay=False`` (plain QAT) the quantised model routes itself and its routers train with the adapters.
"""

from __future__ import annotations

import copy
import heapq
import math
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from geode.compression._checks import check_bias, check_input
from geode.core.quant import E2M1_VALUES, mxfp4_quantize
from geode.core.validation import check_int, check_real, check_tensor

__all__ = [
    "E2M1_VALUES",
    "MoELM",
    "MoELayer",
    "QuantAdapterLinear",
    "allocate_ranks",
    "expert_error_spectra",
    "expert_loads",
    "load_weighted_error",
    "mxfp4_moe",
    "mxfp4_quantize",
    "record_routes",
    "routing_replay_qat",
    "set_replay",
    "topk_agreement",
]


class QuantAdapterLinear(nn.Module):
    r"""A frozen (fake-)quantised linear layer with a trainable rank-``rank`` adapter: :math:`Q(W)x + A(Bx) + b`.

    Parameters
    ----------
    weight_q : torch.Tensor
        The quantised weight, ``(out_features, in_features)``; stored as a buffer (never trained).
    bias : torch.Tensor or None
        The float bias (frozen).
    rank : int
        Adapter rank, ``0 <= rank <= min(out_features, in_features)``; 0 means no adapter.

    The forward checks its input's type and shape, not its values (it runs at every step): NaN propagates like
    torch's own layers, and an empty batch gives an empty output.
    """

    def __init__(self, weight_q: torch.Tensor, bias: torch.Tensor | None, rank: int) -> None:
        super().__init__()
        check_tensor("weight_q", weight_q, ndim=2, floating=True)
        n_out, n_in = weight_q.shape
        check_bias(bias, n_out)
        self.rank = check_int("rank", rank, low=0, high=min(n_out, n_in))
        self.register_buffer("weight_q", weight_q.detach().clone())
        self.register_buffer("bias", None if bias is None else bias.detach().clone())
        self.A = nn.Parameter(torch.zeros(n_out, self.rank, dtype=weight_q.dtype))
        self.B = nn.Parameter(torch.zeros(self.rank, n_in, dtype=weight_q.dtype))

    @property
    def in_features(self) -> int:
        return int(self.weight_q.shape[1])

    @property
    def out_features(self) -> int:
        return int(self.weight_q.shape[0])

    @torch.no_grad()
    def init_from_error(self, error: torch.Tensor) -> None:
        """Set ``A B`` to the best rank-``rank`` approximation of ``error`` (Eckart-Young, truncated SVD)."""
        check_tensor("error", error, floating=True)
        if error.shape != self.weight_q.shape:
            raise ValueError(f"error must have shape {tuple(self.weight_q.shape)}; got {tuple(error.shape)}")
        if self.rank == 0:
            return
        u, s, vh = torch.linalg.svd(error.double(), full_matrices=False)
        self.A.copy_((u[:, : self.rank] * s[: self.rank]).to(self.A.dtype))
        self.B.copy_(vh[: self.rank].to(self.B.dtype))

    def effective_weight(self) -> torch.Tensor:
        """:math:`Q(W) + AB`."""
        return self.weight_q + self.A @ self.B

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_input("x", x, self.in_features)
        y = F.linear(x, self.weight_q, self.bias)
        if self.rank:
            y = y + (x @ self.B.T) @ self.A.T
        return y

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, rank={self.rank}"


class ExpertMLP(nn.Module):
    """One expert: ``down(gelu(up(x)))``."""

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, d_ff)
        self.down = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class MoELayer(nn.Module):
    """Top-``top_k`` mixture of ``n_experts`` MLP experts with a linear router and optional route replay.

    After each forward, ``last_routes`` holds the selected experts ``(tokens, top_k)`` and ``aux_loss``
    the Switch-Transformer load-balancing loss :math:`E \\sum_e f_e P_e` (fraction of slots routed to
    :math:`e` times its mean router probability). Set ``replay_routes`` (a ``(tokens, top_k)`` long tensor)
    to force the selection (:func:`set_replay`).

    The forward checks its input's type and shape, not its values (it runs at every step): NaN propagates like
    torch's own layers, and an empty batch gives an empty output.
    """

    def __init__(self, d_model: int, d_ff: int, n_experts: int, top_k: int) -> None:
        super().__init__()
        self.n_experts = check_int("n_experts", n_experts, low=1)
        self.top_k = check_int("top_k", top_k, low=1, high=self.n_experts)
        self.router = nn.Linear(d_model, self.n_experts, bias=False)
        self.experts = nn.ModuleList([ExpertMLP(d_model, d_ff) for _ in range(self.n_experts)])
        self.replay_routes: torch.Tensor | None = None
        self.last_routes: torch.Tensor | None = None
        self.aux_loss = torch.zeros(())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_input("x", x, self.router.in_features)
        shape = x.shape
        h = x.reshape(-1, shape[-1])
        logits = self.router(h)
        if self.replay_routes is not None:
            idx = self.replay_routes
            if idx.shape != (h.shape[0], self.top_k):
                raise ValueError(
                    f"replay_routes must have shape {(h.shape[0], self.top_k)} for this batch; got {tuple(idx.shape)}"
                )
        else:
            idx = logits.topk(self.top_k, dim=-1).indices
        gates = torch.softmax(logits.gather(1, idx), dim=-1)
        self.last_routes = idx.detach()
        out = torch.zeros_like(h)
        for e, expert in enumerate(self.experts):
            tok, slot = (idx == e).nonzero(as_tuple=True)
            if tok.numel():
                out.index_add_(0, tok, gates[tok, slot].unsqueeze(-1) * expert(h[tok]))
        frac = torch.bincount(idx.reshape(-1), minlength=self.n_experts).to(h.dtype) / idx.numel()
        self.aux_loss = self.n_experts * (frac * torch.softmax(logits, -1).mean(0)).sum()
        return out.reshape(shape)


class _Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, n_experts: int, top_k: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.moe = MoELayer(d_model, d_ff, n_experts, top_k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(a)
        return x + self.moe(self.ln2(x))


class MoELM(nn.Module):
    """A tiny causal MoE language model (learned positions, pre-norm blocks, tied-free LM head).

    Parameters
    ----------
    vocab, d_model, n_layers, n_heads, d_ff, n_experts, top_k, max_positions : int
        Sizes; ``d_ff`` is each expert's hidden width; ``d_model`` must be divisible by ``n_heads``.
    seed : int
        Seed of the initialisation.
    """

    def __init__(
        self,
        vocab: int,
        *,
        d_model: int = 128,
        n_layers: int = 2,
        n_heads: int = 4,
        d_ff: int = 128,
        n_experts: int = 8,
        top_k: int = 2,
        max_positions: int = 128,
        seed: int = 0,
    ) -> None:
        super().__init__()
        for name, v in (("vocab", vocab), ("d_model", d_model), ("n_layers", n_layers), ("n_heads", n_heads)):
            check_int(name, v, low=1)
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        g = torch.random.fork_rng()
        with g:
            torch.manual_seed(int(seed))
            self.tok = nn.Embedding(vocab, d_model)
            self.pos = nn.Embedding(check_int("max_positions", max_positions, low=1), d_model)
            self.blocks = nn.ModuleList([_Block(d_model, n_heads, d_ff, n_experts, top_k) for _ in range(n_layers)])
            self.ln = nn.LayerNorm(d_model)
            self.head = nn.Linear(d_model, vocab, bias=False)
            for p in self.parameters():
                if p.ndim == 2:
                    nn.init.normal_(p, std=0.02)

    @property
    def moe_layers(self) -> list[MoELayer]:
        return [b.moe for b in self.blocks]

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Logits ``(batch, seq, vocab)`` of the token ids ``(batch, seq)``."""
        if ids.ndim != 2 or ids.shape[1] > self.pos.num_embeddings:
            raise ValueError(f"ids must be (batch, seq <= {self.pos.num_embeddings}); got {tuple(ids.shape)}")
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))

    def loss(self, ids: torch.Tensor, aux_coef: float = 0.0) -> torch.Tensor:
        """Next-token cross-entropy (+ ``aux_coef`` x the summed load-balancing losses)."""
        check_real("aux_coef", aux_coef, low=0.0)
        logits = self(ids)[:, :-1]
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        if aux_coef:
            ce = ce + aux_coef * sum(m.aux_loss for m in self.moe_layers)
        return ce


def set_replay(model: MoELM, routes: Sequence[torch.Tensor] | None) -> None:
    """Force every MoE layer's expert selection (one ``(tokens, top_k)`` tensor per layer), or clear it."""
    layers = model.moe_layers
    if routes is None:
        for m in layers:
            m.replay_routes = None
        return
    if len(routes) != len(layers):
        raise ValueError(f"routes must hold one tensor per MoE layer ({len(layers)}); got {len(routes)}")
    for m, r in zip(layers, routes, strict=True):
        m.replay_routes = r


@torch.no_grad()
def record_routes(model: MoELM, ids: torch.Tensor) -> list[torch.Tensor]:
    """The expert selection of every MoE layer on ``ids`` (the model's own routing)."""
    set_replay(model, None)
    was = model.training
    model.eval()
    model(ids)
    model.train(was)
    return [m.last_routes.clone() for m in model.moe_layers]


def topk_agreement(routes_a: Sequence[torch.Tensor], routes_b: Sequence[torch.Tensor]) -> float:
    r"""Mean top-k set overlap :math:`|S_a \cap S_b| / k` over tokens and layers (1 = identical routing)."""
    if len(routes_a) != len(routes_b) or not routes_a:
        raise ValueError("routes_a and routes_b must be non-empty lists of the same length")
    tot, n = 0.0, 0
    for a, b in zip(routes_a, routes_b, strict=True):
        if a.shape != b.shape:
            raise ValueError(f"route shapes differ: {tuple(a.shape)} vs {tuple(b.shape)}")
        inter = (a.unsqueeze(-1) == b.unsqueeze(-2)).any(-1).sum(-1).double()
        tot += float((inter / a.shape[1]).sum())
        n += a.shape[0]
    return tot / n


@torch.no_grad()
def expert_loads(model: MoELM, batches: Sequence[torch.Tensor]) -> torch.Tensor:
    """Loads ``p`` of shape ``(layers, experts)``: the fraction of routed token slots per expert (rows sum to 1)."""
    if len(batches) == 0:
        raise ValueError("batches must hold at least one batch of token ids")
    layers = model.moe_layers
    counts = torch.zeros(len(layers), layers[0].n_experts, dtype=torch.float64)
    for ids in batches:
        for li, r in enumerate(record_routes(model, ids)):
            counts[li] += torch.bincount(r.reshape(-1), minlength=counts.shape[1]).double()
    return counts / counts.sum(1, keepdim=True)


def _expert_linears(expert: nn.Module) -> list[tuple[str, nn.Module]]:
    return [("up", expert.up), ("down", expert.down)]


@torch.no_grad()
def expert_error_spectra(model: MoELM, block_size: int = 32) -> list[list[torch.Tensor]]:
    r"""Per layer and expert, :math:`\sum_m \sigma_i(W_m - Q(W_m))^2` (descending) over the expert's matrices."""
    out = []
    for m in model.moe_layers:
        row = []
        for ex in m.experts:
            spec = None
            for _, lin in _expert_linears(ex):
                w = lin.weight if isinstance(lin, nn.Linear) else None
                if w is None:
                    raise ValueError("expert_error_spectra needs a float model (nn.Linear experts)")
                s2 = torch.linalg.svdvals((w - mxfp4_quantize(w, block_size)).double()).pow(2)
                spec = s2 if spec is None else _add_padded(spec, s2)
            row.append(spec)
        out.append(row)
    return out


def _add_padded(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    n = max(len(a), len(b))
    return F.pad(a, (0, n - len(a))) + F.pad(b, (0, n - len(b)))


def allocate_ranks(
    spectra: Sequence[torch.Tensor], weights: Sequence[float] | torch.Tensor, budget: int, max_rank: int | None = None
) -> list[int]:
    r"""Greedy rank allocation maximising :math:`\sum_e w_e \sum_{i \le r_e} s_{e,i}` with :math:`\sum_e r_e = R`.

    Parameters
    ----------
    spectra : list of 1-D tensors
        Per expert, the non-increasing gains :math:`s_{e,i}` (squared singular values of its error).
    weights : sequence of float
        :math:`w_e \ge 0`: the loads :math:`p_e` (load-aware), ones (load-blind), anything else.
    budget : int
        Total rank :math:`R`, at most the sum of the usable ranks.
    max_rank : int, optional
        Cap on every :math:`r_e` (default: the length of each spectrum).

    Returns
    -------
    list of int
        :math:`r_e`. Ties go to the lower expert index.
    """
    if len(spectra) == 0:
        raise ValueError("spectra must hold at least one expert's spectrum")
    for e, s in enumerate(spectra):
        check_tensor(f"spectra[{e}]", s, ndim=1, nonempty=False)
        if bool((s < 0).any()):
            raise ValueError(f"spectra[{e}] must hold gains >= 0 (squared singular values)")
    w = [float(x) for x in (weights.tolist() if isinstance(weights, torch.Tensor) else weights)]
    if len(w) != len(spectra) or not spectra:
        raise ValueError(f"weights ({len(w)}) must give one value per spectrum ({len(spectra)})")
    if any(not math.isfinite(x) or x < 0 for x in w):
        raise ValueError("weights must be finite and >= 0")
    caps = [len(s) if max_rank is None else min(len(s), check_int("max_rank", max_rank, low=0)) for s in spectra]
    budget = check_int("budget", budget, low=0)
    if budget > sum(caps):
        raise ValueError(f"budget ({budget}) is above the sum of the usable ranks ({sum(caps)})")
    ranks = [0] * len(spectra)
    heap = [(-w[e] * float(spectra[e][0]), e) for e in range(len(spectra)) if caps[e] > 0]
    heapq.heapify(heap)
    for _ in range(budget):
        _, e = heapq.heappop(heap)
        ranks[e] += 1
        if ranks[e] < caps[e]:
            heapq.heappush(heap, (-w[e] * float(spectra[e][ranks[e]]), e))
    return ranks


@torch.no_grad()
def mxfp4_moe(
    model: MoELM,
    ranks: Sequence[Sequence[int]] | None = None,
    *,
    block_size: int = 32,
    quantize_attention: bool = True,
) -> MoELM:
    """A copy of ``model`` with every expert matrix MXFP4-quantised and wrapped in :class:`QuantAdapterLinear`.

    ``ranks[layer][expert]`` is the adapter rank of each of the expert's matrices (``None``: 0, plain MXFP4),
    initialised from the SVD of the quantisation error. With ``quantize_attention`` the attention
    projections are MXFP4 too (no adapter: uniform W4 as in the paper's serving set-up). Routers,
    embeddings, norms and the LM head stay in float.
    """
    q = copy.deepcopy(model)
    layers = q.moe_layers
    if ranks is not None and (len(ranks) != len(layers) or any(len(r) != m.n_experts for r, m in zip(ranks, layers))):
        raise ValueError("ranks must be a list (one per MoE layer) of lists (one int per expert)")
    if quantize_attention:
        for blk in q.blocks:
            for name in ("qkv", "proj"):
                lin = getattr(blk, name)
                setattr(blk, name, QuantAdapterLinear(mxfp4_quantize(lin.weight, block_size), lin.bias, 0))
    for li, m in enumerate(layers):
        for e, ex in enumerate(m.experts):
            r = 0 if ranks is None else int(ranks[li][e])
            for name, lin in _expert_linears(ex):
                if not isinstance(lin, nn.Linear):
                    raise ValueError("mxfp4_moe needs a float model (nn.Linear experts)")
                wq = mxfp4_quantize(lin.weight, block_size)
                if r > min(wq.shape):
                    raise ValueError(f"rank {r} of layer {li} expert {e} is above min{tuple(wq.shape)}")
                new = QuantAdapterLinear(wq, lin.bias, r)
                new.init_from_error(lin.weight - wq)
                setattr(ex, name, new)
    return q


@torch.no_grad()
def load_weighted_error(quantised: MoELM, reference: MoELM, loads: torch.Tensor) -> float:
    r""":math:`\sum_{l,e} p_{l,e} \sum_m \|W_m - (Q(W_m) + A_mB_m)\|_F^2`, the load-weighted compression error."""
    layers = quantised.moe_layers
    check_tensor("loads", loads, shape=(len(layers), layers[0].n_experts))
    tot = 0.0
    for li, (mq, mr) in enumerate(zip(quantised.moe_layers, reference.moe_layers, strict=True)):
        for e, (eq, er) in enumerate(zip(mq.experts, mr.experts, strict=True)):
            for (_, lq), (_, lr) in zip(_expert_linears(eq), _expert_linears(er), strict=True):
                tot += float(loads[li, e]) * float((lr.weight - lq.effective_weight()).pow(2).sum())
    return tot


def routing_replay_qat(
    model: MoELM,
    reference: MoELM,
    batch_fn: Callable[[int], torch.Tensor],
    *,
    steps: int,
    lr: float,
    replay: bool = True,
    route_transform: Callable[[list[torch.Tensor]], list[torch.Tensor]] | None = None,
    objective: str = "distill",
) -> list[float]:
    """Fine-tune the adapters of a quantised MoE model in place; returns the training losses.

    Parameters
    ----------
    model : MoELM
        The quantised model (:func:`mxfp4_moe`). Only its adapters (and, without replay, its routers) train.
    reference : MoELM
        The full-precision model whose routes are replayed.
    batch_fn : callable
        ``batch_fn(step)`` -> token ids ``(batch, seq)``.
    steps : int
        Optimiser steps (Adam).
    lr : float
        Learning rate.
    replay : bool
        True: limited routing replay (reference routes forced, routers frozen, adapters only). False: plain
        QAT (own routes, routers and adapters trained).
    route_transform : callable, optional
        Applied to the recorded routes before replay (for controls: replaying routes of other tokens).
    objective : {"distill", "lm"}
        ``"distill"``: KL divergence from the reference's next-token distribution to the quantised model's
        (the QAT recovers the full-precision model); ``"lm"``: next-token cross-entropy on the batch.
    """
    if objective not in ("distill", "lm"):
        raise ValueError(f"objective must be 'distill' or 'lm'; got {objective!r}")
    steps = check_int("steps", steps, low=0)
    lr = check_real("lr", lr, low=0.0, low_inclusive=False)
    for p in model.parameters():
        p.requires_grad_(False)
    params = []
    for m in model.moe_layers:
        for ex in m.experts:
            for _, lin in _expert_linears(ex):
                if isinstance(lin, QuantAdapterLinear) and lin.rank:
                    params += [lin.A, lin.B]
        if not replay:
            params += list(m.router.parameters())
    if not params:
        raise ValueError("model has nothing to train: quantise it with mxfp4_moe(..., ranks) first")
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.Adam(params, lr=lr)
    losses = []
    model.train()
    for t in range(steps):
        ids = batch_fn(t)
        with torch.no_grad():
            set_replay(reference, None)
            reference.eval()
            teacher = torch.log_softmax(reference(ids), -1)
            routes = [m.last_routes.clone() for m in reference.moe_layers]
        if replay:
            set_replay(model, route_transform(routes) if route_transform else routes)
        if objective == "lm":
            loss = model.loss(ids)
        else:
            student = torch.log_softmax(model(ids), -1)
            loss = F.kl_div(student.flatten(0, 1), teacher.flatten(0, 1), log_target=True, reduction="batchmean")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    set_replay(model, None)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return losses
