"""Benchmark of HamJEPA: one training step (encoder + objective, forward, backward, AdamW) against SIGReg-LeJEPA.

Both sides encode the same two augmented batches with the same :class:`PhaseSpaceCNN`; HamJEPA adds the leapfrog
predictor (two force evaluations per step, each a double backward through the potential's MLP) and the
projected spectral floors (an eigendecomposition of two k x k covariances); SIGReg adds 64 Epps-Pulley slices.
The MLP-predictor ablation is timed too. Sizes: ``smoke`` batch 32, ``quick`` 128, ``full`` 512.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": 32, "quick": 128, "full": 512}


def cases(size: str) -> list[BenchCase]:
    """One step of HamJEPA, of SIGReg-LeJEPA and of the MLP-predictor ablation."""
    import torch

    from geode.ssl.hamjepa import HamiltonianPredictor, HamJEPALoss, MLPPredictor, PhaseSpaceCNN, SIGRegLoss

    b = _SIZES[size]
    g = torch.Generator().manual_seed(0)
    xa, xb = torch.rand(b, 1, 28, 28, generator=g), torch.rand(b, 1, 28, 28, generator=g)

    def make(kind: str) -> Any:
        torch.manual_seed(0)
        enc = PhaseSpaceCNN()
        extra: list[Any] = []
        if kind == "sigreg":
            loss_fn: Any = SIGRegLoss(enc.state_dim)
        else:
            pred = HamiltonianPredictor(enc.state_dim) if kind == "ham" else MLPPredictor(enc.state_dim)
            extra = list(pred.parameters())
            loss_fn = HamJEPALoss(pred, enc.state_dim)
        opt = torch.optim.AdamW([*enc.parameters(), *extra], lr=1e-3)

        def step() -> float:
            loss = loss_fn(enc(xa), enc(xb))
            opt.zero_grad()
            loss.backward()
            opt.step()
            return float(loss.detach())

        return step

    return [
        BenchCase(
            f"one training step, 2 views x {b} MNIST-sized images, 256-d phase-space tokens",
            candidate=make("ham"),
            baselines={"SIGReg-LeJEPA": make("sigreg"), "MLP-predictor ablation": make("mlp")},
            differs={"*": "other SSL objectives (SIGReg-LeJEPA, MLP predictor) by design"},
        )
    ]
