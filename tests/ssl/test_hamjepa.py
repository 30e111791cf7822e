import math

import numpy as np
import pytest
import torch

from geode.ssl.hamjepa import (
    HamiltonianPredictor,
    HamJEPALoss,
    MLPPredictor,
    PhaseSpaceCNN,
    SIGRegLoss,
    energy_budget,
    epps_pulley_sigreg,
    hamiltonian_prediction_loss,
    leapfrog,
    maxent_covariance,
    price_of_isotropy,
    projected_logdet_floor,
    variance_floor,
)
from geode.ssl.hamjepa.claim import knn_accuracy, participation_ratio


def _omega(d):
    i, z = torch.eye(d, dtype=torch.float64), torch.zeros(d, d, dtype=torch.float64)
    return torch.cat([torch.cat([z, i], 1), torch.cat([-i, z], 1)], 0)


def _pred(method="leapfrog", seed=0, d=4, scale=0.5):
    torch.manual_seed(seed)
    # a large residual scale makes the potential clearly non-quadratic, so the checks are not trivial
    return HamiltonianPredictor(2 * d, hidden=16, residual_scale=scale, steps=3, dt=0.2, method=method).double()


def _jac(f, z):
    return torch.autograd.functional.jacobian(lambda x: f(x.unsqueeze(0)).squeeze(0), z)


