"""Benchmark of fb-abstraction: the exact SR with action repetition k = 4 against the k = 1 SR.

Both solve an n x n linear system; the candidate also forms the macro kernel (4 actions, matrix powers).
Sizes: ``smoke`` 8x8, ``quick`` 20x20, ``full`` 40x40 grids (10% obstacles).
"""

from __future__ import annotations

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZE = {"smoke": 8, "quick": 20, "full": 40}


def cases(size: str) -> list[BenchCase]:
    """SR with repetition k = 4 vs without (k = 1), gamma = 0.99."""
    from geode.rl.fb_abstraction.spectra import grid_walk, successor_representation

    n = _SIZE[size]
    p, cells = grid_walk(n, n, 0.1, seed=0)
    return [
        BenchCase(
            f"exact SR of a {n}x{n} grid walk ({len(cells)} states), gamma 0.99",
            candidate=lambda: successor_representation(p, 0.99, 4),
            baselines={"k = 1": lambda: successor_representation(p, 0.99, 1)},
            differs={"*": "k = 1 is a coarser abstraction; its successor representation differs by design"},
        )
    ]
