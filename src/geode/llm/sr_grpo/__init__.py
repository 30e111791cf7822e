r"""Stable rank as an intrinsic reward, best-of-N by stable rank, and a compact SR-GRPO trainer.

Paper: "SR-GRPO: Stable Rank as an Intrinsic Geometric Reward for LLM Alignment" (Tang & Yang, arXiv
2512.02807; NeurIPS 2026 collection, slug ``sr-grpo``).

**Claim (checked by** ``geode reproduce sr-grpo`` **).** The stable rank of a response's final hidden states,
:math:`\operatorname{SR}(H) = \|H\|_F^2 / \|H\|_2^2` (total variance over dominant-direction variance), is an
annotation-free quality signal: best-of-N selection by it beats greedy decoding (+14.1% relative in the
paper), and GRPO with it as the only reward improves accuracy (+10% STEM, +19% math on Qwen2.5-1.5B).

**Components.** :func:`response_stable_rank` (batched, padded responses), :func:`response_hidden_states`,
:class:`StableRankReward` (TRL's reward-function signature ``(prompts, completions, completion_ids, **kw)
-> list[float]``, usable as ``trl.GRPOTrainer(reward_funcs=[StableRankReward(evaluator, tokenizer)])``, and
geode's ``reward_fn(prompt_ids, response_ids, mask)``: ``CompactGRPO(policy, StableRankReward(evaluator))``),
:func:`best_of_n`, and :class:`CompactGRPO` (group-relative advantages :func:`group_advantages`, the
clipped surrogate with the k3 KL :func:`k3_kl`, :func:`grpo_loss`) for any Hugging Face causal LM.
The stable rank itself is :func:`geode.core.stable_rank`.

**Inferred (the paper's text leaves these open) and choices.**

- *Which states.* The final-layer states after the last norm (``model.base_model(...).last_hidden_state``),
  at the positions of the response tokens (prompt excluded, as the paper says), EOS included, tokens after
  the first EOS excluded. Uncentred, as the formula the paper writes; no length normalisation.
- *The evaluator* is a frozen copy of the initial policy (the paper's text: the reference model is frozen),
  which is also the KL anchor.
- *GRPO.* One policy update per generation (ratio 1 in value), clipping 0.2, k3 KL with :math:`\beta = 0.04`,
  advantages divided by the group's unbiased std + 1e-4, per-response token means (TRL's ``"grpo"`` loss
  type), gradient-norm clipping at 1, AdamW. TRL's defaults, not stated in the paper for its runs.
- *The claim check's set-up*: a tiny Llama (2 layers, d=64) trained until greedy accuracy reaches 50% on a
  sum of three digits whose response carries the partial sum of the first two as a one-step trace
  (``p1 p0 SEP c1 c0 EOS``: six response tokens, so SR lies in [1, 6]); a response is correct when its
  final two digits are right. Best-of-8 at a temperature tuned on validation for every selector; GRPO
  with 8 prompts x 8 responses per step, 100 steps, the learning rate tuned on validation accuracy for
  every reward. Selecting hyper-parameters uses validation labels; training SR-GRPO uses none.

**What the check found at small scale (quick mode, 3 seeds): not reproduced, every seed.** Validity floors
met: the base model's greedy test accuracy was 0.568 / 0.494 / 0.549 and GRPO with the external
correctness reward raised it by +12.5 / +19.1 / +19.5 points, so the pipeline learns from a reward that
carries the signal. Stable rank did not carry it: best-of-8 by stable rank minus greedy was -16.6 / +0.4 /
-9.0 points (threshold >= 3; the random-pick control -5.3 / -1.2 / -7.6), 100 SR-GRPO steps changed greedy
accuracy by -39.1 / -9.4 / -16.4 points (threshold >= 3; random-reward control -14.1 / -2.5 / -21.5) while
the stable-rank reward rose (2.55 -> 2.73 in seed 0: the policy learned to raise the frozen evaluator's
stable rank, not accuracy), and Spearman(SR, correct) over the sampled responses was 0.045 / -0.032 /
0.026 (partial needs > 0.1; within a prompt -0.15 / 0.07 / 0.07). The strongest baselines did better:
best-of-8 by mean log-prob -> greedy +0.4 / -0.8 / -3.3 points, Spearman(mean log-prob, correct) 0.16 /
0.22 / 0.18. All three controls fail their thresholds (each threshold discriminates). Tuning notes: the
sampling temperature of the stable-rank and random selectors and most GRPO learning rates were selected
on the lower edge of their grids even after one extension (temperature 0.18, lr 3.3e-5): on this model
every selector but correctness does best when it changes the least. A tiny LM stopped at 50% accuracy is
far from the 1.5B-8B models of the paper, whose representations may carry the signal that this one does
not; the check says only that the signal does not emerge at this scale.

No authors' code was read (the issue names none). TRL 1.16 is part of the ``llm`` extra: the tests run one
real ``trl.GRPOTrainer`` step on a tiny Llama with :class:`StableRankReward` as its only reward.

Examples
--------
The stable rank of hand-made states, then of a tiny Hugging Face Llama's completions as TRL would pass them,
best-of-N by it, and GRPO steps with a reward function.

>>> import torch
>>> from geode.llm import CompactGRPO, StableRankReward, best_of_n, response_stable_rank
>>> from geode.models import build_tiny_lm
>>> float(response_stable_rank(torch.outer(torch.arange(1.0, 6.0), torch.ones(16))))  # rank one: 1
1.0
>>> float(response_stable_rank(torch.eye(5, 16)))  # 5 orthonormal token states: 5
5.0
>>> evaluator = build_tiny_lm(16, d_model=16, n_layers=1, n_heads=2, max_positions=16, seed=1)
>>> reward = StableRankReward(evaluator, eos_token_id=3)  # usable as trl.GRPOTrainer(reward_funcs=[reward])
>>> completions = [[7, 8, 3], [7, 7, 7], [9, 10, 11], [12, 3, 9]]  # tokens after the first EOS (3) are ignored
>>> scores = reward(prompts=[[1, 5, 6]] * 4, completions=["..."] * 4, completion_ids=completions)
>>> all(1.0 <= s <= 3.0 for s in scores), round(scores[1], 2)  # 1 <= SR <= T; one token repeated: ~1
(True, 1.0)
>>> best_of_n(scores, 4).tolist() == [max(range(4), key=scores.__getitem__)]  # the highest of each group
True

SR-GRPO: the same reward in geode's trainer signature ``reward_fn(prompt_ids, response_ids, mask)`` (any other
function of that signature works too, e.g. a correctness check):

>>> policy = build_tiny_lm(16, d_model=16, n_layers=1, n_heads=2, max_positions=16, seed=0)
>>> trainer = CompactGRPO(policy, reward, group_size=4, max_new_tokens=3, eos_token_id=3, lr=1e-2, seed=0)
>>> stats = trainer.train(lambda step: torch.tensor([[1, 5, 6], [1, 7, 8]]), steps=3)
>>> len(stats), 1.0 <= stats[0].reward_mean <= 3.0, sorted(vars(stats[0]))
(3, True, ['kl', 'loss', 'reward_mean', 'reward_std_within'])
"""

from __future__ import annotations

from geode.llm.grpo import (
    CompactGRPO,
    group_advantages,
    grpo_loss,
    k3_kl,
    response_logprobs,
    sample_responses,
)
from geode.llm.sr_grpo.reward import StableRankReward, best_of_n, response_hidden_states, response_stable_rank

__all__ = [
    "CompactGRPO",
    "StableRankReward",
    "best_of_n",
    "group_advantages",
    "grpo_loss",
    "k3_kl",
    "response_hidden_states",
    "response_logprobs",
    "response_stable_rank",
    "sample_responses",
]
