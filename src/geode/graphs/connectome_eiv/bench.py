"""Benchmark of the connectome pipeline: one cohort's linear-GCN features plus CV ridge, against raw ridge.

The hot path of the analysis is building the kNN graph, the propagation ``Â Ĉ`` for every subject and the
cross-validated ridge on the ``p^2`` features; the baseline is the graph-agnostic ridge on ``Ĉ``.
Sizes: ``smoke`` p=12, n=30; ``quick`` p=60, n=100 (the claim's size); ``full`` p=200, n=1000.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": (12, 3, 30, 3), "quick": (60, 6, 100, 8), "full": (200, 10, 1000, 10)}


def cases(size: str) -> list[BenchCase]:
    """Independent-graph GCN features + CV ridge vs CV ridge on the raw correlations."""
    import numpy as np

    from geode.graphs.connectome_eiv.model import LatentCommunityModel, cv_r2, gcn_features, raw_features

    p, K, n, k = _SIZES[size]
    model = LatentCommunityModel(p, K)
    s = model.sample(n, 40, np.random.default_rng(0))
    y = s.a @ np.random.default_rng(1).standard_normal(K)

    def gcn() -> Any:
        return cv_r2(gcn_features(s.corr, s.corr_indep, k), y)

    def raw() -> Any:
        return cv_r2(raw_features(s.corr), y)

    return [
        BenchCase(
            f"kNN graph + Â Ĉ + 5-fold RidgeCV, p={p}, n={n}",
            candidate=gcn,
            baselines={"raw ridge": raw},
            differs={"*": "raw ridge regresses on the raw connectome, not on the denoised graph features"},
        )
    ]
