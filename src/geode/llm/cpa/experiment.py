"""The claim's set-up: a tiny LM pretrained part of the way on sequence reversal, then trained by GRPO.

Task (:class:`geode.models.tasks.Reversal`): prompt ``BOS x_1 .. x_L SEP``, response ``x_L .. x_1 EOS``.
The verifiable reward of a response is the fraction of its ``L`` answer positions that are right (the EOS
is not judged), which gives GRPO a graded signal at this scale; the claim's "reward" of a policy is the
mean reward of responses sampled at the rollout temperature on held-out prompts (the RL objective),
decoded at full precision; the greedy reward is reported beside it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_int, check_real
from geode.models.tasks import Reversal, TokenMappedTask

__all__ = [
    "ReversalReward",
    "greedy_reward",
    "pretrain_to_reward",
    "reversal_length",
    "sampled_reward",
    "split_prompts",
]


def reversal_length(task: Any) -> int:
    """``L`` of a :class:`Reversal` task, or of one mapped into another vocabulary (:class:`TokenMappedTask`)."""
    inner = task.task if isinstance(task, TokenMappedTask) else task
    if not isinstance(inner, Reversal):
        raise TypeError(f"task must be a Reversal (or a TokenMappedTask of one); got {type(inner).__name__}")
    return inner.length


def split_prompts(task: Any, n: int, seed: int | np.random.Generator) -> tuple[Any, Any]:
    """``(prompt_ids (n, L + 2), target_ids (n, L))`` drawn from ``task``."""
    L = reversal_length(task)
    b = task.sample(n, seed)
    return b.input_ids[:, : L + 2], b.input_ids[:, L + 2 : 2 * L + 2]


class ReversalReward:
    """Reward ``(prompt_ids, response_ids, mask) -> (n,)``: fraction of the answer positions reproduced.

    The target is recomputed from the prompt (the reversed symbols), so the reward needs no labels.
    """

    def __init__(self, task: Any) -> None:
        self.length = reversal_length(task)

    def __call__(self, prompt_ids: Any, response_ids: Any, mask: Any = None) -> Any:
        L = self.length
        target = prompt_ids[:, 1 : 1 + L].flip(1)
        got = response_ids[:, :L]
        if got.shape[1] < L:
            return response_ids.new_zeros(response_ids.shape[0], dtype=float)
        return (got == target).double().mean(1)


def greedy_reward(model: Any, task: Any, prompts: Any) -> float:
    """Mean reward of ``model``'s greedy responses to ``prompts`` (no gradients, the model's own precision)."""
    from geode.llm.grpo import sample_responses

    resp, mask = sample_responses(model, prompts, n=1, max_new_tokens=reversal_length(task) + 1, temperature=0.0)
    return float(ReversalReward(task)(prompts, resp, mask).mean())


def sampled_reward(
    model: Any, task: Any, prompts: Any, *, n: int = 4, temperature: float = 1.0, seed: int = 0
) -> float:
    """Mean reward of ``n`` sampled responses per prompt (the RL objective on held-out prompts).

    The sampling generator is seeded by ``seed``, so every policy is scored on common random numbers.
    """
    import torch

    from geode.llm.grpo import sample_responses

    gen = torch.Generator(device=prompts.device).manual_seed(check_int("seed", seed, low=0))
    resp, mask = sample_responses(
        model, prompts, n=n, max_new_tokens=reversal_length(task) + 1, temperature=temperature, generator=gen
    )
    return float(ReversalReward(task)(prompts.repeat_interleave(n, 0), resp, mask).mean())


def pretrain_to_reward(
    model: Any,
    task: Any,
    *,
    target: float = 0.5,
    max_steps: int = 2000,
    batch_size: int = 64,
    lr: float = 2e-3,
    check_every: int = 20,
    n_check: int = 256,
    seed: int = 0,
) -> tuple[int, float]:
    """Supervised training on whole responses until the greedy reward on a check split reaches ``target``.

    Returns ``(steps, reward)``. The check split is drawn from ``seed + 7919`` (neither the claim's
    validation nor its test split).
    """
    import torch

    from geode.models import train_lm

    check_real("target", target, low=0.0, high=1.0)
    max_steps = check_int("max_steps", max_steps, low=0)
    rng = as_generator(seed)
    cp, _ = split_prompts(task, n_check, seed + 7919)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    reward = greedy_reward(model, task, cp)
    step = 0
    while reward < target and step < max_steps:
        train_lm(model, task, steps=check_every, batch_size=batch_size, seed=rng, optimizer=opt)
        step += check_every
        reward = greedy_reward(model, task, cp)
    return step, reward
