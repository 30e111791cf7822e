r"""Preference-optimisation building blocks shared by the field's papers: DPO's loss and sequence log-probabilities.

DPO (Rafailov et al., 2023) on a preference pair :math:`(x, y^+, y^-)` with sequence log-probabilities under the
policy :math:`\pi` and a frozen reference :math:`\pi_\text{ref}`:

.. math::

    \ell = -\log\sigma\Big(\beta\big[(\log\pi(y^+|x) - \log\pi_\text{ref}(y^+|x))
            - (\log\pi(y^-|x) - \log\pi_\text{ref}(y^-|x))\big]\Big)

(TRL's ``DPOTrainer`` with ``loss_type="sigmoid"``).
"""

from __future__ import annotations

from typing import Any

from geode.core.validation import check_int, check_positive

__all__ = ["dpo_loss", "sequence_logprobs"]


def _check_same(names: tuple[str, ...], tensors: tuple[Any, ...]) -> None:
    shape = tuple(tensors[0].shape)
    for n, t in zip(names, tensors):
        if tuple(t.shape) != shape:
            raise ValueError(f"{n} must have the shape of {names[0]} {shape}; got {tuple(t.shape)}")


def dpo_loss(
    policy_chosen: Any, policy_rejected: Any, ref_chosen: Any, ref_rejected: Any, *, beta: float = 0.1
) -> Any:
    r"""Mean DPO (sigmoid) loss :math:`-\log\sigma(\beta[(\pi^+ - \pi^+_\text{ref}) - (\pi^- - \pi^-_\text{ref})])`.

    All arguments are sequence log-probabilities of shape (n,); ``beta`` > 0.
    """
    import torch

    beta = check_positive("beta", beta)
    args = (policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    _check_same(("policy_chosen", "policy_rejected", "ref_chosen", "ref_rejected"), args)
    if policy_chosen.numel() == 0:
        raise ValueError("policy_chosen: no preference pair")
    margin = (policy_chosen - ref_chosen) - (policy_rejected - ref_rejected)
    return -torch.nn.functional.logsigmoid(beta * margin).mean()


def sequence_logprobs(model: Any, input_ids: Any, start: int, attention_mask: Any = None) -> Any:
    """Sum of the log-probabilities of ``input_ids[:, start:]`` given what precedes them: shape (n,).

    ``start`` >= 1 is the first scored position (the trace and the answer follow the prompt).
    """
    import torch

    start = check_int("start", start, low=1)
    if input_ids.ndim != 2 or input_ids.shape[1] <= start:
        raise ValueError(f"input_ids must have shape (n, L) with L > start={start}; got {tuple(input_ids.shape)}")
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, start - 1 : -1].float()
    lp = torch.log_softmax(logits, -1).gather(-1, input_ids[:, start:, None])[..., 0]
    if attention_mask is not None:
        lp = lp * attention_mask[:, start:].to(lp.dtype)
    return lp.sum(1)
