"""Tests of the Cauchy components, ResidualCAN and the PINN machinery they are trained with."""

from __future__ import annotations

import math

import pytest
import torch

from geode.claims import load_claim
from geode.sciml import (
    MLP,
    AllenCahn1D,
    Burgers1D,
    HuberLoss,
    L1Loss,
    MSELoss,
    Poisson1D,
    Poisson2D,
    StackedProblems,
    derivatives,
    relative_l2_error,
    stack_members,
    train_pinn,
)
from geode.sciml.residual_can import (
    CauchyActivation,
    CauchyLoss,
    ResidualCAN,
    cauchy_kernel,
    cauchy_mlp,
    make_architecture,
    run_pinn_suite,
)

torch.set_num_threads(1)


# ----------------------------------------------------------------------------------------- Cauchy activation


def test_cauchy_activation_closed_form():
    act = CauchyActivation(2, lambda1=0.7, lambda2=-1.3, d=0.5).double()
    x = torch.tensor([[0.0, 1.0], [-2.0, 0.25]], dtype=torch.float64)
    expected = (0.7 * x - 1.3) / (x**2 + 0.25)
    assert torch.allclose(act(x), expected, atol=1e-14)
    # at the defaults (all ones): phi(0) = 1, phi(1) = 1, phi(-1) = 0
    assert CauchyActivation()(torch.tensor([0.0, 1.0, -1.0])).tolist() == [1.0, 1.0, 0.0]


def test_cauchy_activation_gradient_matches_the_closed_form_and_finite_differences():
    act = CauchyActivation(3, lambda1=0.8, lambda2=0.4, d=1.3).double()
    x = torch.linspace(-2.0, 2.0, 9, dtype=torch.float64).unsqueeze(-1).expand(-1, 3).clone().requires_grad_(True)
    (g,) = torch.autograd.grad(act(x).sum(), x)
    l1, l2, d2 = 0.8, 0.4, 1.3**2
    closed = (l1 * (d2 - x**2) - 2 * l2 * x) / (x**2 + d2) ** 2
    assert torch.allclose(g, closed.detach(), atol=1e-13)
    params = (act.lambda1.detach().clone(), act.lambda2.detach().clone(), act.d.detach().clone())
    inputs = (x.detach().clone().requires_grad_(True), *(p.requires_grad_(True) for p in params))

    def f(xx, a, b, c):
        return torch.func.functional_call(act, {"lambda1": a, "lambda2": b, "d": c}, (xx,))

    assert torch.autograd.gradcheck(f, inputs)


def test_cauchy_activation_validates():
    with pytest.raises(ValueError, match="d must be non-zero"):
        CauchyActivation(d=0.0)
    with pytest.raises(ValueError, match="num_features must be >= 1"):
        CauchyActivation(0)
    with pytest.raises(ValueError, match="x must have 3 features"):
        CauchyActivation(3)(torch.zeros(2, 4))


# ------------------------------------------------------------------------------------------------ losses


def test_cauchy_loss_values_limits_and_deepxde_signature():
    loss = CauchyLoss(c=2.0)
    y_true, y_pred = torch.zeros(3), torch.tensor([1.0, -2.0, 10.0])
    expected = (0.5 * 4.0 * torch.log1p((y_pred / 2.0) ** 2)).mean()
    assert loss(y_true, y_pred).item() == pytest.approx(expected.item())
    assert loss(y_pred, y_true).item() == pytest.approx(expected.item())  # symmetric in the residual
    small = torch.tensor([1e-4])
    assert CauchyLoss(1.0)(torch.zeros(1), small).item() == pytest.approx(0.5 * 1e-8, rel=1e-6)  # ~ r^2 / 2
    assert CauchyLoss(1.0, reduction="none")(torch.zeros(2), torch.ones(2)).shape == (2,)
    assert CauchyLoss(1.0, reduction="sum")(torch.zeros(2), torch.ones(2)).item() == pytest.approx(math.log(2.0))
    with pytest.raises(ValueError, match="c must be > 0"):
        CauchyLoss(0.0)


def test_baseline_losses():
    t, p = torch.zeros(2), torch.tensor([0.5, -3.0])
    assert MSELoss()(t, p).item() == pytest.approx((0.25 + 9) / 2)
    assert L1Loss()(t, p).item() == pytest.approx(1.75)
    assert HuberLoss(1.0)(t, p).item() == pytest.approx((0.125 + 2.5) / 2)


# ------------------------------------------------------------------------------------------------ ResidualCAN


