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


METHODS = {"VirtualRect.fit": _virtual_rect_fit}

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
    **{
        n: "not yet covered (issue 51 follow-up)"
        for n in (
            "GARDRestorer",
            "attention_alignment_loss",
            "correspondence_targets",
            "degrade_views",
            "euler_flow",
            "flow_interpolant",
            "patch_points",
            "render_stereo_scene",
            "sample_matches",
            "coral_loss",
            "grad_reverse",
            "gram_structure",
            "sample_flow_times",
            "so3_exp",
            "so3_hat",
        )
    },
}
OK: dict[str, dict[tuple[str, str], str]] = {
    "rotation_from_vector": {("w", "wrong shape"): "any array of three numbers is a rotation vector (documented)"},
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
