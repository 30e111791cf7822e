"""Tests of the field's baselines: B-spline KAN, coordinate networks, stacked-ensemble training."""

from __future__ import annotations

import math

import pytest
import torch

from geode.sciml import (
    KAN,
    MLP,
    SIREN,
    FourierFeatureMLP,
    KANLayer,
    bspline_basis,
    create_dataset,
    fit,
    fit_ensemble,
    member_state,
    stack_members,
    uniform_grid,
)

torch.set_num_threads(1)


def _grid(num: int, k: int, lo: float = -1.0, hi: float = 1.0, d: int = 2) -> torch.Tensor:
    return uniform_grid(torch.full((d,), lo, dtype=torch.float64), torch.full((d,), hi, dtype=torch.float64), num, k)


# ------------------------------------------------------------------------------------------------ B-splines


@pytest.mark.parametrize("k", [0, 1, 2, 3])
@pytest.mark.parametrize("num", [1, 3, 10])
def test_bspline_basis_is_a_nonnegative_partition_of_unity_on_the_grid(k, num):
    x = torch.linspace(-1.0, 1.0, 401, dtype=torch.float64).unsqueeze(-1).expand(-1, 2)
    basis = bspline_basis(x, _grid(num, k), k)
    assert basis.shape == (401, 2, num + k)
    assert torch.all(basis >= -1e-15)
    assert torch.allclose(basis.sum(-1), torch.ones(401, 2, dtype=torch.float64), atol=1e-12)


def test_cubic_closed_form_equals_the_cox_de_boor_recursion_inside_and_outside_the_grid():
    x = torch.linspace(-3.0, 3.0, 601, dtype=torch.float64).unsqueeze(-1).expand(-1, 2)
    grid = _grid(5, 3)
    assert torch.allclose(bspline_basis(x, grid, 3, uniform=True), bspline_basis(x, grid, 3), atol=1e-12)
    assert torch.all(bspline_basis(torch.full((1, 2), 5.0, dtype=torch.float64), grid, 3, uniform=True) == 0)


def test_cubic_basis_is_the_known_centred_b_spline():
    # at a knot the cubic B-splines take the values 1/6, 2/3, 1/6
    grid = _grid(4, 3, d=1)
    basis = bspline_basis(torch.zeros(1, 1, dtype=torch.float64), grid, 3)[0, 0]
    assert sorted(v for v in basis.tolist() if v > 0) == pytest.approx([1 / 6, 1 / 6, 2 / 3])


# --------------------------------------------------------------------------------------------------- KAN


def test_kan_layer_is_the_sum_of_its_edge_functions():
    torch.manual_seed(0)
    layer = KANLayer(3, 2, num=5, k=3, seed=1)
    x = torch.rand(7, 3) * 2 - 1
    assert torch.allclose(layer(x), layer.activations(x).sum(-2), atol=1e-6)
    # with zero spline coefficients an edge is scale_base * SiLU(x)
    with torch.no_grad():
        layer.coef.zero_()
    assert torch.allclose(layer(x), torch.nn.functional.silu(x) @ layer.scale_base, atol=1e-6)


