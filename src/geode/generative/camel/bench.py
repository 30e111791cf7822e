"""Benchmark of camel: CAMEL outer steps (through the K-step inner loop) against novelty-only outer steps.

Hot path: ``steps`` outer steps of :class:`~geode.generative.camel.CAMEL` (10-step DDIM, K = 3 differentiable
SGD steps of the appraiser, second-order backward) against as many steps of the novelty-only objective (same DDIM,
no inner loop), the strongest trained baseline. Sizes (DDPM width, steps, batch): ``smoke`` 32, 3, 16;
``quick`` 256, 20, 32 (the claim's models); ``full`` 512, 50, 128. The creator is untrained (timing only).
"""

from __future__ import annotations

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": (32, 3, 16), "quick": (256, 20, 32), "full": (512, 50, 128)}


def cases(size: str) -> list[BenchCase]:
    """CAMEL vs novelty-only outer steps on an 8x8-digit-sized creator."""
    import torch

    from geode.generative.camel import CAMEL, Autoencoder, ConditionalDDPM

    hidden, steps, batch = _SIZES[size]
    torch.manual_seed(0)
    creator = ConditionalDDPM(64, 10, T=100, hidden=hidden)
    for p in creator.parameters():
        p.requires_grad_(False)
    ae = Autoencoder(64)

    def go(obj: str) -> None:
        CAMEL(creator, ae, recog=0.0, objective=obj).optimize(3, steps=steps, batch=batch)

    return [
        BenchCase(
            f"{steps} outer steps, DDPM MLP {hidden}, batch {batch}, K = 3",
            candidate=lambda: go("camel"),
            baselines={"novelty-only": lambda: go("novelty")},
            differs={"*": "the novelty-only objective trains differently by design; the step returns nothing"},
        )
    ]
