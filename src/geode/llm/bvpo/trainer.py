"""A small DPO trainer whose loss is BVPO's composite (alpha = 1: trace-based DPO; alpha = 0: empty-trace DPO)."""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

from geode.core.validation import check_choice, check_int, check_positive, check_real
from geode.llm.bvpo.loss import bvpo_loss, dpo_loss, sequence_logprobs

__all__ = ["BVPOTrainer", "PreferenceBatch"]


class PreferenceBatch(NamedTuple):
    """Chosen and rejected token sequences (n, L) sharing a prompt of ``start`` tokens; scored from ``start``."""

    chosen: Any
    rejected: Any
    start: int

    def validate(self, name: str) -> None:
        import torch

        if self.chosen.shape != self.rejected.shape or self.chosen.ndim != 2:
            raise ValueError(
                f"{name}: chosen and rejected must have one shape (n, L); got "
                f"{tuple(self.chosen.shape)}, {tuple(self.rejected.shape)}"
            )
        check_int(f"{name}.start", self.start, low=1, high=self.chosen.shape[1] - 1)
        same = (self.chosen[:, self.start :] == self.rejected[:, self.start :]).all(1)
        if bool(same.any()):
            raise ValueError(
                f"{name}: {int(same.sum())} preference pair(s) have identical chosen and rejected answers"
            )
        if not bool(torch.equal(self.chosen[:, : self.start], self.rejected[:, : self.start])):
            raise ValueError(f"{name}: chosen and rejected must share the prompt (the first start tokens)")


class BVPOTrainer:
    r"""DPO with BVPO's composite loss :math:`\alpha\,\ell_t + (1-\alpha)\,\ell_e` on a Hugging Face causal LM.

    Parameters
    ----------
    policy : transformers causal LM
        Trained in place.
    ref_model : transformers causal LM, optional
        Frozen reference; default a frozen copy of ``policy``.
    alpha : float in [0, 1]
        Weight of the trace-based branch.
    beta : float
        DPO temperature (> 0).
    lr : float
        Learning rate.
    optimizer : {"adamw", "sgd"}
        AdamW (default, as TRL) or SGD with momentum 0.9 (kept from the prototype, where it did not spare the
        answers either: the sign-off gradient alone moved the shared weights).
    """

    def __init__(
        self,
        policy: Any,
        ref_model: Any = None,
        *,
        alpha: float,
        beta: float = 0.1,
        lr: float = 1e-4,
        optimizer: str = "adamw",
    ) -> None:
        import torch

        self.policy = policy
        self.ref_model = ref_model if ref_model is not None else copy.deepcopy(policy)
        self.ref_model.eval()
        for p in self.ref_model.parameters():
            p.requires_grad_(False)
        self.alpha = check_real("alpha", alpha, low=0.0, high=1.0)
        self.beta = check_positive("beta", beta)
        params = [p for p in policy.parameters() if p.requires_grad]
        if not params:
            raise ValueError("policy: nothing to train (no parameter requires grad)")
        lr = check_positive("lr", lr)
        optimizer = check_choice("optimizer", optimizer, ("adamw", "sgd"))
        if optimizer == "adamw":
            self.optimizer = torch.optim.AdamW(params, lr=lr)
        else:
            self.optimizer = torch.optim.SGD(params, lr=lr, momentum=0.9)

    def _logps(self, batch: PreferenceBatch | None) -> tuple[Any, ...]:
        import torch

        if batch is None:
            return (None,) * 4
        pc = sequence_logprobs(self.policy, batch.chosen, batch.start)
        pr = sequence_logprobs(self.policy, batch.rejected, batch.start)
        with torch.no_grad():
            rc = sequence_logprobs(self.ref_model, batch.chosen, batch.start)
            rr = sequence_logprobs(self.ref_model, batch.rejected, batch.start)
        return pc, pr, rc, rr

    def loss(self, trace: PreferenceBatch | None, empty: PreferenceBatch | None) -> Any:
        """The composite loss on a trace-branch batch and a (separately sampled) empty-trace batch."""
        if self.alpha > 0:
            if trace is None:
                raise ValueError("trace: a trace-branch batch is needed when alpha > 0")
            trace.validate("trace")
        if self.alpha < 1:
            if empty is None:
                raise ValueError("empty: an empty-trace batch is needed when alpha < 1")
            empty.validate("empty")
        t = self._logps(trace if self.alpha > 0 else None)
        e = self._logps(empty if self.alpha < 1 else None)
        return bvpo_loss(*t, *e, alpha=self.alpha, beta=self.beta)

    def branch_gradient(self, batch: PreferenceBatch) -> Any:
        r"""The flat gradient (float64, shape (p,)) of one branch's DPO loss at the current policy.

        Over the trainable parameters in ``policy.parameters()`` order; the policy's ``.grad`` is left alone.
        With :math:`K` trace-branch batches for the same prompts and answers (fresh traces each) and the
        empty-trace batch, ``mse_optimal_alpha(torch.stack([trainer.branch_gradient(b) for b in traces]),
        trainer.branch_gradient(empty))`` estimates :math:`\alpha^\star`.
        """
        import torch

        batch.validate("batch")
        pc, pr, rc, rr = self._logps(batch)
        loss = dpo_loss(pc, pr, rc, rr, beta=self.beta)
        params = [p for p in self.policy.parameters() if p.requires_grad]
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        return torch.cat(
            [(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, params)]
        ).to(torch.float64)

    def step(self, trace: PreferenceBatch | None, empty: PreferenceBatch | None) -> float:
        """One AdamW step on the composite loss (gradient norm clipped at 1); returns the loss."""
        import torch

        self.policy.train()
        loss = self.loss(trace, empty)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in self.policy.parameters() if p.requires_grad], 1.0)
        self.optimizer.step()
        return float(loss.detach())