def test_leapfrog_is_symplectic_and_euler_is_not():
    z = torch.randn(8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    om = _omega(4)
    j = _jac(_pred(), z)
    assert (j.T @ om @ j - om).abs().max().item() < 1e-10
    assert torch.det(j).item() == pytest.approx(1.0, abs=1e-10)
    assert (j - torch.eye(8, dtype=torch.float64)).abs().max().item() > 1e-2  # a non-trivial map
    je = _jac(_pred("euler"), z)
    assert (je.T @ om @ je - om).abs().max().item() > 1e-3


def test_leapfrog_is_reversible_and_euler_is_not():
    z = torch.randn(5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    f = _pred()
    assert torch.allclose(f(f(z, 1), -1), z, atol=1e-12)
    e = _pred("euler")
    assert (e(e(z, 1), -1) - z).abs().max().item() > 1e-3


def test_leapfrog_bounds_energy_drift_better_than_euler():
    f = _pred(scale=0.1)
    z = torch.randn(16, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    q, p = z[:, :4], z[:, 4:]
    h0 = f.hamiltonian(z)
    ql, pl = leapfrog(f.potential, q, p, 0.2, 200)
    qe, pe = leapfrog(f.potential, q, p, 0.2, 200, method="euler")
    drift_l = (f.hamiltonian(torch.cat([ql, pl], 1)) - h0).abs().max().item()
    drift_e = (f.hamiltonian(torch.cat([qe, pe], 1)) - h0).abs().max().item()
    assert drift_l < 0.05 * drift_e


def test_harmonic_limit_matches_closed_form():
    # residual_scale = 0: V = c|q|^2/2, a harmonic oscillator of frequency sqrt(c); leapfrog is O(dt^2) accurate
    c, t = 0.5, 1.0
    f = HamiltonianPredictor(6, residual_scale=0.0, base_coeff=c, steps=1000, dt=t / 1000).double()
    z = torch.randn(3, 6, dtype=torch.float64)
    w = math.sqrt(c)
    q, p = z[:, :3], z[:, 3:]
    exact = torch.cat(
        [q * math.cos(w * t) + p / w * math.sin(w * t), -q * w * math.sin(w * t) + p * math.cos(w * t)], 1
    )
    assert torch.allclose(f(z), exact, atol=1e-6)


def test_potential_gradient_matches_finite_differences():
    f = _pred()
    q = torch.randn(2, 4, dtype=torch.float64)
    g = f.potential.grad(q)
    eps = 1e-6
    for i in range(4):
        e = torch.zeros(4, dtype=torch.float64)
        e[i] = eps
        fd = (f.potential(q + e) - f.potential(q - e)) / (2 * eps)
        assert torch.allclose(g[:, i], fd, atol=1e-7)


def test_prediction_loss_zero_for_exact_flow_and_gradients_reach_potential():
    f = _pred()
    za = torch.randn(6, 8, dtype=torch.float64)
    zb = f(za).detach()
    assert float(hamiltonian_prediction_loss(f, za, zb).detach()) == pytest.approx(0.0, abs=1e-20)
    loss = hamiltonian_prediction_loss(f, za, zb + 0.1)
    loss.backward()
    assert f.potential.residual[0].weight.grad.abs().sum() > 0


def test_floors_are_zero_when_satisfied_and_positive_on_collapse():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(512, 64, generator=g)
    proj = torch.linalg.qr(torch.randn(32, 16, generator=g))[0]
    assert float(energy_budget(z)) < 0.01
    assert float(variance_floor(z)) == 0.0
    loss, stats = projected_logdet_floor(z[:, :32], proj, pr_floor=0.12, eigmax_ceiling=0.35)
    assert float(loss) == 0.0 and stats["pr_norm"] > 0.8
    collapsed = torch.randn(512, 1, generator=g) * torch.ones(1, 32) + 1e-3 * torch.randn(512, 32, generator=g)
    loss_c, stats_c = projected_logdet_floor(collapsed, proj, pr_floor=0.12, eigmax_ceiling=0.35)
    assert float(loss_c) > 1.0 and stats_c["eigmax_frac"] > 0.9
    assert float(variance_floor(torch.zeros(8, 4))) == pytest.approx((0.2 - 0.01) ** 2, rel=1e-3)


def test_sigreg_small_for_gaussian_large_for_shifted():
    g = torch.Generator().manual_seed(0)
    u = torch.randn(16, 64, generator=g)
    u = u / u.norm(dim=0)
    z = torch.randn(2000, 16, generator=g)
    ok, bad = float(epps_pulley_sigreg(z, u)), float(epps_pulley_sigreg(3 * z + 1, u))
    # N x (squared CF gap) is O(1) under the null and grows like N under the alternative
    assert ok < 3.0 and bad > 100 * ok


def test_losses_run_and_backpropagate():
    enc = PhaseSpaceCNN()
    x = torch.rand(8, 1, 28, 28)
    za, zb = enc(x), enc(x.flip(-1))
    for fn in (HamJEPALoss(HamiltonianPredictor(256), 256), HamJEPALoss(MLPPredictor(256), 256), SIGRegLoss(256)):
        loss = fn(za, zb)
        assert torch.isfinite(loss)
        enc.zero_grad()
        loss.backward(retain_graph=True)
        assert enc.body[0].weight.grad.abs().sum() > 0


def test_price_of_isotropy_closed_form():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 5))
    h = a @ a.T + 0.5 * np.eye(5)
    c = 3.0
    s = maxent_covariance(h, c).numpy()
    assert np.trace(h @ s) == pytest.approx(c)
    iso = c / np.trace(h) * np.eye(5)
    gap = np.linalg.slogdet(s)[1] - np.linalg.slogdet(iso)[1]
    assert gap == pytest.approx(price_of_isotropy(h), rel=1e-8)
    assert gap > 0 and price_of_isotropy(2.0 * np.eye(5)) == pytest.approx(0.0, abs=1e-12)
    # the optimum beats any other feasible covariance, e.g. a random one rescaled to the budget
    b = rng.normal(size=(5, 5))
    other = b @ b.T + np.eye(5)
    other *= c / np.trace(h @ other)
    assert np.linalg.slogdet(s)[1] > np.linalg.slogdet(other)[1]


def test_knn_and_participation_ratio():
    bank = np.array([[1.0, 0], [0.9, 0.1], [0, 1.0], [0.1, 0.9]])
    assert knn_accuracy(bank, np.array([0, 0, 1, 1]), np.array([[1.0, 0.05], [0.02, 1]]), np.array([0, 1]), k=2) == 1.0
    z = np.random.default_rng(0).normal(size=(4000, 8))
    assert participation_ratio(z) == pytest.approx(8, rel=0.05)
    assert participation_ratio(np.outer(z[:, 0], np.ones(8))) == pytest.approx(1.0)


def test_bad_inputs():
    f = HamiltonianPredictor(8, hidden=8)
    with pytest.raises(ValueError, match="even"):
        HamiltonianPredictor(7)
    with pytest.raises(ValueError, match="finite"):
        f(torch.full((2, 8), math.nan))
    with pytest.raises(ValueError, match="8 features"):
        f(torch.zeros(2, 6))
    with pytest.raises(ValueError, match="direction"):
        f(torch.zeros(2, 8), direction=0)
    with pytest.raises(ValueError, match="equal shapes"):
        hamiltonian_prediction_loss(f, torch.zeros(4, 8), torch.zeros(3, 8))
    with pytest.raises(ValueError, match="finite"):
        SIGRegLoss(8)(torch.zeros(4, 8), torch.full((4, 8), math.inf))
    with pytest.raises(ValueError, match="equal shapes"):
        HamJEPALoss(f, 8)(torch.zeros(4, 8), torch.zeros(5, 8))
    with pytest.raises(ValueError, match="positive definite"):
        price_of_isotropy(-np.eye(3))
    with pytest.raises(ValueError, match="dt"):
        HamiltonianPredictor(8, dt=0.0)
    with pytest.raises(ValueError, match="x must be"):
        PhaseSpaceCNN()(torch.zeros(2, 3, 28, 28))
