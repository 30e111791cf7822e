"""Base training on the capability mixture and the two post-training algorithms compared (SFT, DPO)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_int, check_positive
from geode.llm.captrack.suite import CapabilitySuite
from geode.llm.preference import dpo_loss, sequence_logprobs

__all__ = ["dpo_posttrain", "pretrain_mixture", "sft_posttrain"]


def _adamw_step(model: Any, opt: Any, loss: Any) -> float:
    import torch

    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return float(loss.detach())


def pretrain_mixture(
    model: Any, suite: CapabilitySuite, *, steps: int, batch_size: int = 64, lr: float = 3e-3, seed: int = 0
) -> list[float]:
    """Train ``model`` (in place) on the capability mixture; returns the losses."""
    import torch

    rng = as_generator(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=check_positive("lr", lr))
    model.train()
    losses = []
    for _ in range(check_int("steps", steps, low=0)):
        ids, labels = suite.mixture_batch(batch_size, rng)
        losses.append(_adamw_step(model, opt, model(input_ids=ids, labels=labels).loss))
    return losses


def sft_posttrain(
    base: Any,
    suite: CapabilitySuite,
    *,
    steps: int,
    lr: float,
    batch_size: int = 32,
    seed: int = 0,
    data: str = "domain",
) -> tuple[Any, list[float]]:
    """Supervised fine-tuning of a copy of ``base`` on the domain's chosen answers (``data="domain"``).

    ``data="replay"`` continues training on the base's own mixture instead (the null post-training of the
    claim's control).
    """
    import torch

    if data not in ("domain", "replay"):
        raise ValueError(f"data must be 'domain' or 'replay'; got {data!r}")
    model = copy.deepcopy(base)
    for p in model.parameters():
        p.requires_grad_(True)
    rng = as_generator(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=check_positive("lr", lr))
    model.train()
    losses = []
    for _ in range(check_int("steps", steps, low=0)):
        if data == "domain":
            ids, labels = suite.sft_batch(suite.domain_pairs(batch_size, rng)[0])
        else:
            ids, labels = suite.mixture_batch(batch_size, rng)
        losses.append(_adamw_step(model, opt, model(input_ids=ids, labels=labels).loss))
    model.eval()
    return model, losses


def dpo_posttrain(
    base: Any,
    suite: CapabilitySuite,
    *,
    steps: int,
    lr: float,
    beta: float = 0.1,
    batch_size: int = 32,
    seed: int = 0,
    reference: Any = None,
) -> tuple[Any, list[float]]:
    """DPO of a copy of ``base`` on domain pairs (correct vs wrong terse answer); reference: frozen ``base``."""
    import torch

    ref = reference if reference is not None else base
    model = copy.deepcopy(base)
    for p in model.parameters():
        p.requires_grad_(True)
    rng = as_generator(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=check_positive("lr", lr))
    model.train()
    losses = []
    for _ in range(check_int("steps", steps, low=0)):
        chosen, rejected = suite.domain_pairs(batch_size, rng)
        start = len(chosen[0][0])
        c = torch.tensor([p + y for p, y in chosen])
        r = torch.tensor([p + y for p, y in rejected])
        pc, pr = sequence_logprobs(model, c, start), sequence_logprobs(model, r, start)
        with torch.no_grad():
            rc, rr = sequence_logprobs(ref, c, start), sequence_logprobs(ref, r, start)
        losses.append(_adamw_step(model, opt, dpo_loss(pc, pr, rc, rr, beta=beta)))
    model.eval()
    return model, losses


def finite(losses: list[float]) -> bool:
    return bool(np.all(np.isfinite(losses)))
