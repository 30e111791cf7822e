"""Triangle meshes of closed surfaces: random geometries, validation, the cotangent Laplacian and shape descriptors.

A surface is a pair ``(vertices, faces)``: ``vertices`` of shape ``(n, 3)`` (float) and ``faces`` of shape
``(m, 3)`` (vertex indices, counter-clockwise seen from outside). :class:`Mesh` validates the pair once and
caches what the descriptors and solvers share (the cotangent Laplacian, the lumped mass, the Laplace-Beltrami
eigenpairs).

**What is required, and why.** Every face has three distinct vertices and a positive area (a degenerate
triangle makes the cotangent weights infinite); every vertex is used by some face (an isolated vertex has zero
mass, so :math:`M` is singular). By default the mesh must also be *watertight*: every edge is shared by exactly
two faces, oriented consistently (each directed edge occurs once). The tasks of this module are posed on closed
surfaces: the screened Poisson problem carries no boundary condition, the heat kernel signature is the diagonal
of the heat kernel of a surface without boundary, and the angle-defect Gaussian curvature is meaningless at a
boundary vertex. ``Mesh(..., require_watertight=False)`` accepts an open (but manifold, consistently oriented)
mesh, on which the cotangent Laplacian is the Neumann Laplacian; :func:`curvature` then refuses it.

The cotangent Laplacian (Pinkall & Polthier 1993; the P1 finite-element stiffness matrix):

.. math::

    L_{ij} = -\\tfrac12 (\\cot \\alpha_{ij} + \\cot \\beta_{ij}) \\ (i \\ne j), \\qquad
    L_{ii} = -\\sum_{j \\ne i} L_{ij},

with :math:`\\alpha_{ij}, \\beta_{ij}` the angles opposite edge :math:`ij`; :math:`L` is symmetric positive
semi-definite with :math:`L\\mathbf 1 = 0` (the FE stiffness matrix, whatever the angles), and :math:`-L`
discretises the Laplace-Beltrami operator weakly. :math:`M` is the lumped (barycentric) mass, a third of the
area of each incident face.

Heat kernel signature (Sun, Ovsjanikov & Guibas 2009): with :math:`L\\phi_k = \\lambda_k M \\phi_k`,
:math:`\\phi_k^\\top M \\phi_l = \\delta_{kl}`, :math:`\\mathrm{HKS}(v, t) = \\sum_k e^{-\\lambda_k t} \\phi_k(v)^2`.
It depends on the metric only, so it is invariant to rigid motions and equivariant to re-ordering the vertices.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg

from geode.core import as_generator, check_array, check_int, check_real, sign_fixed_qr

__all__ = [
    "Mesh",
    "check_mesh",
    "cotan_laplacian",
    "curvature",
    "deformed_sphere",
    "heat_kernel_signature",
    "icosphere",
    "random_geometry",
    "random_rotation",
    "superquadric",
    "torus",
    "vertex_normals",
]


def check_mesh(vertices: Any, faces: Any, *, require_watertight: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Validate a triangle mesh and return ``(vertices, faces)`` as float64 / int64 arrays.

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
        Vertex positions (finite).
    faces : array_like of int, shape (m, 3)
        Vertex indices of each triangle, in ``[0, n)``.
    require_watertight : bool
        Require a closed, consistently oriented, edge-manifold surface (every edge in exactly two faces,
        each directed edge once). See the module docstring for why the tasks need it.

    Raises
    ------
    ValueError
        Naming the first offending face or edge: wrong shapes, indices out of range, a repeated vertex in a
        face, a degenerate (zero-area) triangle, an unreferenced vertex, a non-manifold edge, inconsistent
        orientation, or (with ``require_watertight``) a boundary edge.
    """
    v = check_array("vertices", vertices, ndim=2)
    if v.shape[1] != 3 or v.shape[0] < 4:
        raise ValueError(f"vertices must have shape (n, 3) with n >= 4; got {v.shape}")
    f_raw = np.asarray(faces)
    if f_raw.ndim != 2 or f_raw.shape[1] != 3 or f_raw.shape[0] < 1:
        raise ValueError(f"faces must have shape (m, 3) with m >= 1; got {f_raw.shape}")
    if not np.issubdtype(f_raw.dtype, np.integer):
        raise TypeError(f"faces must hold integer vertex indices; got dtype {f_raw.dtype}")
    f = f_raw.astype(np.int64)
    n = v.shape[0]
    if f.min() < 0 or f.max() >= n:
        raise ValueError(f"faces index vertices outside [0, {n}); found {f.min()}..{f.max()}")
    rep = (f[:, 0] == f[:, 1]) | (f[:, 1] == f[:, 2]) | (f[:, 0] == f[:, 2])
    if rep.any():
        i = int(np.flatnonzero(rep)[0])
        raise ValueError(f"faces[{i}] = {f[i].tolist()} repeats a vertex (degenerate triangle)")
    cross = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    area2 = np.linalg.norm(cross, axis=1)
    scale = float(np.mean(np.linalg.norm(v[f[:, 1]] - v[f[:, 0]], axis=1)) ** 2)
    bad = area2 <= 1e-12 * max(scale, 1e-300)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"faces[{i}] = {f[i].tolist()} is a degenerate (zero-area) triangle")
    used = np.zeros(n, bool)
    used[f.ravel()] = True
    if not used.all():
        raise ValueError(f"vertex {int(np.flatnonzero(~used)[0])} is not used by any face (its mass would be zero)")
    directed = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    key = directed[:, 0] * n + directed[:, 1]
    uniq, counts = np.unique(key, return_counts=True)
    if (counts > 1).any():
        k = int(uniq[counts > 1][0])
        raise ValueError(
            f"directed edge ({k // n}, {k % n}) occurs in more than one face: the faces are not consistently "
            "oriented, or the edge is non-manifold"
        )
    undirected = np.sort(directed, axis=1)
    ukey, ucount = np.unique(undirected[:, 0] * n + undirected[:, 1], return_counts=True)
    if (ucount > 2).any():
        k = int(ukey[ucount > 2][0])
        raise ValueError(f"edge ({k // n}, {k % n}) is shared by more than two faces (non-manifold)")
    if require_watertight and (ucount == 1).any():
        k = int(ukey[ucount == 1][0])
        raise ValueError(
            f"the mesh is not watertight: edge ({k // n}, {k % n}) belongs to one face only "
            f"({int((ucount == 1).sum())} boundary edges). The PDE tasks and descriptors here are posed on "
            "closed surfaces; pass require_watertight=False for the Neumann Laplacian of an open mesh"
        )
    return v, f


