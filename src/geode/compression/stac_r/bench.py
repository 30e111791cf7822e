"""Benchmark of STAC-R: one training step (forward + backward) of a char-level GPT-2 with and without compression.

Both sides run the same batch through the same weights; STAC-R wraps every linear layer but the LM head
(rank 32 at d=128, residual 1%, one tracking iteration per step). The ratio is the step-time overhead the
issue asks for (< 1: STAC-R is slower); the harness reports the peak memory of each side beside it.
Sizes: ``smoke`` d=64 / 1 layer / 4x32 tokens, ``quick`` d=128 / 2 layers / 8x64, ``full`` d=512 / 8 layers
/ 16x256.
"""

from __future__ import annotations

import copy
from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {
    "smoke": dict(d_model=64, n_layers=1, n_heads=2, batch=4, seq=32, rank=16),
    "quick": dict(d_model=128, n_layers=2, n_heads=4, batch=8, seq=64, rank=32),
    "full": dict(d_model=512, n_layers=8, n_heads=8, batch=16, seq=256, rank=64),
}


def cases(size: str) -> list[BenchCase]:
    """One forward + backward step, STAC-R against the uncompressed model."""
    import torch

    from geode.compression.stac_r import stacr_wrap
    from geode.models import build_tiny_lm

    s = _SIZES[size]
    base = build_tiny_lm(
        96,
        arch="gpt2",
        d_model=s["d_model"],
        n_layers=s["n_layers"],
        n_heads=s["n_heads"],
        max_positions=s["seq"],
        seed=0,
    )
    comp = copy.deepcopy(base)
    stacr_wrap(comp, rank=s["rank"], residual_frac=0.01)
    x = torch.randint(0, 96, (s["batch"], s["seq"]), generator=torch.Generator().manual_seed(0))

    def step(model: Any) -> Any:
        def f() -> float:
            model.zero_grad(set_to_none=True)
            loss = model(input_ids=x, labels=x).loss
            loss.backward()
            return float(loss.detach())

        return f

    return [
        BenchCase(
            f"train step, GPT-2 d={s['d_model']} x {s['n_layers']} layers, {s['batch']}x{s['seq']} tokens",
            candidate=step(comp),
            baselines={"uncompressed": step(base)},
        )
    ]
