"""The synthetic repacking benchmark: volumes of random objects, labels that need 3-D context, and packings.

A volume of :math:`S^3` voxels becomes :math:`N = S^3` tokens once *packed*: a packing is a bijection
:math:`\\pi` from sequence positions :math:`t = 0, \\dots, N-1` to grid points, token :math:`t` carrying the voxel
at :math:`g_{\\pi(t)}`. The same volume can be packed in many ways:

- ``raster_zyx`` (C order, the training layout), ``raster_xyz`` and ``raster_yzx``: the three axes in another
  nesting;
- ``morton``: Z-order, sorted by the bit interleaving of (z, y, x) (:func:`morton_index`);
- ``hilbert``: sorted by the index along the 3-D Hilbert curve of the enclosing :math:`2^k` cube
  (:func:`hilbert_index`);
- ``block_shuffle``: the grid cut into cubes of edge ``block``, each packed in raster order, the cubes in a
  random order (a bricked memory layout);
- ``random``: a uniformly random permutation.

Volumes (:func:`repacking_volumes`) hold 2-5 random spheres and axis-aligned boxes, at least one voxel away from
the faces of the grid. The input is the occupancy; the labels (:func:`boundary_labels`) need the 6 face
neighbours in 3-D, direction included:

==  ==========  =======================================================================
0   background  empty voxel
1   interior    occupied, all 6 face neighbours occupied
2   z-surface   occupied, the voxel above or below (z +- 1) empty
3   xy-surface  occupied, both z neighbours occupied, some y +- 1 or x +- 1 neighbour empty
==  ==========  =======================================================================

so a model must know which neighbour lies along which grid axis. The metric is the macro Dice over the three
object classes (:func:`macro_dice`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core import as_generator, check_choice, check_int

__all__ = [
    "CLASS_NAMES",
    "PACKINGS",
    "boundary_labels",
    "grid_coords",
    "hilbert_index",
    "macro_dice",
    "morton_index",
    "packing_order",
    "repacking_volumes",
]

PACKINGS: tuple[str, ...] = ("raster_zyx", "raster_xyz", "raster_yzx", "morton", "hilbert", "block_shuffle", "random")
"""Packings of the benchmark; ``raster_zyx`` is the training layout."""

CLASS_NAMES: tuple[str, ...] = ("background", "interior", "z-surface", "xy-surface")


def _check_shape(shape: Any) -> tuple[int, int, int]:
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"shape must be a sequence of 3 ints; got {type(shape).__name__}") from None
    if len(dims) != 3:
        raise ValueError(f"shape must have 3 entries (S_z, S_y, S_x); got {dims}")
    return tuple(check_int(f"shape[{a}]", s, low=1) for a, s in enumerate(dims))  # type: ignore[return-value]


def _check_points(coords: Any) -> np.ndarray:
    c = np.asarray(coords)
    if not np.issubdtype(c.dtype, np.integer):
        raise TypeError(f"coords must hold integers; got dtype {c.dtype}")
    if c.ndim != 2 or c.shape[1] != 3:
        raise ValueError(f"coords must have shape (N, 3); got {c.shape}")
    if c.size and c.min() < 0:
        raise ValueError(f"coords must be >= 0; got minimum {c.min()}")
    return c.astype(np.int64)


def grid_coords(shape: tuple[int, int, int]) -> np.ndarray:
    """All grid points of a ``(S_z, S_y, S_x)`` box in raster (z, y, x) order, shape ``(N, 3)``, ``int64``.

    Examples
    --------
    >>> grid_coords((1, 2, 2)).tolist()
    [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1]]
    """
    sz, sy, sx = _check_shape(shape)
    return np.stack(np.meshgrid(np.arange(sz), np.arange(sy), np.arange(sx), indexing="ij"), -1).reshape(-1, 3)


def _bits_for(c: np.ndarray) -> int:
    return max(1, int(c.max()).bit_length()) if c.size else 1


def morton_index(coords: Any, bits: int | None = None) -> np.ndarray:
    """Z-order (Morton) code of integer points: the bits of z, y, x interleaved, z most significant.

    .. math:: m(z, y, x) = \\sum_{i < k} \\big(z_i 2^{3i+2} + y_i 2^{3i+1} + x_i 2^{3i}\\big)

    for the binary digits :math:`z_i, y_i, x_i` and :math:`k` = ``bits`` (default: enough for the largest entry).

    Parameters
    ----------
    coords : array_like of int
        Shape ``(N, 3)``, entries >= 0.
    bits : int, optional
        Bits per axis (<= 21).

    Returns
    -------
    numpy.ndarray
        ``int64`` codes, shape ``(N,)``; a bijection of :math:`[0, 2^k)^3` onto :math:`[0, 8^k)`.
    """
    c = _check_points(coords)
    k = _bits_for(c) if bits is None else check_int("bits", bits, low=1, high=21)
    if c.size and c.max() >= 2**k:
        raise ValueError(f"coords must be < 2**bits = {2**k}; got maximum {c.max()}")
    code = np.zeros(c.shape[0], dtype=np.int64)
    for i in range(k):
        for a in range(3):
            code |= ((c[:, a] >> i) & 1) << (3 * i + 2 - a)
    return code


def hilbert_index(coords: Any, bits: int | None = None) -> np.ndarray:
    """Index of integer points along the 3-D Hilbert curve of the cube :math:`[0, 2^k)^3`.

    Skilling's algorithm ("Programming the Hilbert curve", AIP Conf. Proc. 707, 2004): the axes are turned into
    the curve's *transposed* index by undoing, from the top bit down, the reflections and axis exchanges of each
    level, Gray-decoding, and interleaving the bits (axis 0 = z most significant). Consecutive indices are
    face-adjacent grid points (unit :math:`\\ell_1` steps), which is what makes the curve local.

    Parameters
    ----------
    coords : array_like of int
        Shape ``(N, 3)``, entries >= 0.
    bits : int, optional
        Curve order :math:`k` (<= 21); default enough for the largest entry.

    Returns
    -------
    numpy.ndarray
        ``int64`` indices, shape ``(N,)``; a bijection of :math:`[0, 2^k)^3` onto :math:`[0, 8^k)`.
    """
    c = _check_points(coords)
    k = _bits_for(c) if bits is None else check_int("bits", bits, low=1, high=21)
    if c.size and c.max() >= 2**k:
        raise ValueError(f"coords must be < 2**bits = {2**k}; got maximum {c.max()}")
    x = [c[:, a].copy() for a in range(3)]
    q = 1 << (k - 1)
    while q > 1:  # inverse undo: reflections and exchanges, level by level
        p = q - 1
        for i in range(3):
            hi = (x[i] & q) != 0
            x[0] = np.where(hi, x[0] ^ p, x[0])
            t = np.where(hi, 0, (x[0] ^ x[i]) & p)
            x[0] ^= t
            x[i] ^= t
        q >>= 1
    for i in range(1, 3):  # Gray encode
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = 1 << (k - 1)
    while q > 1:
        t = np.where((x[2] & q) != 0, t ^ (q - 1), t)
        q >>= 1
    for i in range(3):
        x[i] ^= t
    h = np.zeros(c.shape[0], dtype=np.int64)
    for b in range(k - 1, -1, -1):  # transposed index -> integer: interleave the bits, axis 0 first
        for i in range(3):
            h = (h << 1) | ((x[i] >> b) & 1)
    return h


def packing_order(
    shape: tuple[int, int, int], packing: str, seed: int | np.random.Generator | None = 0, *, block: int = 4
) -> np.ndarray:
    """The grid points of a box in the order of ``packing``: token :math:`t` sits at ``order[t]``.

    Parameters
    ----------
    shape : tuple of 3 int
        ``(S_z, S_y, S_x)``.
    packing : str
        One of :data:`PACKINGS`.
    seed : int or numpy Generator
        Randomness of ``block_shuffle`` and ``random``.
    block : int
        Cube edge of ``block_shuffle`` (cubes at the far faces are cut by the grid).

    Returns
    -------
    numpy.ndarray
        ``int64`` raster (z, y, x) indices of the grid points, shape ``(N,)``, a permutation of
        ``range(N)``; ``grid_coords(shape)[order]`` are the coordinates in packed order.

    Examples
    --------
    >>> packing_order((2, 2, 2), "raster_xyz").tolist()
    [0, 4, 2, 6, 1, 5, 3, 7]
    """
    dims = _check_shape(shape)
    check_choice("packing", packing, PACKINGS)
    block = check_int("block", block, low=1)
    g = grid_coords(dims)
    n = g.shape[0]
    if packing == "raster_zyx":
        return np.arange(n, dtype=np.int64)
    if packing == "raster_xyz":
        return np.lexsort((g[:, 0], g[:, 1], g[:, 2])).astype(np.int64)
    if packing == "raster_yzx":
        return np.lexsort((g[:, 2], g[:, 0], g[:, 1])).astype(np.int64)
    if packing == "morton":
        return np.argsort(morton_index(g), kind="stable").astype(np.int64)
    if packing == "hilbert":
        return np.argsort(hilbert_index(g), kind="stable").astype(np.int64)
    rng = as_generator(seed)
    if packing == "random":
        return rng.permutation(n).astype(np.int64)
    cell = g // block  # block_shuffle
    cells = (np.asarray(dims) + block - 1) // block
    cell_id = (cell[:, 0] * cells[1] + cell[:, 1]) * cells[2] + cell[:, 2]
    rank = rng.permutation(int(np.prod(cells)))[cell_id]
    return np.lexsort((np.arange(n), rank)).astype(np.int64)  # cubes in random order, raster inside


def boundary_labels(occupancy: Any) -> np.ndarray:
    """Per-voxel classes of :data:`CLASS_NAMES` from a boolean occupancy ``(..., S_z, S_y, S_x)``.

    Outside the grid counts as empty. With :math:`o` the occupancy and :math:`o^{\\pm a}` its shift by one voxel
    along axis :math:`a`: z-surface :math:`= o \\wedge \\neg(o^{+z} \\wedge o^{-z})`; xy-surface :math:`= o \\wedge
    \\neg\\text{z-surface} \\wedge \\neg(o^{+y} \\wedge o^{-y} \\wedge o^{+x} \\wedge o^{-x})`; interior: the other
    occupied voxels. A non-zero value counts as occupied; NaN, inf and an empty grid are refused.

    Returns
    -------
    numpy.ndarray
        ``int64`` labels, same shape as ``occupancy``.
    """
    o = np.asarray(occupancy)
    if not (o.dtype == bool or np.issubdtype(o.dtype, np.number)):
        raise TypeError(f"occupancy must be a boolean or numeric array; got dtype {o.dtype}")
    if o.size == 0:
        raise ValueError(f"occupancy must not be empty; got shape {o.shape}")
    if np.issubdtype(o.dtype, np.inexact) and not np.all(np.isfinite(o)):
        raise ValueError("occupancy must contain only finite values (found NaN or inf)")
    if o.ndim < 3:
        raise ValueError(f"occupancy must have at least 3 dimensions (..., S_z, S_y, S_x); got shape {o.shape}")
    o = o.astype(bool)
    lead = [(0, 0)] * (o.ndim - 3)
    p = np.pad(o, lead + [(1, 1)] * 3)
    zdn, zup = p[..., :-2, 1:-1, 1:-1], p[..., 2:, 1:-1, 1:-1]
    ydn, yup = p[..., 1:-1, :-2, 1:-1], p[..., 1:-1, 2:, 1:-1]
    xdn, xup = p[..., 1:-1, 1:-1, :-2], p[..., 1:-1, 1:-1, 2:]
    zs = o & ~(zdn & zup)
    xys = o & ~zs & ~(ydn & yup & xdn & xup)
    interior = o & ~zs & ~xys
    return (interior * 1 + zs * 2 + xys * 3).astype(np.int64)


def repacking_volumes(
    n: int, size: int = 12, seed: int | np.random.Generator | None = 0, *, objects: tuple[int, int] = (2, 5)
) -> tuple[np.ndarray, np.ndarray]:
    """Random volumes of spheres and boxes, and their :func:`boundary_labels`.

    Each volume holds a number of objects drawn uniformly from ``objects`` (inclusive), each a sphere
    (probability 1/2; radius uniform in :math:`[1.5, \\min(3.2, (S-3)/2)]`, real centre) or an axis-aligned box
    (integer sides uniform in :math:`2, \\dots, \\min(6, S-2)`), placed uniformly so that every occupied voxel
    keeps one empty voxel to the faces of the grid. Objects may overlap (their union is taken).

    Parameters
    ----------
    n : int
        Number of volumes.
    size : int
        Grid edge :math:`S \\ge 6`.
    seed : int or numpy Generator
        Randomness.
    objects : tuple of 2 int
        Inclusive range of the object count.

    Returns
    -------
    occupancy : numpy.ndarray
        ``float32``, shape ``(n, S, S, S)``, values 0 and 1.
    labels : numpy.ndarray
        ``int64``, shape ``(n, S, S, S)``, values 0-3.
    """
    n = check_int("n", n, low=0)
    s = check_int("size", size, low=6)
    lo_obj, hi_obj = (check_int(f"objects[{i}]", v, low=1) for i, v in enumerate(objects))
    if hi_obj < lo_obj:
        raise ValueError(f"objects must be (low, high) with low <= high; got {objects}")
    rng = as_generator(seed)
    zz, yy, xx = np.meshgrid(*[np.arange(s, dtype=np.float64)] * 3, indexing="ij")
    occ = np.zeros((n, s, s, s), dtype=bool)
    r_hi = min(3.2, (s - 3) / 2)
    side_hi = min(6, s - 2)
    for i in range(n):
        for _ in range(int(rng.integers(lo_obj, hi_obj + 1))):
            if rng.random() < 0.5:
                r = rng.uniform(1.5, r_hi)
                cz, cy, cx = rng.uniform(1 + r, s - 2 - r, size=3)
                occ[i] |= (zz - cz) ** 2 + (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
            else:
                sides = rng.integers(2, side_hi + 1, size=3)
                lo = [int(rng.integers(1, s - 1 - int(sd) + 1)) for sd in sides]
                occ[i, lo[0] : lo[0] + sides[0], lo[1] : lo[1] + sides[1], lo[2] : lo[2] + sides[2]] = True
    return occ.astype(np.float32), boundary_labels(occ)


def macro_dice(pred: Any, target: Any, classes: tuple[int, ...] = (1, 2, 3)) -> tuple[float, dict[int, float]]:
    """Macro Dice: the mean over ``classes`` of :math:`2|P_c \\cap T_c| / (|P_c| + |T_c|)`, pooled over all voxels.

    A class absent from both prediction and target scores 1.

    Parameters
    ----------
    pred, target : array_like of int
        Predicted and true labels, same shape.
    classes : tuple of int
        Classes averaged (default the three object classes; background excluded, it is given by the input).

    Returns
    -------
    macro : float
    per_class : dict of int to float
    """
    p, t = np.asarray(pred), np.asarray(target)
    if p.shape != t.shape:
        raise ValueError(f"pred and target must have the same shape; got {p.shape} and {t.shape}")
    if not classes:
        raise ValueError("classes must not be empty")
    per = {}
    for c in classes:
        pc, tc = p == c, t == c
        denom = int(pc.sum()) + int(tc.sum())
        per[int(c)] = 1.0 if denom == 0 else 2.0 * int((pc & tc).sum()) / denom
    return float(np.mean(list(per.values()))), per
