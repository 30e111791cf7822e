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