def test_cauchy_kernel_closed_form_and_peak():
    x = torch.tensor([[[0.3], [0.5], [1.0]]], dtype=torch.float64)
    mu = torch.tensor([[[0.5]]], dtype=torch.float64)
    d = torch.tensor([[0.2]], dtype=torch.float64)
    lam1, lam2 = torch.tensor([[[1.5]]], dtype=torch.float64), torch.tensor([[0.7]], dtype=torch.float64)
    k = cauchy_kernel(x, mu, d, lam1, lam2)[0, :, 0]
    expected = (0.2 * 1.5 * (x[0, :, 0] - 0.5) + 0.04 * 0.7) / ((x[0, :, 0] - 0.5) ** 2 + 0.04)
    assert torch.allclose(k, expected)
    assert k[1].item() == pytest.approx(0.7)  # the peak is lambda2 whatever the width


def test_residual_can_starts_as_its_main_path_and_nodes_cover_the_domain():
    net = ResidualCAN(1, 1, width=8, depth=2, n_nodes=16, domain=[(-2.0, 2.0)], seed=0)
    x = torch.linspace(-2, 2, 50).unsqueeze(-1)
    assert torch.equal(net(x), net.main(x))  # amplitudes start at zero
    centers = net.centers[:, 0]
    assert torch.allclose(centers, -2.0 + 0.25 * (torch.arange(16) + 0.5))
    assert torch.allclose(net.widths, torch.full((16,), 0.25))
    with torch.no_grad():
        net.amplitudes.fill_(1.0)
    assert not torch.allclose(net(x), net.main(x))
    assert ResidualCAN(1, 1, n_nodes=0)(x).shape == (50, 1)
    gauss = ResidualCAN(1, 1, n_nodes=8, node="gaussian")
    assert not hasattr(gauss, "lambda1") and gauss(x).shape == (50, 1)
    two_d = ResidualCAN(2, 3, n_nodes=10, domain=[(0, 1), (0, 2)])
    assert two_d.n_nodes == 16 and two_d(torch.rand(7, 2)).shape == (7, 3)


def test_residual_can_is_twice_differentiable_for_pinns():
    net = ResidualCAN(1, 1, width=6, n_nodes=8, seed=1).double()
    with torch.no_grad():
        net.amplitudes.normal_()
    x = torch.tensor([[0.1], [0.6]], dtype=torch.float64, requires_grad=True)
    _, lap = derivatives(net(x), x)
    h = 1e-4
    with torch.no_grad():
        fd = (net(x + h) - 2 * net(x) + net(x - h)) / h**2
    assert torch.allclose(lap, fd, rtol=1e-4, atol=1e-6)
    assert torch.autograd.gradcheck(lambda t: net(t), (x,))


def test_stacked_residual_can_equals_its_members():
    torch.manual_seed(0)
    singles = [ResidualCAN(1, 1, 5, 1, 6, seed=s) for s in range(3)]
    for m in singles:
        with torch.no_grad():
            m.amplitudes.normal_()
    ens = ResidualCAN(1, 1, 5, 1, 6, ensemble=3)
    stack_members(ens, singles)
    x = torch.rand(3, 11, 1)
    assert torch.allclose(ens(x), torch.stack([m(x[i]) for i, m in enumerate(singles)]), atol=1e-6)


def test_residual_can_validates():
    with pytest.raises(ValueError, match="node must be one of"):
        ResidualCAN(1, 1, node="laplace")
    with pytest.raises(ValueError, match="one \\(low, high\\) pair per input"):
        ResidualCAN(2, 1, domain=[(0, 1)])
    with pytest.raises(ValueError, match=r"domain\[0\] must have low < high"):
        ResidualCAN(1, 1, domain=[(1, 1)])


def test_architecture_parameter_counts():
    counts = {
        name: sum(p.numel() for p in make_architecture(name).parameters())
        for name in ("SiLU-MLP", "CauchyAct-MLP", "ResidualCAN", "ResidualCAN-RBF", "SIREN", "Fourier-MLP")
    }
    assert counts == {
        "SiLU-MLP": 1153,
        "CauchyAct-MLP": 385,
        "ResidualCAN": 577,
        "ResidualCAN-RBF": 449,
        "SIREN": 1153,
        "Fourier-MLP": 2145,
    }
    assert sum(p.numel() for p in cauchy_mlp([1, 64, 1]).parameters()) == 385
    with pytest.raises(ValueError, match="name must be one of"):
        make_architecture("KAN")


# --------------------------------------------------------------------------------------------------- PINNs


