import math

import pytest
import torch

from geode.vision3d.lievlm import (
    AdditiveFusion,
    ConcatFusion,
    LieRouter,
    MLPFusion,
    PoseDriftModel,
    make_pose_drift_world,
    sample_pose_drift,
    so3_exp,
    so3_hat,
)


def _w(n=16, seed=0, scale=1.0):
    return scale * torch.randn(n, 3, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_exp_is_a_rotation():
    R = so3_exp(_w(scale=2.0))
    eye = torch.eye(3, dtype=torch.float64).expand(R.shape)
    assert torch.allclose(R.transpose(-1, -2) @ R, eye, atol=1e-12)
    assert torch.allclose(torch.linalg.det(R), torch.ones(16, dtype=torch.float64), atol=1e-12)


def test_exp_matches_the_matrix_exponential_and_is_exact_near_zero():
    for scale in (3.0, 1e-2, 1e-5, 0.0):
        w = _w(scale=scale)
        assert torch.allclose(so3_exp(w), torch.linalg.matrix_exp(so3_hat(w)), atol=1e-12)


def test_group_actions_compose():
    a, b = _w(seed=1), _w(seed=2)
    x = torch.randn(16, 3, dtype=torch.float64)
    Ra, Rb = so3_exp(a), so3_exp(b)
    seq = (Ra @ (Rb @ x.unsqueeze(-1))).squeeze(-1)  # apply exp(b), then exp(a)
    assert torch.allclose(seq, ((Ra @ Rb) @ x.unsqueeze(-1)).squeeze(-1), atol=1e-12)
    # a one-parameter subgroup: exp(s a) exp(t a) = exp((s + t) a), and exp(-a) is the inverse
    assert torch.allclose(so3_exp(0.3 * a) @ so3_exp(0.5 * a), so3_exp(0.8 * a), atol=1e-12)
    assert torch.allclose(so3_exp(-a), Ra.transpose(-1, -2), atol=1e-12)
    # exp(a) fixes its axis and rotates by |a|
    assert torch.allclose((Ra @ a.unsqueeze(-1)).squeeze(-1), a, atol=1e-12)
    ang = torch.arccos(((Ra.diagonal(dim1=-2, dim2=-1).sum(-1) - 1) / 2).clamp(-1, 1))
    n = a.norm(dim=-1)
    assert torch.allclose(ang, torch.where(n <= math.pi, n, 2 * math.pi - n), atol=1e-9)


def test_exp_gradient_matches_finite_differences_including_the_identity():
    for w in (_w(4, 3), torch.zeros(2, 3, dtype=torch.float64), 1e-5 * _w(2, 4)):
        assert torch.autograd.gradcheck(so3_exp, (w.clone().requires_grad_(),))


def test_router_is_identity_at_init_and_routing_at_identity_pose_reduces_to_the_unrouted_path():
    torch.manual_seed(0)
    block = LieRouter(12, 5, n_triplets=4, n_generators=3, hidden=16).double()
    v, g = torch.randn(3, 2, 12, dtype=torch.float64), torch.randn(3, 2, 5, dtype=torch.float64)
    assert torch.equal(block(v, g), v)  # W_o = 0: the pretrained semantics are preserved at the start
    torch.nn.init.normal_(block.out.weight)
    unrouted = LieRouter(12, 5, n_triplets=4, n_generators=3, hidden=16, routed=False).double()
    unrouted.load_state_dict(block.state_dict())
    assert not torch.allclose(block(v, g), unrouted(v, g))  # generic poses: the action matters
    torch.nn.init.zeros_(block.coef.weight)
    torch.nn.init.zeros_(block.coef.bias)  # rotation states w = 0: the identity element of SO(3)
    out, st = block(v, g, return_states=True)
    assert torch.equal(st["w"], torch.zeros_like(st["w"]))
    assert torch.allclose(out, unrouted(v, g), atol=1e-12)


def test_routing_coefficients_interpolate_between_the_paths():
    torch.manual_seed(1)
    block = LieRouter(6, 4, n_triplets=2, n_generators=2, hidden=8)
    v, g = torch.randn(5, 6), torch.randn(5, 4)
    w, rho = block.lie_states(g)
    z = block.proj(v).unflatten(-1, (2, 3))
    full = (so3_exp(w) @ z.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(block.act(v, w, torch.ones_like(rho)), full, atol=1e-6)
    assert torch.allclose(block.act(v, w, torch.zeros_like(rho)), z, atol=1e-6)
    # the action is norm-preserving per triplet
    assert torch.allclose(full.norm(dim=-1), z.norm(dim=-1), atol=1e-5)


def test_router_can_undo_a_rotation_exactly():
    # with P = I and a state w = -theta (the inverse drift) the routed triplet is the canonical one
    block = LieRouter(3, 3, n_triplets=1, n_generators=1, hidden=4)
    with torch.no_grad():
        block.proj.weight.copy_(torch.eye(3))
    s = torch.tensor([[1.0, -2.0, 0.5]])
    th = torch.tensor([[0.4, -1.1, 0.7]])
    v = (so3_exp(th) @ s.unsqueeze(-1)).squeeze(-1)
    z = block.act(v, -th.unsqueeze(1), torch.ones(1, 1))
    assert torch.allclose(z[:, 0], s, atol=1e-6)


def test_baselines_shapes_and_identity_at_init():
    v, g = torch.randn(4, 3, 8), torch.randn(4, 3, 5)
    assert torch.equal(AdditiveFusion(8, 5)(v, g), v)
    assert torch.equal(MLPFusion(8, 5)(v, g), v)
    assert ConcatFusion(8, 5)(v, g).shape == (4, 6, 8)


def test_benchmark_drift_is_a_rotation_of_the_semantics():
    world = make_pose_drift_world(0, n_triplets=4)
    d0 = sample_pose_drift(world, 64, (0.0, 0.0), 1)
    d1 = sample_pose_drift(world, 64, (80.0, 90.0), 1)  # same draws, larger angles
    # the drift is orthogonal: token norms are unchanged up to the token noise
    assert torch.allclose(d0["v"].norm(dim=-1), d1["v"].norm(dim=-1), rtol=0.1)
    assert (d1["angle"] >= 80).all() and (d1["angle"] <= 90).all()
    assert torch.allclose(d0["g"][..., 0], torch.ones(64, 3), atol=0.1)  # identity quaternion w = 1
    assert d0["v"].shape == (64, 3, 12) and d0["g"].shape == (64, 3, 7) and d0["y"].shape == (64,)


@pytest.mark.parametrize("kind", ["semantic", "additive", "concat", "mlp", "lie", "lie_unrouted"])
def test_models_run_and_backpropagate(kind):
    world = make_pose_drift_world(0, n_triplets=4)
    d = sample_pose_drift(world, 8, (0.0, 30.0), 0)
    m = PoseDriftModel(kind, world.d_vis, world.d_geo, world.n_classes, world.n_objects, n_triplets=4)
    logits = m(d["v"], d["g"])
    assert logits.shape == (8, world.n_classes)
    torch.nn.functional.cross_entropy(logits, d["y"]).backward()
    if m.fusion is not None:  # every parameter of the fusion block is trained (the ablation: all but the Lie states)
        for name, p in m.fusion.named_parameters():
            if kind == "lie_unrouted" and name.split(".")[0] in ("geo", "coef", "generators", "route"):
                assert p.grad is None
            else:
                assert p.grad is not None and torch.isfinite(p.grad).all(), name


def test_bad_input():
    block = LieRouter(6, 4, n_triplets=2)
    with pytest.raises(ValueError, match="d_vis=6"):
        block(torch.randn(2, 5), torch.randn(2, 4))
    with pytest.raises(ValueError, match="d_geo=4"):
        block(torch.randn(2, 6), torch.randn(2, 3))
    with pytest.raises(ValueError, match="leading"):
        block(torch.randn(2, 6), torch.randn(3, 4))
    with pytest.raises(ValueError, match="n_triplets"):
        LieRouter(6, 4, n_triplets=0)
    with pytest.raises(ValueError, match="last dimension of 3"):
        so3_exp(torch.randn(4, 2))
    with pytest.raises(ValueError, match="fusion"):
        PoseDriftModel("sum", 6, 7, 10, 3)
    with pytest.raises(ValueError, match="angle_deg"):
        sample_pose_drift(make_pose_drift_world(0), 4, (40.0, 10.0), 0)
