"""The claim's test bed: a character-level tiny Llama target on CPython's documentation text and its prompts.

Drafter data, training and evaluation are public (:mod:`geode.inference.specblock.training`:
:func:`make_drafter_data`, :func:`train_drafter`, :func:`evaluate_drafter`, :class:`DrafterData`, also
``from geode.inference import ...``); they are re-exported here, where they used to live.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from geode.inference.specblock.training import DrafterData, evaluate_drafter, make_drafter_data, train_drafter

__all__ = ["DrafterData", "evaluate_drafter", "make_drafter_data", "text_prompts", "train_drafter", "train_target"]


def train_target(
    ids: np.ndarray,
    vocab: int,
    *,
    steps: int,
    seed: int,
    d_model: int = 128,
    n_layers: int = 4,
    seq: int = 64,
    batch: int = 32,
    lr: float = 3e-3,
) -> Any:
    """A tiny Llama char-LM trained with AdamW on random windows of ``ids`` (cosine-free linear decay)."""
    from geode.models.tiny_lm import build_tiny_lm

    model = build_tiny_lm(
        vocab, d_model=d_model, n_layers=n_layers, n_heads=4, n_kv_heads=2, max_positions=256, seed=seed
    )
    rng = np.random.default_rng([seed, 11])
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: min(1.0, (t + 1) / 20) * max(0.05, 1 - t / max(steps, 1)))
    model.train()
    for _ in range(steps):
        s = rng.integers(0, len(ids) - seq - 1, size=batch)
        x = torch.from_numpy(np.stack([ids[a : a + seq] for a in s]))
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    return model.eval()


def text_prompts(ids: np.ndarray, n: int, length: int, rng: np.random.Generator) -> list[list[int]]:
    """``n`` windows of ``length`` tokens of ``ids`` at uniformly random starts (drawn from ``rng``)."""
    out = []
    while len(out) < n:
        a = int(rng.integers(0, len(ids) - length - 1))
        out.append([int(t) for t in ids[a : a + length]])
    return out
