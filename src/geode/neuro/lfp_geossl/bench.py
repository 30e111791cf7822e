"""Benchmark of geometry-aware LFP SSL: one pre-training step against one masked-prediction step.

Both sides run a full step (forward, backward, AdamW) of the same :class:`LFPEncoder` on 128 single-channel
windows of 2 s at 250 Hz: the geometry objective on 8 groups of 16 channels from one probe and window
(projection head + multi-positive InfoNCE over the batch), masked prediction on 128 random windows (span masks,
frame-level InfoNCE inside each window). The Welch-PSD feature extraction of the same windows is timed too (the
spectral baseline's whole "training" cost). Sizes: ``smoke`` 32 windows, ``quick`` 128, ``full`` 512.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": 32, "quick": 128, "full": 512}


def cases(size: str) -> list[BenchCase]:
    """One geometry-aware step, one masked-prediction step, and Welch features of the batch."""
    import numpy as np
    import torch
    from torch import nn

    from geode.neuro.lfp_geossl import (
        LFPEncoder,
        geometry_contrastive_loss,
        masked_prediction_loss,
        simulate_session,
        welch_features,
    )

    b = _SIZES[size]
    s = simulate_session(0, n_windows=max(2, b // 64 + 1))
    x = torch.tensor(s.lfp.reshape(-1, s.lfp.shape[-1])[:b])
    group = torch.arange(b) // 16
    depth = torch.tensor(np.tile(np.arange(16) * 20.0, b // 16 + 1)[:b], dtype=torch.float32)

    def make(kind: str) -> Any:
        torch.manual_seed(0)
        enc = LFPEncoder()
        if kind == "geo":
            head: nn.Module = nn.Sequential(nn.Linear(32, 32), nn.GELU(), nn.Linear(32, 32))
        else:
            head = nn.ModuleDict({"pred": nn.Linear(32, 32), "target": nn.Linear(32, 32)})
        opt = torch.optim.AdamW([*enc.parameters(), *head.parameters()], lr=1e-3)
        gen = torch.Generator().manual_seed(0)

        def step() -> float:
            if kind == "geo":
                loss = geometry_contrastive_loss(head(enc(x)), depth, group)
            else:
                loss = masked_prediction_loss(enc, head, x, gen)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return float(loss.detach())

        return step

    xn = x.numpy()
    return [
        BenchCase(
            f"one pre-training step on {b} single-channel windows (2 s at 250 Hz)",
            candidate=make("geo"),
            baselines={
                "masked prediction": make("masked"),
                "Welch-PSD features": lambda: float(welch_features(xn, 250.0).sum()),
            },
            differs={"*": "other self-supervised objectives (masked prediction, Welch-PSD features)"},
        )
    ]
