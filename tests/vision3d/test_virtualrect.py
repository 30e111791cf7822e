import numpy as np
import pytest

from geode.vision3d.virtualrect import (
    MIN_MATCHES,
    StereoRectification,
    VirtualRect,
    hartley_rectification,
    rectification_coverage,
    render_stereo_scene,
    rotation_from_vector,
    sample_matches,
    vertical_errors,
    virtual_stereo_camera,
)

W, H, F = 128, 96, 112.0


@pytest.fixture(scope="module")
def scene():
    return render_stereo_scene(3, width=W, height=H, focal=F, drift_deg=1.0, baseline_drift=0.0)


@pytest.fixture(scope="module")
def rectified_scene():
    return render_stereo_scene(4, width=W, height=H, focal=F, drift_deg=0.0, baseline_drift=0.0)


def test_rotation_from_vector_is_a_rotation_and_matches_small_angle():
    w = np.array([0.3, -0.2, 0.5])
    R = rotation_from_vector(w)
    assert np.allclose(R.T @ R, np.eye(3), atol=1e-12) and np.isclose(np.linalg.det(R), 1.0)
    assert np.allclose(R @ w, w)  # the axis is fixed
    assert np.allclose(rotation_from_vector(w / 2) @ rotation_from_vector(w / 2), R)


def test_ground_truth_correspondences_see_the_same_surface(scene):
    pl, pr = scene.correspondences()
    assert len(pl) > 0.6 * W * H

    # Lambertian texture: a visible point has the same intensity in both views, so the true correspondences
    # match better than the same correspondences shifted by 3 px along the row
    def err(dx):
        x = np.clip(np.rint(pr[:, 0] + dx).astype(int), 0, W - 1)
        ir = scene.right[np.rint(pr[:, 1]).astype(int), x].astype(float)
        return np.mean(np.abs(ir - scene.left[pl[:, 1].astype(int), pl[:, 0].astype(int)]))

    assert err(0) < min(err(1), err(-1), err(3) * 0.9, err(-3) * 0.9)


def test_already_rectified_pair_gives_the_identity(rectified_scene):
    sc = rectified_scene
    rect = virtual_stereo_camera(sc.K, sc.R_cal, sc.t_cal, sc.size)
    assert np.allclose(rect.H1, np.eye(3), atol=1e-12) and np.allclose(rect.H2, np.eye(3), atol=1e-12)
    pl, pr = sample_matches(sc, 200, 0, noise_px=0.0)
    fitted = VirtualRect(sc.K, sc.R_cal, sc.t_cal, sc.size).fit(pl, pr)
    assert np.allclose(fitted.H1, np.eye(3), atol=1e-6) and np.allclose(fitted.H2, np.eye(3), atol=1e-6)
    m1x, m1y, m2x, m2y = fitted.maps()
    u, v = np.meshgrid(np.arange(W), np.arange(H))
    for mx, my in ((m1x, m1y), (m2x, m2y)):
        assert np.abs(mx - u).max() < 1e-3 and np.abs(my - v).max() < 1e-3
    left, right = fitted.remap(sc.left, sc.right)
    assert np.abs(left[2:-2, 2:-2].astype(int) - sc.left[2:-2, 2:-2]).max() <= 1


def test_epipolar_lines_are_horizontal_after_rectification(scene):
    rect = virtual_stereo_camera(scene.K, scene.R_true, scene.t_true, scene.size)
    pl, pr = scene.correspondences()
    assert vertical_errors(rect, pl, pr).max() < 1e-6
    # the rectified fundamental matrix is the one of a horizontal rig, [e1]_x up to scale
    t, R, K = scene.t_true, scene.R_true, scene.K
    tx = np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]])
    Fm = np.linalg.inv(K).T @ tx @ R @ np.linalg.inv(K)
    Fr = np.linalg.inv(rect.H2).T @ Fm @ np.linalg.inv(rect.H1)
    Fr /= Fr[2, 1]
    assert np.allclose(Fr, [[0, 0, 0], [0, 0, -1], [0, 1, 0]], atol=1e-9)
    assert rectification_coverage(rect)[:2] == (1.0, 1.0)


def test_q_reprojects_true_disparities_to_the_true_depths(scene):
    rect = virtual_stereo_camera(scene.K, scene.R_true, scene.t_true, scene.size)
    pl, pr = scene.correspondences()
    a, b = rect.rectify_points(pl, "left"), rect.rectify_points(pr, "right")
    X = np.c_[a, a[:, 0] - b[:, 0], np.ones(len(a))] @ rect.Q.T
    z = X[:, 2] / X[:, 3]
    pts = scene.points_left[pl[:, 1].astype(int), pl[:, 0].astype(int)]
    z_true = (pts @ rect.R1.T)[:, 2]
    assert np.allclose(z, z_true, rtol=1e-7)
    assert np.allclose(X[:, :3] / X[:, 3:], pts @ rect.R1.T, rtol=1e-6, atol=1e-6)


