r"""A compact GRPO trainer for Hugging Face causal LMs: group-relative advantages and a k3 KL penalty.

For each prompt :math:`x` the policy samples a group of :math:`G` responses :math:`y_1..y_G` with rewards
:math:`r_i`; the group-relative advantage is

.. math::

    A_i = \frac{r_i - \operatorname{mean}(r_{1:G})}{\operatorname{std}(r_{1:G}) + \epsilon_A},

which sums to zero over each group. With one policy update per generation (on-policy, the ratio
:math:`\rho_t = \pi_\theta / \pi_{\theta_\text{old}} = 1` in value but not in gradient) the per-token
objective is GRPO's clipped surrogate with the k3 KL estimator against the frozen reference
:math:`\pi_\text{ref}`,

.. math::

    \ell_{i,t} = -\min\big(\rho_t A_i, \operatorname{clip}(\rho_t, 1-\varepsilon, 1+\varepsilon) A_i\big)
    + \beta\,\big(e^{\log\pi_\text{ref} - \log\pi_\theta} - (\log\pi_\text{ref} - \log\pi_\theta) - 1\big),

averaged over each response's tokens, then over responses (the ``"grpo"`` normalisation of TRL).

A field-level baseline of the llm papers (moved here from ``geode.llm.sr_grpo``, which re-exports every
name unchanged, when CPA's low-precision GRPO loop needed the same sampling, log-probabilities, advantages
and surrogate). :func:`grpo_loss` takes optional per-token importance weights ``is_weights`` (the
rollout-correction weights of truncated importance sampling); without them it is unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from geode.core.validation import check_int, check_positive, check_real, check_tensor

__all__ = [
    "CompactGRPO",
    "group_advantages",
    "grpo_loss",
    "k3_kl",
    "response_logprobs",
    "rollout_group",
    "sample_responses",
]


def group_advantages(rewards: Any, group_size: int, *, eps: float = 1e-4, scale: bool = True) -> Any:
    r"""Group-relative advantages :math:`(r_i - \bar r_g) / (s_g + \epsilon)` of consecutive groups.

    Parameters
    ----------
    rewards : torch.Tensor, shape (m * G,)
        Rewards of ``m`` groups of ``G`` consecutive responses (the responses to one prompt); any shape holding
        ``m * G`` values is flattened.
    group_size : int
        ``G`` (>= 2: a group of one response has no relative advantage).
    eps : float
        Added to the group's standard deviation (unbiased, as TRL) before dividing.
    scale : bool
        Divide by the group's standard deviation (False: centre only, Dr. GRPO).
    """
    import torch

    group_size = check_int("group_size", group_size, low=1)
    if group_size < 2:
        raise ValueError("group_size must be >= 2: a group of one response has no group-relative advantage")
    try:
        r = torch.as_tensor(rewards, dtype=torch.float64).reshape(-1)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"rewards must be a tensor or array of numbers; got {type(rewards).__name__}") from None
    if r.numel() == 0 or r.numel() % group_size:
        raise ValueError(f"rewards must hold a non-zero multiple of group_size={group_size} values; got {r.numel()}")
    if not bool(r.isfinite().all()):
        raise ValueError("rewards must be finite")
    g = r.reshape(-1, group_size)
    a = g - g.mean(1, keepdim=True)
    if scale:
        a = a / (g.std(1, keepdim=True) + check_positive("eps", eps))
    return a.reshape(-1)


def k3_kl(logp: Any, ref_logp: Any) -> Any:
    r"""The k3 KL estimator :math:`e^{\Delta} - \Delta - 1 \ge 0`, :math:`\Delta = \log\pi_\text{ref} - \log\pi`.

    ``logp`` and ``ref_logp`` are floating tensors of one shape. Run at every training step: shapes are checked,
    values are not (a NaN propagates like torch's own ops); empty inputs give an empty output.
    """
    check_tensor("logp", logp, finite=False, nonempty=False, floating=True)
    check_tensor("ref_logp", ref_logp, shape=tuple(logp.shape), finite=False, nonempty=False, floating=True)
    d = ref_logp - logp
    return d.exp() - d - 1


def response_logprobs(model: Any, prompt_ids: Any, response_ids: Any) -> Any:
    """Log-probability of each response token under ``model``: shape (n, T) (differentiable)."""
    import torch

    ids = torch.cat([prompt_ids, response_ids], 1)
    logits = model(input_ids=ids).logits[:, prompt_ids.shape[1] - 1 : -1].float()
    return torch.log_softmax(logits, -1).gather(-1, response_ids[..., None])[..., 0]


def sample_responses(
    model: Any,
    prompt_ids: Any,
    *,
    n: int = 1,
    max_new_tokens: int,
    temperature: float = 1.0,
    eos_token_id: int | None = None,
    generator: Any = None,
) -> tuple[Any, Any]:
    """Sample ``n`` responses per prompt (temperature 0: greedy), without gradients.

    Prompts share one length (no padding). Returns ``response_ids`` (m * n, T) with responses of prompt
    ``i`` at rows ``i * n .. i * n + n - 1``, and ``mask`` (m * n, T): True up to and including the first EOS.
    """
    import torch

    n = check_int("n", n, low=1)
    max_new_tokens = check_int("max_new_tokens", max_new_tokens, low=1)
    temperature = check_real("temperature", temperature, low=0.0)
    if prompt_ids.ndim != 2 or prompt_ids.shape[1] == 0:
        raise ValueError(f"prompt_ids must have shape (m, P) with P >= 1; got {tuple(prompt_ids.shape)}")
    was = model.training
    model.eval()
    x = prompt_ids.repeat_interleave(n, 0)
    p = x.shape[1]
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(input_ids=x).logits[:, -1].float()
            if temperature == 0:
                nxt = logits.argmax(-1, keepdim=True)
            else:
                nxt = torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=generator)
            x = torch.cat([x, nxt], 1)
    model.train(was)
    resp = x[:, p:]
    if eos_token_id is None:
        mask = torch.ones_like(resp, dtype=torch.bool)
    else:
        seen = (resp == eos_token_id).long().cumsum(1)
        mask = (seen == 0) | ((seen == 1) & (resp == eos_token_id))
    return resp, mask


def rollout_group(
    model: Any,
    prompt_ids: Any,
    reward_fn: Callable[[Any, Any, Any], Any],
    *,
    group_size: int,
    max_new_tokens: int,
    temperature: float = 1.0,
    eos_token_id: int | None = None,
    generator: Any = None,
) -> tuple[Any, Any, Any, Any, Any]:
    """One GRPO rollout: ``group_size`` sampled responses per prompt, their rewards and group advantages.

    Returns ``(prompts, responses, mask, rewards, advantages)`` with ``prompts`` repeated to one row per
    response (the layout of :func:`sample_responses`); ``reward_fn(prompts, responses, mask)`` must give one
    reward per response.
    """
    import torch

    resp, mask = sample_responses(
        model,
        prompt_ids,
        n=group_size,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        eos_token_id=eos_token_id,
        generator=generator,
    )
    prompts = prompt_ids.repeat_interleave(group_size, 0)
    rewards = torch.as_tensor(reward_fn(prompts, resp, mask), dtype=torch.float64).reshape(-1)
    if rewards.numel() != resp.shape[0]:
        raise ValueError(f"reward_fn must return one reward per response ({resp.shape[0]}); got {rewards.numel()}")
    return prompts, resp, mask, rewards, group_advantages(rewards, group_size)


def grpo_loss(
    logp: Any,
    ref_logp: Any,
    advantages: Any,
    mask: Any,
    *,
    beta: float = 0.04,
    clip_eps: float = 0.2,
    old_logp: Any = None,
    is_weights: Any = None,
) -> Any:
    """GRPO's clipped surrogate plus ``beta`` x k3 KL, per token, averaged per response then over responses.

    ``logp``, ``ref_logp``, ``old_logp`` (default ``logp`` detached, on-policy) and ``mask``: shape (n, T);
    ``advantages``: shape (n,). ``is_weights`` (n, T), optional: constant per-token weights multiplying the
    surrogate (truncated importance sampling: min(pi_old / pi_rollout, C)); the
    KL term is not weighted.

    Run at every training step: types and shapes are checked, values are not (a NaN in any input propagates to the
    loss like torch's own losses).
    """
    beta = check_real("beta", beta, low=0.0)
    clip_eps = check_real("clip_eps", clip_eps, low=0.0)
    check_tensor("logp", logp, ndim=2, finite=False, floating=True)
    shape = tuple(logp.shape)
    check_tensor("ref_logp", ref_logp, shape=shape, finite=False, floating=True)
    check_tensor("mask", mask, shape=shape, finite=False)
    check_tensor("advantages", advantages, shape=shape[:1], finite=False)
    if old_logp is not None:
        check_tensor("old_logp", old_logp, shape=shape, finite=False, floating=True)
    old = logp.detach() if old_logp is None else old_logp
    ratio = (logp - old).exp()
    a = advantages.to(logp.dtype)[:, None]
    surr = -torch_min(ratio * a, ratio.clamp(1 - clip_eps, 1 + clip_eps) * a)
    if is_weights is not None:
        if tuple(is_weights.shape) != tuple(logp.shape):
            raise ValueError(
                f"is_weights must have the shape of logp {tuple(logp.shape)}; got {tuple(is_weights.shape)}"
            )
        surr = surr * is_weights.detach().to(logp.dtype)
    per_tok = surr + beta * k3_kl(logp, ref_logp.detach())
    m = mask.to(logp.dtype)
    return ((per_tok * m).sum(1) / m.sum(1).clamp_min(1)).mean()


def torch_min(a: Any, b: Any) -> Any:
    import torch

    return torch.minimum(a, b)


@dataclass
class GRPOStats:
    """What one :meth:`CompactGRPO.step` measured."""

    loss: float
    reward_mean: float
    reward_std_within: float
    kl: float


class CompactGRPO:
    r"""GRPO on a Hugging Face causal LM with any reward function (e.g. the stable rank of a frozen evaluator).

    Parameters
    ----------
    policy : transformers causal LM
        Trained in place.
    reward_fn : callable
        ``reward_fn(prompt_ids, response_ids, mask) -> torch.Tensor (n,)`` for the sampled responses.
    ref_model : transformers causal LM, optional
        Frozen reference of the KL term; default a frozen copy of ``policy`` at construction.
    group_size : int
        Responses per prompt ``G`` (>= 2).
    lr, beta, clip_eps : float
        AdamW learning rate, KL weight :math:`\beta`, clipping :math:`\varepsilon`.
    max_new_tokens : int
    temperature : float
        Sampling temperature of the rollouts (> 0).
    eos_token_id : int, optional
    seed : int
        Seeds the sampling.
    """

    def __init__(
        self,
        policy: Any,
        reward_fn: Callable[[Any, Any, Any], Any],
        *,
        ref_model: Any = None,
        group_size: int = 8,
        lr: float = 1e-4,
        beta: float = 0.04,
        clip_eps: float = 0.2,
        max_new_tokens: int = 16,
        temperature: float = 1.0,
        eos_token_id: int | None = None,
        seed: int = 0,
    ) -> None:
        import torch

        if not callable(reward_fn):
            raise TypeError("reward_fn must be callable: reward_fn(prompt_ids, response_ids, mask) -> rewards")
        self.group_size = check_int("group_size", group_size, low=1)
        if self.group_size < 2:
            raise ValueError("group_size must be >= 2: a group of one response has no group-relative advantage")
        self.policy = policy
        self.reward_fn = reward_fn
        self.ref_model = ref_model if ref_model is not None else copy.deepcopy(policy)
        self.ref_model.eval()
        for p in self.ref_model.parameters():
            p.requires_grad_(False)
        self.beta = check_real("beta", beta, low=0.0)
        self.clip_eps = check_real("clip_eps", clip_eps, low=0.0)
        self.max_new_tokens = check_int("max_new_tokens", max_new_tokens, low=1)
        self.temperature = check_positive("temperature", temperature)
        self.eos_token_id = eos_token_id
        self.optimizer = torch.optim.AdamW(
            [p for p in policy.parameters() if p.requires_grad], lr=check_positive("lr", lr)
        )
        self.generator = torch.Generator().manual_seed(check_int("seed", seed, low=0))

    def step(self, prompt_ids: Any) -> GRPOStats:
        """Sample a group per prompt, score it, and take one policy-gradient step."""
        import torch

        prompts, resp, mask, rewards, adv = rollout_group(
            self.policy,
            prompt_ids,
            self.reward_fn,
            group_size=self.group_size,
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            eos_token_id=self.eos_token_id,
            generator=self.generator,
        )
        with torch.no_grad():
            ref_logp = response_logprobs(self.ref_model, prompts, resp)
        self.policy.train()
        logp = response_logprobs(self.policy, prompts, resp)
        loss = grpo_loss(logp, ref_logp, adv, mask, beta=self.beta, clip_eps=self.clip_eps)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in self.policy.parameters() if p.requires_grad], 1.0)
        self.optimizer.step()
        m = mask.to(logp.dtype)
        kl = float(((k3_kl(logp.detach(), ref_logp) * m).sum(1) / m.sum(1)).mean())
        within = float(rewards.reshape(-1, self.group_size).std(1).mean())
        return GRPOStats(float(loss.detach()), float(rewards.mean()), within, kl)

    def train(self, prompt_sampler: Callable[[int], Any], steps: int) -> list[GRPOStats]:
        """``steps`` GRPO steps on ``prompt_sampler(step) -> prompt_ids``."""
        steps = check_int("steps", steps, low=0)
        return [self.step(prompt_sampler(s)) for s in range(steps)]
