"""Benchmark of SARA: DDIM sampling with a SARA-DP rank schedule at 70% of the MACs vs full rank and uniform.

The denoiser is the claim's architecture (untrained weights: timing does not depend on them); the DP
schedule comes from LRAE on 4 warm-up noises. On CPU at width 256 a rank-``r`` factored product is two
small matmuls, so wall-clock gains lag the MAC reduction (the paper's speed-ups are on GPUs with large
layers). Sizes: ``smoke`` width 64 (6 steps), ``quick`` width 256 (25 steps, 256 samples), ``full`` width 512.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {
    "smoke": dict(width=64, hidden=128, n_blocks=2, steps=6, n=64, menu=(8, 16, 32, None)),
    "quick": dict(width=256, hidden=512, n_blocks=4, steps=25, n=256, menu=(16, 32, 64, 96, 128, None)),
    "full": dict(width=512, hidden=1024, n_blocks=6, steps=50, n=1024, menu=(32, 64, 128, 192, 256, None)),
}


def cases(size: str) -> list[BenchCase]:
    """One DDIM sampling run per side."""
    import torch

    from geode.compression.sara import DigitDenoiser, apply_sara, ddim_sample, lrae_table, sara_dp

    s = _SIZES[size]
    model = apply_sara(DigitDenoiser(width=s["width"], hidden=s["hidden"], n_blocks=s["n_blocks"], seed=0))
    model.eval()
    g = torch.Generator().manual_seed(0)
    warm = torch.randn(4, 64, generator=g)
    noise = torch.randn(s["n"], 64, generator=g)
    steps, nb, menu = s["steps"], s["n_blocks"], s["menu"]
    _, full_macs = ddim_sample(model, warm, steps=steps)
    pair = model.targets()[0]
    fixed = model.macs() - sum(m.macs() for p in model.targets() for m in p)
    per_rank = sum(m.in_features + m.out_features for m in pair)
    full_block = sum(m.in_features * m.out_features for m in pair)
    budget = 0.7 * full_macs
    costs = [full_block if r is None else min(r * per_rank, full_block) for r in menu]
    picks = sara_dp(lrae_table(model, warm, menu, steps=steps).numpy(), costs, budget - steps * fixed)
    dp = [[menu[j] for j in row] for row in picks.tolist()]
    r_uni = int((budget / steps - fixed) // (nb * per_rank))

    def run(**kw: Any) -> Any:
        def f() -> Any:
            return ddim_sample(model, noise, steps=steps, **kw)

        return f

    return [
        BenchCase(
            f"DDIM {steps} steps, {s['n']} samples, denoiser width {s['width']} x {nb} blocks: SARA-DP schedule "
            "at 70% MACs",
            candidate=run(schedule=dp),
            baselines={"full rank": run(), f"uniform rank {r_uni}": run(schedule=[[r_uni] * nb] * steps)},
            differs={
                "*": (
                    "other rank schedules (full, uniform) sample through other low-rank denoisers, and report "
                    "their own parameter counts"
                )
            },
        )
    ]