def test_first_axis_agrees_with_opencv_stereo_rectify(scene):
    cv2 = pytest.importorskip("cv2")
    rect = virtual_stereo_camera(scene.K, scene.R_true, scene.t_true, scene.size)
    R1, R2, *_ = cv2.stereoRectify(
        scene.K, np.zeros(5), scene.K, np.zeros(5), scene.size, scene.R_true, scene.t_true.reshape(3, 1)
    )
    assert abs(abs(float(R1[0] @ rect.R1[0])) - 1) < 1e-9  # both put the baseline on the x axis
    assert np.allclose(rect.R2 @ scene.R_true, rect.R1, atol=1e-12)


def test_virtualrect_recovers_the_drift_and_is_robust_to_outliers(scene):
    sc = scene
    pl, pr = sample_matches(sc, 300, 1, noise_px=0.1, outlier_frac=0.3)
    gl, gr = sc.correspondences()
    vr = VirtualRect(sc.K, sc.R_cal, sc.t_cal, sc.size, loss_scale=0.5, prior_weight=0.0)
    rect = vr.fit(pl, pr)
    cv2 = pytest.importorskip("cv2")
    err = np.degrees(cv2.Rodrigues(vr.R_.T @ sc.R_true)[0].ravel())
    # tilt (x) and roll (z) move rows and are pinned down; pan (y) moves columns and is only weakly observed
    assert abs(err[0]) < 0.01 and abs(err[2]) < 0.05 and abs(err[1]) < 0.3
    assert vertical_errors(rect, gl, gr).mean() < 0.05
    stale = virtual_stereo_camera(sc.K, sc.R_cal, sc.t_cal, sc.size)
    ls = VirtualRect(sc.K, sc.R_cal, sc.t_cal, sc.size, robust=False, prior_weight=0.0).fit(pl, pr)
    assert vertical_errors(ls, gl, gr).mean() > 5 * vertical_errors(rect, gl, gr).mean()
    assert vertical_errors(stale, gl, gr).mean() > 0.3
    assert rectification_coverage(rect)[:2] == (1.0, 1.0)


def test_strong_prior_keeps_the_calibration(scene):
    sc = scene
    pl, pr = sample_matches(sc, 100, 2, noise_px=0.2)
    vr = VirtualRect(sc.K, sc.R_cal, sc.t_cal, sc.size, prior_weight=1e6)
    vr.fit(pl, pr)
    assert np.abs(vr.theta_).max() < 1e-5


def test_vertical_error_ignores_a_uniform_rescaling(scene):
    pl, pr = sample_matches(scene, 50, 3, noise_px=1.0)
    rect = virtual_stereo_camera(scene.K, scene.R_cal, scene.t_cal, scene.size)
    s = np.diag([2.0, 2.0, 1.0])
    big = StereoRectification(s @ rect.H1, s @ rect.H2, rect.size)
    assert np.allclose(vertical_errors(big, pl, pr), vertical_errors(rect, pl, pr), rtol=1e-9)


def test_hartley_baseline_aligns_rows_without_a_camera_model(scene):
    pytest.importorskip("cv2")
    pl, pr = sample_matches(scene, 300, 4, noise_px=0.1)
    rect = hartley_rectification(pl, pr, scene.size, method="ransac", threshold=1.0)
    assert rect.Q is None
    gl, gr = scene.correspondences()
    assert vertical_errors(rect, gl, gr).mean() < 0.5


def test_bad_input(scene, rectified_scene):
    sc = scene
    vr = VirtualRect(sc.K, sc.R_cal, sc.t_cal, sc.size)
    pl, pr = sample_matches(sc, MIN_MATCHES - 1, 0)
    with pytest.raises(ValueError, match=f"at least {MIN_MATCHES}"):
        vr.fit(pl, pr)
    with pytest.raises(ValueError, match="both be"):
        vr.fit(pl, pr[:-1])
    rect = virtual_stereo_camera(sc.K, sc.R_cal, sc.t_cal, sc.size)
    with pytest.raises(ValueError, match="same size"):
        rect.remap(sc.left, sc.right[:-1])
    with pytest.raises(ValueError, match="zero length"):
        virtual_stereo_camera(sc.K, np.eye(3), np.zeros(3), sc.size)
    with pytest.raises(ValueError, match="optical axis"):
        virtual_stereo_camera(sc.K, np.eye(3), np.array([0.0, 0.0, -0.4]), sc.size)
    with pytest.raises(ValueError, match="rotation"):
        virtual_stereo_camera(sc.K, 2 * np.eye(3), sc.t_cal, sc.size)
    with pytest.raises(ValueError, match="loss_scale"):
        VirtualRect(sc.K, sc.R_cal, sc.t_cal, sc.size, loss_scale=0.0)
    with pytest.raises(ValueError, match="dof"):
        VirtualRect(sc.K, sc.R_cal, sc.t_cal, sc.size, dof=4)
    with pytest.raises(ValueError, match="image_size"):
        VirtualRect(sc.K, sc.R_cal, sc.t_cal, (W, 0))
