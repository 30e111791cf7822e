"""Procedural multi-view scenes with dense depth, and the four image degradations of the GARD claim check.

A scene is a tilted back wall, a floor and 2-4 textured, shaded spheres, seen by ``V`` pinhole cameras that
look along +z and are translated along the x axis (a small stereo rig; baseline drawn per scene). Every
pixel is ray-cast exactly (numpy), so depth (the z coordinate of the hit point in the camera frame) is dense
ground truth and the texture is a function of the 3-D hit point, hence consistent across views.

Degradations (applied per view, independently drawn noise): additive Gaussian noise, motion blur (a line
kernel of random length and angle, the authors' training degradation at our resolution), JPEG-like block-DCT
quantisation on 8x8 blocks, and low light (darkening, gamma and shot-like noise).
"""

from __future__ import annotations

import numpy as np

from geode.core import check_choice, check_int, check_real

__all__ = ["DEGRADATIONS", "degrade_views", "render_multiview_scenes"]

DEGRADATIONS: tuple[str, ...] = ("noise", "blur", "jpeg", "lowlight")


def _intersect_plane(o: np.ndarray, d: np.ndarray, n: np.ndarray, c: float) -> np.ndarray:
    # plane n.x = c; ray o + t d
    den = d @ n
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (c - o @ n) / den
    t[~np.isfinite(t) | (t <= 1e-4)] = np.inf
    return t


def _intersect_sphere(o: np.ndarray, d: np.ndarray, centre: np.ndarray, r: float) -> np.ndarray:
    oc = o - centre
    b = d @ oc
    cc = oc @ oc - r * r
    disc = b * b - cc
    t = np.full(d.shape[0], np.inf)
    ok = disc > 0
    t0 = -b[ok] - np.sqrt(disc[ok])
    t[ok] = np.where(t0 > 1e-4, t0, np.inf)
    return t


