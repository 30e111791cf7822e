r"""GRPO with low-precision rollouts and a full-precision master policy, with TIS and CPA as options.

One step of :class:`LowPrecisionGRPO`:

1. *weight sync*: the rollout engine (a copy of the policy in ``rollout_dtype``, bfloat16 by default)
   loads the master weights; with ``rollout="fp4"`` its linear layers then store real FP4 weights and
   quantise their activations (W4A4) in that dtype;
2. *rollout*: the engine samples ``group_size`` responses per prompt and records their log-probabilities
   :math:`\log\pi_\text{rollout}`;
3. *trainer forward*: the master policy (fake-quantised with an STE when ``qat``) gives
   :math:`\log\pi_\text{train}` of the sampled tokens; the train-rollout mismatch is
   :math:`|\log\pi_\text{train} - \log\pi_\text{rollout}|` per token;
4. *loss*: GRPO's clipped surrogate (:func:`geode.llm.grpo.grpo_loss`, one update per rollout, so the
   ratio is 1 in value), with truncated importance weights :math:`\min(\pi_\text{train}/\pi_\text{rollout}, C)`
   when ``correction="tis"``, plus :math:`\lambda\,\mathcal{L}_\text{CPA}` when ``cpa_coef > 0`` (the teacher is
   the master policy with fake quantisation off, eval mode, no gradient);
5. AdamW step on the master weights (gradient norm clipped at 1).

The *stack mismatch* of the paper (an inference engine and a trainer that compute the same network with
different kernels) is what the bfloat16 engine emulates against the float32 trainer: the two forwards
differ by bfloat16 rounding of weights, activations and accumulations, which FP4 rounding then amplifies
where a value sits near one of its rounding boundaries. ``rollout="full"`` is the full-precision RL
baseline: a bfloat16 engine without FP4 and a float32 trainer.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from geode.core.validation import check_choice, check_int, check_positive, check_real
from geode.llm.cpa.loss import cpa_logprob_gap, cpa_loss, truncated_is_weights
from geode.llm.cpa.quant import fake_quant_disabled, fp4_layers, quantize_model
from geode.llm.grpo import grpo_loss, response_logprobs, rollout_group

__all__ = ["LowPrecisionGRPO", "LowPrecisionStats"]


@dataclass
class LowPrecisionStats:
    """What one :meth:`LowPrecisionGRPO.step` measured (``finite`` False: the step was not taken).

    A plain record: it stores what it is given without checking (a NaN loss is what a diverged step reports).
    """

    loss: float
    reward_mean: float
    mismatch_mean: float  # mean |log pi_train - log pi_rollout| over response tokens
    mismatch_max: float
    is_weight_var: float  # variance of pi_train / pi_rollout over response tokens
    cpa_gap: float  # mean |log pi_fq - log pi_bf16| (nan when not measured)
    cpa_loss: float
    finite: bool


class LowPrecisionGRPO:
    r"""GRPO on a Hugging Face causal LM with FP4 (or bfloat16) rollouts and a float32 master policy.

    Parameters
    ----------
    policy : transformers causal LM (float32)
        Trained in place. With ``qat`` its linear layers (but ``skip``) are swapped for
        :class:`~geode.llm.cpa.quant.FP4Linear` (same parameters); evaluate the full-precision checkpoint
        inside :func:`~geode.llm.cpa.quant.fake_quant_disabled`.
    reward_fn : callable
        ``reward_fn(prompt_ids, response_ids, mask) -> torch.Tensor (n,)``.
    rollout : {"fp4", "full"}
        The rollout engine's precision: FP4 (``fmt``, W4A4 or W4A16) in ``rollout_dtype``, or plain
        ``rollout_dtype`` (the full-precision baseline).
    qat : bool
        Train the fake-quantised forward (quantisation-aware training); needs ``rollout="fp4"``.
    correction : {"none", "tis"}
        Rollout correction of the policy gradient: none (the rollout is treated as on-policy) or truncated
        importance sampling with cap ``tis_cap``.
    cpa_coef : float
        :math:`\lambda` of the CPA term (0: off; the authors' default is 1e-3); needs ``qat``.
    cpa_loss_type : {"low_var_kl", "mse", "abs_logprob"}
    fmt : {"nvfp4", "mxfp4"}
    activations : bool
        W4A4 (True, the authors' setting) or weight-only W4A16.
    skip : tuple of str
        Layers left in full precision (default the LM head).
    rollout_dtype : torch.dtype
        The engine's compute dtype (bfloat16: the "stack mismatch" against the float32 trainer).
    group_size, lr, clip_eps, max_new_tokens, temperature, eos_token_id, seed
        As :class:`geode.llm.grpo.CompactGRPO`; there is no reference-KL term (``beta = 0``, as DAPO and
        current TRL defaults).
    track_gap : bool
        Measure the FQ-vs-full-precision gap on the sampled tokens every step even without CPA (costs one
        extra forward).
    """

    def __init__(
        self,
        policy: Any,
        reward_fn: Callable[[Any, Any, Any], Any],
        *,
        rollout: str = "fp4",
        qat: bool = True,
        correction: str = "none",
        tis_cap: float = 2.0,
        cpa_coef: float = 0.0,
        cpa_loss_type: str = "low_var_kl",
        fmt: str = "nvfp4",
        activations: bool = True,
        skip: tuple[str, ...] = ("lm_head",),
        rollout_dtype: Any = torch.bfloat16,
        group_size: int = 8,
        lr: float = 1e-4,
        clip_eps: float = 0.2,
        max_new_tokens: int = 16,
        temperature: float = 1.0,
        eos_token_id: int | None = None,
        seed: int = 0,
        track_gap: bool = False,
    ) -> None:
        if not callable(reward_fn):
            raise TypeError("reward_fn must be callable: reward_fn(prompt_ids, response_ids, mask) -> rewards")
        self.rollout = check_choice("rollout", rollout, ("fp4", "full"))
        self.correction = check_choice("correction", correction, ("none", "tis"))
        self.qat = bool(qat)
        if self.qat and self.rollout != "fp4":
            raise ValueError("qat=True needs rollout='fp4' (the full-precision baseline has nothing to fake-quantise)")
        self.cpa_coef = check_real("cpa_coef", cpa_coef, low=0.0)
        if self.cpa_coef > 0 and not self.qat:
            raise ValueError("cpa_coef > 0 needs qat=True: CPA aligns the fake-quantised forward with the full one")
        self.cpa_loss_type = cpa_loss_type
        self.tis_cap = check_positive("tis_cap", tis_cap)
        self.group_size = check_int("group_size", group_size, low=2)
        self.clip_eps = check_real("clip_eps", clip_eps, low=0.0)
        self.max_new_tokens = check_int("max_new_tokens", max_new_tokens, low=1)
        self.temperature = check_positive("temperature", temperature)
        self.eos_token_id = eos_token_id
        self.track_gap = bool(track_gap)
        self.policy = policy
        self.reward_fn = reward_fn
        qkw = dict(fmt=fmt, activations=activations, skip=skip)
        if self.qat and not fp4_layers(policy):
            quantize_model(policy, **qkw)
        self.engine = copy.deepcopy(policy)
        if self.rollout == "fp4" and not fp4_layers(self.engine):
            quantize_model(self.engine, **qkw)
        if self.rollout == "full":
            for m in fp4_layers(self.engine):
                m.enabled = False
        self.engine.to(rollout_dtype).eval()
        for p in self.engine.parameters():
            p.requires_grad_(False)
        self.params = [p for p in policy.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.params, lr=check_positive("lr", lr))
        device = next(policy.parameters()).device
        self.generator = torch.Generator(device=device).manual_seed(check_int("seed", seed, low=0))
        self.collapsed = False

    def sync(self) -> None:
        """Load the master weights into the rollout engine (real FP4 weights when ``rollout="fp4"``)."""
        with torch.no_grad():
            self.engine.load_state_dict(self.policy.state_dict())
        for m in fp4_layers(self.engine):
            m.weight_prequantized = False
            if m.enabled:
                m.store_quantized()

    def step(self, prompt_ids: Any) -> LowPrecisionStats:
        """Weight sync, rollout, trainer forward, and one policy-gradient step (skipped if non-finite)."""
        self.sync()
        prompts, resp, mask, rewards, adv = rollout_group(
            self.engine,
            prompt_ids,
            self.reward_fn,
            group_size=self.group_size,
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            eos_token_id=self.eos_token_id,
            generator=self.generator,
        )
        with torch.no_grad():
            roll_logp = response_logprobs(self.engine, prompts, resp)
        self.policy.train()
        nan = float("nan")
        try:
            logp = response_logprobs(self.policy, prompts, resp)
        except ValueError:  # a non-finite activation reached the FP4 quantiser
            return self._collapse(float(rewards.mean()))
        m = mask.to(logp.dtype)
        ntok = float(m.sum().clamp_min(1))
        weights = truncated_is_weights(logp, roll_logp, self.tis_cap) if self.correction == "tis" else None
        loss = grpo_loss(logp, logp.detach(), adv, mask, beta=0.0, clip_eps=self.clip_eps, is_weights=weights)
        gap, c_loss = nan, 0.0
        if self.cpa_coef > 0 or (self.track_gap and self.qat):
            with torch.no_grad(), fake_quant_disabled(self.policy, require_enabled=True):
                teacher = response_logprobs(self.policy, prompts, resp)
            gap = cpa_logprob_gap(logp, teacher, mask)
            if self.cpa_coef > 0:
                c = cpa_loss(logp, teacher, mask, loss_type=self.cpa_loss_type)
                c_loss = float(c.detach())
                loss = loss + self.cpa_coef * c
        d = (logp.detach() - roll_logp).double()
        md = mask.to(torch.float64)
        mism = float((d.abs() * md).sum() / ntok)
        mism_max = float((d.abs() * md).max())
        ratio = d.clamp(max=60).exp()
        mu = float((ratio * md).sum() / ntok)
        var = float((((ratio - mu) ** 2) * md).sum() / ntok)
        if not math.isfinite(float(loss.detach())):
            return self._collapse(float(rewards.mean()))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(self.params, 1.0)
        if not math.isfinite(float(gnorm)):
            self.optimizer.zero_grad(set_to_none=True)
            return self._collapse(float(rewards.mean()))
        self.optimizer.step()
        return LowPrecisionStats(float(loss.detach()), float(rewards.mean()), mism, mism_max, var, gap, c_loss, True)

    def _collapse(self, reward: float) -> LowPrecisionStats:
        self.collapsed = True
        nan = float("nan")
        return LowPrecisionStats(nan, reward, nan, nan, nan, nan, nan, False)

    def full_precision(self) -> Any:
        """Context manager: the master policy with fake quantisation off, in eval mode (the exported checkpoint)."""
        return fake_quant_disabled(self.policy)

    def train(self, prompt_sampler: Callable[[int], Any], steps: int) -> list[LowPrecisionStats]:
        """``steps`` steps on ``prompt_sampler(step) -> prompt_ids``; stops at the first collapsed step."""
        steps = check_int("steps", steps, low=0)
        out = []
        for s in range(steps):
            out.append(self.step(prompt_sampler(s)))
            if not out[-1].finite:
                break
        return out
