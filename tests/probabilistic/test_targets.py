"""Targets: scores and Hessian-vector products against finite differences, closed forms, data loading."""

from __future__ import annotations

import numpy as np
import pytest

from geode.probabilistic import (
    GaussianTarget,
    LogisticRegressionTarget,
    anisotropic_gaussian,
    breast_cancer_logistic,
    digits_logistic,
    synthetic_logistic,
)


def _fd_grad(f, x, h=1e-6):
    e = np.eye(x.shape[-1])
    return np.stack([(f(x + h * e[i]) - f(x - h * e[i])) / (2 * h) for i in range(x.shape[-1])], axis=-1)


@pytest.mark.parametrize(
    "make",
    [
        lambda: anisotropic_gaussian(30.0, 4, rotated=True, seed=2),
        synthetic_logistic,
        lambda: digits_logistic((1, 7), max_rows=40),
    ],
)
def test_score_and_hvp_match_finite_differences_batched(make):
    t = make()
    rng = np.random.default_rng(0)
    x = 0.3 * rng.normal(size=(3, t.dim))
    v = rng.normal(size=(3, t.dim))
    np.testing.assert_allclose(t.grad_log_prob(x), _fd_grad(t.log_prob, x), rtol=1e-5, atol=1e-5)
    fd_hvp = (t.grad_log_prob(x + 1e-6 * v) - t.grad_log_prob(x - 1e-6 * v)) / 2e-6
    np.testing.assert_allclose(t.hvp(x, v), fd_hvp, rtol=1e-5, atol=1e-4)
    # batched = one by one
    np.testing.assert_allclose(t.log_prob(x), [t.log_prob(xi) for xi in x])
    if isinstance(t, LogisticRegressionTarget):
        np.testing.assert_allclose(t.hessian(x[0]) @ v[0], t.hvp(x[0], v[0]), rtol=1e-10, atol=1e-10)


def test_anisotropic_gaussian_has_the_requested_spectrum_and_fisher():
    for rotated in (False, True):
        t = anisotropic_gaussian(100.0, 10, rotated=rotated)
        ev = np.linalg.eigvalsh(t.cov)
        np.testing.assert_allclose(ev, np.logspace(0, 2, 10), rtol=1e-10)
        np.testing.assert_allclose(t.fisher @ t.cov, np.eye(10), atol=1e-10)
    d = anisotropic_gaussian(100.0, 10)
    np.testing.assert_allclose(d.variance, np.logspace(0, 2, 10))
    draws = anisotropic_gaussian(10.0, 3, rotated=True).sample(0, 50_000)
    np.testing.assert_allclose(np.cov(draws.T), anisotropic_gaussian(10.0, 3, rotated=True).cov, rtol=0.05, atol=0.05)


def test_logistic_targets_and_their_map():
    syn = synthetic_logistic()
    assert syn.X.shape == (200, 10) and set(np.unique(syn.y)) <= {0.0, 1.0}
    # the official recipe: X, then beta*, then y, from default_rng(42)
    rng = np.random.default_rng(42)
    np.testing.assert_array_equal(syn.X, rng.normal(size=(200, 10)))
    bc = breast_cancer_logistic()
    assert bc.X.shape == (569, 31) and np.allclose(bc.X[:, 0], 1.0)
    np.testing.assert_allclose(bc.X[:, 1:].mean(axis=0), 0.0, atol=1e-10)
    dg = digits_logistic((3, 8))
    assert dg.X.shape[1] == 65 and dg.X.max() <= 1.0
    assert digits_logistic().X.shape == (1797, 65)
    for t in (syn, bc, dg):
        b = t.map_estimate()
        assert np.abs(t.grad_log_prob(b)).max() < 1e-6
        assert np.all(np.linalg.eigvalsh(-t.hessian(b)) >= 1.0 - 1e-9)  # prior precision 1


def test_data_loaded_without_sklearn_match_sklearn():
    datasets = pytest.importorskip("sklearn.datasets")
    bc = datasets.load_breast_cancer()
    np.testing.assert_array_equal(breast_cancer_logistic().y, bc.target)
    dg = datasets.load_digits()
    keep = (dg.target == 3) | (dg.target == 8)
    t = digits_logistic((3, 8))
    np.testing.assert_allclose(t.X[:, 1:], dg.data[keep] / 16.0)
    np.testing.assert_array_equal(t.y, dg.target[keep] == 3)


def test_bad_inputs():
    with pytest.raises(ValueError, match="kappa must be >= 1"):
        anisotropic_gaussian(0.5)
    with pytest.raises(ValueError, match="cov must be positive definite"):
        GaussianTarget(np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="cov must be symmetric"):
        GaussianTarget(np.zeros(2), np.array([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="y must hold labels"):
        LogisticRegressionTarget(np.ones((3, 2)), np.array([0.0, 2.0, 1.0]))
    with pytest.raises(ValueError, match="x must have shape"):
        anisotropic_gaussian(2.0, 3).log_prob(np.zeros(4))
    with pytest.raises(ValueError, match="classes"):
        digits_logistic((3, 3))
