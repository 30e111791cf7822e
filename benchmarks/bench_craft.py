"""Benchmark: CRAFT's aggregation cost per round against FedAvg, and its closed form against an iterative solve.

One server round with 100 clients and a 1.01M-parameter MLP (784-1024-200-10, float32 parameters: six
arrays in three layer groups, one per Linear layer). FedAvg is the example-weighted mean;
CRAFT builds the (K x d_q) update matrix per group, its K x K Gram matrix, an eigendecomposition and
the projection (O(K^2 d) in all). The paper's point is that this closed form avoids an iterative
solver: the second comparison solves the same least-norm problem min ||x - g_hat|| s.t. U x = w with
SciPy's LSQR (O(K d) per iteration) to the same accuracy. Run with
``OMP_NUM_THREADS=1 python benchmarks/bench_craft.py``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from geode.core import speed_ratio  # noqa: E402
from geode.federated import FedAvg  # noqa: E402
from geode.federated.craft import CRAFT, craft_direction  # noqa: E402


def make_round(k: int = 100, sizes=((1024, 784), (200, 1024), (10, 200)), seed: int = 0):
    """Global parameters and ``k`` client models (global + a random update), float32, Linear layers."""
    rng = np.random.default_rng(seed)
    glob = []
    for out_f, in_f in sizes:
        glob += [rng.normal(scale=in_f**-0.5, size=(out_f, in_f)).astype(np.float32), np.zeros(out_f, np.float32)]
    common = [rng.normal(scale=1e-3, size=a.shape).astype(np.float32) for a in glob]
    clients = [
        [g + c + rng.normal(scale=1e-3, size=g.shape).astype(np.float32) for g, c in zip(glob, common)]
        for _ in range(k)
    ]
    n = rng.integers(10, 200, size=k).tolist()
    groups = [[2 * i, 2 * i + 1] for i in range(len(sizes))]
    return glob, clients, n, groups


def lsqr_direction(updates: np.ndarray, weights: np.ndarray, reference: np.ndarray | None, tol: float) -> np.ndarray:
    """The same x* as :func:`craft_direction`, by LSQR on U y = w - U g_hat (minimum-norm y), x = g_hat + y."""
    from scipy.sparse.linalg import lsqr

    u = updates / np.linalg.norm(updates, axis=1, keepdims=True)
    w = weights / weights.sum()
    g_hat = np.zeros(u.shape[1]) if reference is None else reference / np.linalg.norm(reference)
    y = lsqr(u, w - u @ g_hat, atol=tol, btol=tol, iter_lim=10_000)[0]
    return g_hat + y


def main() -> None:
    k = 100
    glob, clients, n, groups = make_round(k)
    n_params = sum(a.size for a in glob)
    print(f"one aggregation round: {k} clients, {n_params / 1e6:.2f}M parameters in {len(groups)} layer groups")
    fedavg = FedAvg()
    craft = CRAFT(0.1, groups=groups)
    craft.aggregate(glob, clients, n)  # a reference direction exists from the second round on
    r = speed_ratio(lambda: craft.aggregate(glob, clients, n), lambda: fedavg.aggregate(glob, clients, n), repeats=3)
    print(
        f"  CRAFT vs FedAvg: CRAFT {r['candidate_s']:.2f} s, FedAvg {r['baseline_s']:.2f} s per round "
        f"-> CRAFT costs {1 / r['speedup']:.1f}x FedAvg (speedup {r['speedup']:.3f})"
    )

    # closed form vs an iterative least-norm solve, on the largest group (784x1024 weights + bias)
    upd = np.stack([np.concatenate([(glob[j] - c[j]).ravel() for j in groups[0]]) for c in clients]).astype(np.float64)
    w = np.asarray(n, dtype=np.float64)
    ref = np.random.default_rng(1).normal(size=upd.shape[1])
    exact = craft_direction(upd, w, ref)
    approx = lsqr_direction(upd, w, ref, tol=1e-10)
    rel = float(np.linalg.norm(approx - exact) / np.linalg.norm(exact))
    r2 = speed_ratio(lambda: craft_direction(upd, w, ref), lambda: lsqr_direction(upd, w, ref, tol=1e-10), repeats=3)
    print(
        f"  closed form vs LSQR on one {upd.shape[0]}x{upd.shape[1]} group: closed form {r2['candidate_s']:.2f} s, "
        f"LSQR {r2['baseline_s']:.2f} s -> speedup {r2['speedup']:.1f}x (LSQR relative difference {rel:.1e})"
    )


if __name__ == "__main__":
    main()
