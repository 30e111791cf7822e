"""Benchmark of REEF-GP: fit + predict of the post-hoc GP against training and running a 5-member ensemble.

The paper's cost claim: REEF-GP adds a GP fit to one trained operator, a deep ensemble trains five. Both
sides include what a user runs: REEF-GP = training one operator + fitting the GP + predicting; the
ensemble = training five operators + predicting. Sizes: ``smoke`` 12 tiny clouds, ``quick`` 40 clouds of
145 points (operator width 32, 200 steps), ``full`` 160 clouds of 545 points (the quick claim's sizes).
"""

from __future__ import annotations

from geode.claims.bench import BenchCase, Target

__all__ = ["cases"]


def cases(size: str) -> list[BenchCase]:
    """Operator + REEF-GP vs a 5-member ensemble, on random Poisson point clouds."""
    import numpy as np

    from geode.uncertainty.reef_gp import REEFGP, DeepEnsemble, PointCloudOperator, train_operator

    s, n, width, steps, gp_steps = {
        "smoke": (12, 41, 8, 10, 5),
        "quick": (40, 145, 32, 200, 40),
        "full": (160, 545, 64, 600, 60),
    }[size]
    rng = np.random.default_rng(0)
    pts = rng.uniform(-1, 1, size=(s, n, 2))
    sdf = 1 - np.hypot(pts[..., 0], pts[..., 1]) / np.sqrt(2)
    x = np.concatenate([pts, sdf[..., None], rng.normal(size=(s, n, 1))], -1).astype(np.float32)
    u = np.sin(2 * pts[..., 0]) * pts[..., 1] * sdf
    half = s // 2

    def reef() -> object:
        op = PointCloudOperator(width=width, seed=0)
        train_operator(op, x[:half], u[:half], steps=steps)
        gp = REEFGP(op, q=16, subset_size=min(600, half * n), n_condition=1000, steps=gp_steps).fit(x[half:], u[half:])
        return gp.predict(x)

    def ensemble() -> object:
        members = []
        for m in range(5):
            op = PointCloudOperator(width=width, seed=m)
            train_operator(op, x[:half], u[:half], steps=steps, seed=m)
            members.append(op)
        return DeepEnsemble(members).predict(x)

    return [
        BenchCase(
            f"train + UQ on {s} clouds of {n} points",
            candidate=reef,
            baselines={"5-member deep ensemble": ensemble},
            target=Target(
                "ratio",
                ">=",
                3.0,
                "issue 44 (the paper's claim): <= 1/3 of a 5-member ensemble's cost",
                baseline="5-member deep ensemble",
            ),
            differs={"*": "a deep ensemble is another uncertainty method: other means and variances by design"},
        )
    ]
