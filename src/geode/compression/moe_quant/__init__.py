r"""MoE quantisation: MXFP4 experts, limited routing replay during QAT, load-aware low-rank compensation.

Paper: MoE quantisation with routing replay and load-aware low-rank compensation (catalogue title; NeurIPS
2026; neither the paper's text nor code was available, only the abstract). Claim: expert quantisation
error flips discrete routes; replaying full-precision routes during QAT (routers frozen, expert-side
adapters trained) and assigning compensation rank by load-weighted spectral gains improve MXFP4
perplexity over plain QAT/PTQ.

Components (:mod:`geode.compression.moe_quant.moe`): :func:`mxfp4_quantize` (OCP MXFP4 fake
quantisation), :class:`MoELM` / :class:`MoELayer` (a tiny top-k MoE LM whose layers can replay recorded
routes), :class:`QuantAdapterLinear` (frozen quantised weight + SVD-initialised low-rank adapter),
:func:`allocate_ranks` (greedy on marginal gains :math:`p_e \sigma_{r_e+1}(E_e)^2`, optimal for
non-increasing gains), :func:`mxfp4_moe`, :func:`expert_loads`, :func:`expert_error_spectra`,
:func:`load_weighted_error`, :func:`record_routes` / :func:`set_replay` / :func:`topk_agreement`,
:func:`routing_replay_qat`.

Inferred details (from the abstract and the neighbours named in the research notes: R3 routing replay,
LQER/EoRA compensation):

- MXFP4: blocks of 32 along the input dimension, E8M0 scale :math:`2^{\lfloor\log_2 \max|w|\rfloor-2}`,
  E2M1 elements, round to nearest (ties toward zero magnitude), clip at 6; expert matrices (up, down) and
  the attention projections are quantised, routers, embeddings, norms and LM head stay in float;
- compensation: one rank per expert, shared by its two matrices; gains :math:`\sum_m \sigma_i(E_{e,m})^2`
  of the plain weight-space error (no activation whitening); the rank budget is spent per layer (the
  uniform allocation's total); loads are the fraction of routed token slots on calibration windows;
- replay: the gates are the quantised model's own softmax over its router logits on the replayed set (as
  in R3), so the adapters see consistent expert mixtures; "limited" = only during QAT (inference routes
  itself), routers frozen, only the adapters train;
- the QAT objective: distillation from the full-precision model (KL of next-token distributions), Adam.

Examples
--------
Quantise a tiny MoE LM's experts to MXFP4, spend a compensation-rank budget by expert load, and fine-tune the
adapters with the full-precision model's routes replayed.

>>> import torch
>>> from geode.compression import (MoELM, allocate_ranks, expert_error_spectra, expert_loads, load_weighted_error,
...                                mxfp4_moe, mxfp4_quantize, record_routes, routing_replay_qat, topk_agreement)
>>> model = MoELM(16, d_model=32, n_layers=1, n_heads=2, d_ff=32, n_experts=4, top_k=2, max_positions=16, seed=0)
>>> g = torch.Generator().manual_seed(0)
>>> calib = [torch.randint(0, 16, (8, 16), generator=g) for _ in range(2)]  # token ids (batch, seq)
>>> loads = expert_loads(model, calib)  # (layers, experts): fraction of routed slots, rows sum to 1
>>> loads.shape, bool(torch.allclose(loads.sum(1), torch.ones(1, dtype=loads.dtype)))
(torch.Size([1, 4]), True)
>>> ranks = [allocate_ranks(expert_error_spectra(model)[0], loads[0], budget=8)]  # load-aware, 8 in all
>>> sum(ranks[0])
8
>>> plain, compensated = mxfp4_moe(model), mxfp4_moe(model, ranks)  # copies; the float model is kept
>>> load_weighted_error(compensated, model, loads) < load_weighted_error(plain, model, loads)
True
>>> 0.5 < topk_agreement(record_routes(plain, calib[0]), record_routes(model, calib[0])) <= 1.0  # share of routes kept
True
>>> losses = routing_replay_qat(compensated, model, lambda step: calib[step % 2], steps=5, lr=1e-3)
>>> len(losses)
5

Every MXFP4 weight is an E2M1 value times its block's power-of-two scale:

>>> w = torch.tensor([[0.3, -1.7, 2.2, 5.0] * 8])  # one block of 32; max |w| = 5: scale 2^(floor(log2 5) - 2) = 1
>>> mxfp4_quantize(w)[0, :4].tolist()  # nearest E2M1 value, the tie 5 -> 4 toward zero
[0.5, -1.5, 2.0, 4.0]
"""

from __future__ import annotations

from geode.compression.moe_quant.moe import (
    E2M1_VALUES,
    MoELayer,
    MoELM,
    QuantAdapterLinear,
    allocate_ranks,
    expert_error_spectra,
    expert_loads,
    load_weighted_error,
    mxfp4_moe,
    mxfp4_quantize,
    record_routes,
    routing_replay_qat,
    set_replay,
    topk_agreement,
)

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
