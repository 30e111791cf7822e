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
module's docstring.
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
