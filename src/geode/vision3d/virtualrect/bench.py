"""Benchmark of VirtualRect: one online rectification (fit + maps) against Hartley's and the essential-matrix one.

Every side takes the same matches and returns the rectification maps of both views (what a stereo pipeline
needs per frame): VirtualRect's reweighted Gauss-Newton over the matches, Hartley's robust F +
``stereoRectifyUncalibrated`` and the essential matrix + ``recoverPose``, each followed by the same map
computation. Sizes: ``smoke`` 96x72 / 100 matches, ``quick`` 320x240 / 400, ``full`` 640x480 / 1000.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": (96, 72, 84.0, 100), "quick": (320, 240, 280.0, 400), "full": (640, 480, 560.0, 1000)}


def cases(size: str) -> list[BenchCase]:
    """Rectify one drifted frame from its matches, maps included."""
    from geode.vision3d.virtualrect import (
        VirtualRect,
        essential_rectification,
        hartley_rectification,
        render_stereo_scene,
        sample_matches,
    )

    w, h, f, n = _SIZES[size]
    sc = render_stereo_scene(0, width=w, height=h, focal=f)
    pl, pr = sample_matches(sc, n, 0, noise_px=0.3, outlier_frac=0.03)

    def with_maps(fn: Any) -> Any:
        return lambda: fn().maps()

    return [
        BenchCase(
            f"fit + maps, {w}x{h}, {n} matches",
            candidate=with_maps(lambda: VirtualRect(sc.K, sc.R_cal, sc.t_cal, sc.size).fit(pl, pr)),
            baselines={
                "Hartley (MAGSAC F + stereoRectifyUncalibrated)": with_maps(
                    lambda: hartley_rectification(pl, pr, sc.size, method="magsac")
                ),
                "essential matrix + recoverPose": with_maps(
                    lambda: essential_rectification(pl, pr, sc.K, 0.4, sc.size, method="magsac")
                ),
            },
            differs={"*": "other rectification pipelines (Hartley, essential matrix) give other maps by design"},
        )
    ]
