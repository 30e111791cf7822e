"""REEF-GP: the kernel, the FE solver against a closed form, the GP posterior, the unchanged mean."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from geode.uncertainty import (
    REEFGP,
    DeepEnsemble,
    PointCloudOperator,
    geometry_descriptors,
    matern52,
    poisson_dataset,
    solve_poisson,
    train_operator,
)


def test_matern52_closed_form_and_psd():
    a = torch.tensor([[0.0], [1.0], [3.0]], dtype=torch.float64)
    k = matern52(a, a, torch.tensor([2.0], dtype=torch.float64), torch.tensor(1.5, dtype=torch.float64))
    r = 0.5 * np.sqrt(5)
    assert float(k[0, 1]) == pytest.approx(1.5 * (1 + r + r**2 / 3) * np.exp(-r), rel=1e-9)
    assert float(k[0, 0]) == pytest.approx(1.5, rel=1e-6)
    assert torch.linalg.eigvalsh(k).min() > 0


def test_poisson_solver_matches_the_closed_form_on_the_disk():
    pytest.importorskip("skfem")
    from skfem import MeshTri

    m = MeshTri.init_circle(4)
    u = solve_poisson(m.p, m.t, np.full(m.p.shape[1], 4.0))  # -lap u = 4, u = 0 on r = 1: u = 1 - r^2
    exact = 1 - (m.p**2).sum(0)
    assert np.max(np.abs(u - exact)) < 2e-2
    data = poisson_dataset(3, eps=0.2, refine=3, seed=0)
    assert len(data) == 3 and data[0].points.shape == (145, 2)
    assert np.allclose(data[0].solution[data[0].sdf < 1e-9], 0.0)  # Dirichlet boundary
    assert not np.allclose(data[0].points, data[1].points)  # random shapes


def _problem(seed: int = 0):
    rng = np.random.default_rng(seed)
    s, n = 6, 60
    pts = rng.uniform(-1, 1, size=(s, n, 2))
    sdf = 1 - np.hypot(pts[..., 0], pts[..., 1]) / np.sqrt(2)
    f = rng.normal(size=(s, n))
    x = np.concatenate([pts, sdf[..., None], f[..., None]], -1).astype(np.float32)
    u = np.sin(2 * pts[..., 0]) * pts[..., 1] + 0.05 * (1 + 3 * (sdf < 0.3)) * rng.normal(size=(s, n))
    return x, u


def test_mean_is_the_operators_and_the_posterior_is_the_closed_form():
    x, u = _problem()
    op = PointCloudOperator(width=8, seed=0)
    train_operator(op, x, u, steps=30, batch=4)
    gp = REEFGP(op, q=4, subset_size=100, n_condition=10_000, steps=0, heteroscedastic=False, seed=0)
    gp.fit(x[:4], u[:4])
    mu, sd, var_gp, var_noise = gp.predict(x[4:], return_parts=True)
    with torch.no_grad():
        assert np.array_equal(mu, op(torch.as_tensor(x[4:])).double().numpy())  # the mean is never changed
    # closed form: k** - k*S (K_SS + s2 I)^-1 kS*, on every calibration point, in the GP's feature space
    u_hat, h, g = gp._inputs(x[:4])
    _, h_new, g_new = gp._inputs(x[4:])
    with torch.no_grad():
        z = gp._z(torch.as_tensor(h)).numpy()
        zn = gp._z(torch.as_tensor(h_new)).numpy()
        s2 = float(gp._noise(torch.as_tensor(g[:1]))[0])
        ls, os = gp.log_ls_.exp().numpy(), float(gp.log_os_.exp())

    def k(a, b):
        d = np.sqrt(np.maximum((((a[:, None] - b[None]) / ls) ** 2).sum(-1), 1e-12)) * np.sqrt(5)
        return os * (1 + d + d**2 / 3) * np.exp(-d)

    kss = k(z, z) + (s2 + 1e-6) * np.eye(len(z))
    ks = k(zn, z)
    var = os - np.einsum("ij,ji->i", ks, np.linalg.solve(kss, ks.T))
    np.testing.assert_allclose(var_gp.ravel(), np.maximum(var, 0) * gp.r_scale_**2, rtol=1e-5, atol=1e-10)
    np.testing.assert_allclose(sd**2, var_gp + var_noise, rtol=1e-10)
    # at a conditioning point the GP variance is small; the prior variance is the outputscale
    _, _, var_at_train, _ = gp.predict(x[:4], return_parts=True)
    assert var_at_train.mean() < 0.5 * os * gp.r_scale_**2


def test_fit_learns_heteroscedastic_noise_and_raises_the_likelihood():
    x, u = _problem(1)
    op = PointCloudOperator(width=8, seed=1)
    train_operator(op, x, u, steps=60, batch=4)
    gp = REEFGP(op, q=4, subset_size=200, steps=80, lr=0.05, seed=0).fit(x, u)
    assert np.mean(gp.losses_[-10:]) < np.mean(gp.losses_[:5])
    _, _, _, var_noise = gp.predict(x, return_parts=True)
    sdf = x[..., 2]
    assert var_noise[sdf < 0.3].mean() > var_noise[sdf >= 0.3].mean()  # more noise where the data have more


def test_geometry_descriptors_and_ensemble():
    pts = np.stack(np.meshgrid(np.arange(5.0), np.arange(5.0)), -1).reshape(1, 25, 2)
    uh = pts[..., 0] * 2.0  # slope 2 along x
    g = geometry_descriptors(pts, np.zeros((1, 25)), uh, neighbours=4)
    np.testing.assert_allclose(g[0, :, 2], 2.0)
    np.testing.assert_allclose(g[0, 12, 1], 0.0)  # interior spacing 1 -> log 1
    x, u = _problem(2)
    members = [PointCloudOperator(width=8, seed=s) for s in range(3)]
    mu, sd = DeepEnsemble(members).predict(x)
    assert mu.shape == sd.shape == u.shape and np.all(sd > 0)


def test_bad_inputs():
    x, u = _problem()
    op = PointCloudOperator(width=8)
    with pytest.raises(ValueError, match="feature_layer"):
        REEFGP(op, "decoder.nothing")
    with pytest.raises(TypeError, match="operator"):
        REEFGP(lambda t: t)
    gp = REEFGP(op, steps=1, subset_size=50)
    with pytest.raises(RuntimeError, match="fit"):
        gp.predict(x)
    with pytest.raises(ValueError, match="shape"):
        gp.fit(x, u[:, :-1])
    bad = x.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        gp.fit(bad, u)
    with pytest.raises(ValueError, match="x must"):
        op(torch.zeros(3, 4))
