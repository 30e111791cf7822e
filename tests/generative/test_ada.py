"""Tests of geode.generative.ada: flow log-determinant, invertibility, limit cases, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from geode.generative.ada import ADA, DoubleWell, MomentMatching, RealNVP, fit_flow, maxent_reweight, toy_observables


def _random_flow(seed: int = 0, noise: float = 0.5) -> RealNVP:
    torch.manual_seed(seed)
    f = RealNVP(2, n_layers=4, hidden=8, loc=[0.3, -0.2], scale=[1.5, 0.7])
    with torch.no_grad():
        for p in f.parameters():
            p.add_(noise * torch.randn_like(p))
    return f


def test_flow_is_invertible():
    f = _random_flow()
    x = torch.randn(64, 2, dtype=torch.float64)
    z, ld_inv = f.inverse(x)
    x2, ld_fwd = f(z)
    assert torch.allclose(x2, x, atol=1e-10)
    assert torch.allclose(ld_inv, -ld_fwd, atol=1e-10)


def test_flow_logdet_matches_autograd_jacobian():
    f = _random_flow(1)
    z = torch.randn(5, 2, dtype=torch.float64)
    _, ld = f(z)
    for i in range(5):
        J = torch.autograd.functional.jacobian(lambda v: f(v[None])[0][0], z[i])
        assert torch.isclose(ld[i], torch.linalg.slogdet(J)[1], atol=1e-10)


def test_flow_density_integrates_to_one():
    f = _random_flow(2, noise=0.15)  # mass well inside the grid
    g = torch.linspace(-12, 12, 601, dtype=torch.float64)
    X, Y = torch.meshgrid(g, g, indexing="ij")
    with torch.no_grad():
        p = f.log_prob(torch.stack([X.ravel(), Y.ravel()], 1)).exp()
    assert abs(float(p.sum()) * float(g[1] - g[0]) ** 2 - 1) < 1e-3


def test_maxent_recovers_base_when_moments_already_match():
    rng = np.random.default_rng(0)
    F = rng.standard_normal((500, 3))
    w = maxent_reweight(F, F.mean(0))
    assert np.allclose(w, 1 / 500, atol=1e-9)
    t = np.array([0.2, -0.1, 0.05])
    w = maxent_reweight(F, t)
    assert np.allclose(w @ F, t, atol=1e-8)


def test_zero_steps_recovers_the_base_model():
    f = _random_flow(3)
    obs = toy_observables()
    exp = {k: np.random.default_rng(0).standard_normal(100) for k in obs}
    g = ADA(f, obs).fit(exp, steps=0)
    x = torch.randn(10, 2, dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(g.log_prob(x), f.log_prob(x))


def test_ada_moves_mode_weight_towards_truth():
    rng = np.random.default_rng(0)
    sim, truth = DoubleWell(height=1.0), DoubleWell(height=1.0, tilt=1.0)
    base = fit_flow(sim.sample(4000, rng), steps=300, n_layers=4, hidden=16)
    obs = {"x1": toy_observables()["x1"]}
    exp = {"x1": truth.sample(2000, rng)[:, 0]}
    gen = ADA(base, obs, beta=0.1, lr=3e-3, batch=256).fit(exp, steps=150)
    p0 = float((base.sample(4000)[:, 0] < 0).double().mean())
    p1 = float((gen.sample(4000)[:, 0] < 0).double().mean())
    pt = truth.left_weight()
    assert abs(p1 - pt) < abs(p0 - pt) - 0.05


def test_double_well_weights():
    assert abs(DoubleWell().left_weight() - 0.5) < 1e-3
    assert DoubleWell(tilt=0.4).left_weight() > 0.6


def test_bad_input():
    f = _random_flow()
    obs = toy_observables()
    with pytest.raises(ValueError, match="beta"):
        ADA(f, obs, beta=-1)
    with pytest.raises(ValueError, match="exp_data"):
        ADA(f, obs).fit({"x1": np.zeros(10)}, steps=1)
    with pytest.raises(ValueError, match="exp_data"):
        ADA(f, obs).fit({"x1": np.zeros((10, 3)), "dist_A": np.zeros(10)}, steps=1)
    with pytest.raises(ValueError, match="observable"):
        ADA(f, {"bad": lambda x: x}).fit({"bad": np.zeros(10)}, steps=1)
    with pytest.raises(ValueError, match="x must"):
        f.inverse(torch.zeros(3, 5, dtype=torch.float64))
    with pytest.raises(ValueError, match="dim"):
        RealNVP(1)
    with pytest.raises(ValueError, match="ridge"):
        maxent_reweight(np.zeros((3, 1)), np.zeros(1), ridge=-1)
    with pytest.raises(ValueError, match="steps"):
        MomentMatching(f, obs).fit({k: np.zeros(4) for k in obs}, steps=-1)


def test_zuko_flow_density_is_normalised_and_consistent_with_its_samples():
    pytest.importorskip("zuko")
    from geode.generative.ada import ZukoFlow

    torch.manual_seed(0)
    f = ZukoFlow(2, transforms=2, hidden_features=(16,), loc=[0.3, -0.2], scale=[1.5, 0.7])
    g = torch.linspace(-8, 8, 401, dtype=torch.float64)
    X, Y = torch.meshgrid(g, g, indexing="ij")
    with torch.no_grad():
        p = f.log_prob(torch.stack([X.ravel(), Y.ravel()], 1)).exp()
        x, lp = f.rsample_and_log_prob(64)
        assert torch.allclose(lp, f.log_prob(x), atol=1e-9)  # the standardisation's Jacobian is counted once
    assert abs(float(p.sum()) * float(g[1] - g[0]) ** 2 - 1) < 1e-3
    with pytest.raises(ValueError, match="kind"):
        ZukoFlow(2, kind="NoSuchFlow")


def test_ada_aligns_a_zuko_spline_flow_as_it_aligns_realnvp():
    pytest.importorskip("zuko")
    rng = np.random.default_rng(0)
    sim, truth = DoubleWell(height=1.0), DoubleWell(height=1.0, tilt=1.0)
    base = fit_flow(sim.sample(2000, rng), steps=150, flow="NSF", transforms=2, hidden_features=(16, 16))
    obs = {"x1": toy_observables()["x1"]}
    exp = {"x1": truth.sample(2000, rng)[:, 0]}
    x = torch.randn(10, 2, dtype=torch.float64)
    with torch.no_grad():  # zero steps: the base itself
        assert torch.allclose(ADA(base, obs).fit(exp, steps=0).log_prob(x), base.log_prob(x))
    gen = ADA(base, obs, beta=0.1, lr=3e-3, batch=128).fit(exp, steps=100)
    torch.manual_seed(1)
    p0 = float((base.sample(4000)[:, 0] < 0).double().mean())
    p1 = float((gen.sample(4000)[:, 0] < 0).double().mean())
    pt = truth.left_weight()
    assert abs(p1 - pt) < abs(p0 - pt) - 0.05