def render_multiview_scenes(
    n_scenes: int,
    *,
    n_views: int = 3,
    height: int = 24,
    width: int = 32,
    focal: float | None = None,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Ray-cast ``n_scenes`` random scenes from ``n_views`` laterally translated cameras.

    Parameters
    ----------
    n_scenes : int
        Number of scenes (>= 1).
    n_views : int
        Cameras per scene (>= 2), at x = (k - (V - 1) / 2) * baseline, baseline ~ U(0.3, 0.6).
    height, width : int
        Image size in pixels.
    focal : float, optional
        Focal length in pixels (default ``width``, a 53-degree horizontal field of view).
    seed : int
        Seed of every random draw.

    Returns
    -------
    dict
        ``images`` (S, V, 3, H, W) float32 in [0, 1]; ``depth`` (S, V, H, W) float32 (z in the camera frame);
        ``cam_x`` (S, V) float32 camera x positions; ``focal`` (a float32 scalar array).
    """
    n_scenes = check_int("n_scenes", n_scenes, low=1)
    n_views = check_int("n_views", n_views, low=2)
    height = check_int("height", height, low=4)
    width = check_int("width", width, low=4)
    f = float(width) if focal is None else check_real("focal", focal, low=0.0, low_inclusive=False)
    rng = np.random.default_rng(seed)
    v, u = np.mgrid[0:height, 0:width].astype(float)
    dirs = np.stack([(u.ravel() + 0.5 - width / 2) / f, (v.ravel() + 0.5 - height / 2) / f, np.ones(u.size)], 1)
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    light = np.array([-0.4, -0.7, -0.6])
    light /= np.linalg.norm(light)
    images = np.zeros((n_scenes, n_views, 3, height, width), np.float32)
    depth = np.zeros((n_scenes, n_views, height, width), np.float32)
    cams = np.zeros((n_scenes, n_views), np.float32)
    for s in range(n_scenes):
        baseline = rng.uniform(0.3, 0.6)
        wall_n = np.array([rng.uniform(-0.25, 0.25), rng.uniform(-0.15, 0.15), 1.0])
        wall_c = rng.uniform(7.0, 10.0)
        floor_y = rng.uniform(0.8, 1.5)
        k = int(rng.integers(2, 5))
        centres = np.stack([rng.uniform(-2.2, 2.2, k), rng.uniform(-1.0, 0.6, k), rng.uniform(2.8, 6.5, k)], 1)
        radii = rng.uniform(0.35, 0.95, k)
        centres[:, 1] = np.minimum(centres[:, 1], floor_y - radii)  # spheres rest above the floor
        base = rng.uniform(0.15, 0.95, (k + 2, 3))
        freq = rng.uniform(1.5, 5.0, (k + 2, 3))
        phase = rng.uniform(0, 2 * np.pi, (k + 2, 3))
        for j in range(n_views):
            cx = (j - (n_views - 1) / 2) * baseline
            cams[s, j] = cx
            o = np.array([cx, 0.0, 0.0])
            ts = [
                _intersect_plane(o, dirs, wall_n, wall_c),
                _intersect_plane(o, dirs, np.array([0.0, 1.0, 0.0]), floor_y),
            ]
            ts += [_intersect_sphere(o, dirs, centres[i], radii[i]) for i in range(k)]
            tt = np.stack(ts, 0)
            idx = tt.argmin(0)
            t = tt.min(0)
            t = np.where(np.isfinite(t), t, 30.0)  # rays that miss everything (none in practice) sit far away
            p = o + t[:, None] * dirs
            tex = 0.65 + 0.35 * np.sin(freq[idx] * p[:, [0, 1, 2]] + phase[idx]).mean(1, keepdims=True)
            shade = np.ones(p.shape[0])
            sph = idx >= 2
            if sph.any():
                nrm = p[sph] - centres[idx[sph] - 2]
                nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
                shade[sph] = 0.35 + 0.65 * np.clip(-(nrm @ light), 0, 1)
            shade[idx == 1] = 0.9 - 0.03 * np.clip(p[idx == 1, 2], 0, 12)  # the floor darkens with distance
            col = np.clip(base[idx] * tex * shade[:, None], 0, 1)
            images[s, j] = col.T.reshape(3, height, width)
            depth[s, j] = (t * dirs[:, 2]).reshape(height, width)
    return {"images": images, "depth": depth, "cam_x": cams, "focal": np.float32(f)}


def _motion_kernel(rng: np.random.Generator) -> np.ndarray:
    length = int(rng.integers(4, 10))
    ang = rng.uniform(0, np.pi)
    size = length if length % 2 else length + 1
    k = np.zeros((size, size))
    c = (size - 1) / 2
    for s in np.linspace(-(length - 1) / 2, (length - 1) / 2, 4 * length):
        k[int(round(c + s * np.sin(ang))), int(round(c + s * np.cos(ang)))] = 1.0
    return k / k.sum()


def _jpeg_like(img: np.ndarray, q: float) -> np.ndarray:
    from scipy.fft import dctn, idctn

    c, h, w = img.shape
    out = np.empty_like(img)
    fy, fx = np.mgrid[0:8, 0:8]
    step = q * (1.0 + 0.5 * (fy + fx))  # coarser steps at high frequency, as a JPEG table
    hp, wp = -(-h // 8) * 8, -(-w // 8) * 8
    pad = np.pad(img, ((0, 0), (0, hp - h), (0, wp - w)), mode="edge")
    blocks = pad.reshape(c, hp // 8, 8, wp // 8, 8).transpose(0, 1, 3, 2, 4)
    coef = dctn(blocks, axes=(-2, -1), norm="ortho")
    coef = np.round(coef / step) * step
    rec = idctn(coef, axes=(-2, -1), norm="ortho").transpose(0, 1, 3, 2, 4).reshape(c, hp, wp)
    out[:] = rec[:, :h, :w]
    return out


def degrade_views(
    images: np.ndarray, kind: str | None = None, *, severity: float = 1.0, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Degrade multi-view images: noise, motion blur, JPEG-like quantisation or low light.

    Parameters
    ----------
    images : ndarray, shape (S, V, 3, H, W)
        Clean images in [0, 1].
    kind : str, optional
        One of :data:`DEGRADATIONS`; ``None`` draws one kind per scene (all views of a scene share the kind,
        each view draws its own strength and noise).
    severity : float
        Scales every strength (> 0; 1 is the claim check's setting).
    seed : int
        Seed of the draws.

    Returns
    -------
    degraded : ndarray, the shape of ``images``, clipped to [0, 1]
    kinds : ndarray of int, shape (S,)
        Index into :data:`DEGRADATIONS` of each scene's degradation.
    """
    from scipy.ndimage import convolve

    x = np.asarray(images)
    if x.ndim != 5 or x.shape[2] != 3:
        raise ValueError(f"images must have shape (scenes, views, 3, H, W); got {x.shape}")
    if x.size == 0:
        raise ValueError(f"images must not be empty; got shape {x.shape}")
    if not np.issubdtype(x.dtype, np.number):
        raise TypeError(f"images must be numeric; got dtype {x.dtype}")
    if not np.all(np.isfinite(x)):
        raise ValueError("images must contain only finite values (found NaN or inf)")
    if kind is not None:
        check_choice("kind", kind, DEGRADATIONS)
    sev = check_real("severity", severity, low=0.0, low_inclusive=False)
    rng = np.random.default_rng(seed)
    out = np.empty_like(x, dtype=np.float32)
    kinds = np.zeros(x.shape[0], np.int64)
    for s in range(x.shape[0]):
        kd = kind if kind is not None else DEGRADATIONS[int(rng.integers(len(DEGRADATIONS)))]
        kinds[s] = DEGRADATIONS.index(kd)
        for j in range(x.shape[1]):
            img = x[s, j].astype(float)
            if kd == "noise":
                y = img + rng.normal(0, sev * rng.uniform(0.12, 0.3), img.shape)
            elif kd == "blur":
                ker = _motion_kernel(rng)
                y = np.stack([convolve(ch, ker, mode="nearest") for ch in img])
                y = y + rng.normal(0, 0.01 * sev, img.shape)
            elif kd == "jpeg":
                y = _jpeg_like(img, sev * rng.uniform(0.25, 0.5))
            else:
                gain = rng.uniform(0.08, 0.2) / sev
                y = gain * img**1.3
                y = y + rng.normal(0, 1, img.shape) * np.sqrt(np.clip(y, 0, None) * 0.004 * sev + 4e-4 * sev)
            out[s, j] = np.clip(y, 0, 1)
    return out, kinds