@pytest.mark.parametrize(
    "problem", [AllenCahn1D(1.0), AllenCahn1D(0.1), Poisson1D(), Burgers1D(0.05), Poisson2D()], ids=lambda p: p.name
)
def test_pinn_residual_of_the_exact_solution_vanishes(problem):
    x = problem.collocation(200).double().requires_grad_(True)
    r = problem.pde(x, problem.exact(x))
    scale = 1.0 + problem.exact(x).abs().max().item()
    assert r.abs().max().item() < 1e-9 * scale * 10**3
    # and the residual of a wrong function does not
    assert problem.pde(x, 0.5 * problem.exact(x) + 0.1).abs().max().item() > 1e-3


def test_derivatives_of_a_polynomial():
    x = torch.tensor([[0.5, -1.0], [2.0, 0.3]], dtype=torch.float64, requires_grad=True)
    u = (x[:, :1] ** 3 + x[:, 1:] ** 2 * x[:, :1]).reshape(2, 1)
    grad, lap = derivatives(u, x)
    assert torch.allclose(grad[:, 0], 3 * x[:, 0] ** 2 + x[:, 1] ** 2)
    assert torch.allclose(lap[:, 0], 6 * x[:, 0] + 2 * x[:, 0])
    with pytest.raises(ValueError, match="x must require grad"):
        derivatives(u, x.detach())


def test_problem_geometry():
    assert AllenCahn1D(1.0).boundary().tolist() == [[-1.0], [1.0]]
    assert Poisson2D().collocation(100).shape == (100, 2)
    assert Poisson2D().boundary(8).shape == (32, 2)
    assert relative_l2_error(torch.ones(1, 4, 1), torch.full((1, 4, 1), 2.0)).item() == pytest.approx(0.5)
    with pytest.raises(ValueError, match="eps must be > 0"):
        AllenCahn1D(0.0)


def test_train_pinn_single_and_stacked():
    torch.set_default_dtype(torch.float64)
    try:
        net = MLP([1, 16, 1], "tanh", seed=0)
        res = train_pinn(net, Poisson1D(amplitude=0.0), steps=150, lr=1e-2, n_collocation=32, n_test=101)
        assert res.loss_history.shape == (150,)
        assert res.loss_history[-1] < 0.05 * res.loss_history[0]
        assert res.rel_l2.item() < 0.5
        ens = ResidualCAN(1, 1, 8, 1, 8, ensemble=3)
        problems = StackedProblems([AllenCahn1D(1.0), AllenCahn1D(0.5), Poisson1D()])
        res = train_pinn(
            ens, problems, loss=[MSELoss(), CauchyLoss(), MSELoss()], steps=5, n_collocation=16, n_test=33
        )
        assert res.rel_l2.shape == (3,) and res.loss_history.shape == (5, 3)
        with pytest.raises(ValueError, match="ensemble of 3"):
            train_pinn(ens, StackedProblems([Poisson1D()] * 2), steps=1)
        with pytest.raises(ValueError, match="one callable or 3"):
            train_pinn(ens, problems, loss=[MSELoss()], steps=1)
        with pytest.raises(ValueError, match="needs a stacked-ensemble model"):
            train_pinn(MLP([1, 4, 1]), problems, steps=1)
        with pytest.raises(ValueError, match="domain"):
            StackedProblems([Poisson1D(), Poisson2D()])
    finally:
        torch.set_default_dtype(torch.float32)


def test_pinn_suite_runs_and_is_deterministic():
    kw = dict(
        eps_values=(1.0,),
        architectures=("SiLU-MLP", "ResidualCAN"),
        poisson=True,
        steps=3,
        n_collocation=16,
        n_test=33,
    )
    suite = run_pinn_suite(**kw)
    assert len(suite.rows) == 2 * 3  # per architecture: Allen-Cahn with MSE and with the Cauchy loss, Poisson
    again = run_pinn_suite(**kw)
    assert [r["rel_l2"] for r in suite.rows] == [r["rel_l2"] for r in again.rows]
    with pytest.raises(ValueError, match="factorial_losses"):
        run_pinn_suite(factorial_losses=("MSE",), steps=1)


