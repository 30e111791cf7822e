from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geode.core.ess import autocorrelation, autocorrelation_ess, ess_mse


def _ar1(phi: float, n: int, k: int, seed: int) -> np.ndarray:
    """k independent stationary AR(1) series x_t = phi x_{t-1} + sqrt(1 - phi^2) e_t, shape (n, k)."""
    rng = np.random.default_rng(seed)
    e = rng.normal(size=(n, k))
    x = np.empty((n, k))
    x[0] = e[0]
    s = np.sqrt(1 - phi**2)
    for t in range(1, n):
        x[t] = phi * x[t - 1] + s * e[t]
    return x


@pytest.mark.parametrize("phi", [0.0, 0.5, 0.9, -0.5])
def test_autocorrelation_ess_matches_the_ar1_closed_form(phi):
    # integrated autocorrelation time of AR(1): tau = (1 + phi) / (1 - phi)
    n, k = 8000, 64
    ess = autocorrelation_ess(_ar1(phi, n, k, seed=1))
    expected = n * (1 - phi) / (1 + phi)
    assert ess.shape == (k,)
    assert np.mean(ess) == pytest.approx(expected, rel=0.06)


def test_antithetic_chains_may_exceed_n_but_not_the_floor():
    n = 4000
    ess = autocorrelation_ess(_ar1(-0.5, n, 16, seed=2))
    assert np.all(ess > n)  # antithetic: ESS > n
    assert np.all(ess <= n * np.log10(n) + 1e-9)  # floor tau >= 1/log10(n)


def test_autocorrelation_known_values_and_axis():
    x = np.array([1.0, -1.0, 1.0, -1.0])
    rho = autocorrelation(x)
    # biased estimator: gamma_t = (n - t)/n * (-1)^t
    np.testing.assert_allclose(rho, [1.0, -0.75, 0.5, -0.25])
    y = np.random.default_rng(0).normal(size=(3, 50))
    np.testing.assert_allclose(autocorrelation(y, axis=1), autocorrelation(y.T).T)
    assert autocorrelation_ess(y, axis=1).shape == (3,)


def test_constant_series_has_ess_one():
    x = np.ones((100, 2))
    x[:, 1] = np.random.default_rng(0).normal(size=100)
    ess = autocorrelation_ess(x)
    assert ess[0] == 1.0 and ess[1] > 10


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.floats(0.1, 10.0))
def test_autocorrelation_ess_is_invariant_to_affine_maps(seed, scale):
    x = np.random.default_rng(seed).normal(size=200)
    a = autocorrelation_ess(x)
    assert autocorrelation_ess(scale * x - 3.0) == pytest.approx(a, rel=1e-9)
    assert 0 < a <= 200 * np.log10(200)


def test_ess_mse_of_iid_means_is_the_number_of_draws():
    rng = np.random.default_rng(3)
    n, r, sigma = 50, 4000, 2.0
    means = rng.normal(0.0, sigma, size=(r, n, 3)).mean(axis=1)  # (R, 3)
    ess = ess_mse(means, np.zeros(3), sigma**2)
    assert ess.shape == (3,)
    np.testing.assert_allclose(ess, n, rtol=0.08)


def test_ess_mse_closed_form_bias_and_axis():
    est = np.array([[1.0, 2.0], [3.0, 2.0]])  # replicates along axis 1 for the second call
    # replicates on axis 0: component 0 errors (1-2, 3-2) -> MSE 1; component 1 errors 0 -> inf
    out = ess_mse(est, np.array([2.0, 2.0]), np.array([4.0, 1.0]))
    assert out[0] == pytest.approx(4.0) and np.isinf(out[1])
    # a biased estimator: every replicate off by 0.5 -> MSE 0.25
    assert ess_mse(np.full(10, 0.5), 0.0, 1.0) == pytest.approx(4.0)
    assert ess_mse(est, 2.0, 1.0, axis=1).shape == (2,)


def test_validation_errors_name_the_argument():
    with pytest.raises(ValueError, match="variance"):
        ess_mse([0.1, 0.2], 0.0, 0.0)
    with pytest.raises(ValueError, match="estimates"):
        ess_mse([np.nan, 0.2], 0.0, 1.0)
    with pytest.raises(ValueError, match="broadcast"):
        ess_mse(np.zeros((4, 3)), np.zeros(2), 1.0)
    with pytest.raises(ValueError, match="at least 4 draws"):
        autocorrelation_ess([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="x must contain only finite"):
        autocorrelation_ess([1.0, np.inf, 3.0, 4.0])
    with pytest.raises(ValueError, match="axis"):
        autocorrelation([1.0, 2.0], axis=3)
