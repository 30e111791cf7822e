"""Claim check of VirtualRect: a virtual-camera rectifier beats row-alignment homographies over the whole image.

Thresholds (fixed by the issue, before any run): ``reproduced`` if the dense vertical error is >= 10% lower
than the homography rectifier's (Hartley, ``cv2.stereoRectifyUncalibrated``) with full coverage and depth error
close to the oracle's, also under degraded matches; ``partial`` if it is lower in the clean case.

Numerical definitions, written before the first run:

- *dense vertical error*: the mean |row difference| after rectification over every ground-truth
  correspondence of the left image (visible in both views, occlusion-checked), in original-image pixels (the
  rectified difference divided by the mean magnification of the two warps, so no rectifier gains by shrinking
  the image); per seed, the mean over the test scenes. ">= 10% lower": ``vert_ratio = VirtualRect / Hartley
  <= 0.9`` in every seed (``agg="all"``); "lower": ``vert_ratio < 1`` in every seed;
- *full coverage*: in every test scene and both conditions, at least 99% of each rectified view's pixels come
  from inside the original image (no blank area), ``agg="all"``;
- *close to the oracle*: the depth AbsRel of StereoSGBM on VirtualRect's rectified pair, with its own Q, is
  at most 0.01 above the AbsRel of the same matcher on the oracle's rectification (true calibration, same
  virtual-camera construction), mean over test scenes, one-sided 95% upper bound over seeds (``bound95``).

Added before the first run (the protocol needs them; the issue names none):

- *floors*: the oracle's dense vertical error <= 0.01 px (generator and rectification agree); Hartley beats the
  stale calibration in the clean case (the baseline works); SGBM on the oracle reaches AbsRel <= 0.10 on at
  least 30% of the pixels (the matcher works); VirtualRect and Hartley never fail on a test scene;
- *negative controls*: the stale calibration (no online correction) and the VirtualRect ablation with plain
  least squares instead of the robust loss, for every vertical-error threshold; the stale calibration for the
  depth thresholds; Hartley's own coverage for the coverage threshold.

Set-up: procedural ray-cast scenes (ground, wall, 6 boxes, 3 spheres, solid noise textures), 320x240, f=280 px,
baseline 0.4 m; the right camera drifts by a rotation uniform in [-1, 1] degrees per axis and a baseline
direction change of up to 2% (y, z). Matches are drawn from the dense ground truth: *clean* 400 matches over the
whole image, noise 0.3 px, 3% gross outliers; *degraded* 150 matches from the left 40% of the image only, noise
0.5 px, 25% outliers. Equal tuning (9 configurations per method, geometric mean of the dense vertical error
over 2 validation scenes x both conditions, lower is better): VirtualRect and its non-robust ablation over the
Cauchy scale (ablation: none) and the prior weight; Hartley and the essential-matrix baseline over the robust
estimator (RANSAC, MAGSAC, LMedS) and its inlier threshold. The strongest baseline beside Hartley is the
calibrated re-estimation (``findEssentialMat`` + ``recoverPose`` with the known K, rectified by the same virtual
camera). Quick: 4 test scenes per seed. Full (not run here; CPU-bound, no GPU needed): 640x480, 20 test scenes.
Two readings of the estimated pose (protocol section 5, an inferred detail that can decide the verdict): the
issue's "rotation refinement" (3 DoF, the verdict's arm) and rotation + baseline direction (5 DoF, reported as
``vr5_*``); both tuned alike. The scene's drift includes a small baseline tilt that the 3-DoF model cannot
represent exactly (a real rig shifts as well as rotates).

Set-up history. Revision 1's first quick run (seed 0 only) estimated the 5-DoF pose as *the* method and tuned
without ``extend``: ``vert_ratio_clean`` 1.69 (VirtualRect 0.080 px vs Hartley 0.048 px), degraded 0.81. The
baseline direction proved weakly observed (estimates tilted 6% where the truth was <= 2%), and the issue names
rotation refinement; so revision 2 runs both readings with the verdict on the issue's, and adds ``extend=2``
(the protocol's grid-edge rule, missing in revision 1). No threshold, floor or control changed.

Quick verdict (3 seeds, revision 2; set-up unchanged after seeing these results): ``not reproduced``
(per-seed verdicts not reproduced / partial / not reproduced, so flagged unstable). Seeds 0 / 1 / 2:

- ``vert_ratio_clean`` (VirtualRect / Hartley dense |dy|) 2.72 / 0.83 / 1.72 (VirtualRect 0.130 / 0.101 / 0.095
  px, Hartley with MAGSAC 0.048 / 0.121 / 0.055 px): fails both the 10% and the "lower" threshold;
- ``vert_ratio_degraded`` 0.63 / 0.66 / 1.06 (VirtualRect 0.151 / 0.286 / 0.300 px, Hartley 0.239 / 0.432 /
  0.284): passes in 2 of 3 seeds only;
- coverage: VirtualRect 1.000 in every scene (passes); Hartley 0.83 / 0.81 / 0.88 (its control, fails: up to 19%
  blank area, the whole-image distortion the paper describes);
- depth gap to the oracle (SGBM AbsRel): clean -0.000 / 0.002 / 0.001 (passes), degraded 0.065 / 0.038 / 0.030
  (fails; the rotation-only model cannot absorb the baseline tilt from matches in 40% of the image);
- controls: stale calibration ratio 52 / 19 / 38 (clean), 10 / 5.4 / 7.4 (degraded), depth gap 0.50 / 0.36 /
  0.47; the non-robust ablation 35 / 9.2 / 8.0 (clean), 13 / 6.0 / 22 (degraded): all fail, every threshold
  discriminates;
- floors pass: oracle |dy| 0.000, Hartley/stale 0.02-0.05, oracle SGBM AbsRel 0.067 / 0.053 / 0.086 on 77-82%
  of the pixels, no failed fit.
- The 5-DoF reading: clean ratio 1.69 / 0.29 / 0.78, degraded 0.81 / 0.96 / 1.27 (no better overall).
- Strongest baseline: the essential matrix + ``recoverPose`` in the same virtual camera (MAGSAC), which beats
  VirtualRect in every seed: VirtualRect / essential 3.5 / 2.8 / 2.7 (clean), 1.14 / 1.08 / 1.27 (degraded).

Reading: the virtual-camera construction delivers what the abstract promises about whole images (full
coverage, no scale variation, oracle-like depth with clean matches) where the homographies leave 12-19% blank,
but on this synthetic set-up a tuned MAGSAC homography pair is already row-aligned to 0.05-0.12 px, and our
robust rotation refinement is not more accurate than that, nor than a calibrated essential-matrix estimate.
Quick mode: about 6.4 CPU s per seed (the check is far below its budget; 4 test scenes per seed).

Matches come from the ground truth rather than a feature detector (SIFT) so the noise and outlier levels are
controlled; a detector's matches would add its own error model to both sides alike.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **not
reproduced** (the v2 harness read not reproduced on the same runs). No idea ablation or learned-arm reference is
declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(w=96, h=72, f=84.0, n_val=1, n_test=1, small=True),
    "quick": dict(w=320, h=240, f=280.0, n_val=2, n_test=4, small=False),
    "full": dict(w=640, h=480, f=560.0, n_val=6, n_test=20, small=False),
}
CONDITIONS = {
    "clean": dict(n=400, noise_px=0.3, outlier_frac=0.03),
    "degraded": dict(n=150, noise_px=0.5, outlier_frac=0.25, region=(0.0, 0.0, 0.4, 1.0)),
}
METHODS = ("virtualrect", "vr5", "ls", "hartley", "essential")
_NAMES = {
    "virtualrect": "VirtualRect (rotation refinement, Cauchy, virtual camera)",
    "vr5": "VirtualRect, rotation + baseline direction (5 DoF reading)",
    "ls": "VirtualRect, plain least squares (ablation)",
    "hartley": "Hartley homographies (stereoRectifyUncalibrated)",
    "essential": "essential matrix + recoverPose, virtual camera",
    "stale": "stale calibration",
    "oracle": "true calibration (oracle)",
}
BASELINE = 0.4
ZMAX = 20.0  # depth evaluated where the true depth is <= 20 m (disparity >= f B / 20)


def _grids(small: bool) -> dict[str, Any]:
    if small:
        return {
            "virtualrect": dict(loss_scale=[1.0], prior_weight=[1e-3]),
            "vr5": dict(loss_scale=[1.0], prior_weight=[1e-3]),
            "ls": dict(prior_weight=[1e-3]),
            "hartley": dict(method=["ransac"], threshold=[1.0]),
            "essential": dict(method=["ransac"], threshold=[1.0]),
        }
    return {
        "virtualrect": dict(loss_scale=[0.3, 1.0, 3.0], prior_weight=[1e-4, 1e-3, 1e-2]),
        "vr5": dict(loss_scale=[0.3, 1.0, 3.0], prior_weight=[1e-4, 1e-3, 1e-2]),
        "ls": dict(prior_weight=[1e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 1.0]),
        "hartley": dict(method=["ransac", "magsac", "lmeds"], threshold=[0.3, 1.0, 3.0]),
        "essential": dict(method=["ransac", "magsac", "lmeds"], threshold=[0.3, 1.0, 3.0]),
    }


def _rectify(method: str, params: dict[str, Any], sc: Any, pl: np.ndarray, pr: np.ndarray) -> Any:
    from geode.vision3d.virtualrect import (
        VirtualRect,
        essential_rectification,
        hartley_rectification,
        virtual_stereo_camera,
    )

    if method == "oracle":
        return virtual_stereo_camera(sc.K, sc.R_true, sc.t_true, sc.size)
    if method == "stale":
        return virtual_stereo_camera(sc.K, sc.R_cal, sc.t_cal, sc.size)
    if method == "virtualrect":
        return VirtualRect(sc.K, sc.R_cal, sc.t_cal, sc.size, **params).fit(pl, pr)
    if method == "vr5":
        return VirtualRect(sc.K, sc.R_cal, sc.t_cal, sc.size, dof=5, **params).fit(pl, pr)
    if method == "ls":
        return VirtualRect(sc.K, sc.R_cal, sc.t_cal, sc.size, robust=False, **params).fit(pl, pr)
    if method == "hartley":
        return hartley_rectification(pl, pr, sc.size, **params)
    return essential_rectification(pl, pr, sc.K, BASELINE, sc.size, **params)


def _safe(method: str, params: dict[str, Any], sc: Any, pl: np.ndarray, pr: np.ndarray) -> tuple[Any, bool]:
    """The rectification, or the stale calibration's when the method fails (counted as a failure)."""
    try:
        return _rectify(method, params, sc, pl, pr), True
    except (ValueError, np.linalg.LinAlgError):
        return _rectify("stale", {}, sc, pl, pr), False


