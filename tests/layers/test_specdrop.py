"""Tests for SpecDrop (fixed category routing), its baselines and the pruning analysis."""

from __future__ import annotations

import math

import pytest
import torch

from geode.layers import SpecDropMerge, SpecDropNet, branch_pruning_drops, specialization_index

torch.set_num_threads(1)


def test_weights_follow_the_formula_and_sum_to_one():
    m = SpecDropMerge(4, 6, p_active=0.7, p_inactive=0.1)
    w = m(torch.tensor([0, 1, 5]))
    s = 0.7 + 3 * 0.1
    assert m.denominator == pytest.approx(s)
    torch.testing.assert_close(w.sum(1), torch.ones(3))
    # category 5 -> branch 5 mod 4 = 1 (round robin)
    torch.testing.assert_close(w[2], torch.tensor([0.1, 0.7, 0.1, 0.1]) / s)
    torch.testing.assert_close(w[0], torch.tensor([0.7, 0.1, 0.1, 0.1]) / s)


def test_equal_weights_recover_no_routing_exactly():
    torch.manual_seed(0)
    a = SpecDropNet(5, 7, 3, 4, num_categories=4, routing="specdrop", p_active=0.4, p_inactive=0.4)
    b = SpecDropNet(5, 7, 3, 4, routing="none")
    b.load_state_dict(a.state_dict())
    x = torch.randn(10, 5)
    c = torch.randint(0, 4, (10,))
    torch.testing.assert_close(a(x, c), b(x))
    torch.testing.assert_close(b(x), a.branches(x).mean(1))


def test_hard_routing_is_the_own_branch_alone():
    torch.manual_seed(1)
    net = SpecDropNet(5, 7, 3, 3, num_categories=3, p_active=1.0, p_inactive=0.0)
    x = torch.randn(6, 5)
    c = torch.tensor([0, 1, 2, 0, 1, 2])
    torch.testing.assert_close(net(x, c), net.branches(x)[torch.arange(6), c])


def test_branches_are_independent_mlps():
    torch.manual_seed(2)
    net = SpecDropNet(4, 6, 2, 3, routing="none")
    x = torch.randn(5, 4)
    k = 1
    h = torch.relu(x @ net.branches.w1[k] + net.branches.b1[k])
    torch.testing.assert_close(net.branches(x)[:, k], h @ net.branches.w2[k] + net.branches.b2[k])


def test_cosine_warmup_starts_uniform_and_keeps_the_denominator():
    m = SpecDropMerge(4, 4, p_active=0.7, p_inactive=0.3, warmup_steps=10)
    s = m.denominator
    torch.testing.assert_close(m(torch.tensor([2])), torch.full((1, 4), 0.25))
    for _ in range(5):
        m.step()
    pa, pi = m.current_probs()
    assert pa + 3 * pi == pytest.approx(s)
    assert pa == pytest.approx(s / 4 + (0.7 - s / 4) * 0.5)
    for _ in range(5):
        m.step()
    assert m.current_probs() == (0.7, 0.3)


def test_stochastic_mode_is_unbiased_and_deterministic_in_eval():
    torch.manual_seed(3)
    m = SpecDropMerge(3, 3, p_active=0.8, p_inactive=0.2, stochastic=True)
    c = torch.zeros(20000, dtype=torch.long)
    w = m(c)
    assert set(torch.unique(w * m.denominator).tolist()) <= {0.0, 1.0}
    torch.testing.assert_close(w.mean(0), torch.tensor([0.8, 0.2, 0.2]) / m.denominator, atol=0.01, rtol=0)
    m.eval()
    torch.testing.assert_close(m(c[:2]), m(c[:2]))
    torch.testing.assert_close(m(c[:1]).sum(), torch.tensor(1.0))


def test_learned_router_balance_loss_is_one_when_balanced():
    net = SpecDropNet(3, 4, 2, 4, routing="learned")
    with torch.no_grad():
        net.merge.gate.weight.zero_()
        net.merge.gate.bias.zero_()
    out = net(torch.randn(7, 3))
    assert out.shape == (7, 2)
    assert float(net.aux_loss().detach()) == pytest.approx(1.0)
    with torch.no_grad():
        net.merge.gate.bias.copy_(torch.tensor([10.0, 0.0, 0.0, 0.0]))
    net(torch.randn(7, 3))
    assert float(net.aux_loss().detach()) > 3.9  # all load on one branch: K * 1


def test_pruning_drops_detect_a_planted_specialisation():
    torch.manual_seed(4)
    net = SpecDropNet(2, 3, 2, 2, num_categories=2, p_active=1.0, p_inactive=0.0)
    x = torch.randn(200, 2)
    c = torch.arange(200) % 2
    y = net(x, c).argmax(-1)  # labels the intact model gets right
    d = branch_pruning_drops(net, x, y, c, 2)
    assert d.shape == (2, 2)
    assert float(d[0, 1]) == 0.0 and float(d[1, 0]) == 0.0  # hard routing: other branches carry nothing
    assert specialization_index(d, [0, 1]) == pytest.approx(float(d[0, 0] + d[1, 1]) / 2)
    assert specialization_index(torch.ones(2, 2), [0, 1]) == 0.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_branches=0, num_categories=2), "num_branches"),
        (dict(num_branches=2, num_categories=2, p_active=0.0), "p_active"),
        (dict(num_branches=2, num_categories=2, p_active=0.3, p_inactive=0.5), "p_inactive"),
        (dict(num_branches=2, num_categories=2, p_inactive=-0.1), "p_inactive"),
        (dict(num_branches=2, num_categories=3, category_to_branch=[0, 1]), "category_to_branch"),
        (dict(num_branches=2, num_categories=2, category_to_branch=[0, 2]), "category_to_branch"),
        (dict(num_branches=2, num_categories=2, warmup_steps=-1), "warmup_steps"),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SpecDropMerge(**kwargs)


def test_unknown_or_malformed_tags_raise():
    net = SpecDropNet(3, 4, 2, 2, num_categories=3)
    x = torch.randn(2, 3)
    with pytest.raises(ValueError, match="unknown tags \\[3\\]"):
        net(x, torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="unknown tags"):
        net.eval()(x, torch.tensor([-1, 0]))
    with pytest.raises(ValueError, match="category is required"):
        net(x)
    with pytest.raises(TypeError, match="integer tags"):
        net(x, torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="shape"):
        net(x, torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="routing"):
        SpecDropNet(3, 4, 2, 2, routing="switch")


def test_gradient_matches_finite_differences():
    torch.manual_seed(5)
    net = SpecDropNet(3, 4, 2, 3, num_categories=3, p_active=0.6, p_inactive=0.2).double()
    x = torch.randn(4, 3, dtype=torch.float64)
    c = torch.tensor([0, 1, 2, 1])
    loss = net(x, c).pow(2).sum()
    loss.backward()
    g = net.branches.w2.grad[1, 2, 0].item()
    eps = 1e-6
    with torch.no_grad():
        net.branches.w2[1, 2, 0] += eps
        up = net(x, c).pow(2).sum().item()
        net.branches.w2[1, 2, 0] -= 2 * eps
        down = net(x, c).pow(2).sum().item()
    assert math.isclose(g, (up - down) / (2 * eps), rel_tol=1e-6, abs_tol=1e-9)
