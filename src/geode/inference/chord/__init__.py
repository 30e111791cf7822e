"""CHoRD placeholder docstring (rewritten below)."""

from __future__ import annotations

from geode.inference.chord.chiplet import (
    CLAP,
    LADM,
    RR,
    Access,
    ChipletGPU,
    ChordPolicy,
    Kernel,
    KernelDAG,
    Plan,
    SimResult,
    simulate,
    tile_pages,
)
from geode.inference.chord.workloads import WORKLOADS, make_workload

__all__ = [
    "CLAP",
    "LADM",
    "RR",
    "WORKLOADS",
    "Access",
    "ChipletGPU",
    "ChordPolicy",
    "Kernel",
    "KernelDAG",
    "Plan",
    "SimResult",
    "make_workload",
    "simulate",
    "tile_pages",
]
