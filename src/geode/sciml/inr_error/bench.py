"""Benchmark of inr-error: the closed-form ladder fits the claim runs, and the cost of the error prediction.

Cases (``size``: image side 16 in ``smoke``, 64 in ``quick``, 128 in ``full``; one thread):

1. the Fourier-feature ladder from one QR of the finest design matrix (``FourierFeatures.fit``) against one
   ``lstsq`` per level (the obvious baseline; identical predictions, checked before timing);
2. the least-squares grid ladder through the Cartesian MRI operator, separable, against the same fit through a
   dense design matrix (identical result, checked);
3. the ground-truth-free prediction (both rules of :class:`ErrorPredictor`, global and one heatmap per level)
   against the authors' calibrated :class:`ScaledDifferencePredictor` (fit, predict, heatmaps) and against
   fitting the ladder it reads (the predictor's overhead on top of the fits it needs anyway).

Supersedes ``benchmarks/bench_inr_error.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIDE = {"smoke": 16, "quick": 64, "full": 128}


class _Dense:
    """The MRI operator seen as a generic operator: forces the dense design-matrix path of the grid fit."""

    def __init__(self, op: Any) -> None:
        self.op, self.shape, self.measurement_shape = op, op.shape, op.measurement_shape

    def forward(self, x: np.ndarray) -> np.ndarray:
        return self.op.forward(x)

    def adjoint(self, y: np.ndarray) -> np.ndarray:
        return self.op.adjoint(y)


def cases(size: str) -> list[BenchCase]:
    """The three cases above at image side ``_SIDE[size]``."""
    from geode.sciml.inr_error import (
        ErrorPredictor,
        FourierFeatures,
        ScaledDifferencePredictor,
        UndersampledFourier,
        fit_family,
        sample_image,
        shepp_logan,
    )

    side = _SIDE[size]
    img = sample_image("china", side)
    ff = FourierFeatures(scale=10.0)
    kmax = side * side // 8
    ff_levels = [k for k in (4, 8, 16, 32, 64, 128, 256, 512) if k <= kmax]
    preds = fit_family(ff, img, ff_levels)

    def per_level() -> np.ndarray:
        phi = ff.features(img.shape, ff_levels[-1])
        out = []
        for k in ff_levels:
            design = phi[:, : 2 * k + 1]
            out.append(design @ np.linalg.lstsq(design, img.ravel(), rcond=None)[0])
        return np.stack(out).reshape(preds.shape)

    np.testing.assert_allclose(per_level(), preds, atol=1e-6)

    op = UndersampledFourier((side, side), seed=0)
    y = op.forward(shepp_logan(side))
    dense = _Dense(op)
    g_levels = [lv for lv in (2, 4, 8, 16, 32) if lv < side]
    np.testing.assert_allclose(
        fit_family("grid", y, g_levels, operator=op), fit_family("grid", y, g_levels, operator=dense), atol=1e-8
    )

    def predict() -> None:
        for rule in ("orthogonal", "worst_case"):
            est = ErrorPredictor(rule, warn=False).fit(preds, ff_levels)
            est.predict_global()
            for lv in ff_levels:
                est.heatmap(lv)

    def authors() -> None:
        p = ScaledDifferencePredictor().fit(preds, ff_levels)
        p.predict(1.4)
        for lv in p.levels_:
            p.heatmap(int(lv), 1.4)

    return [
        BenchCase(
            f"Fourier-feature ladder {ff_levels[0]}..{ff_levels[-1]} on a {side}^2 image: one nested QR",
            candidate=lambda: fit_family(ff, img, ff_levels),
            baselines={"lstsq per level": per_level},
        ),
        BenchCase(
            f"grid ladder through the 4x Cartesian MRI operator, {side}^2: separable least squares",
            candidate=lambda: fit_family("grid", y, g_levels, operator=op),
            baselines={"dense design matrix": lambda: fit_family("grid", y, g_levels, operator=dense)},
        ),
        BenchCase(
            f"error prediction (both rules, global + heatmaps), Fourier ladder on {side}^2",
            candidate=predict,
            baselines={
                "authors' scaled difference (fit, predict, heatmaps)": authors,
                "fitting the ladder it reads": lambda: fit_family(ff, img, ff_levels),
            },
            differs={"*": "the candidate returns nothing; the baselines fit the ladder or another error rule"},
        ),
    ]
