"""Benchmark: the cost of ground-truth-free error prediction, and of the fast closed-form ladder fits.

Times, side by side with :func:`geode.core.speed_ratio` (``speedup`` > 1 means the candidate is faster):

1. the error predictor (fit, global prediction and one heatmap per level, both rules) against fitting the
   ladder it reads (the predictor's overhead on top of the fits it needs anyway);
2. the separable least-squares grid fit through the Cartesian MRI operator against the same fit through
   a dense design matrix (identical result);
3. the Fourier-feature ladder from one QR of the finest design matrix against one ``lstsq`` per level.

Run with one thread: ``OMP_NUM_THREADS=1 python benchmarks/bench_inr_error.py [--side 64] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from geode.core import speed_ratio  # noqa: E402
from geode.sciml.inr_error import (  # noqa: E402
    ErrorPredictor,
    FourierFeatures,
    UndersampledFourier,
    fit_family,
    sample_image,
    shepp_logan,
)


class _Dense:
    """The MRI operator seen as a generic operator: forces the dense design-matrix path of the grid fit."""

    def __init__(self, op: UndersampledFourier) -> None:
        self.op, self.shape, self.measurement_shape = op, op.shape, op.measurement_shape

    def forward(self, x: np.ndarray) -> np.ndarray:
        return self.op.forward(x)

    def adjoint(self, y: np.ndarray) -> np.ndarray:
        return self.op.adjoint(y)


def _report(name: str, r: dict[str, float]) -> None:
    print(f"{name}: {r['candidate_s'] * 1e3:.1f} ms vs {r['baseline_s'] * 1e3:.1f} ms, speedup {r['speedup']:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=64, help="image side")
    ap.add_argument("--repeats", type=int, default=3, help="repeats of each side-by-side ratio")
    args = ap.parse_args()
    side = args.side
    img = sample_image("china", side)
    levels = [2, 4, 8, 16]
    ff = FourierFeatures(scale=10.0)
    ff_levels = [16, 32, 64, 128, 256]
    print(f"inr-error benchmark: {side}^2 images, one thread, {args.repeats} repeats")

    preds = fit_family(ff, img, ff_levels)

    def predict() -> None:
        for rule in ("orthogonal", "worst_case"):
            est = ErrorPredictor(rule).fit(preds, ff_levels)
            est.predict_global()
            for lv in ff_levels:
                est.heatmap(lv)

    _report(
        "error prediction vs fitting the Fourier ladder it reads",
        speed_ratio(predict, lambda: fit_family(ff, img, ff_levels), repeats=args.repeats),
    )

    op = UndersampledFourier((side, side), seed=0)
    y = op.forward(shepp_logan(side))
    dense = _Dense(op)
    np.testing.assert_allclose(
        fit_family("grid", y, levels, operator=op), fit_family("grid", y, levels, operator=dense), atol=1e-8
    )
    _report(
        "MRI grid ladder: separable vs dense design matrix",
        speed_ratio(
            lambda: fit_family("grid", y, levels, operator=op),
            lambda: fit_family("grid", y, levels, operator=dense),
            repeats=args.repeats,
        ),
    )

    def per_level() -> list[np.ndarray]:
        phi = ff.features(img.shape, ff_levels[-1])
        out = []
        for k in ff_levels:
            design = phi[:, : 2 * k + 1]
            out.append(design @ np.linalg.lstsq(design, img.ravel(), rcond=None)[0])
        return out

    np.testing.assert_allclose(np.stack(per_level()).reshape(preds.shape), preds, atol=1e-6)
    _report(
        "Fourier ladder: one nested QR vs lstsq per level",
        speed_ratio(lambda: fit_family(ff, img, ff_levels), per_level, repeats=args.repeats),
    )


if __name__ == "__main__":
    main()
