"""Benchmark of Pack3D: one attention layer against dense SDPA with the same projections and axial RoPE.

Forward of one layer (dim 64, 4 heads, r = 1, b = 4) on a full cube of ``S^3`` tokens, batch 1; the
harness reports the speed ratio and the peak-memory ratio (issue 19: Pack3D held about 6x SDPA's peak at
16k tokens on a CPU, where SDPA is a flash kernel and Pack3D gathers key windows). Sizes: ``smoke`` 8^3,
``quick`` 24^3 (13,824 tokens), ``full`` 40^3 (64,000 tokens, the paper's 65k regime; meant for a GPU).
"""

from __future__ import annotations

from geode.claims.bench import BenchCase, Target

__all__ = ["cases"]

_EDGE = {"smoke": 8, "quick": 24, "full": 40}


def cases(size: str) -> list[BenchCase]:
    """Forward of Pack3D vs dense SDPA on a full ``S^3`` grid."""
    import torch

    from geode.layers.pack3d import DenseAxialRoPEAttention, Pack3DAttention, grid_coords

    s = _EDGE[size]
    torch.manual_seed(0)
    pack = Pack3DAttention(64, 4, 1, 4)
    dense = DenseAxialRoPEAttention(64, 4)
    dense.load_state_dict(pack.state_dict())
    x = torch.randn(1, s**3, 64, generator=torch.Generator().manual_seed(0))
    coords = torch.as_tensor(grid_coords((s, s, s)))

    def run(layer):
        def call():
            with torch.no_grad():
                return layer(x, coords)

        return call

    return [
        BenchCase(
            f"one attention layer, {s}^3 = {s**3} tokens, dim 64, 4 heads, forward",
            candidate=run(pack),
            target=Target(
                "memory_ratio",
                "<=",
                1.5,
                "issue 44: peak memory <= 1.5x dense SDPA's (16k and 64k tokens)",
                baseline="dense SDPA (same projections and axial RoPE)",
            ),
            baselines={"dense SDPA (same projections and axial RoPE)": run(dense)},
            differs={
                "*": (
                    "Pack3D attends exactly within a 3-D neighbourhood and to block summaries beyond it; dense "
                    "SDPA attends to every token"
                )
            },
        )
    ]
