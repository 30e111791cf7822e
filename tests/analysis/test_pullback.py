"""Pullback metrics: JᵀJ against finite differences, forward = reverse mode, the sample estimate."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from geode.analysis import jacobians, metric_from_samples, pullback_metric

torch.set_num_threads(1)


def _mlp(seed=0, d=3, width=16, out=5):
    g = torch.Generator().manual_seed(seed)
    w1 = torch.randn(width, d, generator=g, dtype=torch.float64)
    w2 = torch.randn(out, width, generator=g, dtype=torch.float64) / 4

    def f(z):
        return torch.tanh(z @ w1.T) @ w2.T + torch.sin(z[:, :1])

    return f


def _fd_jacobian(f, z, h=1e-6):
    z = torch.as_tensor(z, dtype=torch.float64)
    cols = []
    for k in range(z.shape[1]):
        e = torch.zeros_like(z)
        e[:, k] = h
        with torch.no_grad():
            cols.append(((f(z + e) - f(z - e)) / (2 * h)).numpy())
    return np.stack(cols, axis=-1)


def test_pullback_of_a_linear_map_is_a_transpose_a():
    a = np.random.default_rng(0).normal(size=(6, 3))
    at = torch.as_tensor(a)
    g = pullback_metric(lambda z: z @ at.T + 1.0, np.zeros((4, 3)))
    np.testing.assert_allclose(g, np.broadcast_to(a.T @ a, (4, 3, 3)), atol=1e-12)


def test_pullback_metric_equals_jt_j_of_finite_difference_jacobians():
    f = _mlp()
    z = np.random.default_rng(1).normal(size=(20, 3))
    j_fd = _fd_jacobian(f, z)
    np.testing.assert_allclose(jacobians(f, z), j_fd, atol=1e-7)
    np.testing.assert_allclose(pullback_metric(f, z), np.einsum("nki,nkj->nij", j_fd, j_fd), atol=1e-6)


def test_forward_and_reverse_modes_and_batching_agree():
    f = _mlp(seed=2)
    z = np.random.default_rng(3).normal(size=(13, 3))
    ref = jacobians(f, z, mode="forward", batch_size=None)
    np.testing.assert_allclose(jacobians(f, z, mode="reverse"), ref, atol=1e-12)
    np.testing.assert_allclose(jacobians(f, z, batch_size=4), ref, atol=1e-12)


def test_works_with_a_float32_module():
    net = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh())
    g = pullback_metric(net, np.random.default_rng(0).normal(size=(5, 2)))
    assert g.shape == (5, 2, 2) and g.dtype == np.float64
    np.testing.assert_allclose(g, np.swapaxes(g, 1, 2))
    assert np.all(np.linalg.eigvalsh(g) >= -1e-6)


def test_metric_from_samples_is_exact_for_an_affine_map():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(2, 7))
    z = rng.uniform(-1, 1, size=(200, 2))
    g = metric_from_samples(z, z @ a + 3.0)
    np.testing.assert_allclose(g, np.broadcast_to(a @ a.T, g.shape), atol=1e-9)


def test_metric_from_samples_approximates_the_exact_metric():
    f = _mlp(seed=5, d=2, width=12, out=6)
    z = np.random.default_rng(6).uniform(-1, 1, size=(3000, 2))
    with torch.no_grad():
        x = f(torch.as_tensor(z)).numpy()
    est = metric_from_samples(z, x, n_neighbors=10)
    exact = pullback_metric(f, z)
    rel = np.linalg.norm(est - exact, axis=(1, 2)) / np.linalg.norm(exact, axis=(1, 2))
    assert np.median(rel) < 0.05


def test_validation_errors():
    f = _mlp()
    with pytest.raises(ValueError, match="Z must have shape"):
        jacobians(f, np.zeros(3))
    with pytest.raises(ValueError, match="finite"):
        jacobians(f, np.full((2, 3), np.nan))
    with pytest.raises(TypeError, match="callable"):
        jacobians(3.0, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="mode"):
        jacobians(f, np.zeros((2, 3)), mode="sideways")
    z = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(ValueError, match="same number of samples"):
        metric_from_samples(z, z[:-1])
    with pytest.raises(ValueError, match="n_neighbors"):
        metric_from_samples(z, z, n_neighbors=10)
    with pytest.raises(ValueError, match="degenerate"):
        metric_from_samples(np.repeat(z[:3], 4, axis=0), np.repeat(z[:3], 4, axis=0), n_neighbors=3)
