"""Seeding: one explicit seed gives the same numbers, in numpy and torch alike."""

from __future__ import annotations

import os
import random as _random
from typing import Any

import numpy as np

__all__ = ["as_generator", "seed_everything", "set_single_thread", "torch_generator"]


def as_generator(seed: int | np.random.Generator | None, *, name: str = "seed") -> np.random.Generator:
    """Return a numpy ``Generator`` from an int seed, an existing generator (returned as is) or ``None``.

    ``None`` gives fresh OS entropy: only for interactive use; experiments pass an int.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{name} must be an int, a numpy Generator or None; got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"{name} must be >= 0; got {seed}")
    return np.random.default_rng(int(seed))


def torch_generator(seed: int) -> Any:
    """A ``torch.Generator`` on the CPU seeded with ``seed``."""
    import torch

    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int; got {seed!r}")
    g = torch.Generator()
    g.manual_seed(int(seed))
    return g


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, numpy's legacy global state and torch (if it is imported)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int; got {seed!r}")
    _random.seed(int(seed))
    np.random.seed(int(seed) % 2**32)
    import sys

    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(int(seed))


def set_single_thread() -> None:
    """Use one BLAS/OpenMP/torch thread in this process.

    On small shared machines oversubscribed threads run 5-100x slower; every worker process of the
    claim runner and of the test suite calls this.
    """
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = "1"
    import sys

    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        torch.set_num_threads(1)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # already set once in this process
            pass
