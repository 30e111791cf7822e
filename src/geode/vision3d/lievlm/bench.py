"""Benchmark of LieVLM: forward + backward of the Lie-routing block against additive and MLP fusion.

The hot path is the fusion block on a batch of visual and geometry tokens (the LM after it is the same for
every arm). Sizes: ``smoke`` 8 x 16 tokens, d_vis 24; ``quick`` 64 x 64 tokens, d_vis 48; ``full`` 16 x 1024
tokens (a video's patch tokens), d_vis 384 with M = 128 triplets.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": (8, 16, 24, 8), "quick": (64, 64, 48, 16), "full": (16, 1024, 384, 128)}


def cases(size: str) -> list[BenchCase]:
    """One forward + backward of each fusion block on the same tokens."""
    import torch

    from geode.vision3d.lievlm import AdditiveFusion, LieRouter, MLPFusion

    b, n, d, m = _SIZES[size]
    gen = torch.Generator().manual_seed(0)
    v, g = torch.randn(b, n, d, generator=gen), torch.randn(b, n, 7, generator=gen)
    torch.manual_seed(0)
    blocks = {"lie": LieRouter(d, 7, n_triplets=m), "add": AdditiveFusion(d, 7), "mlp": MLPFusion(d, 7)}
    for blk in blocks.values():
        torch.nn.init.normal_(blk.out.weight, std=0.02)

    def step(kind: str) -> Any:
        def f() -> float:
            blk = blocks[kind]
            blk.zero_grad()
            out = blk(v, g)
            out.square().mean().backward()
            return float(out.detach().sum())

        return f

    return [
        BenchCase(
            f"fusion forward+backward, {b}x{n} tokens, d_vis {d}, M {m}",
            candidate=step("lie"),
            baselines={"additive fusion": step("add"), "MLP fusion on [v, g]": step("mlp")},
            differs={"*": "other fusion operators (additive, MLP) by design"},
        )
    ]
