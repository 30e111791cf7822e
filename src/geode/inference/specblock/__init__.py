"""SpecBlock (placeholder docstring, filled below)."""

from __future__ import annotations

from geode.inference.specblock.bandit import CostAwareBandit
from geode.inference.specblock.drafters import (
    BRANCH_WIDTHS,
    EagleDrafter,
    ParallelDrafter,
    SpecBlockDrafter,
    drafter_loss,
    prune_tree,
    rank_buckets,
    rank_features,
)

__all__ = [
    "BRANCH_WIDTHS",
    "CostAwareBandit",
    "EagleDrafter",
    "ParallelDrafter",
    "SpecBlockDrafter",
    "drafter_loss",
    "prune_tree",
    "rank_buckets",
    "rank_features",
]
