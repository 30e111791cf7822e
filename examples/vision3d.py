"""3D vision with geode.vision3d beside OpenCV: online stereo rectification (VirtualRect) and Lie routing (LieVLM).

What it shows:

1. **VirtualRect in an OpenCV pipeline.** A stereo rig whose right camera has drifted from its stored calibration
   (a rendered scene with dense ground truth). ORB features and a brute-force matcher (OpenCV) give the matches;
   four rectifications are compared on the *whole image* (dense ground-truth correspondences): the stale
   calibration, OpenCV's uncalibrated Hartley rectification (``cv2.stereoRectifyUncalibrated``), OpenCV's
   essential-matrix pose (``cv2.findEssentialMat`` + ``recoverPose``), and ``VirtualRect`` (robust refinement of the
   rotation from the stored calibration). Then the usual OpenCV steps on VirtualRect's output: ``remap`` (it calls
   ``cv2.remap``), ``cv2.StereoSGBM`` disparity, and ``cv2.reprojectImageTo3D`` with VirtualRect's ``Q``; the
   distances are checked against the ground truth. Hartley's homographies have no ``Q``: no metric depth. The
   rectification of the true pose (an oracle) is the floor of every error.
2. **LieRouter as a fusion block.** A small answer head over visual tokens fused with geometry tokens (camera
   rotation, 3D position) on the synthetic pose-drift benchmark, trained on poses up to 30 degrees and tested up
   to 90, with LieVLM's routing block against additive fusion. (The claim check found no robustness gain for
   LieVLM here; see ``geode show lievlm``.)

GARD and Bridge-AD are used in their package docstrings' examples (``geode show gard``, ``geode show bridge-ad``).

Run::

    python examples/vision3d.py            # about a minute on one core
    python examples/vision3d.py --smoke    # a few seconds

Needs the ``vision3d`` extra (OpenCV: ``pip install 'geode[vision3d]'``). No network, no assets.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import time

import numpy as np

SKIP = 77


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="smallest size (the test suite's run)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


# ------------------------------------------------------------------------------------------- VirtualRect


def orb_matches(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ORB keypoints matched by Hamming distance with a cross-check: what a user's pipeline would do."""
    import cv2

    orb = cv2.ORB_create(nfeatures=2000)
    kl, dl = orb.detectAndCompute(left, None)
    kr, dr = orb.detectAndCompute(right, None)
    matches = cv2.BFMatcher(cv2.NORM_HAMMING, crossCheck=True).match(dl, dr)
    pts_l = np.array([kl[m.queryIdx].pt for m in matches], float)
    pts_r = np.array([kr[m.trainIdx].pt for m in matches], float)
    return pts_l, pts_r


def reprojected_distance_error(scene, rect, step: int = 2) -> tuple[float, float]:
    """SGBM on the rectified pair, 3D points through Q; median relative error of their distance to the left camera.

    Returns (median relative error, fraction of rectified pixels with a valid disparity).
    """
    import cv2

    left_r, right_r = rect.remap(scene.left, scene.right)
    sgbm = cv2.StereoSGBM_create(minDisparity=0, numDisparities=64, blockSize=5, P1=200, P2=800, uniquenessRatio=5)
    disp = sgbm.compute(left_r, right_r).astype(np.float32) / 16.0  # SGBM returns fixed point, 4 fractional bits
    xyz = cv2.reprojectImageTo3D(disp, rect.Q)  # in the rectified left frame: distances equal the left frame's
    h, w = disp.shape
    v, u = np.mgrid[0:h:step, 0:w:step]
    v, u = v.ravel(), u.ravel()
    ok = disp[v, u] > 1.0
    # each rectified left pixel comes from an original left pixel: H1^-1 maps it back
    inv = np.linalg.inv(rect.H1)
    p = np.c_[u, v, np.ones_like(u)] @ inv.T
    uo, vo = np.rint(p[:, 0] / p[:, 2]).astype(int), np.rint(p[:, 1] / p[:, 2]).astype(int)
    inside = (uo >= 0) & (uo < w) & (vo >= 0) & (vo < h)
    ok &= inside
    d_true = np.linalg.norm(scene.points_left[vo[ok], uo[ok]], axis=1)
    d_est = np.linalg.norm(xyz[v[ok], u[ok]], axis=1)
    return float(np.median(np.abs(d_est - d_true) / d_true)), float(ok.mean())