def _float64(make):
    """Build in float64 (a float32-built grid cast to float64 is uniform only to float32 rounding)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return make()
    finally:
        torch.set_default_dtype(old)


def _dense_reference(layer: KANLayer, x: torch.Tensor) -> torch.Tensor:
    """The layer as computed before the local basis (issue 44): the dense closed-form cubic basis over all G + k
    functions, one einsum with the coefficients, the SiLU base term added (kept here as the reference)."""
    ens = layer.ensemble is not None
    grid, coef, sb, sp = (t if ens else t[None] for t in (layer.grid, layer.coef, layer.scale_base, layer.scale_sp))
    xs = (x if x.ndim == 3 else x.expand(layer.ensemble, *x.shape)) if ens else x.reshape(1, -1, x.shape[-1])
    h = (grid[..., 1] - grid[..., 0]).unsqueeze(1).unsqueeze(-1)
    a = ((xs.unsqueeze(-1) - grid[..., 2:-2].unsqueeze(1)) / h).abs()
    basis = torch.where(a < 1.0, 2.0 / 3.0 - a * a * (1.0 - 0.5 * a), (2.0 - a).clamp_min(0.0) ** 3 / 6.0)
    spline = torch.einsum("enim,eiom->enio", basis, coef)
    y = torch.einsum("eni,eio->eno", torch.nn.functional.silu(xs), sb) + torch.einsum("enio,eio->eno", spline, sp)
    return y if ens else y.reshape(*x.shape[:-1], -1)


@pytest.mark.parametrize("ensemble", [None, 3])
def test_local_basis_layer_equals_the_dense_basis_in_values_and_gradients(ensemble):
    # inputs inside the grid, in its extension, beyond it and exactly on knots, in float64 and float32
    g = torch.Generator().manual_seed(0)
    for dtype, tol in ((torch.float64, 1e-12), (torch.float32, 2e-5)):
        layer = _float64(lambda: KANLayer(3, 4, num=5, k=3, seed=2, ensemble=ensemble)).to(dtype)
        with torch.no_grad():
            for p in layer.parameters():
                p.add_(0.5 * torch.randn(p.shape, generator=g, dtype=torch.float64).to(dtype))
        x = torch.rand(*((ensemble,) if ensemble else ()), 300, 3, generator=g, dtype=torch.float64) * 7 - 3.5
        x[..., :8, :] = layer.grid[..., :8].reshape(-1, 8).T[:, :1].to(torch.float64)  # knots t_0 .. t_7
        x = x.to(dtype).requires_grad_(True)
        params = [x, layer.coef, layer.scale_base, layer.scale_sp]
        y, ref = layer(x), _dense_reference(layer, x)
        scale = ref.abs().max()
        assert (y - ref).abs().max() <= tol * scale
        w = torch.randn(y.shape, generator=g, dtype=torch.float64).to(dtype)
        for u, v in zip(torch.autograd.grad((y * w).sum(), params), torch.autograd.grad((ref * w).sum(), params)):
            assert (u - v).abs().max() <= tol * v.abs().max().clamp_min(1.0)


def test_local_basis_layer_passes_gradcheck_in_float64():
    layer = _float64(lambda: KANLayer(2, 3, num=3, k=3, seed=0, ensemble=2))
    x = (torch.rand(2, 5, 2, dtype=torch.float64) * 4 - 2).requires_grad_(True)
    from geode.sciml.kan import _CubicKANLayer

    for base in (None, torch.tanh(x).detach().requires_grad_(True)):
        args = (x, layer.grid, layer.coef, layer.scale_base, layer.scale_sp, base)
        assert torch.autograd.gradcheck(_CubicKANLayer.apply, args)
    single = _float64(lambda: KANLayer(2, 3, num=3, k=3, seed=1))
    xs = (torch.rand(4, 5, 2, dtype=torch.float64) * 4 - 2).requires_grad_(True)
    args = (xs, single.grid, single.coef, single.scale_base, single.scale_sp)
    assert torch.autograd.gradcheck(lambda *a: _CubicKANLayer.apply(*a, None), args)


def test_local_basis_layer_keeps_nan_and_other_base_functions():
    layer = KANLayer(2, 2, num=5, k=3, seed=0)
    assert layer(torch.zeros(0, 2)).shape == (0, 2) and layer(torch.zeros(2)).shape == (2,)
    members = _float64(lambda: KANLayer(2, 2, num=5, k=3, seed=0, ensemble=3))
    x = torch.rand(7, 2, dtype=torch.float64) * 4 - 2  # one batch shared by the members
    assert torch.allclose(members(x), _dense_reference(members, x), atol=1e-12)
    x = torch.tensor([[0.1, float("nan")], [5.0, -7.0]])
    y = layer(x)
    assert torch.isnan(y[0]).all() and torch.isfinite(y[1]).all()
    tanh = KANLayer(2, 2, num=5, k=3, seed=0, base_fun=torch.tanh)
    x = torch.rand(6, 2) * 2 - 1
    assert torch.allclose(tanh(x), tanh.activations(x).sum(-2), atol=1e-6)


def test_fused_cubic_kernel_matches_autograd_values_and_gradients():
    torch.manual_seed(0)
    a = _float64(lambda: KANLayer(3, 2, num=6, k=3, seed=2))
    b = _float64(lambda: KANLayer(3, 2, num=6, k=3, seed=2, fused=False))
    x = (torch.rand(9, 3, dtype=torch.float64) * 2.4 - 1.2).requires_grad_(True)
    ya, yb = a(x), b(x)
    assert torch.allclose(ya, yb, atol=1e-12)
    ga = torch.autograd.grad((ya**2).sum(), [x, a.coef, a.scale_base, a.scale_sp])
    gb = torch.autograd.grad((yb**2).sum(), [x, b.coef, b.scale_base, b.scale_sp])
    for u, v in zip(ga, gb):
        assert torch.allclose(u, v, atol=1e-10)


def test_unfused_kan_supports_second_derivatives():
    layer = KANLayer(1, 1, num=5, k=3, seed=0, fused=False).double()
    x = torch.tensor([[0.3]], dtype=torch.float64, requires_grad=True)
    (du,) = torch.autograd.grad(layer(x).sum(), x, create_graph=True)
    (d2u,) = torch.autograd.grad(du.sum(), x)
    h = 1e-4
    with torch.no_grad():
        fd = (layer(x + h) - 2 * layer(x) + layer(x - h)) / h**2
    assert d2u.item() == pytest.approx(fd.item(), rel=1e-4, abs=1e-6)


def test_update_grid_fits_the_data_range_and_keeps_the_function():
    torch.manual_seed(0)
    model = KAN([2, 3, 1], grid=8, k=3, seed=0).double()
    x = torch.rand(400, 2, dtype=torch.float64) - 0.5  # data in [-0.5, 0.5]
    before = model(x).detach()
    model.update_grid(x)
    grid0 = model.layers[0].grid
    assert grid0[:, 3].max() < -0.45 and grid0[:, -4].min() > 0.45  # the grid interior now spans the data
    assert torch.allclose(model(x), before, atol=2e-3)


def test_kan_trains_with_pykan_style_fit_and_dataset():
    data = create_dataset(lambda x: torch.sin(math.pi * x[:, 0]) + x[:, 1] ** 2, n_var=2, train_num=200, seed=0)
    assert data["train_input"].shape == (200, 2) and data["train_label"].shape == (200, 1)
    model = KAN([2, 5, 1], grid=5, k=3, seed=0)
    log = fit(model, data, opt="Adam", steps=60, lr=1e-2)
    assert log["train_loss"][-1] < 0.5 * log["train_loss"][0]
    log = fit(model, data, opt="LBFGS", steps=3, update_grid=False)
    assert len(log["test_loss"]) == 3 and math.isfinite(log["test_loss"][-1])
    log = fit(model, data, steps=2, lamb=1e-3, update_grid=False)
    assert log["reg"][-1] > 0


def test_create_dataset_normalises_and_validates():
    data = create_dataset(lambda x: x.sum(-1), n_var=3, ranges=[(0, 1), (1, 2), (2, 3)], normalize_input=True)
    assert torch.allclose(data["train_input"].mean(0), torch.zeros(3), atol=1e-5)
    with pytest.raises(ValueError, match=r"ranges\[1\] must have low < high"):
        create_dataset(lambda x: x.sum(-1), n_var=2, ranges=[(0, 1), (1, 1)])
    with pytest.raises(ValueError, match="train_input"):
        fit(KAN([1, 1]), {"train_input": torch.zeros(2, 1)})


def test_bad_widths_and_grids_fail_with_clear_errors():
    with pytest.raises(ValueError, match="width must list at least an input and an output size"):
        KAN([3])
    with pytest.raises(TypeError, match="width must be a list"):
        KAN(3)
    with pytest.raises(ValueError, match=r"width\[1\] must be >= 1"):
        MLP([2, 0, 1])
    with pytest.raises(ValueError, match="grid_range must have low < high"):
        KANLayer(2, 1, grid_range=(1.0, 1.0))
    with pytest.raises(ValueError, match="num must be >= 1"):
        KANLayer(2, 1, num=0)
    with pytest.raises(ValueError, match="x must have 2 features"):
        KANLayer(2, 1)(torch.zeros(3, 3))


# ------------------------------------------------------------------------------------- coordinate networks


def test_coordinate_networks_shapes_and_siren_initialisation():
    x = torch.rand(5, 2)
    assert MLP([2, 8, 8, 3], "tanh")(x).shape == (5, 3)
    assert FourierFeatureMLP(2, [16], 1, n_features=4).features(x).shape == (5, 8)
    siren = SIREN([2, 16, 16, 1], omega0=30.0, seed=0)
    assert siren(x).shape == (5, 1)
    assert siren.linears[0].weight.abs().max() <= 1 / 2
    assert siren.linears[1].weight.abs().max() <= math.sqrt(6 / 16) / 30
    with pytest.raises(ValueError, match="activation must be one of"):
        MLP([1, 1], "swish")


# --------------------------------------------------------------------------------------------- ensembles


@pytest.mark.parametrize(
    "make",
    [
        lambda ens, s: KAN([2, 3, 1], 4, ensemble=ens, seed=s),
        lambda ens, s: MLP([2, 6, 1], ensemble=ens, seed=s),
        lambda ens, s: FourierFeatureMLP(2, [6], 1, n_features=3, ensemble=ens, seed=s),
    ],
)
def test_stacked_ensemble_equals_its_members_before_and_after_training(make):
    torch.set_default_dtype(torch.float64)
    try:
        E = 3
        x = torch.rand(E, 24, 2)
        y = torch.sin(3 * x.sum(-1, keepdim=True))
        weight = (torch.rand(E, 24) > 0.3).double()
        singles = [make(None, s) for s in range(E)]
        ens = make(E, 0)
        stack_members(ens, singles)
        assert torch.allclose(ens(x), torch.stack([m(x[i]) for i, m in enumerate(singles)]), atol=1e-12)
        updates = [0, 5] if isinstance(ens, KAN) else []
        fit_ensemble(ens, x, y, weight=weight, steps=12, lr=1e-2, lr_final=1e-3, grid_update_steps=updates)
        for i, single in enumerate(singles):
            alone = make(1, 0)
            stack_members(alone, [single])
            fit_ensemble(
                alone,
                x[i : i + 1],
                y[i : i + 1],
                weight=weight[i : i + 1],
                steps=12,
                lr=1e-2,
                lr_final=1e-3,
                grid_update_steps=updates,
            )
            single.load_state_dict(member_state(alone, 0))
            assert torch.allclose(ens(x)[i], single(x[i]), atol=1e-9)
    finally:
        torch.set_default_dtype(torch.float32)


def test_fit_ensemble_validates_its_inputs():
    model = MLP([1, 4, 1], ensemble=2)
    x, y = torch.zeros(2, 5, 1), torch.zeros(2, 5, 1)
    with pytest.raises(ValueError, match="ensemble=E"):
        fit_ensemble(MLP([1, 1]), x, y)
    with pytest.raises(ValueError, match="y must have shape"):
        fit_ensemble(model, x, torch.zeros(3, 5, 1))
    with pytest.raises(ValueError, match="positive total"):
        fit_ensemble(model, x, y, weight=torch.zeros(2, 5))
    with pytest.raises(ValueError, match="update_grid"):
        fit_ensemble(model, x, y, grid_update_steps=[0])
    with pytest.raises(ValueError, match="index must be <= 1"):
        member_state(model, 2)


@pytest.mark.parametrize(("in_dim", "out_dim", "grid", "k"), [(3, 5, 5, 3), (2, 4, 10, 3), (4, 2, 6, 2), (2, 3, 4, 1)])
def test_kan_layer_equals_pykan_with_the_same_parameters(in_dim, out_dim, grid, k):
    """pykan 0.2.8's ``KANLayer`` and ours agree to rounding with copied parameters (skipped without pykan)."""
    pk_layer = pytest.importorskip("kan.KANLayer")
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        torch.manual_seed(0)
        theirs = pk_layer.KANLayer(in_dim, out_dim, num=grid, k=k)
        ours = KANLayer(in_dim, out_dim, num=grid, k=k)
        assert torch.allclose(ours.grid, theirs.grid, atol=1e-12)
        with torch.no_grad():
            ours.coef.copy_(theirs.coef)
            ours.scale_base.copy_(theirs.scale_base)
            ours.scale_sp.copy_(theirs.scale_sp)
        x = torch.rand(64, in_dim) * 2.4 - 1.2  # also outside the grid
        assert torch.allclose(ours(x), theirs(x)[0], atol=1e-12)
    finally:
        torch.set_default_dtype(old)
