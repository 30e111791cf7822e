r"""CPA: cross-precision alignment for RL with low-precision (FP4) rollouts.

Paper: "CPA: cross-precision alignment for low-precision RL rollouts" (NeurIPS 2026 collection, slug
``cpa``); the authors' code is very likely ``GGgary666/vexact`` (``vexact/quantization/cpa.py``), which we
read and follow.

**Claim (checked by** ``geode reproduce cpa`` **).** FP4 rounding amplifies small training-inference stack
differences into large token log-prob errors that destabilise RL; keeping a BF16 master policy, rolling out
in FP4 and adding a low-variance KL between the fake-quantised and the BF16 forward on the sampled tokens
(CPA) makes the BF16 checkpoint match full BF16 RL.

**Components.** :class:`FP4Linear` (an ``nn.Linear`` with NVFP4/MXFP4 fake quantisation of its weight and,
for W4A4, its input, straight-through gradient), :func:`quantize_model`, :func:`fake_quant_disabled` (the
teacher's forward: fake quantisation off, eval mode, restored afterwards), :func:`ste_fp4`;
:func:`cpa_token_objective` / :func:`cpa_loss` (k3 with the authors' clamps; ``mse`` and ``abs_logprob``
too), :func:`cpa_logprob_gap`, :func:`truncated_is_weights`; :class:`LowPrecisionGRPO` (GRPO with an FP4 or
BF16 rollout engine, a float32 master policy, optional QAT, TIS and CPA). The FP4 formats themselves are
:func:`geode.core.quant.fp4_quantize` (NVFP4: E2M1 x E4M3 block scale per 16 x FP32 tensor scale; MXFP4:
E2M1 x E8M0 scale per 32), and the GRPO pieces :mod:`geode.llm.grpo`.

**Following the authors' code.** Loss weight :math:`\lambda = 10^{-3}` by default; per-token
:math:`\min(e^\Delta - \Delta - 1, 10)` with :math:`\Delta = \operatorname{clip}(\log\pi_\text{bf16} -
\log\pi_\text{fq}, \pm 20)`; teacher = the same weights with fake quantisation off, in eval mode, without
gradient; normalised by the batch's response-token count; added to the RL loss. NVFP4 follows vLLM's
recipe as the authors' eager reference does (global scale :math:`448 \cdot 6/\max|x|`, block scale cast to
E4M3, ties of E2M1 rounding to even).

**Deliberate differences from the authors' code.** Exact division instead of the approximate reciprocal
(``rcp.approx.ftz``) of their Triton/vLLM kernels; the FP4 rollout engine is our own emulation (real FP4
values stored in a bfloat16 copy of the network, activations quantised in bfloat16) rather than vLLM on a
B200; our own GRPO loop rather than verl (no FSDP, no data-parallel token normaliser ``dp_size``); no
``CPAConfig`` environment-variable layer (plain keyword arguments).

**Inferred (the paper's text is not available; only the abstract) and choices.**

- *Which layers*: every linear layer of the decoder blocks, W4A4 (the authors' QAT setting); embeddings,
  norms and the LM head stay full precision (as NVFP4 serving recipes keep the head in BF16).
- *The stack mismatch*: the rollout engine computes in bfloat16, the trainer in float32 (on a GPU the
  two would be different kernels of the same precision); both quantise with the same recipe.
- *RL*: GRPO with one update per rollout, clipping 0.2, no reference KL (as DAPO), advantages over groups
  of 8, AdamW, gradient norm 1; TIS cap tuned (TRL's ``vllm_importance_sampling_cap`` is of this kind).
- *The claim check* (details in :mod:`geode.llm.cpa.claim`): reversal of 5 symbols on a tiny Llama; the
  final reward is the full-precision policy's sampled reward on held-out prompts (greedy reported beside);
  the readings of the thresholds and the controls were fixed before the run; CPA's weight 0.1 (the
  authors' 1e-3, sized for 1.5B-7B models, is run beside it).

**What the check found (quick, 3 seeds): not reproduced, unstable across seeds** (not reproduced / partial
/ partial). The premise does not appear at this scale: FP4 rollouts without correction reached 0.950 /
0.881 / 0.977 of full-precision RL's sampled reward (threshold <= 0.90 in 2 of 3 seeds), inside the noise
floor of two full-precision runs (1.130 / 0.772 / 1.001), and never collapsed. CPA kept the reward (0.958
/ 0.910 / 0.999 of full-precision RL; beat plain FP4 by +0.004 / +0.018 / +0.013) and, at the same learning
rate (seeds 1-2), lowered the train-rollout mismatch by 9% (0.0402 vs 0.0444); in seed 0, where FP4
selected a 3x larger learning rate, CPA's mismatch was 1.43x FP4's. FP4 rounding multiplied the bfloat16
stack mismatch about 9x (0.042-0.060 vs 0.005 nats per token). Details and every number in
:mod:`geode.llm.cpa.claim`.

Examples
--------
Fake-quantise a tiny Hugging Face Llama to NVFP4 (W4A4), measure the CPA term between its quantised and its
full-precision forward on some sampled tokens, then take one GRPO step with FP4 rollouts and CPA.

>>> import torch
>>> from geode.llm import LowPrecisionGRPO, cpa_logprob_gap, cpa_loss, fake_quant_disabled, quantize_model
>>> from geode.llm import response_logprobs
>>> from geode.models import build_tiny_lm
>>> policy = build_tiny_lm(16, d_model=32, n_layers=1, n_heads=2, max_positions=16, seed=0)
>>> quantize_model(policy)  # every nn.Linear of the blocks becomes an FP4Linear; the LM head stays float
7
>>> prompts, responses = torch.tensor([[1, 2, 3, 4]] * 2), torch.tensor([[5, 6, 7], [8, 9, 10]])
>>> mask = torch.ones_like(responses, dtype=torch.bool)
>>> student = response_logprobs(policy, prompts, responses)  # FP4 forward, straight-through gradient
>>> with torch.no_grad(), fake_quant_disabled(policy):  # the same weights, full precision
...     teacher = response_logprobs(policy, prompts, responses)
>>> loss = cpa_loss(student, teacher, mask)  # k3 KL per token, over the response tokens
>>> loss.backward()
>>> 0 < cpa_logprob_gap(student, teacher, mask) < 0.1, cpa_loss(teacher, teacher, mask).item()
(True, 0.0)
>>> bool(policy.model.layers[0].self_attn.q_proj.weight.grad.abs().sum() > 0)  # reaches the master weights
True
>>> def reward(prompt_ids, response_ids, mask):  # 1 when the response starts with the prompt's last token
...     return (response_ids[:, 0] == prompt_ids[:, -1]).double()
>>> trainer = LowPrecisionGRPO(policy, reward, rollout="fp4", cpa_coef=0.1, group_size=4, max_new_tokens=2)
>>> stats = trainer.step(torch.tensor([[1, 5, 6], [1, 7, 8]]))  # sync, FP4 rollout, GRPO + CPA step
>>> stats.finite, stats.cpa_loss > 0
(True, True)
>>> with trainer.full_precision():  # evaluate / export the full-precision checkpoint
...     logits = policy(input_ids=prompts).logits
"""

from __future__ import annotations

from geode.llm.cpa.loss import CPA_LOSS_TYPES, cpa_logprob_gap, cpa_loss, cpa_token_objective, truncated_is_weights
from geode.llm.cpa.quant import FP4Linear, fake_quant_disabled, fp4_layers, quantize_model, ste_fp4
from geode.llm.cpa.trainer import LowPrecisionGRPO, LowPrecisionStats

__all__ = [
    "CPA_LOSS_TYPES",
    "FP4Linear",
    "LowPrecisionGRPO",
    "LowPrecisionStats",
    "cpa_logprob_gap",
    "cpa_loss",
    "cpa_token_objective",
    "fake_quant_disabled",
    "fp4_layers",
    "quantize_model",
    "ste_fp4",
    "truncated_is_weights",
]
