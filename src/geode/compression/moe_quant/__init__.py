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