def _sgbm_absrel(rect: Any, sc: Any) -> tuple[float, float]:
    """Depth AbsRel of StereoSGBM on the rectified pair, with the rectification's Q; and the valid fraction."""
    import cv2

    left, right = rect.remap(sc.left, sc.right)
    nd = 16 * int(math.ceil(rect.K_rect[0, 0] * BASELINE / 2.5 / 16))  # disparities down to 2.5 m
    sgbm = cv2.StereoSGBM_create(
        minDisparity=0, numDisparities=nd, blockSize=5, P1=8 * 25, P2=32 * 25, uniquenessRatio=10,
        speckleWindowSize=50, speckleRange=2, disp12MaxDiff=1,
    )  # fmt: skip
    disp = sgbm.compute(left, right).astype(np.float32) / 16.0
    m1x, m1y, _, _ = rect.maps()
    w, h = rect.size
    ui, vi = np.rint(m1x).astype(int), np.rint(m1y).astype(int)
    inside = (ui >= 0) & (ui < w) & (vi >= 0) & (vi < h)
    pts = np.zeros((h, w, 3))
    pts[inside] = sc.points_left[vi[inside], ui[inside]]
    z_gt = (pts @ rect.R1.T)[..., 2]  # true depth in the rectified left frame
    u, v = np.meshgrid(np.arange(w, dtype=float), np.arange(h, dtype=float))
    hom = np.stack([u, v, disp, np.ones_like(u)], -1) @ rect.Q.T
    with np.errstate(divide="ignore", invalid="ignore"):
        z = hom[..., 2] / hom[..., 3]
    cand = inside & (z_gt > 0.5) & (z_gt <= ZMAX)
    ok = cand & (disp > 0.5) & np.isfinite(z)
    if ok.sum() < 50:
        return 1.0, 0.0
    return float(np.mean(np.abs(z[ok] - z_gt[ok]) / z_gt[ok])), float(ok.sum() / max(cand.sum(), 1))


