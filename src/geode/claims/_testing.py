"""Claims for the harness's own tests (slugs start with ``_``; they never appear in the catalogue).

Importing this module registers them. Each exercises one path of the runner: a clean result with a
figure, a claim that raises, one that hangs past its timeout, one that kills its process, and one
whose verdict depends on the seed.
"""

from __future__ import annotations

import os
import time

from geode.claims.registry import register
from geode.claims.types import Outcome, Threshold

__all__: list[str] = []


@register(
    "_ok",
    claim="A toy claim that always reproduces.",
    paper_figure="value = 1",
    baselines=("nothing",),
    thresholds=(Threshold("big", "value", ">=", 0.5), Threshold("some", "value", ">=", 0.1)),
    reproduced="big",
    partial="some",
)
def _ok(mode: str, seed: int) -> Outcome:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rng = np.random.default_rng(seed)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot(rng.normal(size=10))
    return Outcome(
        metrics={"value": 1.0, "noise": float(rng.normal())},
        table=[{"method": "toy", "value": 1.0, "n": np.int64(3)}],
        figures={"curve": fig},
        summary=f"toy run in {mode} mode",
    )


@register(
    "_seeded",
    claim="A toy claim whose verdict depends on the seed.",
    paper_figure="value >= 0.5",
    baselines=(),
    thresholds=(Threshold("big", "value", ">=", 0.5), Threshold("some", "value", ">=", 0.2)),
    reproduced="big",
    partial="some",
)
def _seeded(mode: str, seed: int) -> Outcome:
    return Outcome(metrics={"value": [0.9, 0.3, 0.0][seed % 3]}, summary=f"seed {seed}")


@register(
    "_raises",
    claim="A toy claim that raises.",
    paper_figure="-",
    baselines=(),
    thresholds=(Threshold("t", "value", ">", 0.0),),
)
def _raises(mode: str, seed: int) -> Outcome:
    raise RuntimeError("this claim fails on purpose")


@register(
    "_hangs",
    claim="A toy claim that never finishes.",
    paper_figure="-",
    baselines=(),
    thresholds=(Threshold("t", "value", ">", 0.0),),
)
def _hangs(mode: str, seed: int) -> Outcome:
    time.sleep(3600)
    return Outcome(metrics={"value": 1.0})


@register(
    "_dies",
    claim="A toy claim whose process dies.",
    paper_figure="-",
    baselines=(),
    thresholds=(Threshold("t", "value", ">", 0.0),),
)
def _dies(mode: str, seed: int) -> Outcome:
    os._exit(3)