def test_claim_thresholds_floors_and_controls():
    claim = load_claim("residual-can")
    th = {t.name: t for t in (*claim.thresholds, *claim.floors)}
    # revision 1's thresholds are kept (now on the equal-wall-clock + L-BFGS protocol, geometric means)
    assert (th["strong"].metric, th["strong"].op, th["strong"].value) == ("silu_over_rescan_eps1", ">=", 100.0)
    assert (th["rbf_keeps"].metric, th["rbf_keeps"].value) == ("silu_over_rbf_eps1", 10.0)
    assert (th["some"].metric, th["some"].value) == ("silu_over_rescan_eps1", 10.0)
    assert (th["mlp_lacks"].metric, th["mlp_lacks"].op, th["mlp_lacks"].value) == (
        "silu_over_cauchymlp_eps1",
        "<",
        10.0,
    )
    assert all(th[k].agg == "geomean" and th[k].control for k in ("strong", "rbf_keeps", "mlp_lacks", "some"))
    assert (claim.reproduced, claim.partial) == ("strong and rbf_keeps and mlp_lacks", "some")
    ok = {"worst_err_eps1_silu_rescan": 1e-4, "nonfinite_runs": 0.0}
    good = {**ok, "silu_over_rescan_eps1": 150.0, "silu_over_rbf_eps1": 20.0, "silu_over_cauchymlp_eps1": 3.0}
    assert claim.verdict(good)[0] == "reproduced"
    assert claim.verdict({**good, "silu_over_cauchymlp_eps1": 30.0})[0] == "partial"
    assert claim.verdict({**good, "silu_over_rescan_eps1": 3.0})[0] == "not reproduced"
    assert claim.verdict({**good, "worst_err_eps1_silu_rescan": 0.5})[0] == "inconclusive"


class _NoClosedForm(AllenCahn1D):
    def exact(self, x):
        raise NotImplementedError


def test_train_pinn_boundary_data_without_a_closed_form_per_member_rates_and_lbfgs():
    torch.set_default_dtype(torch.float64)
    try:
        prob = AllenCahn1D(1.0)
        x_bd = prob.boundary()
        kw = dict(steps=20, lr=1e-2, n_collocation=32, n_test=101)
        ref = train_pinn(MLP([1, 8, 1], "tanh", seed=0), prob, **kw)
        data = train_pinn(MLP([1, 8, 1], "tanh", seed=0), _NoClosedForm(1.0), boundary=(x_bd, prob.exact(x_bd)), **kw)
        assert torch.equal(ref.loss_history, data.loss_history)  # the same Dirichlet data, given separately
        assert math.isnan(float(data.rel_l2))  # no solution: no error, but the residuals are there
        assert torch.allclose(ref.val_residual_rms, data.val_residual_rms)
        fn = train_pinn(MLP([1, 8, 1], "tanh", seed=0), _NoClosedForm(1.0), boundary=prob.exact, **kw)
        assert torch.equal(ref.loss_history, fn.loss_history)
        with pytest.raises(ValueError, match="boundary values must have shape"):
            train_pinn(MLP([1, 8, 1]), prob, boundary=(x_bd, torch.zeros(3, 1)), steps=1)
        # per-member learning rates equal training each member alone
        singles = [MLP([1, 8, 1], "tanh", seed=s) for s in range(2)]
        ens = MLP([1, 8, 1], "tanh", ensemble=2)
        stack_members(ens, singles)
        rates = torch.tensor([3e-3, 3e-2])
        both = train_pinn(ens, StackedProblems([prob, Poisson1D()]), steps=10, lr=rates, n_collocation=16, n_test=33)
        for i, (single, pr) in enumerate(zip(singles, [prob, Poisson1D()])):
            alone = train_pinn(single, pr, steps=10, lr=float(rates[i]), n_collocation=16, n_test=33)
            assert torch.allclose(both.loss_history[:, i], alone.loss_history, rtol=1e-9, atol=1e-12)
        # the L-BFGS stage lowers the loss after Adam
        net = MLP([1, 8, 1], "tanh", seed=1)
        a = train_pinn(net, prob, steps=30, lr=1e-2, n_collocation=32, n_test=101)
        b = train_pinn(net, prob, steps=0, lbfgs_steps=30, n_collocation=32, n_test=101)
        assert float(b.final_loss) < 0.5 * float(a.final_loss) and b.loss_history.shape == (0,)
    finally:
        torch.set_default_dtype(torch.float32)


def test_one_dimensional_fast_path_of_the_kernels_matches_the_general_formula():
    from geode.sciml.residual_can import gaussian_kernel

    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 7, 1, generator=g, dtype=torch.float64)
    mu = torch.randn(2, 5, 1, generator=g, dtype=torch.float64)
    d = torch.rand(2, 5, generator=g, dtype=torch.float64) + 0.1
    lam1, lam2 = torch.randn(2, 5, 1, generator=g, dtype=torch.float64), torch.randn(2, 5, generator=g)
    lam2 = lam2.double()
    # the 2-D formula with a zero second coordinate is the 1-D one
    pad = lambda t: torch.cat([t, torch.zeros_like(t)], -1)  # noqa: E731
    assert torch.allclose(cauchy_kernel(x, mu, d, lam1, lam2), cauchy_kernel(pad(x), pad(mu), d, pad(lam1), lam2))
    assert torch.allclose(gaussian_kernel(x, mu, d), gaussian_kernel(pad(x), pad(mu), d))
