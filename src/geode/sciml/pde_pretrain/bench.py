"""Benchmark of the PDE-pretraining hot paths: the mesh network's training step and the FE ground-truth solve.

Case 1: one forward + backward pass (MSE) of :class:`MeshGNN` on a batch of meshes against the same-width
per-vertex MLP (:class:`PointMLP`, no message passing) on the same points: the price of the mesh coupling.
Case 2: the screened-Poisson solve :math:`(L + \\alpha M) u = M f` by sparse LU (what the claim's ground
truth uses) against a dense ``numpy.linalg.solve`` of the same system.
Sizes: ``smoke`` 2 meshes of 42 vertices / 642-vertex solve, ``quick`` 16 x 162 / 2,562, ``full`` 64 x 642 / 10,242.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.claims.bench import BenchCase, Target

__all__ = ["cases"]

_SIZES = {"smoke": (1, 2, 3), "quick": (2, 16, 4), "full": (3, 64, 5)}


def cases(size: str) -> list[BenchCase]:
    """The mesh-GNN step against a per-vertex MLP, and the sparse FE solve against a dense one."""
    import torch

    from geode.sciml.pde_pretrain import MeshGNN, PointMLP, collate, icosphere, node_features, random_geometry
    from geode.sciml.pde_pretrain.mesh import Mesh
    from geode.sciml.pde_pretrain.solvers import screened_poisson

    res, n_meshes, solve_res = _SIZES[size]
    meshes = [random_geometry(i, resolution=res) for i in range(n_meshes)]
    g = collate(meshes, [node_features(m) for m in meshes])
    y = torch.randn(g.x.shape[0], 1, generator=torch.Generator().manual_seed(0))
    gnn, mlp = MeshGNN(10, 1, hidden=32, layers=4), PointMLP(10, 1, hidden=32, layers=4)

    def step(net: Any) -> Any:
        def go() -> float:
            net.zero_grad()
            loss = torch.mean((net(g) - y) ** 2)
            loss.backward()
            return float(loss.detach())

        return go

    big = Mesh(*icosphere(solve_res))
    f = big.vertices[:, 2]
    dense_a = big.L.toarray() + 2.0 * np.diag(big.mass)

    return [
        BenchCase(
            f"forward + backward, {n_meshes} meshes x {meshes[0].n_vertices} vertices, hidden 32, 4 blocks",
            candidate=step(gnn),
            target=Target(
                "ratio",
                ">=",
                0.15,
                "issue 44: MeshGNN fwd+bwd >= 0.15x the per-vertex MLP",
                baseline="per-vertex MLP (no message passing)",
            ),
            baselines={"per-vertex MLP (no message passing)": step(mlp)},
            differs={"*": "the per-vertex MLP has no message passing: another network by design"},
        ),
        BenchCase(
            f"screened Poisson solve on {big.n_vertices} vertices",
            candidate=lambda: screened_poisson(big, f, 2.0),
            baselines={"dense numpy.linalg.solve": lambda: np.linalg.solve(dense_a, big.mass * f)},
        ),
    ]
