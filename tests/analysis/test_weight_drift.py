"""Weight drift: the drift identity, the clipped squares' values and gradients, QuantileReLU's sparsity,
the sign of the paper's statistic on a toy network, the monitor, and clear errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from geode.analysis.weight_drift import (
    GELU2,
    ClippedGELU2,
    ClippedReLU2,
    QuantileReLU,
    ReLU2,
    SparsityMonitor,
    downstream_drift,
    expected_preactivation_gradient,
    make_activation,
)

torch.set_num_threads(1)


def test_weight_drift_of_a_constant_shift_is_the_shift_over_the_initial_std():
    g = torch.Generator().manual_seed(0)
    w0 = torch.randn(30, 20, generator=g, dtype=torch.float64)
    hist = [{"a": w0, "b": 2 * w0}, {"a": w0 - 0.3, "b": 2 * w0 + 0.1}]
    d = downstream_drift(hist)
    assert d["a"][0] == 0 and d["b"][0] == 0
    assert d["a"][1] == pytest.approx(-0.3 / float(w0.double().std()), rel=1e-9)
    assert d["b"][1] == pytest.approx(0.1 / float((2 * w0).double().std()), rel=1e-9)
    raw = downstream_drift([[w0], [w0 - 0.3]], relative=False)
    assert raw["0"][1] == pytest.approx(-0.3, abs=1e-6)


def test_weight_drift_is_invariant_to_a_zero_mean_permutation():
    w0 = torch.randn(10, 10, generator=torch.Generator().manual_seed(1))
    perm = w0.flatten()[torch.randperm(100)].reshape(10, 10)
    assert downstream_drift([[w0], [perm]])["0"][1] == pytest.approx(0.0, abs=1e-7)


@pytest.mark.parametrize(
    "hist, match",
    [
        ([], "at least one"),
        ([{"a": torch.ones(3, 3)}], "zero spread"),
        ([{"a": torch.randn(3, 3)}, {"b": torch.randn(3, 3)}], "keys"),
        ([{"a": torch.randn(3, 3)}, {"a": torch.randn(3, 4)}], "shape"),
    ],
)
def test_weight_drift_refuses_bad_histories(hist, match):
    with pytest.raises(ValueError, match=match):
        downstream_drift(hist)


@pytest.mark.parametrize("s", [0.3, 0.6, 0.9])
@pytest.mark.parametrize("mode", ["mask", "continuous"])
def test_quantile_relu_reaches_its_target_sparsity(s, mode):
    x = torch.randn(1000, 16, generator=torch.Generator().manual_seed(2))
    y = QuantileReLU(s, mode=mode)(x)
    assert float((y == 0).float().mean()) == pytest.approx(s, abs=0.01)
    q = torch.quantile(x, s, dim=0, keepdim=True)
    kept = x >= q
    if mode == "mask":
        assert torch.equal(y[kept], x[kept])
    else:
        assert torch.allclose(y, torch.relu(x - q))


def test_quantile_relu_refuses_bad_arguments():
    with pytest.raises(ValueError, match="sparsity"):
        QuantileReLU(1.0)
    with pytest.raises(ValueError, match="mode"):
        QuantileReLU(0.5, mode="top")
    with pytest.raises(ValueError, match=">= 2 rows"):
        QuantileReLU(0.5)(torch.randn(1, 4))


def test_squared_activations_values_and_gradients():
    x = torch.tensor([-2.0, -0.5, 0.5, 3.0, 9.0], dtype=torch.float64, requires_grad=True)
    y = ClippedReLU2(clip=50.0)(x)
    assert torch.allclose(y, torch.tensor([0, 0, 0.25, 9.0, 50.0], dtype=torch.float64))
    (g,) = torch.autograd.grad(y.sum(), x)
    assert torch.allclose(g, torch.tensor([0, 0, 1.0, 6.0, 0.0], dtype=torch.float64))  # 2 relu(x), 0 where clipped
    # below the clip the clipped forms equal the unclipped ones (values and finite-difference gradients)
    z = torch.linspace(-3, 3, 13, dtype=torch.float64, requires_grad=True)
    assert torch.allclose(ClippedReLU2()(z), ReLU2()(z))
    assert torch.allclose(ClippedGELU2()(z), GELU2()(z))
    assert torch.autograd.gradcheck(
        lambda t: ClippedGELU2(clip=4.0)(t), (z[z.abs() > 0.1].detach().clone().requires_grad_(),)
    )
    with pytest.raises(ValueError, match="clip"):
        ClippedReLU2(clip=0)


def test_make_activation_names_the_known_ones():
    assert isinstance(make_activation("quantile_relu", sparsity=0.5), QuantileReLU)
    with pytest.raises(ValueError, match="known:.*relu"):
        make_activation("swish")


def test_expected_gradient_is_positive_at_init_for_one_relu_unit_under_mse():
    # f(x) = w2 relu(w1 x), target 0: dL/dz = 2 w2^2 z > 0 wherever z > 0 (the self-interaction term), exactly
    for seed in range(5):
        torch.manual_seed(seed)
        net = nn.Sequential(nn.Linear(4, 1, bias=False), nn.ReLU(), nn.Linear(1, 1, bias=False))
        x = torch.randn(64, 4)
        stat = expected_preactivation_gradient(net, x, torch.zeros(64, 1), loss="mse")["1"]
        z = net[0](x).detach()
        w2 = float(net[2].weight.detach())
        assert stat > 0
        assert stat == pytest.approx(float((2 * w2**2 * z[z > 0]).mean()), rel=1e-5)


def test_expected_gradient_matches_autograd_on_a_small_net():
    torch.manual_seed(3)
    net = nn.Sequential(nn.Linear(5, 7), nn.GELU(), nn.Linear(7, 3))
    x, y = torch.randn(16, 5), torch.randint(0, 3, (16,))
    z = net[0](x).detach().requires_grad_()
    loss = nn.functional.cross_entropy(net[2](net[1](z)), y)
    (gz,) = torch.autograd.grad(loss, z)
    expect = float(gz[z > 0].mean() * 16)
    assert expected_preactivation_gradient(net, x, y)["1"] == pytest.approx(expect, rel=1e-5)
    with pytest.raises(ValueError, match="loss"):
        expected_preactivation_gradient(net, x, y, loss="hinge")
    with pytest.raises(ValueError, match="no activation"):
        expected_preactivation_gradient(nn.Linear(5, 3), x, y)


def test_sparsity_monitor_counts_zeros_and_spikes():
    net = nn.Sequential(nn.Identity(), nn.ReLU())
    x = torch.tensor([[-1.0, -1.0, 1.0, 1.0, 1.0, 10.0]])
    with SparsityMonitor(net) as mon:
        net(x)
        s = mon.summary()["1"]
    assert s["sparsity"] == pytest.approx(2 / 6)
    assert s["max_abs"] == 10.0 and s["spike_ratio"] == pytest.approx(10.0)  # median |a| = 1
    assert not net[1]._forward_hooks
    with pytest.raises(ValueError, match="eps"):
        SparsityMonitor(net, eps=-1)


def test_train_net_records_the_drift_from_zero():
    from geode.analysis.weight_drift.experiment import digits_splits, train_net

    r = train_net(digits_splits(0), "relu", hidden=(16, 16), steps=12, drift_steps=10, seed=0)
    assert set(r.drift) == {"W2", "W3"}
    assert all(len(v) == 11 and v[0] == 0 and np.all(np.isfinite(v)) for v in r.drift.values())
    assert 0.0 <= min(r.sparsity) and max(r.sparsity) <= 1.0 and math.isfinite(r.final_loss)


def test_char_gpt_is_causal_and_the_spike_study_reports_each_layer():
    from geode.analysis.weight_drift.spikes import CharGPT, train_char_gpt

    torch.manual_seed(0)
    model = CharGPT(11, 16, 2, 4, 12, "clipped_relu2").eval()
    ids = torch.randint(0, 11, (2, 12))
    other = ids.clone()
    other[:, 7:] = (other[:, 7:] + 1) % 11
    with torch.no_grad():
        a, b = model(ids), model(other)
    assert a.shape == (2, 12, 11)
    assert torch.allclose(a[:, :7], b[:, :7], atol=1e-6) and not torch.allclose(a[:, 7:], b[:, 7:])
    with pytest.raises(ValueError, match="divisible"):
        CharGPT(11, 10, 1, 4, 12, "relu")
    text = np.random.default_rng(0).integers(0, 11, 2000)
    r = train_char_gpt(text, 11, "relu2", d=16, n_layers=2, heads=4, seq=12, batch=4, steps=3)
    assert len(r["max_abs"]) == 2 and all(v >= 0 for v in r["max_abs"]) and math.isfinite(r["val_loss"])