def _scenes(seed: int, n: int, cfg: dict[str, Any], offset: int) -> list[Any]:
    from geode.vision3d.virtualrect import render_stereo_scene

    return [
        render_stereo_scene(
            seed * 1009 + offset + i, width=cfg["w"], height=cfg["h"], focal=cfg["f"], baseline=BASELINE
        )
        for i in range(n)
    ]


def _matches(sc: Any, cond: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from geode.vision3d.virtualrect import sample_matches

    kw = dict(CONDITIONS[cond])
    return sample_matches(sc, kw.pop("n"), seed, **kw)


@register(
    "virtualrect",
    claim=(
        "Estimating a rectified virtual stereo camera with a robust loss and whole-image constraints gives lower "
        "dense vertical error than row-alignment homographies, with full image coverage and oracle-like depth, "
        "also when the matches are degraded."
    ),
    paper_figure="17% lower vertical flow error than the prior online rectifier on Carla-Flowguided, 7% on Semi-Truck",
    baselines=("Hartley (cv2.stereoRectifyUncalibrated)", "stale calibration", "essential matrix + recoverPose"),
    thresholds=(
        Threshold(
            "lower10_clean",
            "vert_ratio_clean",
            "<=",
            0.9,
            "dense vertical error >= 10% below Hartley's, clean matches (every seed)",
            agg="all",
            control=("stale_vert_ratio_clean", "ls_vert_ratio_clean"),
            arms=("virtualrect", "hartley"),
        ),
        Threshold(
            "lower10_degraded",
            "vert_ratio_degraded",
            "<=",
            0.9,
            "dense vertical error >= 10% below Hartley's, degraded matches (every seed)",
            agg="all",
            control=("stale_vert_ratio_degraded", "ls_vert_ratio_degraded"),
            arms=("virtualrect", "hartley"),
        ),
        Threshold(
            "full_coverage",
            "coverage_min",
            ">=",
            0.99,
            "every rectified view of every test scene has >= 99% valid pixels (every seed)",
            agg="all",
            control="hartley_coverage_min",
            arms=("virtualrect",),
        ),
        Threshold(
            "depth_close_clean",
            "depth_gap_clean",
            "<=",
            0.01,
            "SGBM depth AbsRel at most 0.01 above the oracle's, clean (95% upper bound)",
            agg="bound95",
            control="stale_depth_gap_clean",
            arms=("virtualrect", "oracle"),
        ),
        Threshold(
            "depth_close_degraded",
            "depth_gap_degraded",
            "<=",
            0.01,
            "SGBM depth AbsRel at most 0.01 above the oracle's, degraded (95% upper bound)",
            agg="bound95",
            control="stale_depth_gap_degraded",
            arms=("virtualrect", "oracle"),
        ),
        Threshold(
            "lower_clean",
            "vert_ratio_clean",
            "<",
            1.0,
            "dense vertical error below Hartley's, clean matches (every seed)",
            agg="all",
            control=("stale_vert_ratio_clean", "ls_vert_ratio_clean"),
            arms=("virtualrect", "hartley"),
        ),
    ),
    floors=(
        Threshold(
            "oracle_exact", "oracle_vert", "<=", 0.01, "floor: oracle dense vertical error <= 0.01 px", agg="all"
        ),
        Threshold(
            "hartley_works",
            "hartley_over_stale_clean",
            "<",
            1.0,
            "floor: Hartley beats the stale calibration on clean matches",
            agg="all",
            arms=("hartley",),
        ),
        Threshold(
            "sgbm_works",
            "oracle_absrel",
            "<=",
            0.10,
            "floor: SGBM AbsRel on the oracle <= 0.10",
            agg="all",
            arms=("oracle",),
        ),
        Threshold(
            "sgbm_dense",
            "oracle_valid_frac",
            ">=",
            0.3,
            "floor: SGBM valid on >= 30% of pixels",
            agg="all",
            arms=("oracle",),
        ),
        Threshold("no_failures", "failures", "<=", 0.0, "floor: VirtualRect and Hartley never fail", agg="all"),
    ),
    reproduced="lower10_clean and lower10_degraded and full_coverage and depth_close_clean and depth_close_degraded",
    partial="lower_clean",
    method="virtualrect",
    tuned=("virtualrect", "hartley"),
    untuned={"oracle": "the true calibration: no parameter"},
    key_metric="vert_ratio_clean",
    revision=2,
)
def run(mode: str, seed: int) -> Outcome:
    from geode.vision3d.virtualrect import rectification_coverage, vertical_errors

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    val = _scenes(seed, cfg["n_val"], cfg, 0)
    test = _scenes(seed, cfg["n_test"], cfg, 500)
    val_sets = [
        (sc, *sc.correspondences(), *_matches(sc, c, seed * 31 + i)) for i, sc in enumerate(val) for c in CONDITIONS
    ]

    def fit(method: str, params: dict[str, Any]) -> float:
        errs = []
        for sc, gl, gr, pl, pr in val_sets:
            rect, ok = _safe(method, params, sc, pl, pr)
            errs.append(float(np.mean(vertical_errors(rect, gl, gr))) if ok else 100.0)
        return float(np.exp(np.mean(np.log(np.maximum(errs, 1e-6)))))

    res = tune(fit, _grids(cfg["small"]), maximize=False, extend=2)
    params = {m: res.params(m) for m in METHODS}
    params["oracle"] = params["stale"] = {}
    rows: dict[tuple[str, str], list[dict[str, float]]] = {}
    failures = 0
    for i, sc in enumerate(test):
        gl, gr = sc.correspondences()
        for cond in CONDITIONS:
            pl, pr = _matches(sc, cond, seed * 31 + 1000 + i)
            for m in (*METHODS, "stale", "oracle"):
                rect, ok = _safe(m, params[m], sc, pl, pr)
                failures += (not ok) and m in ("virtualrect", "hartley")
                e = vertical_errors(rect, gl, gr)
                cov = rectification_coverage(rect)
                r = dict(vert=float(e.mean()), p95=float(np.percentile(e, 95)), cov=min(cov[:2]), ok=float(ok))
                r["logdet"] = max(cov[2:])
                if rect.Q is not None:
                    r["absrel"], r["valid"] = _sgbm_absrel(rect, sc)
                rows.setdefault((cond, m), []).append(r)

    def mean(cond: str, m: str, key: str) -> float:
        return float(np.mean([r[key] for r in rows[(cond, m)]]))

    metrics: dict[str, float] = {"failures": float(failures)}
    table: list[dict[str, Any]] = []
    for cond in CONDITIONS:
        h = mean(cond, "hartley", "vert")
        for m in ("virtualrect", "vr5", "ls", "essential", "stale"):
            key = "vert_ratio" if m == "virtualrect" else f"{m}_vert_ratio"
            metrics[f"{key}_{cond}"] = mean(cond, m, "vert") / h
        for m in (*METHODS, "stale", "oracle"):
            metrics[f"{m}_vert_{cond}"] = mean(cond, m, "vert")
            metrics[f"{m}_cov_{cond}"] = min(r["cov"] for r in rows[(cond, m)])
            if m != "hartley":
                metrics[f"{m}_absrel_{cond}"] = mean(cond, m, "absrel")
            table.append(
                {
                    "matches": cond,
                    "method": _NAMES[m],
                    "dense |dy| px": mean(cond, m, "vert"),
                    "p95 |dy| px": mean(cond, m, "p95"),
                    "coverage (min)": metrics[f"{m}_cov_{cond}"],
                    "logdetJ std": mean(cond, m, "logdet"),
                    "SGBM AbsRel": math.nan if m == "hartley" else metrics[f"{m}_absrel_{cond}"],
                    "fits ok": mean(cond, m, "ok"),
                }
            )
        o = metrics[f"oracle_absrel_{cond}"]
        metrics[f"depth_gap_{cond}"] = metrics[f"virtualrect_absrel_{cond}"] - o
        metrics[f"stale_depth_gap_{cond}"] = metrics[f"stale_absrel_{cond}"] - o
        metrics[f"essential_depth_gap_{cond}"] = metrics[f"essential_absrel_{cond}"] - o
        metrics[f"vr5_depth_gap_{cond}"] = metrics[f"vr5_absrel_{cond}"] - o
    metrics["coverage_min"] = min(metrics["virtualrect_cov_clean"], metrics["virtualrect_cov_degraded"])
    metrics["hartley_coverage_min"] = min(metrics["hartley_cov_clean"], metrics["hartley_cov_degraded"])
    metrics["oracle_vert"] = max(metrics["oracle_vert_clean"], metrics["oracle_vert_degraded"])
    metrics["hartley_over_stale_clean"] = metrics["hartley_vert_clean"] / metrics["stale_vert_clean"]
    metrics["oracle_absrel"] = metrics["oracle_absrel_clean"]
    metrics["oracle_valid_frac"] = float(np.mean([r["valid"] for r in rows[("clean", "oracle")]]))
    notes = res.notes()
    for cond in CONDITIONS:
        strongest = min(("hartley", "essential"), key=lambda m: metrics[f"{m}_vert_{cond}"])
        vr, sb = metrics[f"virtualrect_vert_{cond}"], metrics[f"{strongest}_vert_{cond}"]
        metrics[f"strongest_vert_ratio_{cond}"] = vr / sb
        notes.append(
            f"Strongest baseline ({cond}): {_NAMES[strongest]}, dense |dy| {sb:.3f} px vs VirtualRect {vr:.3f} px "
            f"(ratio {vr / sb:.2f})."
        )
    notes.append(f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.")
    summary = "; ".join(
        f"{c}: dense |dy| VirtualRect {metrics[f'virtualrect_vert_{c}']:.3f} px, "
        f"Hartley {metrics[f'hartley_vert_{c}']:.3f}, "
        f"essential {metrics[f'essential_vert_{c}']:.3f}, stale {metrics[f'stale_vert_{c}']:.3f}; AbsRel VR "
        f"{metrics[f'virtualrect_absrel_{c}']:.3f} vs oracle {metrics[f'oracle_absrel_{c}']:.3f}"
        for c in CONDITIONS
    )
    return Outcome(metrics=metrics, table=table, summary=summary, notes=notes, tuned=res.table())
