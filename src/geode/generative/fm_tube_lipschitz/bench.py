"""Benchmark of fm-tube-lipschitz: the exact Jacobian by local-window quadrature against a whole-chart grid.

Both sides compute the same exact population Jacobian :math:`\\nabla v(t, x)` at points of the tube near the
peak time :math:`1 - t = \\sigma`; the baseline (the prototype's approach, the strongest simple alternative)
integrates the posterior over a uniform grid of the whole chart fine enough to resolve its width
(spacing ~ 0.2 effective noise), the candidate over a window of 10 Laplace widths around the nearest point.
Sizes: ``smoke`` circle sigma=0.03, ``quick`` circle sigma=0.003 and torus sigma=0.05, ``full`` adds a
torus at sigma=0.02.
"""

from __future__ import annotations

import math

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {
    "smoke": [("circle", 0.03, 4)],
    "quick": [("circle", 0.003, 64), ("torus", 0.05, 16)],
    "full": [("circle", 0.003, 256), ("torus", 0.05, 64), ("torus", 0.02, 16)],
}


def cases(size: str) -> list[BenchCase]:
    """Local-window quadrature vs whole-chart quadrature of the exact Jacobian."""
    import numpy as np

    from geode.generative.fm_tube_lipschitz import Circle, GaussianSmoothedManifold, Torus

    out = []
    for name, sigma, n in _SIZES[size]:
        man = Circle(ambient_dim=3, rotation_seed=1) if name == "circle" else Torus(ambient_dim=4, rotation_seed=3)
        t = 1 - sigma
        local = GaussianSmoothedManifold(man, sigma)
        w = local.effective_noise(t)
        scale = 1.0 if name == "circle" else man.r
        nodes = int(math.ceil(2 * math.pi * scale / (0.2 * w)))
        whole = GaussianSmoothedManifold(man, sigma, nodes=nodes, window=1e12)
        x = local.sample_tube(t, n, np.random.default_rng(0))
        out.append(
            BenchCase(
                f"exact Jacobian at {n} tube points, {name}, sigma={sigma} ({nodes}/axis whole-chart nodes)",
                candidate=lambda f=local, x=x, t=t: f.jacobian(t, x),
                baselines={"whole-chart grid quadrature": lambda f=whole, x=x, t=t: f.jacobian(t, x)},
            )
        )
    return out
