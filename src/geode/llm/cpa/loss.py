r"""The CPA regulariser on sampled tokens and the truncated-importance-sampling rollout correction.

**CPA.** On the tokens :math:`y_t` the low-precision rollout sampled, the trainer's fake-quantised forward
gives :math:`\log\pi_\text{fq}(y_t)` (the student, differentiable) and the same weights with fake
quantisation off give :math:`\log\pi_\text{bf16}(y_t)` (the teacher, no gradient). With
:math:`\Delta_t = \operatorname{clip}(\log\pi_\text{bf16} - \log\pi_\text{fq}, -20, 20)` the per-token
objective is the k3 ("low-variance") KL estimator, clipped at 10,

.. math::

    k_3(\Delta_t) = \min\big(e^{\Delta_t} - \Delta_t - 1,\; 10\big) \;\ge 0, \qquad
    \mathcal{L}_\text{CPA} = \frac{1}{N} \sum_{i,t} m_{i,t}\, k_3(\Delta_{i,t}),

with :math:`m` the response mask and :math:`N` the number of response tokens in the batch (the global
token normalisation of verl). The training loss is :math:`\mathcal{L}_\text{RL} + \lambda\,\mathcal{L}_\text{CPA}`
with :math:`\lambda = 10^{-3}` in the authors' code. :math:`k_3 \ge 0` with equality iff
:math:`\Delta = 0`, and :math:`\partial k_3 / \partial \log\pi_\text{fq} = 1 - e^{\Delta}`. The ``mse``
(:math:`(\log\pi_\text{fq} - \log\pi_\text{bf16})^2`) and ``abs_logprob`` alternatives of the authors' code
are available too.

**Truncated importance sampling (TIS).** The rollout engine's tokens come from
:math:`\pi_\text{rollout} \ne \pi_\text{train}`; TIS multiplies each token's policy-gradient term by the
constant :math:`w_t = \min(\pi_\text{train}(y_t) / \pi_\text{rollout}(y_t),\, C)` (Yao et al. 2025, the
FP8-RL and TRL ``vllm_importance_sampling_correction`` recipe).
"""

from __future__ import annotations

from typing import Any

import torch

from geode.core.validation import check_positive

__all__ = ["CPA_LOSS_TYPES", "cpa_logprob_gap", "cpa_loss", "cpa_token_objective", "truncated_is_weights"]

CPA_LOSS_TYPES = ("low_var_kl", "mse", "abs_logprob")
"""The per-token alignment objectives (``low_var_kl`` is the paper's)."""


def _check_loss_type(loss_type: str) -> str:
    if loss_type not in CPA_LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {list(CPA_LOSS_TYPES)}; got {loss_type!r}")
    return loss_type


def _check_pair(student: Any, teacher: Any, names: tuple[str, str] = ("student_logp", "teacher_logp")) -> None:
    """Types and shapes only: these run at every training step, so values are not scanned (NaN propagates)."""
    for name, t in zip(names, (student, teacher)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point torch.Tensor; got {type(t).__name__}")
    if student.shape != teacher.shape:
        raise ValueError(
            f"{names[0]} and {names[1]} must have the same shape; got {tuple(student.shape)} and "
            f"{tuple(teacher.shape)}"
        )


def _check_mask(mask: Any, shape: tuple[int, ...]) -> None:
    if not isinstance(mask, torch.Tensor) or tuple(mask.shape) != shape:
        raise ValueError(f"mask must be a tensor of shape {shape}; got {getattr(mask, 'shape', type(mask).__name__)}")


def cpa_token_objective(
    student_logp: torch.Tensor, teacher_logp: torch.Tensor, *, loss_type: str = "low_var_kl"
) -> torch.Tensor:
    """Per-token CPA objective between the fake-quantised (student) and full-precision (teacher) log-probs.

    ``low_var_kl``: :math:`\\min(e^\\Delta - \\Delta - 1, 10)`, :math:`\\Delta = \\operatorname{clip}(t - s,
    \\pm 20)`; ``mse``: :math:`(s - t)^2`; ``abs_logprob``: :math:`|s - t|`. Same shape as the inputs.

    Run at every training step: types and shapes are checked, values are not. A NaN propagates like torch's own
    ops; an infinite log-prob gap is clipped to :math:`\\pm 20` by ``low_var_kl`` (a finite, capped objective).
    """
    _check_pair(student_logp, teacher_logp)
    _check_loss_type(loss_type)
    if loss_type == "abs_logprob":
        return (student_logp - teacher_logp).abs()
    if loss_type == "mse":
        return (student_logp - teacher_logp).square()
    delta = (teacher_logp - student_logp).clamp(-20.0, 20.0)
    return (delta.exp() - delta - 1.0).clamp(-10.0, 10.0)


def cpa_loss(
    student_logp: torch.Tensor,
    teacher_logp: torch.Tensor,
    mask: torch.Tensor,
    *,
    num_tokens: float | None = None,
    loss_type: str = "low_var_kl",
) -> torch.Tensor:
    """CPA loss: the masked per-token objective summed and divided by the batch's response-token count.

    Parameters
    ----------
    student_logp : torch.Tensor, shape (n, T)
        Log-probabilities of the sampled tokens under the fake-quantised forward (gradients flow here).
    teacher_logp : torch.Tensor, shape (n, T)
        Under the same weights with fake quantisation off; detached (the teacher is a fixed target).
    mask : torch.Tensor, shape (n, T)
        True (or 1) on response tokens.
    num_tokens : float, optional
        The normaliser :math:`N`; default ``mask.sum()`` (clamped at 1, so an empty mask gives 0).
    loss_type : {"low_var_kl", "mse", "abs_logprob"}

    Values are not scanned (it runs at every step): see :func:`cpa_token_objective` for NaN and inf.
    """
    _check_pair(student_logp, teacher_logp)
    _check_mask(mask, tuple(student_logp.shape))
    m = mask.to(student_logp.dtype)
    obj = cpa_token_objective(student_logp, teacher_logp.detach(), loss_type=loss_type)
    denom = float(m.sum().clamp_min(1.0)) if num_tokens is None else check_positive("num_tokens", num_tokens)
    return (obj * m).sum() / denom


def cpa_logprob_gap(student_logp: torch.Tensor, teacher_logp: torch.Tensor, mask: torch.Tensor) -> float:
    """Mean absolute log-prob gap ``|logp_fq - logp_bf16|`` over the masked tokens (0 if the mask is empty).

    A per-step diagnostic: shapes are checked, values are not (a NaN or inf gives a NaN or inf gap).
    """
    _check_pair(student_logp, teacher_logp)
    _check_mask(mask, tuple(student_logp.shape))
    m = mask.to(torch.float64)
    if float(m.sum()) == 0:
        return 0.0
    return float(((student_logp.detach() - teacher_logp.detach()).abs().double() * m).sum() / m.sum())


def truncated_is_weights(train_logp: torch.Tensor, rollout_logp: torch.Tensor, cap: float = 2.0) -> torch.Tensor:
    """TIS weights :math:`\\min(e^{\\log\\pi_\\text{train} - \\log\\pi_\\text{rollout}}, C)`, detached, per token.

    Run at every step: types and shapes are checked, values are not (a NaN propagates; an infinite gap gives the
    cap ``C`` or 0, the limits of the formula).
    """
    _check_pair(train_logp, rollout_logp, ("train_logp", "rollout_logp"))
    cap = check_positive("cap", cap)
    return (train_logp.detach() - rollout_logp.detach()).clamp(max=60.0).exp().clamp(max=cap)
