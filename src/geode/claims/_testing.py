"""Claims for the harness's own tests (slugs start with ``_``; they never appear in the catalogue).

Importing this module registers them. Each exercises one path of the harness: a clean result with a
figure, a claim that raises, one that hangs past its timeout, one that kills its process, one whose
verdict depends on the seed, one that starts a helper process (process-tree clean-up), one that computes
then sleeps (CPU time), one with validity floors and negative controls, one whose every text field is
hostile (report escaping), and two whose verdicts are underpowered (one resolves with a fourth seed, one never).
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


@register(
    "_sleeper",
    claim="A toy claim that records its pid, starts a helper process and sleeps.",
    paper_figure="-",
    baselines=(),
    thresholds=(Threshold("t", "value", ">", 0.0),),
)
def _sleeper(mode: str, seed: int) -> Outcome:
    """Writes ``<pid>`` and ``<helper pid>`` into ``$GEODE_TEST_PIDS/<seed>`` (for the process-tree tests)."""
    import subprocess
    import sys

    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    folder = os.environ.get("GEODE_TEST_PIDS")
    if folder:
        tmp = os.path.join(folder, f".{seed}.tmp")
        with open(tmp, "w") as fh:
            fh.write(f"{os.getpid()} {helper.pid}\n")
        os.replace(tmp, os.path.join(folder, str(seed)))
    time.sleep(600)
    return Outcome(metrics={"value": 1.0})


@register(
    "_spins",
    claim="A toy claim that computes for 0.3 CPU seconds, then sleeps 0.5 s.",
    paper_figure="-",
    baselines=(),
    thresholds=(Threshold("t", "value", ">", 0.0),),
)
def _spins(mode: str, seed: int) -> Outcome:
    t0 = time.process_time()
    x = 0
    while time.process_time() - t0 < 0.3:
        x += 1
    time.sleep(0.5)
    return Outcome(metrics={"value": float(x > 0)})


@register(
    "_floors",
    claim="A toy claim with a validity floor and negative controls.",
    paper_figure="gain >= 0.1 over the baseline",
    baselines=("baseline",),
    thresholds=(
        Threshold("gain", "gain", ">=", 0.1, "the method beats the baseline", agg="bound95", control="control_gain"),
        Threshold("some", "gain", ">=", 0.0, "not worse", control="weak_control_gain"),
    ),
    floors=(Threshold("learns", "baseline_acc", ">=", 0.8, "the baseline learns the task"),),
    reproduced="gain",
    partial="some",
)
def _floors(mode: str, seed: int) -> Outcome:
    """Seed-dependent: seed 3 breaks the floor; the weak control passes 'some' (it does not discriminate)."""
    gains = [0.30, 0.25, 0.35, 0.30, 0.05]
    return Outcome(
        metrics={
            "gain": gains[seed % 5],
            "control_gain": -0.05,
            "weak_control_gain": 0.02,
            "baseline_acc": 0.5 if seed % 5 == 3 else 0.9,
        },
        summary=f"gain {gains[seed % 5]}",
    )


HOSTILE = '<script>alert(1)</script> "><img src=x onerror=alert(2)> ``` [link](javascript:alert(3)) | \x1b[31mred'


@register(
    "_hostile",
    claim=f"A toy claim full of hostile text: {HOSTILE}",
    paper_figure=HOSTILE,
    baselines=(HOSTILE,),
    thresholds=(Threshold("t", "value", ">", 0.0, HOSTILE),),
)
def _hostile(mode: str, seed: int) -> Outcome:
    return Outcome(
        metrics={"value": 1.0},
        table=[{HOSTILE: HOSTILE, "n": 1}],
        summary=HOSTILE.replace("\n", " "),
        notes=[HOSTILE],
        tuned=[{"method": HOSTILE, "selected": HOSTILE}],
    )


_GAIN = (Threshold("gain", "gain", ">", 0.0, "the method beats the baseline", agg="bound95"),)


@register(
    "_noisy",
    claim="A toy claim that is underpowered on seeds 0-2 and resolves with a fourth seed.",
    paper_figure="gain > 0",
    baselines=("baseline",),
    thresholds=_GAIN,
)
def _noisy(mode: str, seed: int) -> Outcome:
    """Seeds 0-2: the 90% interval of the mean gain contains 0; with seed 3 it is clear of 0."""
    gains = [0.5, -0.1, 0.6, 0.55, 0.5, 0.6]
    return Outcome(metrics={"gain": gains[seed % 6]}, summary=f"gain {gains[seed % 6]}")


@register(
    "_coin",
    claim="A toy claim whose every seed reads reproduced but whose gain is too skewed to resolve in a few seeds.",
    paper_figure="gain > 0",
    baselines=("baseline",),
    thresholds=_GAIN,
)
def _coin(mode: str, seed: int) -> Outcome:
    """Gains 10, 0.01, 0.01, 10, ...: positive in every seed, but the 90% interval of the mean contains 0."""
    gain = 10.0 if seed % 3 == 0 else 0.01
    return Outcome(metrics={"gain": gain}, summary=f"gain {gain}")


@register(
    "_flaky",
    claim="A toy claim underpowered on seeds 0-2 whose every further seed raises.",
    paper_figure="gain > 0",
    baselines=("baseline",),
    thresholds=_GAIN,
)
def _flaky(mode: str, seed: int) -> Outcome:
    if seed >= 3:
        raise RuntimeError("this seed fails on purpose")
    gain = [0.5, -0.1, 0.6][seed]
    return Outcome(metrics={"gain": gain}, summary=f"gain {gain}")
