"""Tests of geometry-constrained KANs: the duality map, linearity at p = 2, the fused kernel, the study."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from geode.claims import load_claim
from geode.sciml import fit_ensemble, member_state, stack_members
from geode.sciml.gckan import (
    GCKAN,
    GCKANLayer,
    duality_map,
    matched_mlp_width,
    param_count,
    run_feynman_study,
    summarize_study,
)

torch.set_num_threads(1)


# ------------------------------------------------------------------------------------------- duality map


def test_j2_is_the_identity_exactly():
    u = torch.linspace(-5.0, 5.0, 101, dtype=torch.float64)
    assert torch.equal(duality_map(u, 2.0), u)
    assert torch.equal(duality_map(u, 2.0, delta=1e-3), u)  # the smoothed map too
    assert torch.equal(duality_map(u, torch.full_like(u, 2.0), delta=0.5), u)


@pytest.mark.parametrize("p", [1.1, 1.5, 2.0, 2.7, 4.0])
def test_duality_map_is_odd_and_homogeneous_of_degree_p_minus_1(p):
    u = torch.linspace(-3.0, 3.0, 61, dtype=torch.float64)
    j = duality_map(u, p)
    assert torch.allclose(duality_map(-u, p), -j, atol=1e-14)
    for t in (0.3, 2.0, 7.5):
        assert torch.allclose(duality_map(t * u, p), t ** (p - 1) * j, rtol=1e-12, atol=1e-14)
    assert torch.allclose(j, torch.sign(u) * u.abs() ** (p - 1))


def test_duality_map_limits_and_slopes():
    u = torch.tensor([0.5, 2.0], dtype=torch.float64)
    # p -> 1 tends to sign(u); p = 3 is u|u|
    assert torch.allclose(duality_map(u, 1.0 + 1e-9), torch.ones(2, dtype=torch.float64), atol=1e-8)
    assert torch.allclose(duality_map(-u, 3.0), -(u**2))
    # small p damps perturbations for |u| > 1: slope (p - 1)|u|^(p - 2) < 1
    x = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)
    (slope,) = torch.autograd.grad(duality_map(x, 1.5).sum(), x)
    assert slope.item() == pytest.approx(0.5 * 2.0**-0.5) and slope.item() < 1


def test_smoothed_map_approaches_the_exact_map_away_from_zero():
    u = torch.tensor([-3.0, -0.5, 0.2, 1.0, 4.0], dtype=torch.float64)
    for p in (1.3, 2.5):
        assert torch.allclose(duality_map(u, p, delta=1e-4), duality_map(u, p), rtol=1e-6)


def test_smoothed_map_gradients_match_finite_differences():
    u = torch.tensor([-1.3, -0.2, 0.0, 0.05, 0.7, 2.1], dtype=torch.float64, requires_grad=True)
    p = torch.tensor([1.4, 1.8, 2.0, 2.3, 3.1, 1.2], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: duality_map(a, b, delta=1e-2), (u, p))


def test_duality_map_rejects_p_at_most_one_and_negative_delta():
    with pytest.raises(ValueError, match="p must be > 1"):
        duality_map(torch.ones(2), 1.0)
    with pytest.raises(ValueError, match="p must be > 1 everywhere"):
        duality_map(torch.ones(2), torch.tensor([1.5, 0.9]))
    with pytest.raises(ValueError, match="delta must be >= 0"):
        duality_map(torch.ones(2), 2.0, delta=-1.0)


# ------------------------------------------------------------------------------------------------ layers


def _affine_defect(f, x: torch.Tensor, z: torch.Tensor) -> float:
    """max |f(x + z) - f(x) - f(z) + f(0)| + |f(2.5 x) - f(0) - 2.5 (f(x) - f(0))|: zero iff f is affine."""
    zero = torch.zeros_like(x)
    add = f(x + z) - f(x) - f(z) + f(zero)
    scale = f(2.5 * x) - f(zero) - 2.5 * (f(x) - f(zero))
    return float((add.abs().max() + scale.abs().max()).detach())


def test_gckan_with_all_exponents_two_is_affine_in_its_inputs():
    torch.manual_seed(0)
    model = GCKAN([3, 5, 4, 2], atoms=4, seed=0).double()
    with torch.no_grad():
        for layer in model.layers:
            layer.scale.normal_()
            layer.center.normal_()
    x, z = torch.randn(16, 3, dtype=torch.float64), torch.randn(16, 3, dtype=torch.float64)
    model.set_exponents(2.0)
    assert _affine_defect(model, x, z) < 1e-10
    # the initial exponent is 2 as well, and a generic p breaks linearity
    assert all(torch.allclose(p, torch.full_like(p, 2.0)) for p in GCKAN([3, 4, 1], seed=1).learned_exponents())
    model.set_exponents(1.5)
    assert _affine_defect(model, x, z) > 1e-2


def test_gckan_layer_is_the_sum_of_its_edges_and_learns_an_exponent_per_edge():
    layer = GCKANLayer(3, 2, atoms=5, p_init=1.7, seed=0)
    x = torch.randn(6, 3)
    assert torch.allclose(layer(x), layer.activations(x).sum(-2), atol=1e-6)
    assert layer.exponents().shape == (3, 2)
    assert torch.allclose(layer.exponents(), torch.full((3, 2), 1.7), atol=1e-6)
    model = GCKAN([2, 4, 1], atoms=3)
    assert [tuple(p.shape) for p in model.learned_exponents()] == [(2, 4), (4, 1)]
    assert param_count(model) == (2 * 4 + 4) * (3 * 3 + 1)


@pytest.mark.parametrize("base", [False, True])
def test_fused_kernel_matches_autograd_in_values_and_gradients(base):
    torch.manual_seed(0)
    kw = dict(atoms=4, p_init=2.0, base=base, seed=3)
    a, b = GCKANLayer(3, 2, **kw).double(), GCKANLayer(3, 2, fused=False, **kw).double()
    with torch.no_grad():
        rho = torch.randn(3, 2, dtype=torch.float64)
        a.rho.copy_(rho)
        b.rho.copy_(rho)
    x = torch.randn(4, 5, 3, dtype=torch.float64, requires_grad=True)  # extra leading batch axis
    ya, yb = a(x), b(x)
    assert ya.shape == (4, 5, 2) and torch.allclose(ya, yb, atol=1e-12)
    ga = torch.autograd.grad((ya**3).sum(), [x, *a.parameters()])
    gb = torch.autograd.grad((yb**3).sum(), [x, *b.parameters()])
    for u, v in zip(ga, gb):
        assert torch.allclose(u, v, rtol=1e-9, atol=1e-10)


def test_fused_gckan_gradient_matches_finite_differences():
    layer = GCKANLayer(2, 2, atoms=3, seed=0).double()
    with torch.no_grad():
        layer.rho.copy_(torch.tensor([[-0.5, 0.3], [1.2, 0.0]], dtype=torch.float64))
    x = torch.randn(5, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: layer(t), (x,))
    assert torch.autograd.gradcheck(lambda r: _with_rho(layer, r, x), (layer.rho.detach().clone().requires_grad_(),))


def _with_rho(layer: GCKANLayer, rho: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.func.functional_call(layer, {"rho": rho}, (x,))


def test_stacked_gckan_ensemble_trains_each_member_as_if_alone():
    torch.manual_seed(0)
    E = 3
    x = torch.rand(E, 20, 2) * 2 - 1
    y = (x[..., :1] * x[..., 1:]).exp()
    singles = [GCKAN([2, 3, 1], 4, seed=s) for s in range(E)]
    ens = GCKAN([2, 3, 1], 4, ensemble=E)
    stack_members(ens, singles)
    fit_ensemble(ens, x, y, steps=15, lr=2e-2)
    for i, single in enumerate(singles):
        alone = GCKAN([2, 3, 1], 4, ensemble=1)
        stack_members(alone, [single])
        fit_ensemble(alone, x[i : i + 1], y[i : i + 1], steps=15, lr=2e-2)
        single.load_state_dict(member_state(alone, 0))
        assert torch.allclose(ens(x)[i], single(x[i]), atol=1e-5)
    assert ens.learned_exponents()[0].shape == (E, 2, 3)


def test_bad_gckan_arguments_fail_with_clear_errors():
    with pytest.raises(ValueError, match="p_init must be > 1"):
        GCKANLayer(2, 1, p_init=1.0)
    with pytest.raises(ValueError, match="p_init must be > 1"):
        GCKAN([2, 1], p_init=0.5)
    with pytest.raises(ValueError, match="delta must be > 0"):
        GCKANLayer(2, 1, delta=0.0)
    with pytest.raises(ValueError, match="width must list at least"):
        GCKAN([2])
    with pytest.raises(ValueError, match="atoms must be >= 1"):
        GCKAN([2, 1], atoms=0)
    with pytest.raises(ValueError, match="x must have 2 features"):
        GCKAN([2, 1])(torch.zeros(3, 4))
    with pytest.raises(ValueError, match="p must be > 1"):
        GCKANLayer(2, 1).set_exponents(1.0)


# ------------------------------------------------------------------------------------------------- study


def test_matched_mlp_width_matches_the_parameter_count():
    gc = GCKAN([3, 4, 1], atoms=4)
    h = matched_mlp_width(3, param_count(gc))
    count = 4 * h + (h + 1) * h + h + 1
    assert abs(count - param_count(gc)) <= 2 * h + 2


def test_feynman_study_produces_rows_exponents_and_finite_summary():
    study = run_feynman_study(
        ["I.6.20a", "I.12.1"], n_trains=(16,), noises=(0.0, 0.1), n_seeds=1, steps=5, grids=(3, 5), n_test=50
    )
    assert len(study.rows) == 2 * 2 * 3  # equations x noises x models
    assert {r["model"] for r in study.rows} == {"GC-KAN", "spline KAN (CV)", "MLP"}
    assert {r["grid"] for r in study.rows if r["model"] == "spline KAN (CV)"} <= {3, 5}
    assert len(study.exponents) == 2 * ((1 * 4 + 4) + (2 * 4 + 4))  # noises x edges of [1,4,1] and [2,4,1]
    metrics, table = summarize_study(study)
    assert all(math.isfinite(v) for v in metrics.values())
    assert metrics["settings_n32"] == 4 and len(table) == 4
    assert 0.0 <= metrics["win_fraction_n32"] <= 1.0
    # the same seed gives the same numbers
    again = run_feynman_study(
        ["I.6.20a", "I.12.1"], n_trains=(16,), noises=(0.0, 0.1), n_seeds=1, steps=5, grids=(3, 5), n_test=50
    )
    assert np.allclose([r["nrmse_test"] for r in study.rows], [r["nrmse_test"] for r in again.rows])


def test_claim_thresholds_are_the_ones_fixed_in_the_issue():
    claim = load_claim("gckan")
    th = {t.name: (t.metric, t.op, t.value) for t in claim.thresholds}
    assert th == {"wins": ("win_fraction_n32", ">=", 0.70), "robust": ("degradation_ratio", "<=", 0.5)}
    assert (claim.reproduced, claim.partial) == ("wins and robust", "wins or robust")
    assert claim.verdict({"win_fraction_n32": 0.8, "degradation_ratio": 0.4})[0] == "reproduced"
    assert claim.verdict({"win_fraction_n32": 0.5, "degradation_ratio": 0.4})[0] == "partial"
    assert claim.verdict({"win_fraction_n32": 0.5, "degradation_ratio": 0.9})[0] == "not reproduced"
