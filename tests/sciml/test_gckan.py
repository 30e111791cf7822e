"""Tests of geometry-constrained KANs: the duality map, linearity at p = 2, the fused kernel, the study."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from geode.claims import load_claim
from geode.sciml import KAN, MLP, SIREN, fit_ensemble, member_state, stack_members
from geode.sciml.gckan import (
    GCKAN,
    GCKANLayer,
    duality_map,
    matched_mlp_width,
    param_count,
    run_feynman_study,
    summarize_study,
)
from geode.sciml.gckan.experiment import MODELS, cv_score, select

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


def test_feynman_study_fits_every_config_and_selection_uses_cv_only():
    kw = dict(n_trains=(16,), noises=(0.0, 0.1), n_seeds=1, steps=5, grids=(1, 3), n_test=50, lrs=(1e-2, 3e-2))
    study = run_feynman_study(["I.6.20a", "I.12.1"], l1s=(0.0, 1e-3), **kw)
    configs, members = 4, 2 * 2  # lr x l1; equations x noises
    per_model = {m: sum(f["model"] == m for f in study.fits) for m in MODELS}
    assert per_model == {
        "GC-KAN": configs * members,
        "MLP": configs * members,
        "spline KAN (CV)": 2 * configs * members,
    }
    assert len(study.linear) == members
    lr = dict.fromkeys(MODELS, 1e-2)
    l1 = dict.fromkeys(MODELS, 0.0)
    rows = select(study, lr, l1)
    for r in rows:
        if r["model"] == "spline KAN (CV)":
            member = (r["equation"], r["n_train"], r["noise"], r["seed"])
            cands = [
                f
                for f in study.fits
                if f["model"] == r["model"] and f["member"] == member and f["lr"] == 1e-2 and f["l1"] == 0.0
            ]
            best = min(cands, key=lambda f: f["cv_mse"])
            assert r["grid"] == best["size"] and r["nrmse_test"] == best["nrmse_test"]
    assert {r["model"] for r in rows} == {*MODELS, "linear (control)", "GC-KAN (other init, control)"}
    exps = [e for e in study.exponents if e["lr"] == 1e-2 and e["l1"] == 0.0]
    metrics, table = summarize_study(rows, exps)
    assert all(math.isfinite(v) for v in metrics.values())
    assert metrics["settings_n32"] == 4 and len(table) == 4
    assert math.isfinite(cv_score(study, "GC-KAN", 1e-2, 0.0))
    again = run_feynman_study(["I.6.20a", "I.12.1"], l1s=(0.0, 1e-3), **kw)
    assert np.allclose([f["nrmse_test"] for f in study.fits], [f["nrmse_test"] for f in again.fits])


def _rows(values: dict[tuple[str, str, int, float], float]) -> list[dict]:
    return [
        {
            "model": m,
            "equation": eq,
            "n_vars": 1,
            "n_train": n,
            "noise": noise,
            "seed": 0,
            "params": 1,
            "grid": 1,
            "nrmse_test": v,
            "nrmse_extrap": v,
        }
        for (m, eq, n, noise), v in values.items()
    ]


def test_summary_statistics_by_hand():
    v = {}
    for eq, (gc_c, gc_n, sp_c, sp_n) in {"a": (0.10, 0.12, 0.10, 0.20), "b": (0.30, 0.31, 0.20, 0.30)}.items():
        for n in (32, 128):
            v[("GC-KAN", eq, n, 0.0)], v[("GC-KAN", eq, n, 0.1)] = gc_c, gc_n
            v[("spline KAN (CV)", eq, n, 0.0)], v[("spline KAN (CV)", eq, n, 0.1)] = sp_c, sp_n
            v[("MLP", eq, n, 0.0)], v[("MLP", eq, n, 0.1)] = 0.05, 0.06
    m, _ = summarize_study(_rows(v))
    # n=32: (a, clean) is a tie (no win), (a, noisy) a win, both b settings lost
    assert m["win_fraction_n32"] == 0.25
    assert m["mlp_vs_gc_win_fraction_n32"] == 1.0
    assert m["degradation_gc"] == pytest.approx(np.median([1.2, 1.2, 0.31 / 0.30, 0.31 / 0.30]))
    assert m["degradation_ratio"] == pytest.approx(m["degradation_gc"] / 1.75)
    assert m["noise_added_gc"] == pytest.approx(0.015) and m["noise_added_spline"] == pytest.approx(0.10)
    assert m["noise_added_ratio"] == pytest.approx((0.01 + 0.015) / (0.01 + 0.10))
    assert m["clean_parity_largest_n"] == pytest.approx(1.25)
    assert m["worst_clean_nrmse_largest_n"] == pytest.approx(0.20)
    # a model the noise does not touch, against a reference it does not touch either: ratio 1, not 0
    flat = {k: 0.1 for k in v}
    assert summarize_study(_rows(flat))[0]["noise_added_ratio"] == pytest.approx(1.0)


def test_claim_thresholds_floors_and_controls():
    claim = load_claim("gckan")
    th = {t.name: t for t in (*claim.thresholds, *claim.floors)}
    # revision 1's thresholds are kept; parity (from the issue) and the absolute noise threshold are new
    assert (th["wins"].metric, th["wins"].op, th["wins"].value) == ("win_fraction_n32", ">=", 0.70)
    assert (th["robust"].metric, th["robust"].op, th["robust"].value) == ("degradation_ratio", "<=", 0.5)
    assert (th["parity"].metric, th["parity"].op, th["parity"].value) == ("clean_parity_largest_n", "<=", 1.2)
    assert (th["noise_abs"].metric, th["noise_abs"].value) == ("noise_added_ratio", 0.5)
    assert claim.reproduced == "wins and robust and noise_abs and parity"
    assert {f.name for f in claim.floors} == {"models_learn", "no_collapse"}
    assert all(th[k].control for k in ("wins", "robust", "noise_abs", "parity"))
    good = {
        "win_fraction_n32": 0.8,
        "degradation_ratio": 0.4,
        "noise_added_ratio": 0.4,
        "clean_parity_largest_n": 1.1,
        "worst_clean_nrmse_largest_n": 0.2,
        "nonfinite_fraction": 0.0,
    }
    assert claim.verdict(good)[0] == "reproduced"
    assert claim.verdict({**good, "clean_parity_largest_n": 1.77})[0] == "partial"
    assert claim.verdict({**good, "win_fraction_n32": 0.25, "noise_added_ratio": 0.9})[0] == "not reproduced"
    assert claim.verdict({**good, "worst_clean_nrmse_largest_n": 0.9})[0] == "inconclusive"


# ------------------------------------------------------------------------------------- the paper's edge


def test_paper_edge_starts_at_p_2_5_with_exp_parametrisation_and_zero_branches():
    layer = GCKANLayer(2, 3, atoms=1, exponent="exp", p_init=2.5, delta=1e-8, tanh=True, bias=True, seed=0)
    assert torch.allclose(layer.exponents(), torch.full((2, 3), 2.5))
    plain = GCKANLayer(2, 3, atoms=1, exponent="exp", p_init=2.5, delta=1e-8, seed=0)
    x = torch.rand(7, 2) * 2 - 1
    assert torch.allclose(layer(x), plain(x))  # tanh coefficient and offset start at 0
    with torch.no_grad():
        layer.tanh_coef.fill_(0.5)
        layer.offset.fill_(0.25)
    manual = plain(x) + (0.5 * torch.tanh(x)).sum(1, keepdim=True) + 0.25 * 2
    assert torch.allclose(layer(x), manual, atol=1e-6)
    layer.set_exponents(1.7)
    assert torch.allclose(layer.exponents(), torch.full((2, 3), 1.7))
    assert torch.allclose(layer.rho, torch.full((2, 3), math.log(0.7)))
    with pytest.raises(ValueError, match="exponent must be"):
        GCKANLayer(2, 1, exponent="sigmoid")


# ------------------------------------------------------------------------------- per-member training knobs


def test_per_member_learning_rates_penalties_and_clipping_equal_training_alone():
    torch.manual_seed(0)
    x = torch.rand(3, 24, 2) * 2 - 1
    y = torch.sin(3 * x[..., :1]) * x[..., 1:]
    lrs = torch.tensor([3e-3, 1e-2, 3e-2], dtype=torch.float64)
    l1 = torch.tensor([0.0, 1e-2, 0.0])
    singles = [GCKAN([2, 3, 1], 1, exponent="exp", p_init=2.5, tanh=True, bias=True, seed=s) for s in range(3)]
    ens = GCKAN([2, 3, 1], 1, exponent="exp", p_init=2.5, tanh=True, bias=True, ensemble=3)
    stack_members(ens, singles)
    fit_ensemble(
        ens,
        x,
        y,
        steps=12,
        lr=lrs,
        lr_final=lrs * 0.1,
        clip=0.05,
        penalty=lambda xx: l1 * ens.regularization(xx, per_member=True),
    )
    for i, single in enumerate(singles):
        alone = GCKAN([2, 3, 1], 1, exponent="exp", p_init=2.5, tanh=True, bias=True, ensemble=1)
        stack_members(alone, [single])
        reg = float(l1[i])
        fit_ensemble(
            alone,
            x[i : i + 1],
            y[i : i + 1],
            steps=12,
            lr=float(lrs[i]),
            lr_final=float(lrs[i]) * 0.1,
            clip=0.05,
            penalty=(lambda xx, a=alone, r=reg: r * a.regularization(xx, per_member=True)),
        )
        single.load_state_dict(member_state(alone, 0))
        assert torch.allclose(ens(x)[i], single(x[i]), atol=1e-5)
    # clipping engages: without it member 2 moves further
    free = GCKAN([2, 3, 1], 1, ensemble=1, seed=5)
    clipped = GCKAN([2, 3, 1], 1, ensemble=1, seed=5)
    fit_ensemble(free, x[:1], 10 * y[:1], steps=3, lr=1e-1)
    fit_ensemble(clipped, x[:1], 10 * y[:1], steps=3, lr=1e-1, clip=1e-3)
    assert not torch.allclose(free(x[:1]), clipped(x[:1]))
    with pytest.raises(ValueError, match="clip must be > 0"):
        fit_ensemble(free, x[:1], y[:1], steps=1, clip=0.0)
    with pytest.raises(ValueError, match="penalty"):
        fit_ensemble(ens, x, y, steps=1, penalty=lambda xx: torch.zeros(2))


def test_one_pass_l1_equals_the_separate_regularisation_pass():
    torch.manual_seed(0)
    x = torch.rand(2, 16, 2) * 2 - 1
    y = torch.cos(2 * x[..., :1])
    l1 = torch.tensor([0.0, 1e-2])
    for build in (
        lambda: GCKAN([2, 3, 1], 1, exponent="exp", p_init=2.5, tanh=True, bias=True, ensemble=2, seed=3),
        lambda: KAN([2, 3, 1], 3, 3, ensemble=2, seed=3),
        lambda: MLP([2, 5, 5, 1], "silu", ensemble=2, seed=3),
    ):
        a, b = build(), build()
        out, reg = a.forward_with_regularization(x)
        assert torch.allclose(out, a(x), atol=1e-6) and reg.shape == (2,)
        if not isinstance(a, MLP):
            assert torch.allclose(reg, a.regularization(x, per_member=True))
        fit_ensemble(a, x, y, steps=6, lr=1e-2, l1=l1)
        fit_ensemble(b, x, y, steps=6, lr=1e-2, penalty=lambda xx, m=b: l1 * m.forward_with_regularization(xx)[1])
        assert torch.allclose(a(x), b(x), atol=1e-5)
    with pytest.raises(ValueError, match="forward_with_regularization"):
        fit_ensemble(SIREN([2, 3, 1], ensemble=2), x, y, steps=1, l1=0.1)
