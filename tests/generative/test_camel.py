"""Tests of geode.generative.camel: inner-loop reward identities, gradients, DDIM limits, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from geode.generative.camel import CAMEL, Autoencoder, ConditionalDDPM, appraiser_reward


def _ae(seed: int = 0) -> Autoencoder:
    torch.manual_seed(seed)
    return Autoencoder(6, code=2, hidden=5)


def test_reward_zero_without_inner_steps():
    x = torch.randn(8, 6)
    r, l0 = appraiser_reward(_ae(), x[:4], x[4:], inner_steps=0)
    assert float(r) == 0.0
    assert torch.isclose(l0, ((_ae()(x[4:]) - x[4:]) ** 2).mean())


def test_one_inner_step_matches_manual_sgd():
    ae = _ae(1)
    x = torch.randn(10, 6)
    s, q = x[:5], x[5:]
    r, l0 = appraiser_reward(ae, s, q, inner_steps=1, inner_lr=0.3)
    ae2 = _ae(1)
    loss = ((ae2(s) - s) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        for p in ae2.parameters():
            p -= 0.3 * p.grad
    assert torch.isclose(r, l0 - ((ae2(q) - q) ** 2).mean(), atol=1e-6)


def test_small_step_reward_is_first_order_gradient_inner_product():
    # R ~ eta * <grad L(Q), grad L(S)> for small eta; with S == Q it is eta * ||grad||^2 > 0
    ae = _ae(2)
    x = torch.randn(6, 6)
    eta = 1e-4
    r, _ = appraiser_reward(ae, x, x, inner_steps=1, inner_lr=eta)
    loss = ((ae(x) - x) ** 2).mean()
    g = torch.autograd.grad(loss, list(ae.parameters()))
    assert float(r) / eta == pytest.approx(float(sum((gi**2).sum() for gi in g)), rel=1e-2)


def test_reward_gradient_matches_finite_difference():
    ae = _ae(3).double()
    x = torch.randn(8, 6, dtype=torch.float64, requires_grad=True)
    r, _ = appraiser_reward(ae, x[:4], x[4:], inner_steps=2, inner_lr=0.2)
    (g,) = torch.autograd.grad(r, x)
    v = torch.randn_like(x)
    h = 1e-6
    xp, xm = (x + h * v).detach(), (x - h * v).detach()
    rp = appraiser_reward(ae, xp[:4], xp[4:], 2, 0.2, create_graph=False)[0]
    rm = appraiser_reward(ae, xm[:4], xm[4:], 2, 0.2, create_graph=False)[0]
    assert float((g * v).sum()) == pytest.approx(float(rp - rm) / (2 * h), rel=1e-4, abs=1e-9)


def test_ddim_zero_offset_is_plain_class_sample_and_differentiable():
    torch.manual_seed(0)
    m = ConditionalDDPM(4, 3, T=20, hidden=16, emb=4)
    z = torch.randn(5, 4)
    a = m.sample(1, z, torch.zeros(4), steps=5)
    b = m.sample(1, z, None, steps=5)
    assert torch.equal(a, b) and a.abs().max() <= 1
    d = torch.zeros(4, requires_grad=True)
    m.sample(1, z, d, steps=5).sum().backward()
    assert d.grad is not None and torch.isfinite(d.grad).all()
    # an offset equal to the difference of embeddings gives the other class exactly
    off = m.embed.weight[2] - m.embed.weight[1]
    assert torch.allclose(m.sample(1, z, off, steps=5), m.sample(2, z, None, steps=5), atol=1e-6)


def test_ddpm_learns_two_point_data():
    x = np.array([[0.5, -0.5]] * 50 + [[-0.5, 0.5]] * 50, dtype=np.float32)
    y = np.array([0] * 50 + [1] * 50)
    m = ConditionalDDPM(2, 2, T=50, hidden=64, emb=4).fit(x, y, steps=600, seed=0)
    s = m.sample(0, torch.randn(200, 2, generator=torch.Generator().manual_seed(1)), steps=20)
    assert float((s - torch.tensor([0.5, -0.5])).norm(dim=1).median()) < 0.2


def test_camel_increases_its_objective():
    torch.manual_seed(0)
    m = ConditionalDDPM(6, 2, T=20, hidden=16, emb=4)
    for p in m.parameters():
        p.requires_grad_(False)
    c = CAMEL(m, _ae(), observer=None, recog=0.0, inner_steps=2, inner_lr=0.5)
    z = torch.randn(256, 6, generator=torch.Generator().manual_seed(5))
    j0 = float(c.objective_value(0, m.sample(0, z, torch.zeros(4))))
    c.optimize(0, steps=60, batch=64, lr=0.1)
    assert float(c.objective_value(0, m.sample(0, z, c.delta))) > j0
    assert c.sample(0, 3).shape == (3, 6)


def test_bad_input():
    m = ConditionalDDPM(4, 3, T=10, hidden=8, emb=4)
    with pytest.raises(ValueError, match="label"):
        m.sample(3, torch.randn(2, 4))
    with pytest.raises(ValueError, match="noise"):
        m.sample(0, torch.randn(2, 5))
    with pytest.raises(ValueError, match="offset"):
        m.sample(0, torch.randn(2, 4), torch.zeros(3))
    with pytest.raises(ValueError, match="y must"):
        m.fit(np.zeros((4, 4)), np.array([0, 1, 2, 3]), steps=1)
    with pytest.raises(ValueError, match="T must"):
        ConditionalDDPM(4, 3, T=0)
    with pytest.raises(ValueError, match="inner_steps"):
        appraiser_reward(_ae(), torch.randn(2, 6), torch.randn(2, 6), inner_steps=-1)
    with pytest.raises(ValueError, match="observer"):
        CAMEL(m, _ae(), recog=1.0)
    with pytest.raises(ValueError, match="objective"):
        CAMEL(m, _ae(), recog=0.0, objective="x")
    with pytest.raises(RuntimeError, match="optimize"):
        CAMEL(m, _ae(), recog=0.0).sample(0, 2)