def cotan_laplacian(vertices: Any, faces: Any) -> tuple[sp.csr_matrix, np.ndarray]:
    """The cotangent Laplacian (stiffness) ``L`` and lumped mass ``m`` (the diagonal of ``M``) of a mesh.

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
    faces : array_like of int, shape (m, 3)
        A mesh that :func:`check_mesh` accepts (watertightness is not required here).

    Returns
    -------
    L : scipy.sparse.csr_matrix, shape (n, n)
        Symmetric positive semi-definite, ``L @ 1 = 0``.
    m : numpy.ndarray, shape (n,)
        Lumped vertex areas (a third of each incident face's area); ``m.sum()`` is the surface area.

    Examples
    --------
    >>> v, f = icosphere(1)
    >>> L, m = cotan_laplacian(v, f)
    >>> bool(abs(L @ np.ones(len(v))).max() < 1e-10)
    True
    """
    v, f = check_mesh(vertices, faces, require_watertight=False)
    n = v.shape[0]
    rows, cols, vals = [], [], []
    for k in range(3):
        i, j, o = f[:, (k + 1) % 3], f[:, (k + 2) % 3], f[:, k]  # edge (i, j), opposite vertex o
        a, b = v[i] - v[o], v[j] - v[o]
        cot = np.einsum("ij,ij->i", a, b) / np.linalg.norm(np.cross(a, b), axis=1)
        w = 0.5 * cot
        rows += [i, j]
        cols += [j, i]
        vals += [-w, -w]
    r, c, x = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    off = sp.coo_matrix((x, (r, c)), shape=(n, n)).tocsr()
    L = (off - sp.diags(np.asarray(off.sum(axis=1)).ravel())).tocsr()
    area = 0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1)
    m = np.bincount(f.ravel(), weights=np.repeat(area / 3.0, 3), minlength=n)
    return L, m


def vertex_normals(vertices: Any, faces: Any) -> np.ndarray:
    """Unit vertex normals: the area-weighted mean of the incident faces' normals, shape ``(n, 3)``."""
    v, f = check_mesh(vertices, faces, require_watertight=False)
    fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])  # |fn| = 2 area
    vn = np.zeros_like(v)
    for k in range(3):
        np.add.at(vn, f[:, k], fn)
    return vn / np.linalg.norm(vn, axis=1, keepdims=True)


