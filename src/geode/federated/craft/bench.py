"""Benchmark of CRAFT: one server aggregation against FedAvg's, and the closed form against an iterative solve.

One server round: ``K`` clients and an MLP of float32 Linear layers (weight and bias of a layer in one
group). FedAvg is the example-weighted mean; CRAFT builds the (K x d_q) update matrix per group, its
K x K Gram matrix, an eigendecomposition and the projection (O(K^2 d) in all), so it costs a few FedAvg
rounds. The paper's point is that the closed form avoids an iterative solver: the second case solves the
same least-norm problem min ||x - g_hat|| s.t. U x = w with SciPy's LSQR to a 1e-10 tolerance.

Sizes: ``smoke`` 10 clients, a 64-32-10 MLP; ``quick`` 100 clients, 784-256-10 (0.2M parameters);
``full`` 100 clients, 784-1024-200-10 (1.01M parameters).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {
    "smoke": (10, ((32, 64), (10, 32))),
    "quick": (100, ((256, 784), (10, 256))),
    "full": (100, ((1024, 784), (200, 1024), (10, 200))),
}


def _round(
    k: int, sizes: Any, seed: int = 0
) -> tuple[list[np.ndarray], list[list[np.ndarray]], list[int], list[list[int]]]:
    rng = np.random.default_rng(seed)
    glob: list[np.ndarray] = []
    for out_f, in_f in sizes:
        glob += [rng.normal(scale=in_f**-0.5, size=(out_f, in_f)).astype(np.float32), np.zeros(out_f, np.float32)]
    common = [rng.normal(scale=1e-3, size=a.shape).astype(np.float32) for a in glob]
    clients = [
        [g + c + rng.normal(scale=1e-3, size=g.shape).astype(np.float32) for g, c in zip(glob, common)]
        for _ in range(k)
    ]
    n = rng.integers(10, 200, size=k).tolist()
    return glob, clients, n, [[2 * i, 2 * i + 1] for i in range(len(sizes))]


def _lsqr(updates: np.ndarray, weights: np.ndarray, reference: np.ndarray) -> np.ndarray:
    from scipy.sparse.linalg import lsqr

    u = updates / np.linalg.norm(updates, axis=1, keepdims=True)
    g_hat = reference / np.linalg.norm(reference)
    y = lsqr(u, weights / weights.sum() - u @ g_hat, atol=1e-10, btol=1e-10, iter_lim=10_000)[0]
    return g_hat + y


def cases(size: str) -> list[BenchCase]:
    """CRAFT's round vs FedAvg's; CRAFT's closed form vs LSQR on the largest group."""
    from geode.federated.craft import CRAFT, craft_direction
    from geode.federated.strategies import FedAvg

    k, sizes = _SIZES[size]
    glob, clients, n, groups = _round(k, sizes)
    n_params = sum(a.size for a in glob)
    craft, fedavg = CRAFT(0.1, groups=groups), FedAvg()
    craft.aggregate(glob, clients, n)  # a reference direction exists from the second round on
    upd = np.stack([np.concatenate([(glob[j] - c[j]).ravel() for j in groups[0]]) for c in clients]).astype(np.float64)
    w = np.asarray(n, dtype=np.float64)
    ref = np.random.default_rng(1).normal(size=upd.shape[1])
    return [
        BenchCase(
            f"one aggregation round, {k} clients, {n_params / 1e6:.2f}M parameters in {len(groups)} groups",
            candidate=lambda: craft.aggregate(glob, clients, n),
            baselines={"FedAvg": lambda: fedavg.aggregate(glob, clients, n)},
            differs={"*": "FedAvg averages the updates; CRAFT aggregates along its conflict-free direction"},
        ),
        BenchCase(
            f"conflict-free direction of one {upd.shape[0]}x{upd.shape[1]} group",
            candidate=lambda: craft_direction(upd, w, ref),
            baselines={"LSQR (iterative least-norm solve)": lambda: _lsqr(upd, w, ref)},
        ),
    ]
