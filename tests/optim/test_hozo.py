from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from geode.optim import EuclideanMetric, HoZO, LogMetric, MeZO, get_metric, optimizer_state_bytes


def _rk4_geodesic(metric, x0: torch.Tensor, v: torch.Tensor, n: int = 2000) -> torch.Tensor:
    """Integrate x'' = a(x, x') from (x0, v) to t = 1 with classical Runge-Kutta."""
    x, u, h = x0.clone(), v.clone(), 1.0 / n
    acc = metric.christoffel_acceleration
    for _ in range(n):
        k1x, k1u = u, acc(x, u)
        k2x, k2u = u + h / 2 * k1u, acc(x + h / 2 * k1x, u + h / 2 * k1u)
        k3x, k3u = u + h / 2 * k2u, acc(x + h / 2 * k2x, u + h / 2 * k2u)
        k4x, k4u = u + h * k3u, acc(x + h * k3x, u + h * k3u)
        x = x + h / 6 * (k1x + 2 * k2x + 2 * k3x + k4x)
        u = u + h / 6 * (k1u + 2 * k2u + 2 * k3u + k4u)
    return x


def test_exponential_map_matches_the_geodesic_ode():
    g = torch.Generator().manual_seed(0)
    x0 = torch.exp(torch.randn(6, generator=g, dtype=torch.float64))
    v = x0 * torch.randn(6, generator=g, dtype=torch.float64) * 1.5  # up to ~e^{+-4} along the geodesic
    for metric in (LogMetric(), EuclideanMetric()):
        assert torch.allclose(metric.exp(x0, v), _rk4_geodesic(metric, x0, v), rtol=1e-8, atol=1e-10)
    # the log metric's geodesic is not the straight line (the ODE check above would catch x + v)
    assert not torch.allclose(LogMetric().exp(x0, v), x0 + v, rtol=1e-3)


def test_exponential_map_stays_positive_and_is_inverted_by_log():
    g = torch.Generator().manual_seed(1)
    m = LogMetric()
    x = torch.exp(4 * torch.randn(1000, generator=g, dtype=torch.float64))  # scales over ~7 decades
    v = -x * (2 + 48 * torch.rand(1000, generator=g, dtype=torch.float64))  # far past the Euclidean boundary
    y = m.exp(x, v)
    assert (y > 0).all() and ((x + v) < 0).all()
    assert torch.allclose(m.log(x, y), v, rtol=1e-9)
    # the geodesic distance is the norm of the log map; the orthonormal frame has unit length
    assert torch.allclose(m.distance(x, y), torch.sqrt(m.inner(x, v, v)), rtol=1e-9)
    e = torch.zeros(1000, dtype=torch.float64)
    e[3] = 1.0
    assert float(m.inner(x, m.frame(x, e), m.frame(x, e))) == pytest.approx(1.0)


def test_riemannian_gradient_is_the_metric_dual_of_the_differential():
    g = torch.Generator().manual_seed(2)
    m = LogMetric()
    x = torch.exp(torch.randn(5, generator=g, dtype=torch.float64))
    egrad, u = torch.randn(5, generator=g, dtype=torch.float64), torch.randn(5, generator=g, dtype=torch.float64)
    assert float(m.inner(x, m.riemannian_grad(x, egrad), u)) == pytest.approx(float(egrad @ u))


def test_expected_hozo_update_is_the_riemannian_gradient_on_a_quadratic():
    """Averaged over seeds, -log_x(x_new)/lr -> grad_g f = x^2 * grad f, not the Euclidean gradient."""
    x0 = torch.tensor([0.05, 0.2, 1.0, 3.0, 0.5], dtype=torch.float64)
    a = torch.tensor([1.0, 2.0, 0.5, 1.0, 3.0], dtype=torch.float64)
    egrad = torch.tensor([2.0, -2.0, 1.0, 0.1, -1.0], dtype=torch.float64)
    c = x0 - egrad / a  # f = 0.5 * sum(a (x - c)^2) has gradient egrad at x0
    rgrad = x0**2 * egrad
    p = torch.nn.Parameter(x0.clone())
    lr, n = 1e-4, 2500
    opt = HoZO([p], lr=lr, eps=1e-4, seed=0)
    m = LogMetric()
    acc = torch.zeros(5, dtype=torch.float64)
    for _ in range(n):
        with torch.no_grad():
            p.copy_(x0)
        opt.step(lambda: 0.5 * (a * (p - c) ** 2).sum())
        acc += -m.log(x0, p.detach()) / lr
    mean = acc / n

    def cos(u, v):
        return float(u @ v / (u.norm() * v.norm()))

    assert cos(rgrad, egrad) < 0.5  # the test can tell the two directions apart
    assert cos(mean, rgrad) > 0.98
    assert cos(mean, egrad) < 0.6
    assert 0.85 < float(mean.norm() / rgrad.norm()) < 1.15


def test_hozo_perturbs_along_the_geodesic_and_restores_the_scales():
    p = torch.nn.Parameter(torch.exp(torch.randn(40, generator=torch.Generator().manual_seed(3))))
    p0 = p.detach().clone()
    seen: list = []

    def closure():
        seen.append(p.detach().clone())
        return (p.log() ** 2).sum()

    opt = HoZO([p], lr=0.0, eps=1e-2, seed=5)
    opt.step(closure)
    (z,) = opt.directions()
    assert torch.allclose(seen[0], p0 * torch.exp(1e-2 * z), rtol=1e-6)
    assert torch.allclose(seen[1], p0 * torch.exp(-1e-2 * z), rtol=1e-6)
    # three in-place multiplications: back to within a few float32 ulps
    assert ((p.detach() - p0).abs() / p0).max() <= 4 * torch.finfo(torch.float32).eps


