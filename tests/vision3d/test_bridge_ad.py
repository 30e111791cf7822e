import math

import numpy as np
import pytest
import torch

from geode.vision3d.bridge_ad import (
    BridgeADAlignment,
    DANNAlignment,
    VectorPlanner,
    collision_rate,
    coral_loss,
    generate_driving,
    grad_reverse,
    gram_structure,
    planning_loss,
    progressive_lambda,
    trajectory_collides,
    trajectory_l2,
)


def test_gradient_reversal_flips_the_gradient_sign_exactly():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 7, generator=g, requires_grad=True)
    w = torch.randn(5, 7, generator=g)
    for lam in (1.0, 0.37, 0.0):
        x.grad = None
        y = grad_reverse(x, lam)
        assert torch.equal(y, x)  # identity forward
        (w * y).sum().backward()
        assert torch.equal(x.grad, -lam * w)
    with pytest.raises(ValueError, match="lam"):
        grad_reverse(x, -1.0)


def test_progressive_schedule():
    assert progressive_lambda(0.0) == 0.0
    assert progressive_lambda(1.0) == pytest.approx(2 / (1 + math.exp(-10)) - 1)
    vals = [progressive_lambda(p) for p in np.linspace(0, 1, 11)]
    assert all(b > a for a, b in zip(vals, vals[1:]))
    with pytest.raises(ValueError, match="p"):
        progressive_lambda(1.5)


def test_expert_trajectories_are_collision_free_and_the_checker_is_not_trivial():
    for domain, seed in (("sim", 0), ("real", 1)):
        d = generate_driving(300, domain, seed=seed)
        assert collision_rate(d["traj"], d["agents"], d["curv"]) == 0.0
        assert np.all(np.diff(d["traj"][:, :, 1], axis=1) >= -1e-6)  # the expert never reverses
        # ignoring the agents (12 m/s along the lane) does collide in a fair share of scenes
        ts = 0.5 * np.arange(1, 7)
        y = 12.0 * ts[None].repeat(300, 0)
        x = d["curv"][:, :1] * y + d["curv"][:, 1:] * y**2
        assert collision_rate(np.stack([x, y], -1), d["agents"], d["curv"]) > 0.05
    a = generate_driving(5, "sim", seed=3)
    assert all(np.array_equal(a[k], generate_driving(5, "sim", seed=3)[k]) for k in a)


def test_metrics_on_hand_made_trajectories():
    tgt = np.zeros((2, 6, 2))
    tgt[..., 1] = np.arange(1, 7) * 2.0
    pred = tgt + np.array([3.0, 4.0])
    assert trajectory_l2(pred, tgt) == {"l2": 5.0, "l2_1s": 5.0, "l2_2s": 5.0, "l2_3s": 5.0}
    pred2 = tgt.copy()
    pred2[:, 5, 0] = 6.0  # only the 3 s waypoint is off, by 6 m
    assert trajectory_l2(pred2, tgt) == {"l2": 1.0, "l2_1s": 0.0, "l2_2s": 0.0, "l2_3s": 6.0}
    curv = np.zeros((1, 2))
    agents = np.array([[[0.0, 10.0, 0.0, 1.0], [-1.0, 12.0, 0.0, 1.0], [0.0, 3.0, 0.0, 0.0]]])  # lane, y0, v, valid
    through = np.stack([np.zeros(6), 2.5 * np.arange(1, 7)], -1)[None]  # passes the parked car at y = 10
    stop = np.stack([np.zeros(6), np.minimum(2.5 * np.arange(1, 7), 5.4)], -1)[None]  # stops 4.6 m short
    beside = through + np.array([1.9, 0.0])  # 1.9 m to the side: clear of the 1.8 m overlap
    assert trajectory_collides(through, agents, curv).tolist() == [True]
    assert trajectory_collides(stop, agents, curv).tolist() == [False]
    assert trajectory_collides(beside, agents, curv).tolist() == [False]
    assert trajectory_collides(through + np.array([1.7, 0.0]), agents, curv).tolist() == [True]
    # the neighbour-lane agent (lane -1, at x = -3.5, y = 12) is hit by a trajectory along its lane
    assert trajectory_collides(through - np.array([3.5, 0.0]), agents, curv).tolist() == [True]
    assert trajectory_collides(stop - np.array([3.5, 0.0]), agents, curv).tolist() == [False]
    assert collision_rate(np.concatenate([through, stop]), np.repeat(agents, 2, 0), np.zeros((2, 2))) == 0.5


