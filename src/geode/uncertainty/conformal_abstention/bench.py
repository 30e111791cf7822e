"""Benchmark of Conformal Abstention: calibrating the abstention threshold against MAPIE's controller.

Both certify the same thresholds (precision and participation risks, Holm, the same 100-point grid) on
the same calibration set of ``n`` (confidence, correct) pairs; the baseline is MAPIE's
``BinaryClassificationController`` (skipped when MAPIE is absent, then a Bonferroni rule of ours stands in).
"""

from __future__ import annotations

from geode.claims.bench import BenchCase

__all__ = ["cases"]


def cases(size: str) -> list[BenchCase]:
    """One calibration on ``n`` pairs: ours vs MAPIE's multi-risk controller."""
    import warnings

    import numpy as np

    from geode.uncertainty.conformal_abstention import ConformalAbstention

    n = {"smoke": 500, "quick": 5000, "full": 100000}[size]
    rng = np.random.default_rng(0)
    s = rng.uniform(size=n)
    c = (rng.uniform(size=n) < s).astype(int)

    def ours() -> float | None:
        return ConformalAbstention(0.75, 0.1, target_participation=0.2).fit(s, c).threshold_

    baselines = {}
    try:
        from mapie.risk_control import BinaryClassificationController, precision

        def mapie() -> object:
            ctl = BinaryClassificationController(
                predict_function=lambda x: np.column_stack([1 - x, x]),
                risk=[precision, _participation_risk()],
                target_level=[0.75, 0.2],
                confidence_level=0.9,
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ctl.calibrate(s, c)
            return ctl.valid_predict_params

        baselines["MAPIE BinaryClassificationController"] = mapie
    except ImportError:

        def bonferroni() -> float | None:
            return ConformalAbstention(0.75, 0.1, target_participation=0.2, fwer="bonferroni").fit(s, c).threshold_

        baselines["Bonferroni (MAPIE absent)"] = bonferroni
    return [
        BenchCase(
            f"calibrate the abstention threshold on {n} pairs",
            candidate=ours,
            baselines=baselines,
            differs={"*": "MAPIE's controller returns a risk curve over its own threshold grid, not one threshold"},
        )
    ]


def _participation_risk() -> object:
    """MAPIE risk for P(answer) >= target (its "predicted_positive_fraction" is an upper bound)."""
    import numpy as np
    from mapie.risk_control import BinaryRisk

    return BinaryRisk(
        risk_occurrence=lambda yt, yp: yp == 1,
        risk_condition=lambda yt, yp: np.repeat(True, len(yt)),
        higher_is_better=True,
    )
