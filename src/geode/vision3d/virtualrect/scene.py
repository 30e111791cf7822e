"""A procedural ray-cast stereo scene with calibration drift, noisy matches and dense ground truth.

Conventions (OpenCV's): x right, y down, z forward; the left camera is the world frame; a point X in the
left frame is ``R @ X + t`` in the right frame, so the right camera's centre is ``c = -R.T @ t``. The
*stored* calibration is ``(R_cal, t_cal)``; the *true* pose has drifted from it by a small rotation and a
small change of the baseline direction (vibration, a knock, a re-mount).

The scene: a ground plane, a back wall, axis-aligned boxes standing on the ground and spheres, each with a
solid 3D value-noise texture (two octaves on a hashed lattice) times a per-object albedo, so a point has the
same intensity in both views (Lambertian, no lighting). Every pixel of both views is ray cast exactly, which
gives the dense ground truth: per left pixel its 3D point, depth, and its true right-image correspondence
with an occlusion check against the right view's own depth map.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from geode.core import check_array, check_real

__all__ = ["StereoScene", "render_stereo_scene", "rotation_from_vector", "sample_matches"]


def rotation_from_vector(w: np.ndarray) -> np.ndarray:
    """Rodrigues: the rotation matrix ``exp([w]_x)`` of a rotation vector ``w`` (radians), shape (3,).

    Any array of three finite numbers is accepted (it is flattened); anything else raises naming ``w``.
    """
    w = check_array("w", w)
    if w.size != 3:
        raise ValueError(f"w must hold 3 numbers (a rotation vector); got shape {w.shape}")
    w = w.reshape(3)
    th = float(np.linalg.norm(w))
    k = np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
    if th < 1e-12:
        return np.eye(3) + k
    return np.eye(3) + np.sin(th) / th * k + (1 - np.cos(th)) / th**2 * (k @ k)


@dataclass
class StereoScene:
    """One rendered stereo pair with its calibrations and dense ground truth.

    Attributes
    ----------
    left, right : ndarray (H, W) uint8
        The rendered views, taken with the *true* (drifted) pose.
    K : ndarray (3, 3)
        Intrinsics shared by both cameras (no distortion).
    R_true, t_true : ndarray
        The true pose of the right camera relative to the left (``X_r = R X_l + t``).
    R_cal, t_cal : ndarray
        The stored, stale calibration (before the drift).
    depth_left : ndarray (H, W)
        Ground-truth z of each left pixel's point (inf where a ray escapes, never here: the wall closes it).
    points_left : ndarray (H, W, 3)
        Ground-truth 3D point of each left pixel, in the left camera frame.
    corr_right : ndarray (H, W, 2)
        True (x, y) in the right image of each left pixel's point.
    corr_valid : ndarray (H, W) bool
        Correspondence is inside the right image and not occluded there.
    """

    left: np.ndarray
    right: np.ndarray
    K: np.ndarray
    R_true: np.ndarray
    t_true: np.ndarray
    R_cal: np.ndarray
    t_cal: np.ndarray
    depth_left: np.ndarray
    points_left: np.ndarray
    corr_right: np.ndarray
    corr_valid: np.ndarray

    @property
    def size(self) -> tuple[int, int]:
        """(width, height), as OpenCV writes image sizes."""
        return (self.left.shape[1], self.left.shape[0])

    def correspondences(self) -> tuple[np.ndarray, np.ndarray]:
        """All valid dense correspondences as ``(pts_left, pts_right)``, each (n, 2) in pixels."""
        h, w = self.corr_valid.shape
        v, u = np.nonzero(self.corr_valid)
        return np.stack([u, v], 1).astype(float), self.corr_right[v, u]


def _intersect(origin: np.ndarray, dirs: np.ndarray, prims: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
    """Nearest hit distance along each ray and the index of the primitive hit (-1: none)."""
    n = dirs.shape[0]
    best = np.full(n, np.inf)
    idx = np.full(n, -1)
    o = origin.reshape(1, 3)
    for i, p in enumerate(prims):
        kind = p[0]
        if kind == "plane":  # n . x = d
            nrm, d = p[1], p[2]
            den = dirs @ nrm
            with np.errstate(divide="ignore", invalid="ignore"):
                s = (d - o @ nrm) / den
            s = np.where((np.abs(den) > 1e-12) & (s > 1e-6), s, np.inf)
        elif kind == "box":  # slab test
            lo, hi = p[1], p[2]
            with np.errstate(divide="ignore", invalid="ignore"):
                inv = 1.0 / dirs
                a = (lo - o) * inv
                b = (hi - o) * inv
            tmin = np.nanmax(np.minimum(a, b), axis=1)
            tmax = np.nanmin(np.maximum(a, b), axis=1)
            s = np.where((tmax >= tmin) & (tmin > 1e-6), tmin, np.inf)
        else:  # sphere
            cen, rad = p[1], p[2]
            oc = (o - cen).reshape(3)
            bq = dirs @ oc
            cq = float(oc @ oc) - rad**2
            disc = bq**2 - cq  # dirs are unit vectors
            root = np.sqrt(np.maximum(disc, 0.0))
            s = -bq - root
            s = np.where((disc >= 0) & (s > 1e-6), s, np.inf)
        closer = s < best
        best = np.where(closer, s, best)
        idx = np.where(closer, i, idx)
    return best, idx


def _noise3(x: np.ndarray, table: np.ndarray, cell: float) -> np.ndarray:
    """Trilinear value noise on a hashed integer lattice of spacing ``cell``."""
    g = x / cell
    i0 = np.floor(g).astype(np.int64)
    f = g - i0
    f = f * f * (3 - 2 * f)
    out = np.zeros(x.shape[0])
    m = table.shape[0]
    for dx in (0, 1):
        for dy in (0, 1):
            for dz in (0, 1):
                h = ((i0[:, 0] + dx) * 73856093) ^ ((i0[:, 1] + dy) * 19349663) ^ ((i0[:, 2] + dz) * 83492791)
                val = table[np.mod(h, m)]
                wx = f[:, 0] if dx else 1 - f[:, 0]
                wy = f[:, 1] if dy else 1 - f[:, 1]
                wz = f[:, 2] if dz else 1 - f[:, 2]
                out += val * wx * wy * wz
    return out


def _shade(points: np.ndarray, idx: np.ndarray, albedo: np.ndarray, table: np.ndarray) -> np.ndarray:
    tex = 0.55 * _noise3(points, table, 0.04) + 0.45 * _noise3(points, table[::-1].copy(), 0.15)
    return np.clip(255 * albedo[np.maximum(idx, 0)] * (0.25 + 0.75 * tex), 0, 255)


def _cast(origin: np.ndarray, rot_to_world: np.ndarray, K: np.ndarray, w: int, h: int, prims, albedo, table):
    u, v = np.meshgrid(np.arange(w, dtype=float), np.arange(h, dtype=float))
    pix = np.stack([u.ravel(), v.ravel(), np.ones(u.size)], 1)
    rays_cam = pix @ np.linalg.inv(K).T
    dirs_cam = rays_cam / np.linalg.norm(rays_cam, axis=1, keepdims=True)
    dirs = dirs_cam @ rot_to_world.T
    s, idx = _intersect(origin, dirs, prims)
    pts = origin.reshape(1, 3) + s[:, None] * dirs
    img = _shade(np.where(np.isfinite(pts), pts, 0.0), idx, albedo, table)
    z_cam = s * dirs_cam[:, 2]
    return img.reshape(h, w), pts.reshape(h, w, 3), z_cam.reshape(h, w)


def render_stereo_scene(
    seed: int,
    *,
    width: int = 320,
    height: int = 240,
    focal: float = 280.0,
    baseline: float = 0.4,
    drift_deg: float = 1.0,
    baseline_drift: float = 0.02,
    n_boxes: int = 6,
    n_spheres: int = 3,
) -> StereoScene:
    """Render a random stereo scene whose right camera has drifted from its stored calibration.

    Parameters
    ----------
    seed : int
        Seeds the layout, the textures and the drift.
    width, height : int
        Image size in pixels (>= 32 each).
    focal : float
        Focal length in pixels (> 0); the principal point is the image centre.
    baseline : float
        Baseline length in metres (> 0); the stored calibration is a perfect horizontal rig.
    drift_deg : float
        Scale of the rotation drift: each axis of the drift rotation vector is uniform in
        ``[-drift_deg, drift_deg]`` degrees (>= 0).
    baseline_drift : float
        Scale of the baseline-direction drift: the y and z components of the right camera's centre move by
        uniform ``[-1, 1] * baseline_drift * baseline`` (>= 0).
    n_boxes, n_spheres : int
        Number of boxes and spheres on the ground (>= 0).

    Returns
    -------
    StereoScene
    """
    for name, val in (("width", width), ("height", height)):
        if not isinstance(val, (int, np.integer)) or val < 32:
            raise ValueError(f"{name} must be an int >= 32; got {val!r}")
    for name, val in (("focal", focal), ("baseline", baseline)):  # checked only: the values are used as given
        check_real(name, val, low=0.0, low_inclusive=False)
    for name, val in (("drift_deg", drift_deg), ("baseline_drift", baseline_drift)):
        check_real(name, val, low=0.0)
    if n_boxes < 0 or n_spheres < 0:
        raise ValueError(f"n_boxes and n_spheres must be >= 0; got {n_boxes}, {n_spheres}")
    rng = np.random.default_rng(seed)
    K = np.array([[focal, 0, (width - 1) / 2], [0, focal, (height - 1) / 2], [0, 0, 1.0]])
    cam_h = 1.4
    prims: list[tuple] = [("plane", np.array([0.0, 1.0, 0.0]), cam_h), ("plane", np.array([0.0, 0.0, 1.0]), 30.0)]
    for _ in range(n_boxes):
        cx, cz = rng.uniform(-7, 7), rng.uniform(4, 24)
        sx, sy, sz = rng.uniform(0.6, 2.5), rng.uniform(0.8, 3.5), rng.uniform(0.6, 2.5)
        prims.append(
            ("box", np.array([cx - sx / 2, cam_h - sy, cz - sz / 2]), np.array([cx + sx / 2, cam_h, cz + sz / 2]))
        )
    for _ in range(n_spheres):
        r = rng.uniform(0.4, 1.4)
        prims.append(
            ("sphere", np.array([rng.uniform(-5, 5), cam_h - r - rng.uniform(0, 1.0), rng.uniform(3.5, 18)]), r)
        )
    albedo = rng.uniform(0.5, 1.0, len(prims))
    table = rng.uniform(0, 1, 4096)

    R_cal = np.eye(3)
    t_cal = np.array([-baseline, 0.0, 0.0])
    R_true = rotation_from_vector(np.deg2rad(rng.uniform(-drift_deg, drift_deg, 3))) @ R_cal
    c_true = np.array([baseline, *(rng.uniform(-1, 1, 2) * baseline_drift * baseline)])
    c_true *= baseline / np.linalg.norm(c_true)
    t_true = -R_true @ c_true

    left, pts_l, z_l = _cast(np.zeros(3), np.eye(3), K, width, height, prims, albedo, table)
    right, _, z_r = _cast(c_true, R_true.T, K, width, height, prims, albedo, table)
    xr = pts_l.reshape(-1, 3) @ R_true.T + t_true
    pr = xr @ K.T
    pr = pr[:, :2] / pr[:, 2:3]
    ui = np.rint(pr[:, 0]).astype(int)
    vi = np.rint(pr[:, 1]).astype(int)
    inside = (xr[:, 2] > 0) & (ui >= 0) & (ui < width) & (vi >= 0) & (vi < height)
    zr_map = np.full(xr.shape[0], np.nan)
    zr_map[inside] = z_r[vi[inside], ui[inside]]
    visible = inside & (np.abs(zr_map - xr[:, 2]) < 0.01 * xr[:, 2] + 0.02)
    return StereoScene(
        left=left.astype(np.uint8),
        right=right.astype(np.uint8),
        K=K,
        R_true=R_true,
        t_true=t_true,
        R_cal=R_cal,
        t_cal=t_cal,
        depth_left=z_l,
        points_left=pts_l,
        corr_right=pr.reshape(height, width, 2),
        corr_valid=visible.reshape(height, width),
    )


def sample_matches(
    scene: StereoScene,
    n: int,
    seed: int,
    *,
    noise_px: float = 0.3,
    outlier_frac: float = 0.0,
    region: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0),
) -> tuple[np.ndarray, np.ndarray]:
    """Sparse matches drawn from the dense ground truth, with Gaussian noise and gross outliers.

    Parameters
    ----------
    scene : StereoScene
    n : int
        Number of matches (>= 1).
    seed : int
    noise_px : float
        Standard deviation of the Gaussian noise added to the right points (pixels, >= 0).
    outlier_frac : float
        Fraction of matches whose right point is replaced by a uniformly random pixel (in [0, 1)).
    region : (x0, y0, x1, y1)
        Left points are drawn only inside this box, in fractions of the image (a "degraded" matcher that
        finds features in one part of the view only).

    Returns
    -------
    pts_left, pts_right : ndarray (n, 2)
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an int >= 1; got {n!r}")
    check_real("outlier_frac", outlier_frac, low=0.0, high=1.0, high_inclusive=False)  # checked, used as given
    check_real("noise_px", noise_px, low=0.0)
    if not isinstance(region, (tuple, list, np.ndarray)) or len(region) != 4:
        raise ValueError(f"region must be (x0, y0, x1, y1); got {region!r}")
    for i, r in enumerate(region):
        check_real(f"region[{i}]", r)
    x0, y0, x1, y1 = region
    if not (0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1):
        raise ValueError(f"region must be (x0, y0, x1, y1) with 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1; got {region}")
    rng = np.random.default_rng(seed)
    pl, pr = scene.correspondences()
    w, h = scene.size
    keep = (pl[:, 0] >= x0 * w) & (pl[:, 0] <= x1 * w) & (pl[:, 1] >= y0 * h) & (pl[:, 1] <= y1 * h)
    pl, pr = pl[keep], pr[keep]
    if pl.shape[0] < n:
        raise ValueError(f"only {pl.shape[0]} ground-truth correspondences in region {region}; asked for n={n}")
    pick = rng.choice(pl.shape[0], n, replace=False)
    a = pl[pick]  # left features at pixel centres, whose true right positions are known exactly
    b = pr[pick] + rng.normal(0, noise_px, (n, 2))
    n_out = int(round(outlier_frac * n))
    if n_out:
        j = rng.choice(n, n_out, replace=False)
        b[j] = rng.uniform([0, 0], [w - 1, h - 1], (n_out, 2))
    return a, b
