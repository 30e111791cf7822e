"""Benchmark of UFCOD: the features of one image (one DDIM-reversal trajectory) and the detector's scoring.

The first case times the extraction of the two energies for one image (``N`` = 10 network calls) against
a pixel-space kNN score of the same image (the notes' cheap baseline, which needs no network); the
second times the scoring of a batch of 1000 feature vectors against 100 references (UFCOD's detector)
against the same detector on 256 raw pixels. Sizes: ``smoke`` a width-8 U-Net on 8x8 images, ``quick``
the claim's width-16 U-Net on 16x16, ``full`` width 64 (the full mode's model).
"""

from __future__ import annotations

from geode.claims.bench import BenchCase

__all__ = ["cases"]


def cases(size: str) -> list[BenchCase]:
    """Feature extraction per image, and scoring, against pixel kNN."""
    import numpy as np

    from geode.uncertainty.ufcod import EnergyOODDetector, TinyUNet, trajectory_features

    width, side = {"smoke": (8, 8), "quick": (16, 16), "full": (64, 16)}[size]
    model = TinyUNet(width=width, seed=0).eval()
    rng = np.random.default_rng(0)
    one = rng.uniform(-1, 1, size=(1, 1, side, side)).astype(np.float32)
    pool_px = rng.uniform(-1, 1, size=(500, side * side))
    det_px = EnergyOODDetector(0.5, 10, n_references=100).fit(pool_px)
    feats = rng.normal(size=(500, 2))
    det = EnergyOODDetector(0.5, 10, n_references=100).fit(feats)
    batch_f, batch_px = rng.normal(size=(1000, 2)), rng.uniform(-1, 1, size=(1000, side * side))
    return [
        BenchCase(
            f"features of one {side}x{side} image (10 DDIM-reversal steps, U-Net width {width})",
            candidate=lambda: trajectory_features(model, one, n_ddim=10),
            baselines={"pixel kNN score of one image (100 refs)": lambda: det_px.score_samples(one.reshape(1, -1))},
            differs={"*": "the pixel kNN score is another detector; the candidate returns diffusion features"},
        ),
        BenchCase(
            "score 1000 images against 100 references",
            candidate=lambda: det.score_samples(batch_f),
            baselines={"pixel kNN (256-D)": lambda: det_px.score_samples(batch_px)},
            differs={"*": "the pixel kNN score is another detector by design"},
        ),
    ]
