r"""Flow matching near manifolds: tube-local Lipschitz diagnostics (slug ``fm-tube-lipschitz``).

Paper: "Flow matching near manifolds" (NeurIPS 2026 collection; theory only, not public; the closest public
work is Kumar-Wang-Lin, "Flow Matching is Adaptive to Manifold Structures", arXiv 2602.22486). For data
smoothed from a compact manifold with Gaussian noise :math:`\sigma`, the population flow-matching velocity
has, on a tube around the manifold, a Jacobian bound growing only like the inverse effective noise
(:math:`\sigma^{-1}`), not the :math:`\sigma^{-2}`-:math:`\sigma^{-3}` of ambient analyses; tangential
directions grow mildly, normal ones are strongly contractive and the coupling is lower order.

**Components** (:mod:`geode.generative.fm_tube_lipschitz.diagnostics`): the exact population velocity and
Jacobian of :class:`GaussianSmoothedManifold` over :class:`Circle`, :class:`Sphere` and :class:`Torus`
embedded (rotated) in :math:`\mathbb R^D`, by posterior quadrature; :func:`tangent_normal_blocks`,
:func:`ambient_jacobian_bound`, :func:`fit_loglog_slope`. The math and the inferred details are in the
module's docstring; the claim check's set-up, floors and controls in :mod:`.claim`.

**What the check found (quick mode, 3 seeds, every seed): reproduced, with the tangential condition fragile** (it
fails with a narrower tube, the second reading, which gives ``partial``; details below). Over sigma in {0.1, 0.03,
0.01, 0.003} the fitted slope of log max ||J|| (over times 1-t in [1e-4, 0.5] and points of p_t in the tube)
against log sigma is -1.00, -1.00, -0.99 on the circle (R^3), the 2-sphere (R^5) and the torus (R^4) (worst
|slope+1| 0.005, 0.003, 0.010 per seed; threshold 0.2); sigma x max ||J|| is 0.49-0.51 everywhere, the peak sitting
at 1-t ~ sigma, as the notes' prototype found. Controls fail as they must: the isotropic ambient bound has slope
-2.96 (the issue expected -2; with Cov <= (diam/2)^2 I the bound is sigma^-3 at 1-t ~ sigma), and the same exact
Jacobian off the tube (at the manifold's centre, on the medial axis) -2.98. The most negative normal eigenvalue is
-0.49/sigma on every manifold (threshold -0.25/sigma; the tangential block's, the control, is ~0). The tangential
block grows mildly: slope >= -0.20, -0.17, -0.18 per seed (threshold -0.25; the torus sets it, its tangential
maximum 4.8 -> 8-16 over the sigma range, from tube points at ~3 effective-noise widths from the torus at
intermediate times; circle and sphere stay at ~4-6, slopes within +-0.09); the normal block's slope (control) is
-1.00. With the tube at a quarter of the reach instead of half (second reading, reported), the torus' tangential
slope is -0.32 to -0.34, below the bound, and that reading's verdict is ``partial`` in every seed: the tangential
block grows mildly (torus ~2.3 -> ~8-9 over the sigma range, as the abstract's "mild growth" says) rather than
staying bounded. Coupling is lower order (max ~1 on the torus, ~0 on circle and sphere). Floors: quadrature change
with 2x nodes and 1.5x window <= 3e-8, finite differences <= 1e-6, peak inside the time grid in all 12 (manifold,
sigma) cells. A flow-matching MLP (2x128 SiLU, 1500 Adam steps, lr tuned on a validation FM loss: 0.09 at
sigma=0.1, 0.03 at sigma=0.03) reproduces the exact Jacobian's peak only roughly (its max ||J|| is 0.78-0.91x the
exact at sigma=0.1 and 0.65-0.66x at sigma=0.03, median relative error 0.42-0.55): a small network under-resolves
the 1/sigma normal contraction (reported, not judged). Local-window quadrature is 15.8x faster than a whole-chart
grid of the same resolution (circle, sigma=0.003, 64 points; 4.8x on the torus at sigma=0.05) with 0.06x the peak
memory. One quick seed costs ~37-41 CPU seconds (both readings and the MLP).

Examples
--------
The exact flow-matching field of a noisy circle in R^3: its Jacobian peaks like :math:`\sigma^{-1}`, not the
ambient :math:`\sigma^{-3}`, and the normal directions contract at :math:`-1/(2\sigma)`:

>>> import numpy as np
>>> from geode.generative import Circle, GaussianSmoothedManifold, ambient_jacobian_bound, fit_loglog_slope
>>> rng = np.random.default_rng(0)
>>> sigmas, peaks, normal = [0.1, 0.03, 0.01], [], []
>>> for sigma in sigmas:
...     field = GaussianSmoothedManifold(Circle(ambient_dim=3, rotation_seed=0), sigma)
...     t = 1 - sigma  # the Jacobian peaks at 1 - t ~ sigma
...     x = field.sample_tube(t, 16, rng)  # points of p_t near the circle
...     b = field.blocks(t, x)  # tangent/normal blocks of the Jacobian
...     peaks.append(b["norm"].max())
...     normal.append(b["normal_min"].min() * sigma)
>>> round(fit_loglog_slope(sigmas, peaks), 1), np.round(normal, 1).tolist()
(-1.0, [-0.5, -0.5, -0.5])
>>> round(fit_loglog_slope(sigmas, [ambient_jacobian_bound(1 - s, s, 2.0) for s in sigmas]), 1)
-3.0

The same blocks of your own velocity network's Jacobian (any ``J`` of shape (n, D, D)):

>>> import torch
>>> from geode.generative import tangent_normal_blocks
>>> _ = torch.manual_seed(0)
>>> net = torch.nn.Sequential(torch.nn.Linear(3, 32), torch.nn.SiLU(), torch.nn.Linear(32, 3))  # v(x) at this t
>>> J = torch.func.vmap(torch.func.jacrev(net))(torch.as_tensor(x, dtype=torch.float32)).detach().numpy()
>>> _, T = field.manifold.nearest(x / t)  # tangent bases at the nearest points of the circle
>>> sorted(tangent_normal_blocks(J, T))
['coupling', 'norm', 'normal_max', 'normal_min', 'tangent', 'tangent_min']
"""

from __future__ import annotations

from geode.generative.fm_tube_lipschitz.diagnostics import (
    Circle,
    EmbeddedManifold,
    GaussianSmoothedManifold,
    Sphere,
    Torus,
    ambient_jacobian_bound,
    fit_loglog_slope,
    tangent_normal_blocks,
)

__all__ = [
    "Circle",
    "EmbeddedManifold",
    "GaussianSmoothedManifold",
    "Sphere",
    "Torus",
    "ambient_jacobian_bound",
    "fit_loglog_slope",
    "tangent_normal_blocks",
]