def virtualrect_demo(smoke: bool, seed: int) -> dict[str, float]:
    from geode.vision3d import (
        VirtualRect,
        essential_rectification,
        hartley_rectification,
        rectification_coverage,
        render_stereo_scene,
        vertical_errors,
        virtual_stereo_camera,
    )

    width, height = (160, 120) if smoke else (320, 240)
    scene = render_stereo_scene(seed, width=width, height=height, focal=280.0 * width / 320, drift_deg=1.0)
    pts_l, pts_r = orb_matches(scene.left, scene.right)
    dense_l, dense_r = scene.correspondences()  # ground truth over the whole image
    baseline = float(np.linalg.norm(scene.t_cal))
    print(f"VirtualRect: {width}x{height} stereo pair, right camera drifted; {len(pts_l)} ORB matches (OpenCV)")
    rectifiers = {
        "stale calibration": lambda: virtual_stereo_camera(scene.K, scene.R_cal, scene.t_cal, scene.size),
        "OpenCV Hartley": lambda: hartley_rectification(pts_l, pts_r, scene.size),
        "OpenCV essential": lambda: essential_rectification(pts_l, pts_r, scene.K, baseline, scene.size),
        "VirtualRect": lambda: VirtualRect(scene.K, scene.R_cal, scene.t_cal, scene.size).fit(pts_l, pts_r),
        "true pose (oracle)": lambda: virtual_stereo_camera(scene.K, scene.R_true, scene.t_true, scene.size),
    }
    out = {}
    for name, rectify in rectifiers.items():
        try:
            rect = rectify()
        except ValueError as e:  # a degenerate estimate from these matches: say so, as a pipeline should
            print(f"  {name:18s} failed: {e}")
            continue
        err = vertical_errors(rect, dense_l, dense_r)
        valid_l, valid_r, _, _ = rectification_coverage(rect)
        out[name] = float(np.median(err))
        line = (
            f"  {name:18s} vertical error over the whole image: median {np.median(err):.2f} px, "
            f"90th pct {np.percentile(err, 90):.2f} px; no blank pixels in {100 * min(valid_l, valid_r):.0f}%"
        )
        if rect.Q is not None:
            rel, frac = reprojected_distance_error(scene, rect)
            line += f"; SGBM + Q: distance error {100 * rel:.1f}% ({100 * frac:.0f}% of pixels)"
            out[f"{name} depth"] = rel
        print(line)
    return out


# ------------------------------------------------------------------------------------------- LieVLM


def lievlm_demo(smoke: bool, seed: int) -> dict[str, float]:
    import torch
    from torch import nn

    from geode.vision3d import PoseDriftModel, make_pose_drift_world, sample_pose_drift

    n_train, n_test, steps, batch = (512, 256, 10, 64) if smoke else (6000, 1000, 300, 128)
    world = make_pose_drift_world(seed)
    train = sample_pose_drift(world, n_train, (0.0, 30.0), seed=seed + 1)
    bins = {"0-30": (0.0, 30.0), "50-70": (50.0, 70.0), "70-90": (70.0, 90.0)}
    tests = {b: sample_pose_drift(world, n_test, r, seed=seed + 2 + i) for i, (b, r) in enumerate(bins.items())}
    print(f"LieVLM: {n_train} scenes with poses <= 30 degrees, {steps} steps; accuracy by pose bin (chance 0.10)")
    out = {}
    for kind, name in (("additive", "additive fusion"), ("lie", "LieRouter")):
        torch.manual_seed(seed)
        model = PoseDriftModel(kind, world.d_vis, world.d_geo, world.n_classes, world.n_objects)
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
        gen = torch.Generator().manual_seed(seed)
        for _ in range(steps):
            idx = torch.randint(0, n_train, (batch,), generator=gen)
            loss = nn.functional.cross_entropy(model(train["v"][idx], train["g"][idx]), train["y"][idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        model.eval()
        with torch.no_grad():
            acc = {b: float((model(t["v"], t["g"]).argmax(1) == t["y"]).float().mean()) for b, t in tests.items()}
        out.update({f"{kind} {b}": a for b, a in acc.items()})
        print(f"  {name:16s} " + "   ".join(f"{b} deg: {a:.3f}" for b, a in acc.items()))
    return out


def main() -> int:
    args = parse_args()
    if importlib.util.find_spec("cv2") is None:
        print("skipped: needs the vision3d extra (OpenCV): pip install 'geode[vision3d]'")
        return SKIP
    import cv2
    import torch

    torch.set_num_threads(1)
    cv2.setNumThreads(1)
    torch.manual_seed(args.seed)
    t0 = time.process_time()
    rect = virtualrect_demo(args.smoke, args.seed)
    lie = lievlm_demo(args.smoke, args.seed)
    finite = all(math.isfinite(v) for v in (*rect.values(), *lie.values()))
    better = rect["VirtualRect"] < rect["stale calibration"]
    print(f"VirtualRect {'lowers' if better else 'does NOT lower'} the stale calibration's vertical error")
    print(f"CPU {time.process_time() - t0:.1f} s")
    return 0 if finite and better else 1


if __name__ == "__main__":
    sys.exit(main())
