"""The moe-quant claim's problem: a character-level tiny MoE LM trained on Python's own documentation text.

Text: CPython's ``pydoc_data.topics`` as character ids (:func:`geode.data.pydoc_char_ids`), cut into
contiguous train / validation / test parts of 80 / 10 / 10 percent. The float :class:`MoELM` is trained
with AdamW on random windows of the train split (a small load-balancing loss keeps every expert in use
without equalising the loads); perplexity and routing agreement are measured on fixed non-overlapping
windows of the validation (tuning) and test (verdict) splits; expert loads come from train windows.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from geode.compression.moe_quant.moe import MoELM, expert_loads, record_routes
from geode.data.loaders import pydoc_char_ids

__all__ = ["MoEProblem", "make_problem", "perplexity", "routes_of"]


@dataclass
class MoEProblem:
    model: MoELM  # trained float model (never modified)
    train: np.ndarray
    val: torch.Tensor
    test: torch.Tensor
    loads: torch.Tensor  # (layers, experts)
    vocab: int
    seq: int
    unigram_ppl: float
    train_seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    def batch_fn(self, seed: int, batch: int):
        rng = np.random.default_rng(seed)

        def f(_: int) -> torch.Tensor:
            starts = rng.integers(0, len(self.train) - self.seq, size=batch)
            return torch.from_numpy(np.stack([self.train[s : s + self.seq] for s in starts]))

        return f


def _windows(ids: np.ndarray, seq: int, n: int) -> torch.Tensor:
    m = min(n, len(ids) // seq)
    return torch.from_numpy(ids[: m * seq].reshape(m, seq).copy())


@torch.no_grad()
def perplexity(model: MoELM, windows: torch.Tensor, batch: int = 32) -> float:
    """exp of the mean next-token cross-entropy over ``windows`` (n, seq)."""
    model.eval()
    tot, cnt = 0.0, 0
    for i in range(0, windows.shape[0], batch):
        x = windows[i : i + batch]
        tot += float(model.loss(x)) * x[:, 1:].numel()
        cnt += x[:, 1:].numel()
    return math.exp(tot / cnt)


def routes_of(model: MoELM, windows: torch.Tensor, batch: int = 32) -> list[torch.Tensor]:
    """Every MoE layer's routes on ``windows``, concatenated over batches."""
    parts = [record_routes(model, windows[i : i + batch]) for i in range(0, windows.shape[0], batch)]
    return [torch.cat([p[li] for p in parts]) for li in range(len(parts[0]))]


def make_problem(
    *,
    seed: int,
    d_model: int = 128,
    n_layers: int = 2,
    d_ff: int = 128,
    n_experts: int = 8,
    top_k: int = 2,
    seq: int = 64,
    steps: int = 300,
    batch: int = 32,
    lr: float = 3e-3,
    aux_coef: float = 1e-3,
    n_calib: int = 64,
    n_eval: int = 96,
) -> MoEProblem:
    """Train the float MoE model (init and batches from ``seed``) and measure its expert loads."""
    ids, vocab = pydoc_char_ids()
    n = len(ids)
    train, val, test = ids[: int(0.8 * n)], ids[int(0.8 * n) : int(0.9 * n)], ids[int(0.9 * n) :]
    model = MoELM(
        vocab,
        d_model=d_model,
        n_layers=n_layers,
        d_ff=d_ff,
        n_experts=n_experts,
        top_k=top_k,
        max_positions=seq,
        seed=seed,
    )
    rng = np.random.default_rng(seed + 17)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: min(1.0, (t + 1) / 20) * max(0.05, 1 - t / max(steps, 1)))
    t0 = time.perf_counter()
    model.train()
    for _ in range(steps):
        starts = rng.integers(0, len(train) - seq, size=batch)
        x = torch.from_numpy(np.stack([train[s : s + seq] for s in starts]))
        loss = model.loss(x, aux_coef=aux_coef)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    train_seconds = time.perf_counter() - t0
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    starts = rng.integers(0, len(train) - seq, size=n_calib)
    calib = torch.from_numpy(np.stack([train[s : s + seq] for s in starts]))
    loads = expert_loads(model, [calib[i : i + 16] for i in range(0, n_calib, 16)])
    p = np.bincount(train, minlength=vocab) / len(train)
    q = np.bincount(test, minlength=vocab) / len(test)
    unigram = float(np.exp(-(q * np.log(np.clip(p, 1e-9, None))).sum()))
    return MoEProblem(
        model=model,
        train=train,
        val=_windows(val, seq, n_eval),
        test=_windows(test, seq, n_eval),
        loads=loads,
        vocab=vocab,
        seq=seq,
        unigram_ppl=unigram,
        train_seconds=train_seconds,
    )
