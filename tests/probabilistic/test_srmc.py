"""SRMC: the tilted kernel, the score history, the surrogate scores and per-chain repellence."""

from __future__ import annotations

import numpy as np
import pytest

from geode.probabilistic import MALA, SRMC, anisotropic_gaussian, sample
from geode.probabilistic.targets import GaussianTarget


def test_with_theta_frozen_the_kernel_leaves_the_tilted_gaussian_invariant():
    # pi = N(0, 1), theta fixed: pi_theta ∝ exp(-x^2/2 - alpha theta s(x)) = exp(-x^2/2 + alpha theta x),
    # i.e. N(alpha theta, 1)
    alpha, theta, n = 1.5, 0.8, 100_000
    k = SRMC(lambda x: -0.5 * np.sum(x * x, -1), lambda x: -x, 0.6, alpha, theta_step=0.0, alpha_schedule="constant")
    rng = np.random.default_rng(0)
    x0 = alpha * theta + rng.standard_normal((n, 1))
    state = k.init(x0, theta=np.full((n, 1), theta))
    for _ in range(5):
        state, _ = k.step(rng, state)
    x = state.position
    assert abs(x.mean() - alpha * theta) < 5 / np.sqrt(n)
    assert abs(x.var() - 1.0) < 5 * np.sqrt(2 / n)
    np.testing.assert_array_equal(state.theta, theta)  # frozen


def test_theta_follows_the_stochastic_approximation_recursion():
    t = anisotropic_gaussian(10.0, 3)
    k = SRMC(t.log_prob, t.grad_log_prob, 0.3, 2.0, rho=0.7, theta_step=0.5)
    rng = np.random.default_rng(1)
    state = k.init(t.sample(0, 4))
    for n in range(6):
        new, _ = k.step(rng, state)
        gamma = 0.5 * (n + 1) ** -0.7
        np.testing.assert_allclose(new.theta, state.theta + gamma * (new.logdensity_grad - state.theta))
        assert new.count == n + 1
        state = new
    # theta_0 = 0 and gamma_1 = theta_step: theta_1 = theta_step * s(X_1) for the default theta_step = 1
    k1 = SRMC(t.log_prob, t.grad_log_prob, 0.3, 2.0)
    s1, _ = k1.step(np.random.default_rng(2), k1.init(t.sample(1, 4)))
    np.testing.assert_allclose(s1.theta, s1.logdensity_grad)


def test_surrogate_scores_agree_on_a_gaussian():
    # for a Gaussian, s(x - v) = s(x) - H v exactly: shifted, exact and finite-difference give the same chain
    t = GaussianTarget(np.array([0.5, -1.0]), np.array([[2.0, 0.6], [0.6, 0.5]]))
    x0 = t.sample(0, 6)
    runs = {}
    for hvp in ("shifted", "exact", "fd"):
        k = SRMC(t.log_prob, t.grad_log_prob, 0.2, 3.0, hvp=hvp, hvp_fn=t.hvp)
        runs[hvp] = sample(k, x0, 40, seed=3).samples
    np.testing.assert_allclose(runs["exact"], runs["shifted"], atol=1e-9)
    np.testing.assert_allclose(runs["fd"], runs["shifted"], atol=1e-4)


def test_per_chain_alpha_zero_chain_is_mala():
    t = anisotropic_gaussian(5.0, 3, rotated=True)
    x0 = t.sample(0, 3)
    sr = sample(SRMC(t.log_prob, t.grad_log_prob, 0.3, [0.0, 2.0, 20.0]), x0, 30, seed=4)
    ma = sample(MALA(t.log_prob, t.grad_log_prob, 0.3), x0, 30, seed=4)
    np.testing.assert_array_equal(sr.samples[:, 0], ma.samples[:, 0])
    assert not np.array_equal(sr.samples[:, 1], ma.samples[:, 1])


def test_rational_alpha_schedule():
    k = SRMC(lambda x: -0.5 * np.sum(x * x, -1), lambda x: -x, 0.1, [0.0, 2.0], alpha_schedule="rational", alpha_c=10)
    np.testing.assert_allclose(k.current_alpha(5), [0.0, 5 / (10 + 5 / 2)])
    assert k.current_alpha(10**9)[1] == pytest.approx(2.0, rel=1e-6)
    assert SRMC(lambda x: x, lambda x: x, 0.1, 3.0, alpha_schedule="constant").current_alpha(7) == 3.0


def test_linear_alpha_warmup_is_the_default():
    k = SRMC(lambda x: x, lambda x: x, 0.1, [0.0, 4.0])
    assert k.alpha_schedule == "linear" and k.alpha_warmup == 100
    np.testing.assert_allclose(k.current_alpha(25), [0.0, 1.0])
    np.testing.assert_allclose(k.current_alpha(100), [0.0, 4.0])
    np.testing.assert_allclose(k.current_alpha(10**6), [0.0, 4.0])
    assert SRMC(lambda x: x, lambda x: x, 0.1, 1.0, base="fisher-mala").alpha_warmup == 1000
    with pytest.raises(ValueError, match="alpha_warmup"):
        SRMC(lambda x: x, lambda x: x, 0.1, 1.0, alpha_warmup=0)


def test_repellence_lowers_the_mse_of_the_mean_on_an_isotropic_gaussian():
    # a sanity check of direction, not of the paper: on N(0, I) moderate repellence beats plain MALA
    t = anisotropic_gaussian(1.0, 4)
    x0 = t.sample(0, 48)
    mse = {}
    for a in (0.0, 5.0):
        res = sample(SRMC(t.log_prob, t.grad_log_prob, 0.4, a), x0, 1500, seed=5, burn_in=300, store=False)
        mse[a] = np.mean(res.mean**2)
    assert mse[5.0] < 0.7 * mse[0.0]


def test_bad_inputs_raise_clear_errors():
    lp, g = (lambda x: -0.5 * np.sum(x * x, -1)), (lambda x: -x)
    with pytest.raises(ValueError, match="alpha must be >= 0"):
        SRMC(lp, g, 0.1, -1.0)
    with pytest.raises(ValueError, match="alpha must be >= 0 everywhere"):
        SRMC(lp, g, 0.1, [1.0, -0.5])
    with pytest.raises(ValueError, match="step_size must be > 0"):
        SRMC(lp, g, -0.1, 1.0)
    with pytest.raises(ValueError, match="base must be one of"):
        SRMC(lp, g, 0.1, 1.0, base="hmc")
    with pytest.raises(ValueError, match="rho must be"):
        SRMC(lp, g, 0.1, 1.0, rho=0.5)
    with pytest.raises(ValueError, match="hvp_fn"):
        SRMC(lp, g, 0.1, 1.0, hvp="exact")
    with pytest.raises(ValueError, match="array alpha"):
        SRMC(lp, g, 0.1, [1.0, 2.0]).init(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="theta must have shape"):
        SRMC(lp, g, 0.1, 1.0).init(np.zeros(2), theta=np.zeros(3))
    with pytest.raises(ValueError, match="position must contain only finite"):
        SRMC(lp, g, 0.1, 1.0).init(np.array([np.inf, 0.0]))
    with pytest.raises(ValueError, match="grad_log_prob must return the shape"):
        SRMC(lp, lambda x: np.zeros(5), 0.1, 1.0).init(np.zeros(2))
