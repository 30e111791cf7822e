"""The moe-quant claim's problem: a character-level tiny MoE LM trained on Python's own documentation text.

Text: CPython's ``pydoc_data.topics`` as character ids (:func:`geode.data.pydoc_char_ids`), cut into
contiguous train / validation / test parts of 80 / 10 / 10 percent. The float :class:`MoELM` is trained
with AdamW on random windows of the train split (a small load-balancing loss keeps every expert in use
without equalising the loads); perplexity and routing agreement are measured on fixed non-overlapping
windows of the validation (tuning) and test (verdict) splits; expert loads come from train windows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from geode.compression import charlm
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


def perplexity(model: MoELM, windows: torch.Tensor, batch: int = 32) -> float:
    """exp of the mean next-token cross-entropy over ``windows`` (n, seq)."""
    return charlm.perplexity(model, windows, batch, nll=lambda m, x: float(m.loss(x)) * x[:, 1:].numel())


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
    train, val, test = charlm.text_splits(ids)
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
    train_seconds = charlm.train_lm(
        model, train, lambda x: model.loss(x, aux_coef=aux_coef), steps=steps, batch=batch, seq=seq, lr=lr, rng=rng
    )
    for p in model.parameters():
        p.requires_grad_(False)
    starts = rng.integers(0, len(train) - seq, size=n_calib)
    calib = torch.from_numpy(np.stack([train[s : s + seq] for s in starts]))
    loads = expert_loads(model, [calib[i : i + 16] for i in range(0, n_calib, 16)])
    unigram = charlm.unigram_perplexity(train, test, vocab)
    return MoEProblem(
        model=model,
        train=train,
        val=charlm.eval_windows(val, seq, n_eval),
        test=charlm.eval_windows(test, seq, n_eval),
        loads=loads,
        vocab=vocab,
        seq=seq,
        unigram_ppl=unigram,
        train_seconds=train_seconds,
    )
