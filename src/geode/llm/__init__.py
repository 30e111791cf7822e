r"""Large language models: post-training methods and analyses, run on tiny LMs and SmolLM2.

The paper folders live below (``geode.llm.bvpo``, ``geode.llm.bytedistill``, ``geode.llm.captrack``,
``geode.llm.cd_scaling``, ``geode.llm.compose``, ``geode.llm.cpa``, ``geode.llm.sr_grpo``); each paper's public
names are re-exported here. Field-level baselines: ``geode.llm.preference`` (the DPO loss) and ``geode.llm.grpo``
(a compact GRPO: sampling, response log-probabilities, group advantages, the clipped surrogate, shared by SR-GRPO
and CPA).

Papers and their names
----------------------
Each paper's public names, importable from this package (``geode show <slug>`` prints the same with an example).

``bvpo``: BVPO, bias-variance optimised preference optimisation::

    from geode.llm import BVPOTrainer, PreferenceBatch, bvpo_loss, dpo_loss, mse_optimal_alpha, sequence_logprobs

- ``BVPOTrainer``: DPO on a Hugging Face causal LM with BVPO's composite loss (``alpha=1``: trace-based DPO).
- ``PreferenceBatch``: chosen / rejected token sequences sharing a prompt of ``start`` tokens, validated.
- ``bvpo_loss``: the composite loss :math:`\alpha\ell_t + (1-\alpha)\ell_e` on eight sequence log-probabilities.
- ``dpo_loss``: DPO's sigmoid loss on sequence log-probabilities (field baseline, :mod:`geode.llm.preference`).
- ``mse_optimal_alpha``: the MSE-optimal mixture weight from ``K`` trace-gradient resamples and the empty one.
- ``sequence_logprobs``: summed log-probability of a continuation under a causal LM.

``bytedistill``: ByteDistill, cross-tokenizer distillation through next-byte distributions (BLDA)::

    from geode.llm import (BytePath, ByteVocab, aligned_chunks, blda_from_byte_probs, blda_loss, byte_distributions,
                           byte_level_bytes, tokenizer_vocab_bytes, uld_loss)

- ``ByteVocab``: a vocabulary's token bytes (``from_tokenizer``: HF, tiktoken); builds paths (``path``, ``encode``).
- ``BytePath``: one observed tokenization prepared for the projection.
- ``byte_distributions``: next-token logits projected onto 256-way next-byte distributions (differentiable).
- ``blda_loss``: BLDA, the per-byte KL between a teacher and a student with different tokenizers.
- ``blda_from_byte_probs``: BLDA from precomputed teacher byte distributions.
- ``uld_loss``: the ULD baseline (sorted-probability L1 distance).
- ``aligned_chunks``: the spans between the common boundaries of two tokenizations of the same bytes.
- ``byte_level_bytes``: GPT-2's byte-level alphabet (printable character -> byte).
- ``tokenizer_vocab_bytes``: the decoded bytes of every token id of a tokenizer.

``captrack``: CapTrack, capability-centric forgetting analysis::

    from geode.llm import (CAPTRACK_TAXONOMY, Capability, CapabilityRegistry, CapabilitySuite, DriftReport, Metric,
                           TextProbe, drift_report, evaluate_text_model, is_refusal, make_text_probes,
                           relative_drift, smollm2_generate)

- ``CAPTRACK_TAXONOMY``: the paper's 17 capabilities (C1-C5c, W1-W3b, H1-H6), a tuple of ``Capability``.
- ``Capability``: one capability (code, name, group CAN / WILL / HOW).
- ``CapabilityRegistry``: capabilities and the metrics measured for each; ``Metric``: one such metric.
- ``drift_report``: relative drift per metric and per capability, with a paired bootstrap (se, interval, z).
- ``DriftReport``: its result (``capability(code)``, ``mean_abs_drift``, ``table``).
- ``relative_drift``: :math:`100(\bar a - \bar b)/|\bar b|` of two score lists.
- ``make_text_probes``: generated text probes of 7 metrics; ``TextProbe``: one probe.
- ``evaluate_text_model``: scores per metric of any ``generate(prompts) -> responses``.
- ``smollm2_generate``: that ``generate`` for a Hugging Face chat LM (chat template, greedy).
- ``is_refusal``: the keyword refusal detector.
- ``CapabilitySuite``: the synthetic token-level capability mixture of the claim check (tiny LMs).

``cd-scaling``: Compute-Data scaling laws with token effectiveness::

    from geode.llm import (MUENNIGHOFF_C4, CDScalingLaw, ChinchillaLaw, MuennighoffLaw, effective_data,
                           estimate_token_effectiveness, muennighoff_loss, token_effectiveness)

- ``CDScalingLaw``: the CD law (fit, predict, ``eta``, ``effective_data``, ``regime``, ``optimal_allocation``).
- ``ChinchillaLaw``, ``MuennighoffLaw``: the baseline laws (blind to repetition; constant :math:`R^*`).
- ``token_effectiveness``, ``effective_data``: the closed forms of :math:`\eta` and :math:`D_{\mathrm{eff}}`.
- ``estimate_token_effectiveness``: non-parametric :math:`\eta` from a fresh-data loss curve.
- ``muennighoff_loss``: Muennighoff et al.'s full data-constrained law; ``MUENNIGHOFF_C4``: its fitted C4 parameters.

``compose``: COMPOSE, dual-graph conditioning for future mathematical claim generation::

    from geode.llm import (Anchor, BridgeProjection, ClaimRetriever, ComposeModel, FusionCrossAttention, GraphBatch,
                           GraphConditionedDecoder, GraphEncoder, MathUniverse, SimpleGNN, batch_graphs, claim_pool,
                           generate_universe, info_nce, mean_reciprocal_rank, oracle_claim, rank_counts,
                           recall_at_k, tfidf_svd)

- ``ComposeModel``: the claim decoder conditioned on a citation graph and a formal graph (``loss``, ``generate``).
- ``batch_graphs``: pad small directed graphs into a ``GraphBatch`` (node features, adjacency, mask, root).
- ``GraphEncoder``, ``SimpleGNN``, ``BridgeProjection``, ``FusionCrossAttention``, ``GraphConditionedDecoder``: its
  parts (encoders, the bridge into the formal width, the zero-initialised fusion, the gated decoder).
- ``info_nce``: InfoNCE of paired rows (optional extra negatives).
- ``ClaimRetriever``, ``recall_at_k``, ``mean_reciprocal_rank``, ``rank_counts``: retrieval metrics, ties in
  expectation.
- ``generate_universe``, ``MathUniverse``, ``Anchor``, ``claim_pool``, ``oracle_claim``, ``tfidf_svd``: the
  synthetic universe of the claim check, its retrieval pool, an oracle and the TF-IDF + SVD embeddings.

``cpa``: CPA, cross-precision alignment for RL with FP4 rollouts::

    from geode.llm import (CPA_LOSS_TYPES, FP4Linear, LowPrecisionGRPO, LowPrecisionStats, cpa_logprob_gap,
                           cpa_loss, cpa_token_objective, fake_quant_disabled, fp4_layers, quantize_model, ste_fp4,
                           truncated_is_weights)

- ``quantize_model``: swap a model's ``nn.Linear`` layers for ``FP4Linear`` (NVFP4 / MXFP4, W4A4 or W4A16, STE).
- ``fake_quant_disabled``: context manager, the same weights at full precision (CPA's teacher); ``fp4_layers``.
- ``ste_fp4``: FP4 fake quantisation with a straight-through gradient.
- ``cpa_loss``, ``cpa_token_objective``: the CPA term (k3 KL; ``CPA_LOSS_TYPES`` lists the alternatives).
- ``cpa_logprob_gap``: mean |log-prob gap| between the quantised and full-precision forward.
- ``truncated_is_weights``: TIS rollout-correction weights.
- ``LowPrecisionGRPO``: GRPO with FP4 rollouts, a float32 master policy, QAT, TIS and CPA;
  ``LowPrecisionStats``: what one step measured.

``sr-grpo``: stable rank as an intrinsic reward, and SR-GRPO::

    from geode.llm import (CompactGRPO, StableRankReward, best_of_n, group_advantages, grpo_loss, k3_kl,
                           response_hidden_states, response_logprobs, response_stable_rank, sample_responses)

- ``response_stable_rank``: :math:`\|H\|_F^2/\|H\|_2^2` of each response's final hidden states.
- ``response_hidden_states``: those states from a causal LM (response positions only).
- ``StableRankReward``: the reward in TRL's signature (``trl.GRPOTrainer(reward_funcs=[...])``).
- ``best_of_n``: the best of each group of ``n`` candidates by a score.
- ``CompactGRPO``: GRPO on a Hugging Face causal LM with any reward function (field baseline,
  :mod:`geode.llm.grpo`), and its pieces ``sample_responses``, ``response_logprobs``, ``group_advantages``,
  ``grpo_loss`` and ``k3_kl``.
"""

from __future__ import annotations

from geode.llm import bvpo as _bvpo
from geode.llm import bytedistill as _bytedistill
from geode.llm import captrack as _captrack
from geode.llm import cd_scaling as _cd_scaling
from geode.llm import compose as _compose
from geode.llm import cpa as _cpa
from geode.llm import sr_grpo as _sr_grpo
from geode.llm.bvpo import *  # noqa: F403
from geode.llm.bytedistill import *  # noqa: F403
from geode.llm.captrack import *  # noqa: F403
from geode.llm.cd_scaling import *  # noqa: F403
from geode.llm.compose import *  # noqa: F403
from geode.llm.cpa import *  # noqa: F403
from geode.llm.sr_grpo import *  # noqa: F403

__all__: list[str] = []
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [
    *_bvpo.__all__,
    *_bytedistill.__all__,
    *_captrack.__all__,
    *_cd_scaling.__all__,
    *_compose.__all__,
    *_cpa.__all__,
    *_sr_grpo.__all__,
]