def test_hozo_with_the_euclidean_metric_is_mezo():
    def run(make):
        p = torch.nn.Parameter(torch.linspace(0.5, 2.0, 30))
        opt = make([p])
        for _ in range(25):
            opt.step(lambda: ((p - 1.0) ** 2).sum())
        return p.detach()

    ours = run(lambda ps: HoZO(ps, lr=0.01, eps=1e-3, metric="euclidean", seed=4))
    mezo = run(lambda ps: MeZO(ps, lr=0.01, eps=1e-3, seed=4))
    assert torch.equal(ours, mezo)


def test_hozo_stays_positive_where_euclidean_steps_cross_the_boundary():
    """f = sum(x) pulls every scale to 0: HoZO approaches it geometrically, MeZO crosses it."""

    def run(make):
        p = torch.nn.Parameter(torch.full((10,), 0.01))
        opt = make([p])
        for _ in range(300):
            opt.step(lambda: 10.0 * p.sum())
        return p.detach(), opt

    x, hozo = run(lambda ps: HoZO(ps, lr=0.5, eps=1e-3, seed=0))
    assert (x > 0).all() and hozo.violations == {"perturb": 0, "update": 0}
    assert float(x.sum()) < 0.2 * 0.01 * 10  # and it made progress towards the boundary
    _, mezo = run(lambda ps: MeZO(ps, lr=1e-4, eps=1e-3, clamp_min=0.0, seed=0))
    assert mezo.violations["update"] > 0


def test_hozo_rejects_non_positive_scales_and_bad_settings():
    for bad in (torch.tensor([1.0, 0.0]), torch.tensor([1.0, -2.0]), torch.tensor([1.0, float("nan")])):
        with pytest.raises(ValueError, match="positive"):
            HoZO([torch.nn.Parameter(bad)])
    ok = [torch.nn.Parameter(torch.ones(2))]
    with pytest.raises(ValueError, match="eps"):
        HoZO(ok, eps=0.0)
    with pytest.raises(ValueError, match="lr"):
        HoZO(ok, lr=-1.0)
    with pytest.raises(ValueError, match="metric"):
        HoZO(ok, metric="poincare")
    with pytest.raises(ValueError, match="empty parameter list|nothing to optimise"):
        HoZO([])
    assert isinstance(get_metric("log"), LogMetric)


def test_hozo_closure_errors_restore_the_scales():
    p = torch.nn.Parameter(torch.tensor([0.5, 2.0]))
    opt = HoZO([p], lr=1.0, eps=1e-3)
    with pytest.raises(ValueError, match="scalar"):
        opt.step(lambda: p * 1.0)
    with pytest.raises(ValueError, match="non-finite"):
        opt.step(lambda: torch.tensor(math.nan))
    assert torch.allclose(p.detach(), torch.tensor([0.5, 2.0]), rtol=1e-6)


def test_hozo_state_is_o1_and_trains_the_scales_of_a_quantised_mlp():
    from geode.models import make_mlp
    from geode.optim import quantize_model, scale_parameters

    g = torch.Generator().manual_seed(0)
    teacher = make_mlp(32, [32], 3, seed=1)
    x = torch.randn(256, 32, generator=g)
    y = teacher(x).argmax(1)
    model = make_mlp(32, [32], 3, seed=1)
    quantize_model(model, bits=4, group_size=32)
    with torch.no_grad():
        for p in scale_parameters(model):
            p.mul_(0.3)  # start below the RTN scales
    opt = HoZO(scale_parameters(model), lr=0.3, eps=1e-3, seed=0)

    def closure():
        return torch.nn.functional.cross_entropy(model(x), y)

    start = float(closure().detach())
    for _ in range(300):
        opt.step(closure)
    assert float(closure().detach()) < 0.8 * start
    assert optimizer_state_bytes(opt) <= 64
    assert all((p > 0).all() for p in scale_parameters(model))


def test_bench_cases_run_at_smoke_size():
    from geode.optim.hozo.bench import cases

    (case,) = cases("smoke")
    assert np.isfinite(case.candidate()) and all(np.isfinite(f()) for f in case.baselines.values())


def test_a_closure_that_calls_backward_gets_a_zeroth_order_error():
    """Issue 43: torch users write ``loss.backward()`` in closures by habit; say what to do instead."""
    from geode.optim import QZO, MeZO

    p = torch.nn.Parameter(torch.tensor([0.5, 2.0]))
    x = torch.tensor([1.0, -1.0])

    def closure():
        loss = ((p * x).sum() - 1.0) ** 2
        loss.backward()
        return loss

    for opt in (HoZO([p], lr=0.1), MeZO([p], lr=0.1), QZO([p], lr=0.1)):
        name = type(opt).__name__
        with pytest.raises(RuntimeError, match=rf"{name} is zeroth-order: the closure must return the loss without "):
            opt.step(closure)
        assert torch.allclose(p.detach(), torch.tensor([0.5, 2.0]), rtol=1e-6)  # the parameters were restored
    assert "closure" in (HoZO.__doc__ or "") and ">>>" in (HoZO.__doc__ or "")
