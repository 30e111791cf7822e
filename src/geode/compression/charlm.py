"""The compression field's language-model test bed: Python's own documentation text as characters.

Several compression claims (SPHQuant, STAC-R, MoE quantisation) quantise or compress a small character-level
LM trained on CPython's ``pydoc_data.topics`` (:func:`geode.data.pydoc_char_ids`). They share the data cut,
the evaluation windows, the float training loop and the perplexity; this module holds them once.

- :func:`text_splits`: contiguous train / validation / test parts of 80 / 10 / 10 percent.
- :func:`eval_windows`: fixed non-overlapping windows of one part (validation tunes, test decides).
- :func:`train_lm`: AdamW on random windows of the train part, linear warm-up over 20 steps then linear
  decay to 5 percent, gradient norm clipped at 1.
- :func:`perplexity`: exp of the mean next-token negative log-likelihood over windows.
- :func:`unigram_perplexity`: the test perplexity of the train part's character frequencies, the floor a
  trained model must clear by a wide margin.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

__all__ = ["eval_windows", "perplexity", "text_splits", "train_lm", "unigram_perplexity"]


def text_splits(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Contiguous train / validation / test parts (80 / 10 / 10 percent) of a token id sequence."""
    ids = np.asarray(ids)
    if ids.ndim != 1 or len(ids) < 10:
        raise ValueError(f"ids must be a 1-D sequence of at least 10 token ids; got shape {ids.shape}")
    n = len(ids)
    return ids[: int(0.8 * n)], ids[int(0.8 * n) : int(0.9 * n)], ids[int(0.9 * n) :]


def eval_windows(ids: np.ndarray, seq: int, n: int) -> torch.Tensor:
    """The first ``min(n, len(ids) // seq)`` non-overlapping windows of length ``seq``, shape ``(m, seq)``."""
    if seq < 2 or n < 1:
        raise ValueError(f"seq must be >= 2 and n >= 1; got seq={seq}, n={n}")
    m = min(n, len(ids) // seq)
    return torch.from_numpy(np.asarray(ids)[: m * seq].reshape(m, seq).copy())


def unigram_perplexity(train: np.ndarray, test: np.ndarray, vocab: int) -> float:
    """exp of the cross-entropy of ``test`` under the train part's token frequencies (clipped at 1e-9)."""
    p = np.bincount(train, minlength=vocab) / len(train)
    q = np.bincount(test, minlength=vocab) / len(test)
    return float(np.exp(-(q * np.log(np.clip(p, 1e-9, None))).sum()))


def train_lm(
    model: torch.nn.Module,
    train: np.ndarray,
    loss: Callable[[torch.Tensor], torch.Tensor],
    *,
    steps: int,
    batch: int,
    seq: int,
    lr: float,
    rng: np.random.Generator,
) -> float:
    """Train ``model`` in place on random windows of ``train``; return the wall seconds it took.

    ``loss(x)`` maps a ``(batch, seq)`` window batch to the scalar training loss. The windows' starts are
    drawn from ``rng``, which is advanced (callers draw their calibration windows from it afterwards).
    """
    if steps < 0 or batch < 1 or seq < 2 or len(train) <= seq:
        raise ValueError(f"need steps >= 0, batch >= 1, 2 <= seq < len(train); got {steps}, {batch}, {seq}")
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: min(1.0, (t + 1) / 20) * max(0.05, 1 - t / max(steps, 1)))
    t0 = time.perf_counter()
    model.train()
    for _ in range(steps):
        starts = rng.integers(0, len(train) - seq, size=batch)
        x = torch.from_numpy(np.stack([train[s : s + seq] for s in starts]))
        value = loss(x)
        opt.zero_grad(set_to_none=True)
        value.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    model.eval()
    return time.perf_counter() - t0


def _logits_nll(model: Any, x: torch.Tensor) -> torch.Tensor:
    logits = model(input_ids=x).logits[:, :-1]
    target = x[:, 1:].reshape(-1)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target, reduction="sum")


@torch.no_grad()
def perplexity(
    model: Any,
    windows: torch.Tensor,
    batch: int = 32,
    nll: Callable[[Any, torch.Tensor], torch.Tensor] | None = None,
) -> float:
    """exp of the mean next-token negative log-likelihood over ``windows`` ``(n, seq)``.

    ``nll(model, x)`` is the summed next-token NLL of a window batch; the default reads the logits of a
    Hugging Face-style causal LM (``model(input_ids=x).logits``).
    """
    nll = nll or _logits_nll
    model.eval()
    tot, cnt = 0.0, 0
    for i in range(0, windows.shape[0], batch):
        x = windows[i : i + batch]
        tot += float(nll(model, x))
        cnt += x[:, 1:].numel()
    return math.exp(tot / cnt)
