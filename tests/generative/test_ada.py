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


# --------------------------------------------------------------------------------------------------
# issue 43: a zuko flow the user trained, beta guidance, progress, the return annotation
# --------------------------------------------------------------------------------------------------


def _user_zuko_flow(dim: int = 2):
    zuko = pytest.importorskip("zuko")
    torch.manual_seed(0)
    flow = zuko.flows.NSF(dim, transforms=2, hidden_features=(16,))  # float32, as zuko builds it
    data = torch.randn(256, dim) * torch.tensor([2.0, 0.5][:dim] + [1.0] * (dim - 2)) + 1.0
    opt = torch.optim.Adam(flow.parameters(), lr=1e-2)
    for _ in range(20):  # the user's own training loop
        loss = -flow().log_prob(data).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return flow


def test_zuko_flow_wraps_a_flow_the_user_trained():
    from geode.generative.ada import ZukoFlow

    flow = _user_zuko_flow(3)
    x = torch.randn(20, 3)
    with torch.no_grad():
        before = flow().log_prob(x).double()
    for wrapped in (ZukoFlow.wrap(flow), ZukoFlow(flow=flow), ZukoFlow(flow)):
        assert wrapped.flow is flow and wrapped.dim == 3
        with torch.no_grad():
            lp = wrapped.log_prob(x.double())
            assert torch.allclose(lp, before, atol=1e-4)  # the same density (float32 -> float64)
            s, lps = wrapped.rsample_and_log_prob(7)
            assert s.shape == (7, 3) and s.dtype == torch.float64
            assert torch.allclose(lps, wrapped.log_prob(s), atol=1e-8)
    with pytest.raises(ValueError, match="dim"):
        ZukoFlow(2, flow=flow)
    with pytest.raises(TypeError, match="kind"):
        ZukoFlow(flow=flow, transforms=3)  # the flow is built already: no constructor arguments
    with pytest.raises(TypeError, match="zuko"):
        ZukoFlow.wrap(torch.nn.Linear(2, 2))


def test_ada_on_a_wrapped_user_flow_and_a_clear_error_for_a_raw_one():
    from geode.generative.ada import ZukoFlow

    flow = _user_zuko_flow(2)
    obs = {"x1": toy_observables()["x1"]}
    exp = {"x1": np.random.default_rng(0).normal(2.0, 1.0, 200)}
    for make in (ADA, MomentMatching):
        with pytest.raises(TypeError, match=r"ZukoFlow\.wrap\(flow\)"):
            make(flow, obs)
    with pytest.raises(TypeError, match=r"ZukoFlow\.wrap\(flow\)"):
        fit_flow(np.zeros((10, 2)), flow=flow)
    with pytest.raises(TypeError, match="log_prob"):
        ADA(torch.nn.Linear(2, 2), obs)
    base = ZukoFlow.wrap(flow)
    gen = ADA(base, obs, beta=0.1, batch=64).fit(exp, steps=3)
    assert isinstance(gen, ZukoFlow) and gen.flow is not flow  # the generator is a copy; the base is untouched
    # a wrapped flow can be fitted further by fit_flow (in place)
    assert fit_flow(np.random.default_rng(1).normal(size=(64, 2)), steps=2, batch=32, flow=base) is base


def test_ada_fit_return_annotation_is_the_base_models_type():
    import typing

    hints = typing.get_type_hints(ADA.fit)
    assert hints["return"] is not RealNVP
    assert hints["return"] == typing.get_type_hints(ADA.__init__)["base"]
    assert typing.get_type_hints(MomentMatching.fit)["return"] == hints["return"]


def test_ada_docstring_says_how_to_choose_beta():
    doc = ADA.__doc__
    assert "Choosing beta" in doc and "KL" in doc
    assert "0.3" in doc and "0.1" in doc  # the default and a measured alternative


def test_verbose_progress_of_fit_flow_ada_and_moment_matching(capsys):
    rng = np.random.default_rng(0)
    base = fit_flow(rng.normal(size=(200, 2)), steps=20, batch=32, n_layers=2, hidden=8, verbose=5)
    err = capsys.readouterr().err
    assert err.count("fit_flow") == 4 and "step 20/20" in err and "nll" in err
    obs = toy_observables()
    exp = {k: rng.normal(size=100) for k in obs}
    ADA(base, obs, batch=32).fit(exp, steps=10, verbose=True)
    err = capsys.readouterr().err
    assert "ADA" in err and "step 10/10" in err and "KL" in err
    MomentMatching(base, obs, batch=32).fit(exp, steps=4, verbose=2)
    assert capsys.readouterr().err.count("MomentMatching") == 2
    ADA(base, obs, batch=32).fit(exp, steps=3)  # quiet by default
    assert capsys.readouterr().err == ""
