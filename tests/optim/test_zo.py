from __future__ import annotations

import pytest
import torch

from geode.optim import QZO, MeZO, optimizer_state_bytes, step_seed


def _quadratic(p: torch.Tensor, target: torch.Tensor, seen: list | None = None):
    def closure():
        if seen is not None:
            seen.append(p.detach().clone())
        return 0.5 * ((p - target) ** 2).sum()

    return closure


def test_seed_trick_regenerates_the_direction_and_restores_the_parameters():
    p = torch.nn.Parameter(torch.randn(50, dtype=torch.float64))
    p0 = p.detach().clone()
    seen: list = []
    opt = MeZO([p], lr=0.0, eps=1e-3, seed=7)
    opt.step(_quadratic(p, torch.zeros(50, dtype=torch.float64), seen))
    (z,) = opt.directions()
    g = torch.Generator().manual_seed(step_seed(7, 0))
    assert torch.equal(z, torch.randn(50, generator=g, dtype=torch.float64))  # bit-identical regeneration
    assert torch.allclose(seen[0], p0 + 1e-3 * z, rtol=0, atol=1e-15)
    assert torch.allclose(seen[1], p0 - 1e-3 * z, rtol=0, atol=1e-15)
    # after +eps, -2 eps, +eps the parameters are back up to the rounding of three additions
    assert (p.detach() - p0).abs().max() <= 4 * torch.finfo(torch.float64).eps * p0.abs().max()


def test_mezo_update_is_the_spsa_closed_form():
    p = torch.nn.Parameter(torch.randn(20, dtype=torch.float64))
    p0 = p.detach().clone()
    target = torch.ones(20, dtype=torch.float64)
    opt = MeZO([p], lr=0.1, eps=1e-4, seed=3)
    opt.step(_quadratic(p, target))
    (z,) = opt.directions()
    f = lambda x: 0.5 * ((x - target) ** 2).sum()  # noqa: E731
    d = float((f(p0 + 1e-4 * z) - f(p0 - 1e-4 * z)) / 2e-4)
    assert opt.projected_grad == pytest.approx(d, rel=1e-9)
    assert torch.allclose(p.detach(), p0 - 0.1 * d * z, atol=1e-12)


def test_mezo_minimises_a_quadratic_and_is_deterministic():
    def run(seed):
        p = torch.nn.Parameter(torch.full((10,), 3.0))
        opt = MeZO([p], lr=0.02, eps=1e-3, seed=seed)
        losses = [opt.step(_quadratic(p, torch.zeros(10))) for _ in range(400)]
        return losses, p.detach().clone()

    (l1, p1), (l2, p2) = run(0), run(0)
    assert torch.equal(p1, p2) and l1 == l2
    assert l1[-1] < 0.05 * l1[0]
    assert not torch.equal(run(1)[1], p1)


def test_qzo_clips_the_directional_derivative_and_projects_onto_the_orthant():
    p = torch.nn.Parameter(torch.full((200,), 0.01))
    opt = QZO([p], lr=1.0, eps=1e-3, clip=0.05, seed=0)
    opt.step(lambda: 1e4 * p.sum())  # d = 1e4 * sum(z): far beyond the clip
    (z,) = opt.directions()
    assert abs(opt.projected_grad) == pytest.approx(0.05)
    expected = (0.01 - opt.projected_grad * z).clamp_min(0.0)
    assert torch.allclose(p.detach(), expected, atol=1e-7)
    assert (p >= 0).all()
    assert opt.violations["update"] == int((0.01 - opt.projected_grad * z <= 0).sum()) > 0
    # perturbations of size eps = 1e-3 do not cross zero from 0.01 unless |z| > 10
    assert opt.violations["perturb"] == 0


def test_mezo_clamp_counts_the_violations_it_repairs():
    p = torch.nn.Parameter(torch.full((100,), 1e-4))
    opt = MeZO([p], lr=1e-2, eps=1e-3, clamp_min=0.0, seed=0)
    for _ in range(20):
        opt.step(lambda: p.sum())
    assert (p >= 0).all()
    assert opt.violations["perturb"] > 0 and opt.violations["update"] > 0
    plain = MeZO([torch.nn.Parameter(torch.ones(3))], lr=1e-2)
    assert plain.violations == {"perturb": 0, "update": 0}  # not a positive-parameter optimiser


@pytest.mark.parametrize(
    "kwargs, match",
    [(dict(eps=0.0), "eps"), (dict(eps=-1e-3), "eps"), (dict(lr=-1.0), "lr"), (dict(seed=-1), "seed")],
)
def test_bad_settings_raise_naming_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MeZO([torch.nn.Parameter(torch.ones(3))], **{"lr": 1e-3, **kwargs})


def test_qzo_requires_a_clip():
    with pytest.raises(ValueError, match="clip"):
        QZO([torch.nn.Parameter(torch.ones(3))], clip=None)
    with pytest.raises(ValueError, match="clip"):
        QZO([torch.nn.Parameter(torch.ones(3))], clip=0.0)


@pytest.mark.parametrize(
    "closure, error, match",
    [
        (lambda p: p * 2.0, ValueError, "scalar"),
        (lambda p: torch.tensor(float("nan")), ValueError, "non-finite"),
        (lambda p: float("inf"), ValueError, "non-finite"),
        (lambda p: "1.0", TypeError, "scalar"),
    ],
)
def test_bad_closures_raise_and_leave_the_parameters_restored(closure, error, match):
    p = torch.nn.Parameter(torch.randn(4, dtype=torch.float64))
    p0 = p.detach().clone()
    opt = MeZO([p], lr=1e-3, eps=1e-3)
    with pytest.raises(error, match=match):
        opt.step(lambda: closure(p))
    assert torch.allclose(p.detach(), p0, rtol=0, atol=1e-15)
    with pytest.raises(TypeError, match="closure"):
        opt.step()


def test_state_is_o1_while_adam_holds_two_moments():
    small = [torch.nn.Parameter(torch.ones(10))]
    big = [torch.nn.Parameter(torch.ones(100_000))]
    for params in (small, big):
        opt = MeZO(params, lr=1e-3)
        opt.step(lambda p=params[0]: p.sum())
        assert optimizer_state_bytes(opt) <= 64
    adam = torch.optim.Adam(big, lr=1e-3)
    big[0].sum().backward()
    adam.step()
    assert optimizer_state_bytes(adam) >= 2 * 100_000 * 4
    with pytest.raises(TypeError):
        optimizer_state_bytes("adam")


def test_state_dict_round_trips_the_seed_and_step():
    p = torch.nn.Parameter(torch.ones(5))
    opt = MeZO([p], lr=1e-3, seed=11)
    opt.step(lambda: p.sum())
    other = MeZO([torch.nn.Parameter(torch.ones(5))], lr=1e-3, seed=0)
    other.load_state_dict(opt.state_dict())
    assert [z.tolist() for z in other.directions()] == [z.tolist() for z in opt.directions()]