class Mesh:
    """A validated triangle mesh with its cotangent Laplacian, mass, normals and (lazily) its eigenpairs.

    Parameters
    ----------
    vertices : array_like, shape (n, 3)
    faces : array_like of int, shape (m, 3)
    require_watertight : bool
        See :func:`check_mesh` (default True: the tasks here are posed on closed surfaces).
    orient_outward : bool
        Flip every face if the signed volume is negative, so normals point outwards (closed meshes only).

    Attributes
    ----------
    vertices, faces, L (sparse stiffness), mass (lumped, shape (n,)), normals (unit, outward).

    Examples
    --------
    >>> m = Mesh(*icosphere(2))
    >>> m.n_vertices, round(m.area, 2)
    (162, 12.33)
    """

    def __init__(
        self, vertices: Any, faces: Any, *, require_watertight: bool = True, orient_outward: bool = True
    ) -> None:
        v, f = check_mesh(vertices, faces, require_watertight=require_watertight)
        self.watertight = bool(require_watertight) or _is_closed(f, v.shape[0])
        if orient_outward and self.watertight and _signed_volume(v, f) < 0:
            f = f[:, ::-1].copy()
        self.vertices, self.faces = v, f
        self.L, self.mass = cotan_laplacian(v, f)
        self.normals = vertex_normals(v, f)
        self._eig: tuple[np.ndarray, np.ndarray] | None = None
        self._edges: np.ndarray | None = None

    @property
    def n_vertices(self) -> int:
        return int(self.vertices.shape[0])

    @property
    def area(self) -> float:
        return float(self.mass.sum())

    def edges(self) -> np.ndarray:
        """Undirected edges ``(e, 2)`` with ``i < j``, sorted (cached)."""
        if self._edges is None:
            f = self.faces
            e = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
            self._edges = np.unique(e, axis=0)
        return self._edges.copy()

    def eigenpairs(self, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` smallest generalised eigenpairs of ``L phi = lambda M phi`` (all of them if ``k`` is None).

        Dense ``scipy.linalg.eigh`` up to 2,000 vertices (all pairs, cached), shift-invert ``eigsh`` beyond.
        Eigenvectors are M-orthonormal. Returns ``(lam (k,), phi (n, k))``, ascending.
        """
        n = self.n_vertices
        if k is not None:
            k = check_int("k", k, low=1, high=n)
        if n <= 2000:
            if self._eig is None:
                s = 1.0 / np.sqrt(self.mass)
                a = (self.L.toarray() * s[:, None]) * s[None, :]
                lam, u = scipy.linalg.eigh(a)
                self._eig = (np.maximum(lam, 0.0), u * s[:, None])
            lam, phi = self._eig
            return (lam, phi) if k is None else (lam[:k], phi[:, :k])
        kk = min(k or 100, n - 1)
        lam, phi = scipy.sparse.linalg.eigsh(self.L.tocsc(), k=kk, M=sp.diags(self.mass).tocsc(), sigma=-1e-8)
        order = np.argsort(lam)
        return np.maximum(lam[order], 0.0), phi[:, order]


def _is_closed(f: np.ndarray, n: int) -> bool:
    e = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    _, c = np.unique(e[:, 0] * n + e[:, 1], return_counts=True)
    return bool((c == 2).all())


def _signed_volume(v: np.ndarray, f: np.ndarray) -> float:
    return float(np.einsum("ij,ij->i", v[f[:, 0]], np.cross(v[f[:, 1]], v[f[:, 2]])).sum() / 6.0)


def _as_mesh(mesh: Any) -> Mesh:
    if not isinstance(mesh, Mesh):
        raise TypeError(f"mesh must be a geode Mesh (build one with Mesh(vertices, faces)); got {type(mesh).__name__}")
    return mesh


def heat_kernel_signature(mesh: Mesh, times: Any, *, k: int | None = None, log: bool = False) -> np.ndarray:
    """Heat kernel signature :math:`\\sum_k e^{-\\lambda_k t}\\phi_k(v)^2` at each vertex and time, ``(n, T)``.

    Parameters
    ----------
    mesh : Mesh
    times : array_like of float > 0, shape (T,)
        Diffusion times.
    k : int, optional
        Number of eigenpairs (all of them, i.e. the exact discrete heat kernel diagonal, if None). A truncation
        that cuts through a repeated eigenvalue makes the signature depend on the eigenbasis; the full sum
        does not.
    log : bool
        Return ``log HKS`` (the usual scaling for learning).
    """
    mesh = _as_mesh(mesh)
    t = check_array("times", times, ndim=1)
    if t.size == 0 or (t <= 0).any():
        raise ValueError("times must be a non-empty list of positive diffusion times")
    lam, phi = mesh.eigenpairs(k)
    h = (phi**2) @ np.exp(-np.outer(lam, t))
    return np.log(np.maximum(h, 1e-300)) if log else h


def curvature(mesh: Mesh) -> tuple[np.ndarray, np.ndarray]:
    """Mean and Gaussian curvature at each vertex, ``(H (n,), K (n,))`` (unit sphere: H = K = 1).

    :math:`H = \\tfrac12 \\langle M^{-1} L x, n\\rangle` (since :math:`\\Delta x = -2Hn`) and the angle defect
    :math:`K = (2\\pi - \\sum \\theta)/m_v` over the lumped area. Requires a closed mesh (the angle defect is not a
    curvature at a boundary vertex).
    """
    mesh = _as_mesh(mesh)
    if not mesh.watertight:
        raise ValueError("curvature needs a watertight mesh: the angle defect is undefined at boundary vertices")
    v, f = mesh.vertices, mesh.faces
    hn = (mesh.L @ v) / mesh.mass[:, None]
    h = 0.5 * np.einsum("ij,ij->i", hn, mesh.normals)
    ang = np.zeros(mesh.n_vertices)
    for k in range(3):
        a, b = v[f[:, (k + 1) % 3]] - v[f[:, k]], v[f[:, (k + 2) % 3]] - v[f[:, k]]
        cos = np.einsum("ij,ij->i", a, b) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
        np.add.at(ang, f[:, k], np.arccos(np.clip(cos, -1.0, 1.0)))
    return h, (2 * math.pi - ang) / mesh.mass


# --------------------------------------------------------------------------------------------------
# Random geometries
# --------------------------------------------------------------------------------------------------

_ICO_CACHE: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def icosphere(subdivisions: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """The unit icosphere: ``10 * 4**s + 2`` vertices (162 at s = 2, 642 at s = 3), faces outward."""
    s = check_int("subdivisions", subdivisions, low=0, high=6)
    if s not in _ICO_CACHE:
        p = (1 + 5**0.5) / 2
        v = [[-1, p, 0], [1, p, 0], [-1, -p, 0], [1, -p, 0], [0, -1, p], [0, 1, p]]
        v += [[0, -1, -p], [0, 1, -p], [p, 0, -1], [p, 0, 1], [-p, 0, -1], [-p, 0, 1]]
        faces = [[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4], [11, 10, 2]]
        faces += [[10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9], [4, 9, 5]]
        faces += [[2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]]
        verts = [np.array(x, float) / np.linalg.norm(x) for x in v]
        for _ in range(s):
            cache: dict[tuple[int, int], int] = {}

            def mid(a: int, b: int, cache: dict[tuple[int, int], int] = cache) -> int:
                key = (min(a, b), max(a, b))
                if key not in cache:
                    m = verts[a] + verts[b]
                    verts.append(m / np.linalg.norm(m))
                    cache[key] = len(verts) - 1
                return cache[key]

            new = []
            for a, b, c in faces:
                ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
                new += [[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]
            faces = new
        _ICO_CACHE[s] = (np.array(verts), np.array(faces, dtype=np.int64))
    v0, f0 = _ICO_CACHE[s]
    return v0.copy(), f0.copy()


def random_rotation(seed: Any) -> np.ndarray:
    """A uniformly random rotation matrix (QR of a Gaussian matrix, sign-fixed, det +1)."""
    q, _ = sign_fixed_qr(as_generator(seed).standard_normal((3, 3)))  # Haar on O(3)
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def deformed_sphere(seed: Any, *, subdivisions: int = 2, amplitude: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """An icosphere with radius :math:`1 + a\\,g(x)/\\max|g|`, g a sum of 6 random plane waves (|k| <= 2.5)."""
    rng = as_generator(seed)
    a = check_real("amplitude", amplitude, low=0.0, high=0.6)
    v, f = icosphere(subdivisions)
    k = rng.normal(size=(6, 3))
    k *= rng.uniform(0.8, 2.5, (6, 1)) / np.linalg.norm(k, axis=1, keepdims=True)
    g = (rng.normal(size=6) * np.sin(v @ k.T + rng.uniform(0, 2 * np.pi, 6))).sum(1)
    r = 1.0 + a * g / np.abs(g).max()
    return v * r[:, None], f


def superquadric(
    seed: Any, *, subdivisions: int = 2, exponent: tuple[float, float] = (1.6, 4.0)
) -> tuple[np.ndarray, np.ndarray]:
    """A superellipsoid: icosphere directions scaled to the unit sphere of the p-norm, then axis scales.

    ``p`` is drawn uniformly in ``exponent`` (p = 2: ellipsoid; larger: boxier; below 2: pointier), the axis
    scales in [0.6, 1.2].
    """
    rng = as_generator(seed)
    if isinstance(exponent, (str, bytes)) or not hasattr(exponent, "__len__") or len(exponent) != 2:
        raise ValueError(f"exponent must be a (lo, hi) pair with 1.2 <= lo <= hi <= 10; got {exponent!r}")
    lo, hi = exponent
    if not 1.2 <= lo <= hi <= 10.0:
        raise ValueError(f"exponent must be (lo, hi) with 1.2 <= lo <= hi <= 10; got {exponent!r}")
    v, f = icosphere(subdivisions)
    p = rng.uniform(lo, hi)
    v = v / ((np.abs(v) ** p).sum(1, keepdims=True) ** (1.0 / p))
    return v * rng.uniform(0.6, 1.2, 3), f


def torus(
    seed: Any = None, *, n_major: int = 20, n_minor: int = 8, radii: tuple[float, float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A torus of major radius R and minor radius r (drawn in [0.6, 0.9] x [0.2, 0.35] unless ``radii``)."""
    rng = as_generator(seed)
    nu = check_int("n_major", n_major, low=3)
    nv = check_int("n_minor", n_minor, low=3)
    if radii is None:
        big, small = rng.uniform(0.6, 0.9), rng.uniform(0.2, 0.35)
    else:
        if isinstance(radii, (str, bytes)) or not hasattr(radii, "__len__") or len(radii) != 2:
            raise ValueError(f"radii must be a pair (R, r) with 0 < r < R; got {radii!r}")
        big, small = (check_real("radii[0]", radii[0], low=0.0, low_inclusive=False), check_real("radii[1]", radii[1]))
        if not 0 < small < big:
            raise ValueError(f"radii must be (R, r) with 0 < r < R; got {radii!r}")
    u = 2 * np.pi * np.arange(nu) / nu
    w = 2 * np.pi * np.arange(nv) / nv
    uu, ww = np.meshgrid(u, w, indexing="ij")
    v = np.stack(
        [(big + small * np.cos(ww)) * np.cos(uu), (big + small * np.cos(ww)) * np.sin(uu), small * np.sin(ww)], -1
    ).reshape(-1, 3)
    idx = np.arange(nu * nv).reshape(nu, nv)
    a, b = idx, np.roll(idx, -1, 0)
    c, d = np.roll(idx, -1, 1), np.roll(np.roll(idx, -1, 0), -1, 1)
    faces = np.concatenate([np.stack([a, b, d], -1).reshape(-1, 3), np.stack([a, d, c], -1).reshape(-1, 3)])
    return v, faces


KINDS = ("deformed_sphere", "superquadric", "torus")


def random_geometry(seed: Any, *, kind: str | None = None, resolution: int = 2) -> Mesh:
    """A random closed geometry, randomly rotated: a deformed sphere, a superquadric or a torus.

    ``resolution`` is the icosphere subdivision level (2: 162 vertices); tori get a comparable vertex count.
    """
    rng = as_generator(seed)
    res = check_int("resolution", resolution, low=1, high=5)
    if kind is None:
        kind = KINDS[int(rng.integers(0, 3))]
    if kind == "deformed_sphere":
        v, f = deformed_sphere(rng, subdivisions=res)
    elif kind == "superquadric":
        v, f = superquadric(rng, subdivisions=res)
    elif kind == "torus":
        n = 10 * 4**res + 2
        nv = max(4, round(math.sqrt(n / 2.5)))
        v, f = torus(rng, n_major=max(6, round(n / nv)), n_minor=nv)
    else:
        raise ValueError(f"kind must be one of {KINDS} or None; got {kind!r}")
    v = v @ random_rotation(rng).T
    return Mesh(v, f)
