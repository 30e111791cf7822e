"""VirtualRect: online stereo rectification by estimating a rectified *virtual* stereo camera.

Model. The stereo rig's pose is refined online from sparse matches: the right camera's rotation
``R = exp([w]_x) R_cal`` (3 DoF, the default: the paper's rotation refinement), optionally also the direction of
its centre ``c`` (2 DoF; the baseline length is kept from the calibration, since matches cannot observe scale).
A Fusiello-style rectifying rotation is a smooth function
of ``(R, c)``: ``e1 = c/|c|``, ``e2 = (z_m x e1)/|.|`` with ``z_m`` the mean optical axis of the two cameras,
``e3 = e1 x e2`` and ``R_rect = [e1; e2; e3]``; the rectified rays of a match are ``R_rect K^-1 p_l`` and
``R_rect R^T K^-1 p_r``, and the residual is the difference of their rectified rows (pixels)

.. math:: r_i = f\\left(\\frac{e_2^\\top a_i}{e_3^\\top a_i} - \\frac{e_2^\\top b_i}{e_3^\\top b_i}\\right),
   \\quad a_i = K^{-1}\\tilde p_{l,i},\\ b_i = R^\\top K^{-1} \\tilde p_{r,i},

minimised with a robust Cauchy loss :math:`\\rho(r) = s^2\\log(1 + r^2/s^2)` (iteratively reweighted
Gauss-Newton with a graduated scale) plus a prior :math:`\\lambda\\, n\\, \\| f\\,\\theta \\|^2` pulling the
parameters ``theta`` toward the stored calibration (in pixels of image motion).

Whole-image constraints. The rectified images and the depth model come from one virtual camera: both views
share the rotation ``R_rect`` (up to the right camera's own rotation) and one virtual intrinsic matrix
``K_v`` (one focal, one principal point), so the warp of each view is a pure rotation homography (uniform
scale, no shear, no stretch), and ``Q`` follows from ``K_v`` and the baseline. ``K_v`` is chosen as the
*smallest zoom* whose rectified images have no blank pixel in either view (full coverage), centred on the
mapped image centres, so as little as possible is cropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from geode.core import check_array, check_real
from geode.vision3d.virtualrect.scene import rotation_from_vector

__all__ = [
    "MIN_MATCHES",
    "StereoRectification",
    "VirtualRect",
    "essential_rectification",
    "hartley_rectification",
    "rectification_coverage",
    "vertical_errors",
    "virtual_stereo_camera",
]

MIN_MATCHES = 12
"""Fewest matches :class:`VirtualRect` accepts: up to 5 unknowns, and a robust loss needs redundancy (>= 2x + 2)."""


def _cv2():
    try:
        import cv2
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("this function needs OpenCV: pip install 'geode[vision3d]' (opencv-python-headless)") from e
    return cv2


@dataclass
class StereoRectification:
    """A rectification of a stereo pair: two homographies and, for a camera model, R1, R2, K_rect and Q.

    Attributes
    ----------
    H1, H2 : ndarray (3, 3)
        Original pixel -> rectified pixel, for the left and the right view.
    size : (int, int)
        (width, height) of the rectified images.
    R1, R2 : ndarray (3, 3) or None
        Rotations from each camera's frame to the rectified frame (None for an uncalibrated rectifier).
    K_rect : ndarray (3, 3) or None
        The virtual camera's intrinsics, shared by both rectified views.
    baseline : float or None
        The virtual rig's baseline (metres).
    Q : ndarray (4, 4) or None
        Disparity-to-depth matrix: ``Q @ [x, y, d, 1]`` is the homogeneous 3D point in the rectified left frame,
        ``d = x_left - x_right``; OpenCV's convention (``cv2.reprojectImageTo3D``).
    """

    H1: np.ndarray
    H2: np.ndarray
    size: tuple[int, int]
    R1: np.ndarray | None = None
    R2: np.ndarray | None = None
    K_rect: np.ndarray | None = None
    baseline: float | None = None
    Q: np.ndarray | None = None

    def rectify_points(self, pts: np.ndarray, view: str) -> np.ndarray:
        """Map (n, 2) original pixels of ``view`` ("left" or "right") to rectified pixels."""
        if view not in ("left", "right"):
            raise ValueError(f"view must be 'left' or 'right'; got {view!r}")
        return _apply(self.H1 if view == "left" else self.H2, pts)

    def maps(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(map1x, map1y, map2x, map2y)``, float32 (H, W): the source pixel of each rectified pixel (cv2.remap)."""
        w, h = self.size
        u, v = np.meshgrid(np.arange(w, dtype=float), np.arange(h, dtype=float))
        grid = np.stack([u.ravel(), v.ravel()], 1)
        out = []
        for hm in (self.H1, self.H2):
            src = _apply(np.linalg.inv(hm), grid)
            out += [src[:, 0].reshape(h, w).astype(np.float32), src[:, 1].reshape(h, w).astype(np.float32)]
        return out[0], out[1], out[2], out[3]

    def remap(self, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rectify an image pair (bilinear, zero outside), with ``cv2.remap``."""
        left, right = np.asarray(left), np.asarray(right)
        w, h = self.size
        if left.shape[:2] != right.shape[:2]:
            raise ValueError(
                f"left and right images must have the same size; got {left.shape[:2]} and {right.shape[:2]}"
            )
        if left.shape[:2] != (h, w):
            raise ValueError(f"images must be {h}x{w} (height x width) like the rectification; got {left.shape[:2]}")
        cv2 = _cv2()
        m1x, m1y, m2x, m2y = self.maps()
        return (
            cv2.remap(left, m1x, m1y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT),
            cv2.remap(right, m2x, m2y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT),
        )


def _apply(hm: np.ndarray, pts: np.ndarray) -> np.ndarray:
    p = np.asarray(pts, dtype=float) @ hm[:, :2].T + hm[:, 2]
    return p[:, :2] / p[:, 2:3]


def _as_float(name: str, value: Any) -> np.ndarray:
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of numbers; got {type(value).__name__}") from None


def _check_k(K: np.ndarray) -> np.ndarray:
    K = _as_float("K", K)
    if K.shape != (3, 3) or not np.all(np.isfinite(K)) or K[0, 0] <= 0 or K[1, 1] <= 0 or K[2, 2] != 1:
        raise ValueError("K must be a finite 3x3 intrinsic matrix with positive focal lengths and K[2, 2] == 1")
    return K


def _check_size(image_size) -> tuple[int, int]:
    try:
        w, h = (int(image_size[0]), int(image_size[1]))
    except (TypeError, IndexError, ValueError):
        raise ValueError(f"image_size must be (width, height); got {image_size!r}") from None
    if w < 8 or h < 8 or (w, h) != tuple(image_size):
        raise ValueError(f"image_size must be two ints >= 8 (width, height); got {image_size!r}")
    return w, h


def _check_pose(R: np.ndarray, t: np.ndarray, r_name: str = "R", t_name: str = "t") -> tuple[np.ndarray, np.ndarray]:
    """``R`` a finite rotation, ``t`` a finite non-zero 3-vector of shape (3,), (3, 1) or (1, 3)."""
    R = _as_float(r_name, R)
    t = _as_float(t_name, t)
    if R.shape != (3, 3) or not np.all(np.isfinite(R)):
        raise ValueError(f"{r_name} must be a finite 3x3 rotation matrix; got shape {R.shape}")
    if np.abs(R.T @ R - np.eye(3)).max() > 1e-6 or np.linalg.det(R) < 0:
        raise ValueError(f"{r_name} must be a rotation (R^T R = I within 1e-6 and det R = +1)")
    if t.shape not in ((3,), (3, 1), (1, 3)) or not np.all(np.isfinite(t)):
        raise ValueError(f"{t_name} must be a finite 3-vector, shape (3,), (3, 1) or (1, 3); got shape {t.shape}")
    t = t.reshape(-1)
    if np.linalg.norm(t) < 1e-9:
        raise ValueError(f"degenerate pose: the baseline {t_name} has zero length, a stereo rig needs two centres")
    return R, t


def _rect_rotation(R: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Fusiello's rectifying rotation for a right camera at centre ``c`` (left frame) with rotation ``R``."""
    e1 = c / np.linalg.norm(c)
    zm = np.array([0.0, 0.0, 1.0]) + R.T @ np.array([0.0, 0.0, 1.0])
    e2 = np.cross(zm, e1)
    e2 /= np.linalg.norm(e2)
    return np.stack([e1, e2, np.cross(e1, e2)])


def _check_not_degenerate(R: np.ndarray, c: np.ndarray) -> None:
    zm = np.array([0.0, 0.0, 1.0]) + R.T @ np.array([0.0, 0.0, 1.0])
    cosang = abs(float(c @ zm)) / (np.linalg.norm(c) * np.linalg.norm(zm) + 1e-300)
    if cosang > np.cos(np.deg2rad(45.0)):
        raise ValueError(
            "degenerate pose: the baseline is within 45 degrees of the optical axis (the epipole lies in or near "
            "the image), so no row rectification with bounded distortion exists"
        )
    ang = np.degrees(np.arccos(np.clip((np.trace(R) - 1) / 2, -1, 1)))
    if ang > 45.0:
        raise ValueError(f"degenerate pose: the cameras' optical axes differ by {ang:.1f} > 45 degrees")


def _inside_convex(poly: np.ndarray, pts: np.ndarray) -> bool:
    """Whether every point lies inside the convex polygon (vertices in order, either orientation)."""
    d = np.roll(poly, -1, 0) - poly
    cross = d[None, :, 0] * (pts[:, None, 1] - poly[None, :, 1]) - d[None, :, 1] * (pts[:, None, 0] - poly[None, :, 0])
    return bool(np.all(cross >= -1e-12) or np.all(cross <= 1e-12))


def virtual_stereo_camera(
    K: np.ndarray, R: np.ndarray, t: np.ndarray, image_size: tuple[int, int]
) -> StereoRectification:
    """The rectified virtual stereo camera of a rig ``(K, R, t)`` with full coverage; maps, R1, R2, K_rect and Q.

    Parameters
    ----------
    K : ndarray (3, 3)
        Intrinsics of both cameras (undistorted images).
    R, t : ndarray
        Right camera pose relative to the left one, ``X_r = R X_l + t`` (OpenCV's ``stereoRectify`` convention).
    image_size : (width, height)

    Returns
    -------
    StereoRectification
        ``H_i = K_rect R_i K^-1``; ``K_rect`` is the smallest zoom of ``K``'s focal for which neither rectified
        view has blank pixels; ``Q`` is consistent with ``K_rect`` and ``|t|``.

    Raises
    ------
    ValueError
        For a non-rotation ``R``, a zero baseline, or a degenerate pose (baseline near the optical axis, or
        optical axes more than 45 degrees apart).
    """
    K = _check_k(K)
    R, t = _check_pose(R, t)
    w, h = _check_size(image_size)
    c = -R.T @ t
    _check_not_degenerate(R, c)
    Rr = _rect_rotation(R, c)
    R1, R2 = Rr, Rr @ R.T
    Kinv = np.linalg.inv(K)
    corners = np.array([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]], float)
    quads, centres = [], []
    for Ri in (R1, R2):
        g = Ri @ Kinv  # original pixel -> rectified normalised ray
        q = np.c_[corners, np.ones(4)] @ g.T
        quads.append(q[:, :2] / q[:, 2:3])
        cc = g @ np.array([(w - 1) / 2, (h - 1) / 2, 1.0])
        centres.append(cc[:2] / cc[2])
    a, b = np.mean(centres, 0)
    f = float(np.sqrt(K[0, 0] * K[1, 1]))
    hw0, hh0 = (w - 1) / (2 * f), (h - 1) / (2 * f)  # half extents of the unzoomed image, normalised

    def fits(s: float) -> bool:
        rect = np.array(
            [
                [a - s * hw0, b - s * hh0],
                [a + s * hw0, b - s * hh0],
                [a + s * hw0, b + s * hh0],
                [a - s * hw0, b + s * hh0],
            ]
        )
        return all(_inside_convex(q, rect) for q in quads)

    lo, hi = 0.0, 1.0
    if fits(1.0):
        s = 1.0  # no zoom needed (an already rectified pair keeps its image exactly)
    else:
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        s = lo
        if s < 0.2:
            raise ValueError("degenerate pose: full coverage would need more than a 5x zoom")
    fv = f / s
    cx, cy = (w - 1) / 2 - fv * a, (h - 1) / 2 - fv * b
    Kv = np.array([[fv, 0, cx], [0, fv, cy], [0, 0, 1.0]])
    B = float(np.linalg.norm(c))
    Q = np.array([[1, 0, 0, -cx], [0, 1, 0, -cy], [0, 0, 0, fv], [0, 0, 1 / B, 0]])
    return StereoRectification(Kv @ R1 @ Kinv, Kv @ R2 @ Kinv, (w, h), R1, R2, Kv, B, Q)


