"""Benchmark of comparability recovery: fit + fuse against the supervised and the direct pipelines.

Every side turns the same oracle outputs (the claim's synthetic radial test bed: M oracles, N samples,
C classes, half calibration) into a calibrated fused distribution on the test half. The candidate is the
closed form (shared-support clr-norm descriptor) + mean pool + global temperature; the baselines are the
label-supervised per-oracle temperature scaling + mean + global temperature (the "upper bound"), the log
pool + global temperature (the strongest direct baseline of the claim) and the alternating variant.
Sizes: ``smoke`` N = 2,000, M = 4, C = 10; ``quick`` N = 100,000, M = 4, C = 10; ``full`` N = 1,000,000,
M = 8, C = 100.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": (2000, 4, 10), "quick": (100_000, 4, 10), "full": (1_000_000, 8, 100)}


def cases(size: str) -> list[BenchCase]:
    """Calibrated fusion of M oracles: comparability recovery vs supervised TS, the log pool, alternating."""
    import numpy as np

    from geode.ensembles.comparability_fusion import ComparabilityRecovery
    from geode.ensembles.comparability_fusion.experiment import radial_oracles
    from geode.ensembles.fusion import PerOracleTemperatureScaling, TemperatureScaling, log_pool, mean_fusion

    n, m, c = _SIZES[size]
    taus = np.geomspace(0.4, 5.0, m)
    _q, P, y = radial_oracles(n, taus, n_classes=c, seed=0)
    h = n // 2
    Pc, yc, Pt = P[:, :h], y[:h], P[:, h:]

    def recovery(variant: str = "closed_form") -> Any:
        cr = ComparabilityRecovery(variant).fit(Pc)
        ts = TemperatureScaling().fit(cr.fuse(Pc), yc)
        return ts.transform(cr.fuse(Pt))

    def supervised() -> Any:
        sup = PerOracleTemperatureScaling().fit(Pc, yc)
        ts = TemperatureScaling().fit(sup.fuse(Pc), yc)
        return ts.transform(sup.fuse(Pt))

    def log_gts() -> Any:
        ts = TemperatureScaling().fit(log_pool(Pc), yc)
        return ts.transform(log_pool(Pt))

    def mean_gts() -> Any:
        ts = TemperatureScaling().fit(mean_fusion(Pc), yc)
        return ts.transform(mean_fusion(Pt))

    return [
        BenchCase(
            f"calibrated fusion of {m} oracles, N = {n}, C = {c} (fit on half, fuse the other half)",
            candidate=recovery,
            baselines={
                "per-oracle TS (labels) + mean + global TS": supervised,
                "log pool + global TS": log_gts,
                "mean + global TS": mean_gts,
                "CR alternating + mean + global TS": lambda: recovery("alternating"),
            },
            differs={
                "*": (
                    "other fusion rules (per-oracle TS, log pool, mean, CR alternating): other fused "
                    "probabilities by design"
                )
            },
        )
    ]
