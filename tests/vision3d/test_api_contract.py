"""geode.vision3d's public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import geode.vision3d as vision3d


def _t(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


_K = np.array([[300.0, 0, 160], [0, 300, 120], [0, 0, 1]])
_SIZE = (320, 240)
_T_CAL = np.array([-0.12, 0.0, 0.0])


def _matches(n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform([-3, -2, 4], [3, 2, 15], size=(n, 3))
    r = vision3d.rotation_from_vector(np.radians([0.4, -0.3, 0.5]))

    def project(p):
        q = p @ _K.T
        return q[:, :2] / q[:, 2:]

    return project(x), project(x @ r.T + r @ _T_CAL)


def _stale():
    return vision3d.virtual_stereo_camera(_K, np.eye(3), _T_CAL, _SIZE)


def _driving(n=4):
    d = vision3d.generate_driving(n, "sim", seed=0)
    return d


def _world():
    return vision3d.make_pose_drift_world(0)


def _planning_call():
    d = _driving()
    batch = {
        k: torch.as_tensor(v, dtype=torch.float32) for k, v in d.items() if k in ("traj", "lane", "road", "leader")
    }
    out = {k: v + 0.1 for k, v in batch.items()}
    out["road"] = torch.zeros(batch["road"].shape[0], batch["road"].shape[1] // 4, batch["road"].shape[2] // 4)
    return (out, batch), {}


def _virtual_rect_fit(pts_left, pts_right):
    return vision3d.VirtualRect(_K, np.eye(3), _T_CAL, _SIZE, iters=3).fit(pts_left, pts_right)


def _gard_parts(seed=0):
    torch.manual_seed(seed)
    rec = vision3d.MultiViewReconstructor((8, 8), patch=4, dim=8, heads=2, early=1, late=1)
    den = vision3d.GARDDenoiser(8, rec.n_tokens, hidden=8, depth=2, heads=2)
    return rec, den


def _gard_restore(degraded):
    rec, den = _gard_parts()
    return vision3d.GARDRestorer(rec, den, steps=2).restore(degraded, torch.Generator().manual_seed(0))


def _velocity(x, t):
    return -x


def _align_call():
    pts = torch.rand(1, 2, 4, 3) + torch.tensor([0.0, 0.0, 2.0])
    tgt, mask = vision3d.correspondence_targets(pts, (2, 2))
    att = torch.softmax(_t(1, 8, 8), -1)
    return (att, tgt, mask, 2), {}


def _lie_forward(v, g):
    torch.manual_seed(0)
    return vision3d.LieRouter(6, 3, n_triplets=2, hidden=8)(v, g)


def _fusion_forward(kind):
    def forward(v, g):
        torch.manual_seed(0)
        return getattr(vision3d, kind)(6, 3, hidden=8)(v, g)

    return forward


def _scene():
    return vision3d.render_stereo_scene(0, width=32, height=32, n_boxes=1, n_spheres=1)


METHODS = {
    "VirtualRect.fit": _virtual_rect_fit,
    "GARDRestorer.restore": _gard_restore,
    "LieRouter.forward": _lie_forward,
    **{f"{k}.forward": _fusion_forward(k) for k in ("AdditiveFusion", "ConcatFusion", "MLPFusion")},
}

CALLS = {  # -> (args, kwargs), built fresh each time
    # bridge_ad
    "BridgeADAlignment": lambda: ((), {"ctx_dim": 8, "decision_start": 0.3, "gamma": 10.0}),
    "DANNAlignment": lambda: ((), {"dim": 8, "gamma": 10.0}),
    "DomainDiscriminator": lambda: ((8,), {"hidden": 4}),
    "VectorPlanner": lambda: ((), {"width": 8, "ctx_dim": 8}),
    "collision_rate": lambda: ((_driving()["traj"], _driving()["agents"], _driving()["curv"]), {}),
    "generate_driving": lambda: ((4,), {"domain": "sim"}),
    "progressive_lambda": lambda: ((0.5,), {"gamma": 10.0}),
    "trajectory_collides": lambda: ((_driving()["traj"], _driving()["agents"], _driving()["curv"]), {}),
    "trajectory_l2": lambda: ((_driving()["traj"], _driving(4)["traj"] + 0.1), {}),
    # gard
    "FeatureDecoder": lambda: ((), {"dim": 8, "hidden": 8}),
    "GARDDenoiser": lambda: ((), {"dim": 8, "n_tokens": 4, "hidden": 8, "depth": 1, "heads": 2}),
    "MultiViewReconstructor": lambda: ((), {"dim": 8, "heads": 2, "early": 1, "late": 1}),
    "PixelRestorer": lambda: ((), {"hidden": 8, "depth": 1, "heads": 2}),
    "render_multiview_scenes": lambda: ((2,), {"n_views": 2, "height": 8, "width": 8, "focal": 8.0}),
    "AdditiveFusion": lambda: ((4, 7), {"hidden": 8}),
    "ConcatFusion": lambda: ((4, 7), {"hidden": 8}),
    "LieRouter": lambda: ((24, 7), {"n_triplets": 8, "hidden": 8}),
    "MLPFusion": lambda: ((4, 7), {"hidden": 8}),
    "PoseDriftModel": lambda: (("lie", 24, 7, 10, 3), {"hidden": 8, "layers": 1, "heads": 2, "d_ff": 8}),
    "rectification_coverage": lambda: ((_stale(),), {}),
    "rotation_from_vector": lambda: ((np.radians([0.4, -0.3, 0.5]),), {}),
    "vertical_errors": lambda: ((_stale(), *_matches()), {}),
    # issue 51 follow-up: the remaining names
    "planning_loss": _planning_call,
    "essential_rectification": lambda: ((*_matches(), _K, 0.12, _SIZE), {"threshold": 1.0}),
    "VirtualRect": lambda: ((_K, np.eye(3), _T_CAL, _SIZE), {"loss_scale": 1.0, "prior_weight": 1e-3}),
    "VirtualRect.fit": lambda: (_matches(), {}),
    "hartley_rectification": lambda: ((*_matches(), _SIZE), {"threshold": 1.0}),
    "make_pose_drift_world": lambda: ((0,), {"class_noise": 0.3, "token_noise": 0.1, "geo_noise": 0.02}),
    "sample_pose_drift": lambda: ((_world(), 4, (0.0, 30.0), 0), {}),
    "virtual_stereo_camera": lambda: ((_K, np.eye(3), _T_CAL, _SIZE), {}),
    # bridge_ad torch pieces
    "coral_loss": lambda: ((_t(6, 3), _t(5, 3, seed=1)), {}),
    "grad_reverse": lambda: ((_t(4, 3),), {"lam": 0.5}),
    "gram_structure": lambda: ((_t(2, 3, 2, 2),), {}),
    # gard
    "GARDRestorer": lambda: (_gard_parts(), {"noise_lvl": 0.3, "align_tau": 0.01, "cycle_threshold": 1.5}),
    "GARDRestorer.restore": lambda: ((torch.rand(1, 2, 3, 8, 8),), {}),
    "attention_alignment_loss": _align_call,
    "correspondence_targets": lambda: ((torch.rand(1, 2, 4, 3) + 2.0, (2, 2)), {"tau": 0.01, "cycle_threshold": 1.5}),
    "degrade_views": lambda: ((np.random.default_rng(0).uniform(size=(1, 2, 3, 8, 8)),), {"severity": 1.0}),
    "euler_flow": lambda: ((_velocity, _t(2, 3), 2), {}),
    "flow_interpolant": lambda: ((_t(2, 3), _t(2, 3, seed=1), torch.tensor([0.2, 0.7])), {}),
    "patch_points": lambda: ((torch.rand(1, 2, 4, 4) + 1.0, torch.tensor([[0.0, 0.5]]), 8.0, 2), {}),
    "sample_flow_times": lambda: ((3, torch.Generator().manual_seed(0)), {"mu": 0.0, "sigma": 1.0, "shift": 1.0}),
    # lievlm
    **{
        f"{k}.forward": lambda: ((_t(2, 6), _t(2, 3, seed=1)), {})
        for k in ("LieRouter", "AdditiveFusion", "ConcatFusion", "MLPFusion")
    },
    "so3_exp": lambda: ((_t(4, 3),), {}),
    "so3_hat": lambda: ((_t(4, 3),), {}),
    # virtualrect
    "render_stereo_scene": lambda: (
        (0,),
        {
            "width": 32,
            "height": 32,
            "focal": 28.0,
            "baseline": 0.4,
            "drift_deg": 1.0,
            "baseline_drift": 0.02,
            "n_boxes": 1,
            "n_spheres": 1,
        },
    ),
    "sample_matches": lambda: (
        (_scene(), 8, 0),
        {"noise_px": 0.3, "outlier_frac": 0.1, "region": (0.0, 0.0, 1.0, 1.0)},
    ),
}
NOT_CALLED = {
    "DRIVING_DOMAINS": "a constant (tuple of names)",
    "DEGRADATIONS": "a constant (tuple of names)",
    "FUSIONS": "a constant (tuple of names)",
    "MIN_MATCHES": "a constant (int)",
    "GradientReversal": "a torch.autograd.Function (its apply is covered through grad_reverse)",
    "PoseDriftWorld": "a record built by make_pose_drift_world, which validates",
    "StereoRectification": "a result record built by virtual_stereo_camera / VirtualRect.fit / *_rectification",
    "StereoScene": "a result record built by render_stereo_scene, which validates",
}
_PER_STEP = "a per-step torch function/forward: types and shapes checked, NaN propagates like torch's own layers"


def _nan_inf(*names):
    return {(n, k): _PER_STEP for n in names for k in ("nan", "inf")}


OK: dict[str, dict[tuple[str, str], str]] = {
    "rotation_from_vector": {("w", "wrong shape"): "any array of three numbers is a rotation vector (documented)"},
    **{f"{k}.forward": _nan_inf("v", "g") for k in ("LieRouter", "AdditiveFusion", "ConcatFusion", "MLPFusion")},
    "attention_alignment_loss": _nan_inf("attention", "targets"),
    "coral_loss": _nan_inf("a", "b"),
    "flow_interpolant": _nan_inf("x0", "x1", "t"),
    "gram_structure": _nan_inf("feat"),
    "euler_flow": {
        **_nan_inf("x0"),
        ("x0", "empty"): "an empty batch gives an empty result (documented)",
        ("x0", "wrong shape"): "x0 may have any shape whose first axis is the batch (documented)",
    },
    "grad_reverse": {
        **_nan_inf("x"),
        ("x", "empty"): "the identity on any tensor: an empty one gives an empty output (documented)",
        ("x", "wrong shape"): "the identity on a tensor of any shape (documented)",
    },
    **{
        k: {**_nan_inf("w"), ("w", "empty"): "an empty batch of rotation vectors gives an empty output (documented)"}
        for k in ("so3_exp", "so3_hat")
    },
}


PACKAGE = vision3d


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []


# the audit's repros for the names covered in the follow-up
def test_audit_virtual_rect_names_r_cal_t_cal():
    # the audit: messages said R/t, not the arguments R_cal/t_cal; a (3, 1, 1) t_cal passed silently
    with pytest.raises(ValueError, match="R_cal"):
        vision3d.VirtualRect(_K, np.full((3, 3), np.nan), _T_CAL, _SIZE)
    with pytest.raises(ValueError, match="t_cal"):
        vision3d.VirtualRect(_K, np.eye(3), _T_CAL.reshape(3, 1, 1), _SIZE)
    # the column and row vectors of OpenCV's convention are still accepted, with the same result
    a = vision3d.VirtualRect(_K, np.eye(3), _T_CAL, _SIZE).fit(*_matches())
    b = vision3d.VirtualRect(_K, np.eye(3), _T_CAL.reshape(3, 1), _SIZE).fit(*_matches())
    np.testing.assert_array_equal(a.H1, b.H1)


def test_audit_virtual_stereo_camera_wrong_shape_t():
    with pytest.raises(ValueError, match="t must"):
        vision3d.virtual_stereo_camera(_K, np.eye(3), _T_CAL.reshape(3, 1, 1), _SIZE)


def test_audit_hartley_rectification_inf_threshold():
    with pytest.raises(ValueError, match="threshold"):
        vision3d.hartley_rectification(*_matches(), _SIZE, threshold=float("inf"))


def test_audit_make_pose_drift_world_noise_args():
    for name in ("class_noise", "token_noise", "geo_noise"):
        with pytest.raises(ValueError, match=name):
            vision3d.make_pose_drift_world(0, **{name: float("nan")})
        with pytest.raises(TypeError, match=name):
            vision3d.make_pose_drift_world(0, **{name: "0.1"})


def test_audit_sample_pose_drift_empty_angle_deg():
    with pytest.raises(ValueError, match="angle_deg"):
        vision3d.sample_pose_drift(_world(), 4, (), 0)


def test_audit_correspondence_targets_cycle_threshold_and_grid():
    pts = torch.rand(1, 2, 4, 3) + 2.0
    # NaN compared False everywhere: every row was silently masked out (and inf let every row count)
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="cycle_threshold"):
            vision3d.correspondence_targets(pts, (2, 2), cycle_threshold=bad)
    with pytest.raises(ValueError, match="grid"):  # was an IndexError
        vision3d.correspondence_targets(pts, ())
    # a valid call keeps its result, the same as the training step's unchecked twin
    from geode.vision3d.gard.restorer import _correspondence_targets

    t, m = vision3d.correspondence_targets(pts, (2, 2), tau=0.01, cycle_threshold=1.5)
    t2, m2 = _correspondence_targets(pts, (2, 2), 0.01, 1.5)
    assert torch.equal(t, t2) and torch.equal(m, m2)


def test_audit_patch_points_non_finite_focal():
    depth, cam_x = torch.rand(1, 2, 4, 4) + 1.0, torch.tensor([[0.0, 0.5]])
    # inf focal put every patch on the optical axis (x = cam_x, y = 0) without an error
    for bad in (float("nan"), float("inf"), 0.0):
        with pytest.raises(ValueError, match="focal"):
            vision3d.patch_points(depth, cam_x, bad, 2)
    with pytest.raises(ValueError, match="patch"):
        vision3d.patch_points(depth, cam_x, 8.0, 3)
