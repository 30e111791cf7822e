r"""Poisson problems on random star-shaped domains, solved with P1 finite elements (scikit-fem).

A domain is the unit disk's mesh mapped radially, :math:`x \mapsto R(\theta)\, x`, with
:math:`R(\theta) = 1 + \sum_{k=1}^{K} a_k \cos k\theta + b_k \sin k\theta`, :math:`a_k, b_k \sim
\mathcal{U}(-\epsilon, \epsilon)/k` (``eps`` sets the shape variability; a larger ``eps`` is the geometry
shift). The source is a smooth random field :math:`f(x) = c_0 + c_1 x + c_2 y + c_3 \exp(-|x - m|^2 / 0.1)`,
and :math:`-\Delta u = f` in the domain, :math:`u = 0` on its boundary. Each sample is a point cloud: node
coordinates, a signed distance proxy :math:`1 - |x| / R(\theta)` (0 on the boundary, 1 at the centre), the
source at the nodes and the solution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from geode.core.validation import check_array, check_int, check_real

__all__ = ["PoissonSample", "poisson_dataset", "solve_poisson"]


@dataclass
class PoissonSample:
    """One problem: ``points`` (n, 2), ``sdf`` (n,), ``source`` (n,), ``solution`` (n,)."""

    points: np.ndarray
    sdf: np.ndarray
    source: np.ndarray
    solution: np.ndarray


def _require_skfem() -> None:
    try:
        import skfem  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("the Poisson generator needs scikit-fem: pip install 'geode[uq]'") from e


def solve_poisson(points: np.ndarray, triangles: np.ndarray, source: np.ndarray) -> np.ndarray:
    r"""P1 solution of :math:`-\Delta u = f` with :math:`u = 0` on the boundary; ``source`` at the nodes.

    ``points`` (2, N) are the node coordinates, ``triangles`` (3, T) the node indices of each triangle (as
    scikit-fem's ``MeshTri.p`` and ``.t``), ``source`` (N,) the right-hand side at the nodes.
    """
    _require_skfem()
    from skfem import Basis, BilinearForm, ElementTriP1, LinearForm, MeshTri, asm, condense, solve
    from skfem.helpers import dot, grad

    pts = check_array("points", points, shape=(2, None))
    if pts.shape[1] < 3:
        raise ValueError(f"points must hold at least 3 nodes, shape (2, N >= 3); got {pts.shape}")
    tri = check_array("triangles", triangles, shape=(3, None), dtype=None)
    if not np.issubdtype(tri.dtype, np.integer):
        raise TypeError(f"triangles must be an integer array of node indices; got dtype {tri.dtype}")
    if tri.size == 0 or tri.min() < 0 or tri.max() >= pts.shape[1]:
        raise ValueError(f"triangles must be non-empty node indices in [0, {pts.shape[1]}); got shape {tri.shape}")
    src = check_array("source", source, shape=(pts.shape[1],))
    mesh = MeshTri(pts, np.asarray(triangles))
    basis = Basis(mesh, ElementTriP1())
    f = basis.interpolate(src)

    @BilinearForm
    def laplace(u, v, _):
        return dot(grad(u), grad(v))

    @LinearForm
    def load(v, w):
        return w["f"] * v

    a = asm(laplace, basis)
    b = asm(load, basis, f=f)
    return solve(*condense(a, b, D=mesh.boundary_nodes()))


def poisson_dataset(
    n: int, *, eps: float = 0.15, modes: int = 4, refine: int = 4, seed: int = 0
) -> list[PoissonSample]:
    """``n`` random star-shaped Poisson problems (``refine`` = 4: 545 nodes each)."""
    _require_skfem()
    from skfem import MeshTri

    n = check_int("n", n, low=1)
    eps = check_real("eps", eps, low=0.0, high=0.9 / max(1.0, sum(1 / k for k in range(1, modes + 1))))
    rng = np.random.default_rng(seed)
    disk = MeshTri.init_circle(check_int("refine", refine, low=1, high=6))
    p0, tri = disk.p, disk.t
    theta = np.arctan2(p0[1], p0[0])
    rad = np.hypot(p0[0], p0[1])
    out = []
    k = np.arange(1, modes + 1)
    for _ in range(n):
        a, b = rng.uniform(-eps, eps, (2, modes)) / k
        big_r = 1 + (a[:, None] * np.cos(k[:, None] * theta) + b[:, None] * np.sin(k[:, None] * theta)).sum(0)
        pts = p0 * big_r
        c = rng.uniform(-1, 1, 4) * np.array([1.0, 1.0, 1.0, 3.0])
        c[0] += 2.0
        m = rng.uniform(-0.5, 0.5, 2)
        f = c[0] + c[1] * pts[0] + c[2] * pts[1] + c[3] * np.exp(-((pts[0] - m[0]) ** 2 + (pts[1] - m[1]) ** 2) / 0.1)
        u = solve_poisson(pts, tri, f)
        out.append(PoissonSample(points=pts.T.copy(), sdf=1 - rad / 1.0, source=f, solution=u))
    return out