def _check_matches(pts_l, pts_r, min_n: int) -> tuple[np.ndarray, np.ndarray]:
    pl = _as_float("pts_left", pts_l)
    pr = _as_float("pts_right", pts_r)
    if pl.ndim != 2 or pl.shape[1] != 2 or pr.shape != pl.shape:
        raise ValueError(f"pts_left and pts_right must both be (n, 2) arrays; got {pl.shape} and {pr.shape}")
    if not (np.all(np.isfinite(pl)) and np.all(np.isfinite(pr))):
        raise ValueError("pts_left and pts_right must be finite")
    if pl.shape[0] < min_n:
        raise ValueError(f"too few matches: got {pl.shape[0]}, need at least {min_n}")
    return pl, pr


class VirtualRect:
    """Online stereo rectification that estimates a rectified virtual stereo camera from matches.

    Parameters
    ----------
    K : ndarray (3, 3)
        Intrinsics of both cameras (assumed stable; drift is in the extrinsics).
    R_cal, t_cal : ndarray
        The stored calibration (``X_r = R X_l + t``), the starting point and the prior's centre.
    image_size : (width, height)
    loss_scale : float
        Scale ``s`` of the Cauchy loss in pixels (> 0): residuals much larger than ``s`` barely count.
    prior_weight : float
        Weight ``lambda`` (>= 0) of the prior toward the calibration, per match, on the image motion (pixels)
        that the parameter change causes: a whole-image stability term that keeps a few matches from
        pulling the rig far.
    robust : bool
        Use the Cauchy loss (True) or plain least squares (False: the non-robust ablation).
    iters : int
        Reweighted Gauss-Newton iterations (>= 1).
    dof : int
        3: refine the rotation only, keeping the calibrated baseline (the paper's "rotation refinement", the
        default); 5: also refine the baseline direction (2 more DoF, weakly observed by row residuals, since a
        rotation about y or z and a baseline tilt differ only through the depth dependence of their flow).

    Examples
    --------
    >>> from geode.vision3d.virtualrect import VirtualRect, render_stereo_scene, sample_matches
    >>> sc = render_stereo_scene(0, width=96, height=72, focal=84.0)
    >>> pl, pr = sample_matches(sc, 200, 0, noise_px=0.1)
    >>> rect = VirtualRect(sc.K, sc.R_cal, sc.t_cal, sc.size).fit(pl, pr)
    >>> rect.Q.shape
    (4, 4)
    """

    def __init__(
        self,
        K: np.ndarray,
        R_cal: np.ndarray,
        t_cal: np.ndarray,
        image_size: tuple[int, int],
        *,
        loss_scale: float = 1.0,
        prior_weight: float = 1e-3,
        robust: bool = True,
        iters: int = 30,
        dof: int = 3,
    ) -> None:
        self.K = _check_k(K)
        self.R_cal, self.t_cal = _check_pose(R_cal, t_cal, "R_cal", "t_cal")
        self.size = _check_size(image_size)
        check_real("loss_scale", loss_scale, low=0.0, low_inclusive=False)
        check_real("prior_weight", prior_weight, low=0.0)
        if not isinstance(iters, (int, np.integer)) or iters < 1:
            raise ValueError(f"iters must be an int >= 1; got {iters!r}")
        if dof not in (3, 5):
            raise ValueError(f"dof must be 3 (rotation) or 5 (rotation and baseline direction); got {dof!r}")
        self.dof = int(dof)
        self.loss_scale = float(loss_scale)
        self.prior_weight = float(prior_weight)
        self.robust = bool(robust)
        self.iters = int(iters)
        c = -self.R_cal.T @ self.t_cal
        self._B = float(np.linalg.norm(c))
        self._c0 = c / self._B
        _check_not_degenerate(self.R_cal, c)
        basis = np.linalg.svd(self._c0.reshape(1, 3))[2][1:]  # two unit vectors orthogonal to c0
        self._basis = basis
        self._f = float(np.sqrt(self.K[0, 0] * self.K[1, 1]))
        self.R_: np.ndarray | None = None
        self.t_: np.ndarray | None = None
        self.theta_: np.ndarray | None = None

    def pose(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rig pose ``(R, t)`` of parameters ``theta = (w_x, w_y, w_z[, d_1, d_2])``."""
        R = rotation_from_vector(theta[:3]) @ self.R_cal
        c = self._c0 + (theta[3:5] @ self._basis if len(theta) > 3 else 0.0)
        c = self._B * c / np.linalg.norm(c)
        return R, -R @ c

    def residuals(self, theta: np.ndarray, pts_left: np.ndarray, pts_right: np.ndarray) -> np.ndarray:
        """Row differences (pixels) of the matches after the smooth rectification of pose ``theta``."""
        R, t = self.pose(theta)
        Rr = _rect_rotation(R, -R.T @ t)
        Kinv = np.linalg.inv(self.K)
        a = np.c_[pts_left, np.ones(len(pts_left))] @ (Rr @ Kinv).T
        b = np.c_[pts_right, np.ones(len(pts_right))] @ (Rr @ R.T @ Kinv).T
        return self._f * (a[:, 1] / a[:, 2] - b[:, 1] / b[:, 2])

    def fit(
        self, pts_left: np.ndarray, pts_right: np.ndarray, weights: np.ndarray | None = None
    ) -> StereoRectification:
        """Estimate the rig from matches and return its virtual-camera rectification (also kept as ``R_``, ``t_``).

        Parameters
        ----------
        pts_left, pts_right : ndarray (n, 2)
            Matched pixels, n >= :data:`MIN_MATCHES`.
        weights : ndarray (n,), optional
            Match confidences in [0, 1] (a matcher's score); unreliable matches count less.
        """
        pl, pr = _check_matches(pts_left, pts_right, MIN_MATCHES)
        n = pl.shape[0]
        if weights is None:
            wconf = np.ones(n)
        else:
            wconf = np.asarray(weights, dtype=float).reshape(-1)
            if wconf.shape != (n,) or not np.all(np.isfinite(wconf)) or wconf.min() < 0 or wconf.max() > 1:
                raise ValueError(f"weights must be ({n},) finite values in [0, 1]")
        k_dof = self.dof
        theta = np.zeros(k_dof)
        lam = self.prior_weight * n * self._f**2  # prior on f * theta, scaled like the data term
        r = self.residuals(theta, pl, pr)
        s_now = max(self.loss_scale, 4.0 * float(np.median(np.abs(r)))) if self.robust else 0.0

        def cost(th: np.ndarray, s: float) -> float:
            res = self.residuals(th, pl, pr)
            rho = s**2 * np.log1p((res / s) ** 2) if self.robust else res**2
            return float(np.sum(wconf * rho) + lam * th @ th)

        mu, eps = 1e-3, 1e-6
        for _ in range(self.iters):
            r = self.residuals(theta, pl, pr)
            wr = wconf / (1.0 + (r / s_now) ** 2) if self.robust else wconf  # IRLS weights of the Cauchy loss
            J = np.empty((n, k_dof))
            for k in range(k_dof):
                d = np.zeros(k_dof)
                d[k] = eps
                J[:, k] = (self.residuals(theta + d, pl, pr) - r) / eps
            A = J.T @ (wr[:, None] * J) + lam * np.eye(k_dof)
            g = J.T @ (wr * r) + lam * theta
            c_old = cost(theta, s_now)
            for _ in range(10):  # Levenberg-Marquardt damping: accept only a step that lowers the cost
                step = np.linalg.solve(A + mu * np.diag(np.diag(A)) + 1e-12 * np.eye(k_dof), -g)
                if np.linalg.norm(step[:3]) < 0.1 and cost(theta + step, s_now) < c_old:
                    theta = theta + step
                    mu = max(mu / 3, 1e-7)
                    break
                mu *= 4
            else:
                step = np.zeros(k_dof)
            if self.robust and s_now > self.loss_scale:
                s_now = max(self.loss_scale, 0.5 * s_now)
            elif np.abs(step).max() < 1e-9:
                break
        self.theta_ = theta
        self.R_, self.t_ = self.pose(theta)
        return virtual_stereo_camera(self.K, self.R_, self.t_, self.size)


def hartley_rectification(
    pts_left: np.ndarray,
    pts_right: np.ndarray,
    image_size: tuple[int, int],
    *,
    method: str = "ransac",
    threshold: float = 1.0,
) -> StereoRectification:
    """Uncalibrated rectification (Hartley): a fundamental matrix, then ``cv2.stereoRectifyUncalibrated``.

    The row-alignment-only baseline: two homographies that align the matched rows, with no camera model
    (so no Q). ``method`` is the robust estimator of F: "ransac", "magsac" (USAC_MAGSAC) or "lmeds";
    ``threshold`` its inlier distance in pixels.
    """
    cv2 = _cv2()
    methods = {"ransac": cv2.FM_RANSAC, "magsac": cv2.USAC_MAGSAC, "lmeds": cv2.FM_LMEDS}
    if method not in methods:
        raise ValueError(f"method must be one of {sorted(methods)}; got {method!r}")
    check_real("threshold", threshold, low=0.0, low_inclusive=False)
    pl, pr = _check_matches(pts_left, pts_right, 8)
    w, h = _check_size(image_size)
    F, mask = cv2.findFundamentalMat(pl, pr, methods[method], threshold, 0.999, 5000)
    if F is None or F.shape != (3, 3):
        raise ValueError("the fundamental matrix could not be estimated from these matches (degenerate)")
    inl = mask.ravel().astype(bool) if mask is not None else np.ones(len(pl), bool)
    if inl.sum() < 8:
        inl[:] = True
    ok, H1, H2 = cv2.stereoRectifyUncalibrated(pl[inl], pr[inl], F, (w, h), threshold=5)
    if not ok:
        raise ValueError("cv2.stereoRectifyUncalibrated failed on these matches (degenerate)")
    return StereoRectification(np.asarray(H1, float), np.asarray(H2, float), (w, h))


def essential_rectification(
    pts_left: np.ndarray,
    pts_right: np.ndarray,
    K: np.ndarray,
    baseline: float,
    image_size: tuple[int, int],
    *,
    method: str = "ransac",
    threshold: float = 1.0,
) -> StereoRectification:
    """Calibrated re-estimation: an essential matrix with known K, ``recoverPose``, then the virtual camera.

    A strong classical baseline beside Hartley's: the relative pose (5-point, robust), scaled to the stored
    baseline length, rectified by :func:`virtual_stereo_camera`.
    """
    cv2 = _cv2()
    methods = {"ransac": cv2.RANSAC, "magsac": cv2.USAC_MAGSAC, "lmeds": cv2.LMEDS}
    if method not in methods:
        raise ValueError(f"method must be one of {sorted(methods)}; got {method!r}")
    check_real("threshold", threshold, low=0.0, low_inclusive=False)
    check_real("baseline", baseline, low=0.0, low_inclusive=False)
    pl, pr = _check_matches(pts_left, pts_right, 8)
    K = _check_k(K)
    E, mask = cv2.findEssentialMat(pl, pr, K, methods[method], 0.999, threshold)
    if E is None or E.shape[0] < 3:
        raise ValueError("the essential matrix could not be estimated from these matches (degenerate)")
    E = E[:3]
    _, R, t, _ = cv2.recoverPose(E, pl, pr, K, mask=mask)
    return virtual_stereo_camera(K, R, baseline * t.ravel() / np.linalg.norm(t), image_size)


def _scale(hm: np.ndarray, size: tuple[int, int], step: int = 8) -> float:
    """Mean linear magnification sqrt|det J| of the rectified->original map, inverted (original px per rectified)."""
    w, h = size
    u, v = np.meshgrid(np.arange(0, w, step, dtype=float), np.arange(0, h, step, dtype=float))
    p = np.stack([u.ravel(), v.ravel(), np.ones(u.size)], 1) @ np.linalg.inv(hm).T
    det = abs(np.linalg.det(np.linalg.inv(hm))) / np.abs(p[:, 2]) ** 3
    return float(1.0 / np.mean(np.sqrt(det)))


def vertical_errors(rect: StereoRectification, pts_left: np.ndarray, pts_right: np.ndarray) -> np.ndarray:
    """|row difference| of correspondences after rectification, in original-image pixels.

    The rectified difference is divided by the mean magnification of the two warps, so a rectifier cannot
    shrink its errors by shrinking the image (the uncalibrated homographies may rescale). ``pts_left`` and
    ``pts_right`` are ``(n, 2)`` finite pixel coordinates, ``n >= 1``; anything else raises naming the argument.
    """
    pts_left, pts_right = check_array("pts_left", pts_left, ndim=2), check_array("pts_right", pts_right, ndim=2)
    for name, pts in (("pts_left", pts_left), ("pts_right", pts_right)):
        if pts.shape[1] != 2 or pts.shape[0] == 0:
            raise ValueError(f"{name} must have shape (n, 2) with n >= 1; got {pts.shape}")
    if pts_left.shape != pts_right.shape:
        raise ValueError(f"pts_right must have pts_left's shape {pts_left.shape}; got {pts_right.shape}")
    a = rect.rectify_points(pts_left, "left")
    b = rect.rectify_points(pts_right, "right")
    mag = 0.5 * (_scale(rect.H1, rect.size) + _scale(rect.H2, rect.size))
    return np.abs(a[:, 1] - b[:, 1]) / mag


def rectification_coverage(rect: StereoRectification, step: int = 4) -> tuple[float, float, float, float]:
    """Whole-image quality: ``(valid_left, valid_right, logdet_std_left, logdet_std_right)``.

    ``valid_*`` is the fraction of rectified pixels that come from inside the original image (1 = no blank
    area); ``logdet_std_*`` is the standard deviation of ``log|det J|`` of the warp over the image (0 = the
    scale is uniform: no region stretched or squeezed more than another).
    """
    w, h = rect.size
    u, v = np.meshgrid(np.arange(0, w, step, dtype=float), np.arange(0, h, step, dtype=float))
    grid = np.stack([u.ravel(), v.ravel()], 1)
    out = []
    for hm in (rect.H1, rect.H2):
        src = _apply(np.linalg.inv(hm), grid)
        ok = (src[:, 0] >= -0.5) & (src[:, 0] <= w - 0.5) & (src[:, 1] >= -0.5) & (src[:, 1] <= h - 0.5)
        out.append(float(ok.mean()))
    for hm in (rect.H1, rect.H2):
        p = np.c_[grid, np.ones(len(grid))] @ np.linalg.inv(hm).T
        out.append(float(np.std(-3 * np.log(np.abs(p[:, 2])))))
    return out[0], out[1], out[2], out[3]
