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

from geode.core.validation import check_int, check_positive, check_tensor

__all__ = ["dpo_loss", "sequence_logprobs"]


def _check_same(names: tuple[str, ...], tensors: tuple[Any, ...]) -> None:
    for n, t in zip(names, tensors):
        check_tensor(n, t, ndim=1, floating=True)  # (n,) log-probabilities: scanning them costs nothing
    shape = tuple(tensors[0].shape)
    for n, t in zip(names, tensors):
        if tuple(t.shape) != shape:
            raise ValueError(f"{n} must have the shape of {names[0]} {shape}; got {tuple(t.shape)}")


def dpo_loss(
    policy_chosen: Any, policy_rejected: Any, ref_chosen: Any, ref_rejected: Any, *, beta: float = 0.1
) -> Any:
    r"""Mean DPO (sigmoid) loss :math:`-\log\sigma(\beta[(\pi^+ - \pi^+_\text{ref}) - (\pi^- - \pi^-_\text{ref})])`.

    All arguments are finite sequence log-probabilities of shape (n,), n >= 1; ``beta`` > 0. A NaN or inf raises
    a ``ValueError`` naming the argument (rather than a NaN loss).
    """
    args = (policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    return dpo_loss_named(args, ("policy_chosen", "policy_rejected", "ref_chosen", "ref_rejected"), beta=beta)


def dpo_loss_named(args: tuple[Any, Any, Any, Any], names: tuple[str, str, str, str], *, beta: float) -> Any:
    """:func:`dpo_loss` whose error messages name the caller's arguments ``names``."""
    import torch

    beta = check_positive("beta", beta)
    _check_same(names, args)
    policy_chosen, policy_rejected, ref_chosen, ref_rejected = args
    if policy_chosen.numel() == 0:
        raise ValueError(f"{names[0]}: no preference pair")
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
