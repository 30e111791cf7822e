import numpy as np
import pytest

from geode.rl.fb_abstraction import grid_walk, low_rank_error, sr_spectrum, successor_representation


def _two_state(a, b):
    return np.array([[1 - a, a], [b, 1 - b]])


@pytest.mark.parametrize("k", [1, 3])
def test_sr_of_two_state_chain_matches_closed_form(k):
    a, b, g = 0.3, 0.1, 0.9
    pi = np.array([b, a]) / (a + b)
    proj = np.tile(pi, (2, 1))
    lam = (1 - a - b) ** k
    expected = proj / (1 - g**k) + (np.eye(2) - proj) / (1 - g**k * lam)
    np.testing.assert_allclose(successor_representation(_two_state(a, b), g, k), expected, atol=1e-12)


def test_successor_measure_excludes_current_state():
    p = _two_state(0.3, 0.1)
    sr = successor_representation(p, 0.9, 2)
    m = successor_representation(p, 0.9, 2, include_current=False)
    np.testing.assert_allclose(sr - np.eye(2), 0.9**2 * m, atol=1e-12)


def test_repeated_action_kernel_differs_from_fresh_actions_and_rows_sum():
    p, cells = grid_walk(4, 5, 0.0, seed=0)
    assert p.shape == (4, 20, 20) and len(cells) == 20
    sr = successor_representation(p, 0.9, 2)
    np.testing.assert_allclose(sr.sum(1), 1 / (1 - 0.81), atol=1e-10)
    fresh = successor_representation(p.mean(0), 0.9, 2)
    assert not np.allclose(sr, fresh)


def test_low_rank_error_and_bound():
    rng = np.random.default_rng(0)
    p, _ = grid_walk(5, 5, 0.1, seed=1)
    sr = successor_representation(p, 0.95, 1)
    assert low_rank_error(sr, sr.shape[0]) == pytest.approx(0.0, abs=1e-12)
    out = sr_spectrum(sr, 3, rng.normal(size=(sr.shape[0], 5)))
    assert out["bound_slack"] >= 0 and 1 <= out["effective_rank"] <= sr.shape[0]


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_bad_k_raises(k):
    with pytest.raises(ValueError, match="k"):
        successor_representation(_two_state(0.3, 0.1), 0.9, k)


@pytest.mark.parametrize("g", [0.0, 1.0, -0.5, 1.5, float("nan")])
def test_bad_discount_raises(g):
    with pytest.raises(ValueError, match="discount"):
        successor_representation(_two_state(0.3, 0.1), g, 1)


def test_fb_agent_trains_and_acts_and_validates():
    torch = pytest.importorskip("torch")
    from geode.rl.fb_abstraction.fb import FBAgent, PointMass, goal_success, train_fb

    env = PointMass(k=2)
    s, a, s2 = env.dataset(50, seed=0)
    assert np.all((s2 >= 0) & (s2 <= 1))
    agent = train_fb(env, 0.9, n_data=200, updates=3, batch=16, seed=0, hidden=16, z_dim=4)
    assert agent.discount == pytest.approx(0.81)
    z = agent.infer_z(s[:5])
    np.testing.assert_allclose(z.norm(dim=-1).numpy(), 2.0, rtol=1e-5)
    assert agent.act(s[:5], z).shape == (5,)
    assert 0.0 <= goal_success(agent, env, 10, seed=1) <= 1.0
    with pytest.raises(ValueError, match="k"):
        PointMass(k=0)
    with pytest.raises(ValueError, match="discount"):
        FBAgent(2, 5, discount=1.0)
    assert torch is not None


def test_fb_loss_is_minimised_by_exact_factorisation_direction():
    """A single update decreases the FB loss on a fixed batch (gradient direction check)."""
    import torch

    from geode.rl.fb_abstraction.fb import FBAgent

    agent = FBAgent(2, 5, z_dim=4, discount=0.5, hidden=16, lr=1e-3, tau=0.0, seed=0)
    g = torch.Generator().manual_seed(0)
    s, s2 = torch.rand(32, 2, generator=g), torch.rand(32, 2, generator=g)
    a = torch.randint(0, 5, (32,), generator=g)
    losses = []
    for _ in range(30):
        agent.gen.manual_seed(1)
        losses.append(agent.update(s, a, s2, s2))
    assert losses[-1] < losses[0]
