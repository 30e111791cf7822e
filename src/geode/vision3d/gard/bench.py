"""Benchmark of GARD: restoring a batch of multi-view scenes, GARD against the pixel-space restorer.

Both sides restore the same degraded scenes and predict depth with the same frozen reconstructor: GARD by
``steps`` Euler steps of its feature-space denoiser (cross-view attention) then the reconstructor's late
layers; the pixel-space restorer by one forward pass per view, then the whole reconstructor. Also the
latent restorer (the same denoiser with local attention only). Untrained weights (timing only).
Sizes: ``smoke`` 2 scenes, ``quick`` 32 scenes, ``full`` 256 scenes of 3 views at 24 x 32.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": 2, "quick": 32, "full": 256}


def cases(size: str) -> list[BenchCase]:
    """Restore + depth for a batch of degraded 3-view scenes."""
    import torch

    from geode.vision3d.gard import FeatureDecoder, GARDDenoiser, GARDRestorer, MultiViewReconstructor, PixelRestorer

    n = _SIZES[size]
    torch.manual_seed(0)
    rec = MultiViewReconstructor((24, 32), 4, dim=32, heads=2)
    dec = FeatureDecoder(32, 4, (24, 32))
    gard = GARDRestorer(rec, GARDDenoiser(32, rec.n_tokens, hidden=32, heads=2), dec, steps=10)
    latent = GARDRestorer(
        rec, GARDDenoiser(32, rec.n_tokens, hidden=32, heads=2, cross_view=False), dec, steps=10, align_weight=0.0
    )
    pixel = PixelRestorer(4, (24, 32), hidden=32, heads=2)
    lq = torch.rand(n, 3, 3, 24, 32, generator=torch.Generator().manual_seed(1))

    def run_gard(model: Any) -> Any:
        def f() -> Any:
            return model.restore(lq, generator=torch.Generator().manual_seed(0))["depth"]

        return f

    def run_pixel() -> Any:
        with torch.no_grad():
            return rec(pixel(lq))

    return [
        BenchCase(
            f"restore + depth, {n} scenes x 3 views at 24x32, 10 Euler steps",
            candidate=run_gard(gard),
            baselines={"pixel-space restorer": run_pixel, "latent restorer (local attention)": run_gard(latent)},
            differs={
                "*": "the pixel-space restorer and the local-attention latent restorer are other restorers by design"
            },
        )
    ]