def test_structure_terms():
    g = torch.Generator().manual_seed(0)
    f = torch.randn(4, 8, 3, 3, generator=g)
    s = gram_structure(f)
    assert s.shape == (4, 9, 9) and torch.allclose(s.diagonal(dim1=1, dim2=2), torch.ones(4, 9), atol=1e-5)
    scale = torch.rand(4, 1, 1, 1, generator=g) + 0.5
    assert torch.allclose(gram_structure(f * scale), s, atol=1e-5)  # appearance gain leaves structure unchanged
    a, b = torch.randn(50, 6, generator=g), torch.randn(40, 6, generator=g) * 3
    assert float(coral_loss(a, a)) == 0.0
    assert float(coral_loss(a[torch.randperm(50, generator=g)], b)) == pytest.approx(float(coral_loss(a, b)), rel=1e-5)
    assert float(coral_loss(a, b)) > 0.01


def _outs(seed=0, n=6):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    planner = VectorPlanner()
    d = generate_driving(n, "sim", seed=seed)
    img, sp = torch.tensor(d["image"]), torch.tensor(d["ego_speed"])
    return planner, planner(img, sp), planner(img.flip(-1), sp), planner((img * 0.9).clamp(0, 1), sp), g, d


def test_bridge_alignment_is_progressive_and_perception_first():
    planner, src, tgt, tgt_aug, g, _ = _outs()
    align = BridgeADAlignment(decision_start=0.3)
    early = align(src, tgt, tgt_aug, 0.0)
    e = {k: float(v.detach()) for k, v in early.items()}
    assert e["geo_cons"] == 0.0 and e["structure"] == 0.0 and e["decision_adv"] == 0.0 and e["relation"] == 0.0
    early["loss"].backward()  # at p = 0 the GRL passes no gradient to the planner
    assert all(p.grad is None or float(p.grad.abs().max()) == 0.0 for p in planner.stem.parameters())
    assert any(p.grad is not None and float(p.grad.abs().max()) > 0 for p in align.d_geo.parameters())
    _, src, tgt, tgt_aug, g, _ = _outs()
    mid = align(src, tgt, tgt_aug, 0.2)
    assert float(mid["structure"]) > 0 and float(mid["decision_adv"]) == 0.0
    late = align(src, tgt, tgt_aug, 0.8)
    assert float(late["decision_adv"]) > 0 and float(late["relation"]) > 0
    ctrl = BridgeADAlignment(shuffle_domains=True)
    with pytest.raises(ValueError, match="src_aug"):
        ctrl(src, tgt, tgt_aug, 0.5)
    out = ctrl(src, tgt, tgt_aug, 0.5, src_aug=src, generator=g)
    assert math.isfinite(float(out["loss"]))
    dann = DANNAlignment()
    assert math.isfinite(float(dann(src, tgt, 0.5)["loss"])) and 0.0 <= dann.last_accuracy <= 1.0


def test_planner_outputs_and_loss():
    planner, src, _, _, _, d = _outs(n=4)
    assert src["traj"].shape == (4, 6, 2) and src["ctx_attn"].shape == (4, 10, 10)
    assert torch.allclose(src["ctx_attn"].sum(-1), torch.ones(4, 10))
    batch = {k: torch.tensor(d[k]) for k in ("image", "road", "lane", "leader", "ego_speed", "traj")}
    loss = planning_loss(src, batch)
    loss.backward()
    assert math.isfinite(float(loss)) and planner.stem[0].weight.grad is not None


def test_bad_input_gives_clear_errors():
    planner = VectorPlanner()
    with pytest.raises(ValueError, match="image"):
        planner(torch.rand(2, 3, 16, 16), torch.zeros(2))
    with pytest.raises(ValueError, match="ego_speed"):
        planner(torch.rand(2, 3, 32, 32), torch.zeros(3))
    with pytest.raises(ValueError, match="domain"):
        generate_driving(3, "carla")
    with pytest.raises(ValueError, match="pred and target"):
        trajectory_l2(np.zeros((2, 6, 2)), np.zeros((3, 6, 2)))
    with pytest.raises(ValueError, match="traj"):
        collision_rate(np.zeros((2, 5, 2)), np.zeros((2, 1, 4)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="agents"):
        collision_rate(np.zeros((2, 6, 2)), np.zeros((2, 1, 3)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="unknown term"):
        BridgeADAlignment(weights={"appearance": 1.0})
    with pytest.raises(ValueError, match="at least 2"):
        coral_loss(torch.zeros(1, 3), torch.zeros(4, 3))
    with pytest.raises(ValueError, match="progress"):
        _, src, tgt, ta, _, _ = _outs(n=3)
        BridgeADAlignment()(src, tgt, ta, 1.5)
