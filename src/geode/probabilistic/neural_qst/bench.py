"""Benchmark of neural QST: the max-sliced W1 and one training step against its baselines.

Case 1: :func:`max_sliced_w1` against POT's ``ot.max_sliced_wasserstein_distance`` (p = 1, the same
directions) between two 2-D point clouds. Case 2: one step of the msW1 network (forward, loss, backward,
Adam) against one iMLE iteration and one step of the same network on the NLL, on the claim's measurement
model (two-mode cat, 4 x 4 settings, 100 shots each; smoke uses a smaller problem).
"""

from __future__ import annotations

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {
    "smoke": dict(points=500, cutoff=3, bins=12, n_phases=3),
    "quick": dict(points=5000, cutoff=6, bins=24, n_phases=4),
    "full": dict(points=50000, cutoff=10, bins=48, n_phases=8),
}


def cases(size: str) -> list[BenchCase]:
    """Max-sliced W1 (ours vs POT) and one QST step (msW1 network vs iMLE and NLL network)."""
    import numpy as np
    import ot
    import torch

    from geode.probabilistic.neural_qst import (
        MaxSlicedW1Loss,
        MeasurementModel,
        NeuralWavefunction,
        QuadratureGrid,
        imle,
        max_sliced_w1,
        simulate_homodyne,
        two_mode_cat,
        uniform_directions,
    )
    from geode.probabilistic.neural_qst.qst import nll

    cfg = _SIZES[size]
    rng = np.random.default_rng(0)
    n = cfg["points"]
    X, Y = rng.standard_normal((n, 2)), rng.standard_normal((n, 2)) * [2.0, 0.5]
    P = uniform_directions(32)
    N = cfg["cutoff"]
    th = np.pi * np.arange(cfg["n_phases"]) / cfg["n_phases"]
    phases = np.array([(a, b) for a in th for b in th])
    grid = QuadratureGrid(cfg["bins"], 4.5, eta=0.9, sigma_e=0.05)
    psi = two_mode_cat(1.0, N)
    data = simulate_homodyne(psi, phases, 100, grid, seed=0)
    model = MeasurementModel(grid, N, phases)
    loss = MaxSlicedW1Loss(grid, data.samples, 16)
    counts = torch.as_tensor(data.counts)
    net = NeuralWavefunction(model.dim, 128, seed=0)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)

    def step(objective):
        def run() -> float:
            opt.zero_grad(set_to_none=True)
            value = objective(model.probs_pure(net()))
            value.backward()
            opt.step()
            return float(value.detach())

        return run

    return [
        BenchCase(
            f"max-sliced W1, 2 x {n} points in 2-D, 32 directions",
            candidate=lambda: max_sliced_w1(X, Y, projections=P),
            baselines={
                "POT max_sliced_wasserstein_distance": lambda: ot.max_sliced_wasserstein_distance(
                    X, Y, projections=P, p=1
                )
            },
        ),
        BenchCase(
            f"one QST iteration, dimension {model.dim}, {len(phases)} settings x 100 shots",
            candidate=step(loss),
            baselines={
                "iMLE iteration": lambda: imle(model, data, iterations=1, n_checkpoints=1),
                "network on NLL step": step(lambda p: nll(p, counts)),
            },
            differs={"*": "other reconstruction methods (iMLE, a network on the NLL) by design"},
        ),
    ]
