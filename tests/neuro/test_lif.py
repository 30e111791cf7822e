"""Tests of the exact single-spike nLIF layer: closed form, Euler cross-check, gradients, causal sets, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from geode.neuro import (
    NLIFLayer,
    NLIFNetwork,
    first_spike_accuracy,
    first_spike_loss,
    latency_encode,
    nlif_spike_times,
    simulate_lif_euler,
)

torch.set_num_threads(1)


def _membrane(t: np.ndarray, t_in: np.ndarray, w: np.ndarray, tau_s: float) -> np.ndarray:
    """V(t) = sum_{t_i < t} w_i (1 - exp(-(t - t_i)/tau_s)) for one neuron, evaluated on times ``t``."""
    dt = t[:, None] - t_in[None, :]
    return np.where(dt > 0, w[None, :] * (1 - np.exp(-np.clip(dt, 0, None) / tau_s)), 0.0).sum(axis=1)


def _random_problem(seed: int, batch: int = 30, n_in: int = 6, n_out: int = 8):
    g = torch.Generator().manual_seed(seed)
    t_in = torch.rand(batch, n_in, generator=g, dtype=torch.float64) * 2.0
    w = torch.randn(n_in, n_out, generator=g, dtype=torch.float64) * 0.7 + 0.35  # mixed signs
    return t_in, w


# ---------------------------------------------------------------- closed form


def test_single_input_closed_form():
    # one input of weight w at t0: V = w (1 - e^{-(t - t0)}) reaches theta at t0 + ln(w / (w - theta))
    t_out, mask = nlif_spike_times(torch.tensor([[0.3]]), torch.tensor([[1.5]]), 1.0, 1.0)
    assert float(t_out) == pytest.approx(0.3 + math.log(3.0), rel=1e-6)
    assert mask.tolist() == [[[True]]]


def test_spike_is_first_threshold_crossing():
    t_in, w = _random_problem(0)
    t_out, _ = nlif_spike_times(t_in, w, 1.0, 1.0)
    assert torch.isfinite(t_out).any() and (~torch.isfinite(t_out)).any()
    for b in range(t_in.shape[0]):
        for j in range(w.shape[1]):
            ti, wj = t_in[b].numpy(), w[:, j].numpy()
            grid = np.linspace(0, 15, 30001)
            v = _membrane(grid, ti, wj, 1.0)
            to = float(t_out[b, j])
            if math.isfinite(to):
                assert _membrane(np.array([to]), ti, wj, 1.0)[0] == pytest.approx(1.0, abs=1e-9)
                assert np.all(v[grid < to - 1e-6] < 1.0)
            else:
                assert np.all(v < 1.0)


def test_closed_form_matches_fine_euler_simulation():
    t_in, w = _random_problem(1)
    t_out = nlif_spike_times(t_in, w, 1.0, 1.0)[0].numpy()
    euler = simulate_lif_euler(t_in, w, 1.0, 1.0, dt=1e-5, t_end=12.0)
    assert np.array_equal(np.isfinite(t_out), np.isfinite(euler))
    both = np.isfinite(t_out)
    assert both.sum() > 50
    assert np.max(np.abs(t_out[both] - euler[both])) <= 1e-4


def test_euler_error_shrinks_with_dt():
    t_in, w = _random_problem(2, batch=10)
    t_out = nlif_spike_times(t_in, w, 1.0, 1.0)[0].numpy()
    fin = np.isfinite(t_out)
    errs = [
        np.max(np.abs(simulate_lif_euler(t_in, w, 1.0, 1.0, dt=dt, t_end=12.0)[fin] - t_out[fin]))
        for dt in (1e-2, 1e-3)
    ]
    assert errs[1] < errs[0] / 5


def test_standard_lif_approaches_nlif_for_large_tau_m_and_spikes_later_with_leak():
    t_in, w = _random_problem(3, batch=8)
    w = w.abs() + 0.2  # excitatory: every neuron spikes
    nlif = simulate_lif_euler(t_in, w, 1.0, 1.0, dt=1e-3)
    big = simulate_lif_euler(t_in, w, 1.0, 1.0, dt=1e-3, tau_m=1e5)
    leaky = simulate_lif_euler(t_in, w, 1.0, 1.0, dt=1e-3, tau_m=5.0)
    assert np.allclose(big, nlif, atol=1e-3)
    fin = np.isfinite(leaky)
    assert np.all(leaky[fin] >= nlif[fin] - 1e-12)  # a leak can only delay the crossing
    assert np.all(~fin <= np.isfinite(nlif))


def test_input_permutation_and_time_shift():
    t_in, w = _random_problem(4)
    t_out, mask = nlif_spike_times(t_in, w, 1.0, 1.0)
    perm = torch.randperm(t_in.shape[1], generator=torch.Generator().manual_seed(0))
    t_p, mask_p = nlif_spike_times(t_in[:, perm], w[perm], 1.0, 1.0)
    assert torch.equal(torch.isfinite(t_p), torch.isfinite(t_out))
    fin = torch.isfinite(t_out)
    assert torch.allclose(t_p[fin], t_out[fin], atol=1e-12)
    assert torch.equal(mask_p, mask[:, perm])
    t_s, mask_s = nlif_spike_times(t_in + 100.0, w, 1.0, 1.0)  # equivariant to a global time shift
    assert torch.allclose(t_s[fin], t_out[fin] + 100.0, atol=1e-9)
    assert torch.equal(mask_s, mask)


def test_float32_stays_accurate_far_from_zero():
    t_in, w = _random_problem(5)
    ref, _ = nlif_spike_times(t_in, w, 1.0, 1.0)
    t32, _ = nlif_spike_times((t_in + 500.0).float(), w.float(), 1.0, 1.0)
    fin = torch.isfinite(ref)
    assert torch.equal(torch.isfinite(t32), fin)
    assert torch.allclose(t32[fin].double() - 500.0, ref[fin], atol=1e-3)


def test_tau_s_scaling():
    # time is measured in units of tau_s: t_out(tau_s * t_in; tau_s) = tau_s * t_out(t_in; 1)
    t_in, w = _random_problem(6)
    t1, m1 = nlif_spike_times(t_in, w, 1.0, 1.0)
    t3, m3 = nlif_spike_times(3.0 * t_in, w, 3.0, 1.0)
    fin = torch.isfinite(t1)
    assert torch.allclose(t3[fin], 3.0 * t1[fin]) and torch.equal(m1, m3)


# ---------------------------------------------------------------- causal sets and no-spike cases


def _two_input(t1: float, t2: float, w1: float, w2: float):
    return nlif_spike_times(
        torch.tensor([[t1, t2]], dtype=torch.float64), torch.tensor([[w1], [w2]], dtype=torch.float64), 1.0, 1.0
    )


def test_causal_mask_on_hand_made_inputs():
    ln3 = math.log(3.0)
    t, m = _two_input(0.0, 5.0, 1.5, 1.5)  # input 1 arrives after the spike
    assert float(t) == pytest.approx(ln3) and m[0, :, 0].tolist() == [True, False]
    t, m = _two_input(5.0, 0.0, 1.5, 1.5)
    assert float(t) == pytest.approx(ln3) and m[0, :, 0].tolist() == [False, True]
    t, m = _two_input(0.0, 0.5, 1.5, 1.5)  # both contribute: tau ln((1.5 + 1.5 e^0.5) / 2)
    assert float(t) == pytest.approx(math.log((1.5 + 1.5 * math.exp(0.5)) / 2.0))
    assert m[0, :, 0].tolist() == [True, True]
    t, m = _two_input(0.0, 0.5, 0.6, 0.6)  # neither alone reaches theta
    assert m[0, :, 0].tolist() == [True, True] and math.isfinite(float(t))


def test_inhibition_before_the_spike_silences_the_neuron():
    t, m = _two_input(0.0, 0.5, 1.5, -1.0)  # inhibitory input before t = ln 3
    assert float(t) == math.inf and not m.any()
    t, m = _two_input(0.0, 2.0, 1.5, -1.0)  # inhibitory input after the spike: irrelevant
    assert float(t) == pytest.approx(math.log(3.0)) and m[0, :, 0].tolist() == [True, False]


def test_no_spike_cases_give_inf_and_empty_mask():
    t_in = torch.tensor([[0.0, 1.0, math.inf], [math.inf, math.inf, math.inf]])
    w = torch.tensor([[0.3], [0.4], [5.0]])  # total of the spiking inputs stays below theta
    t_out, mask = nlif_spike_times(t_in, w, 1.0, 1.0)
    assert torch.isinf(t_out).all() and not mask.any()
    layer = NLIFLayer(3, 1)
    with torch.no_grad():
        layer.weight.copy_(w)
    t_out, _ = layer(t_in)
    loss = first_spike_loss(torch.cat([t_out, t_out], 1), torch.tensor([0, 1]), t_max=4.0)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(layer.weight.grad).all()


def test_silent_input_is_never_causal():
    t, m = _two_input(0.0, math.inf, 1.5, 10.0)
    assert float(t) == pytest.approx(math.log(3.0)) and m[0, :, 0].tolist() == [True, False]


def test_t_max_window_drops_late_spikes():
    t_in = torch.tensor([[0.0]])
    w = torch.tensor([[1.5]])
    assert float(nlif_spike_times(t_in, w, 1.0, 1.0, t_max=1.0)[0]) == math.inf
    assert float(nlif_spike_times(t_in, w, 1.0, 1.0, t_max=1.2)[0]) == pytest.approx(math.log(3.0))


# ---------------------------------------------------------------- gradients


def _smooth_point(seed: int):
    """A problem whose outputs all spike well inside their causal piece."""
    g = torch.Generator().manual_seed(seed)
    t_in = torch.rand(4, 5, generator=g, dtype=torch.float64) * 2.0
    w = torch.rand(5, 3, generator=g, dtype=torch.float64) * 0.6 + 0.3
    return t_in, w


def test_gradcheck_spike_times_in_inputs_and_weights():
    t_in, w = _smooth_point(0)
    assert torch.isfinite(nlif_spike_times(t_in, w, 1.0, 1.0)[0]).all()
    t_in.requires_grad_(True)
    w.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: nlif_spike_times(a, b, 1.0, 1.0)[0], (t_in, w), eps=1e-7, atol=1e-6)


def test_gradient_matches_closed_form_derivatives():
    t_in, w = _smooth_point(1)
    t_in.requires_grad_(True)
    w.requires_grad_(True)
    t_out, mask = nlif_spike_times(t_in, w, 1.0, 1.0)
    b, j = 2, 1
    gt, gw = torch.autograd.grad(t_out[b, j], (t_in, w))
    C = mask[b, :, j]
    W = w[C, j].sum()
    e = torch.exp(t_in[b] - t_out[b, j]).detach()
    expect_t = torch.where(C, w[:, j] * e / (W - 1.0), torch.zeros(()).double()).detach()
    expect_w = torch.where(C, (e - 1.0) / (W - 1.0), torch.zeros(()).double()).detach()
    assert torch.allclose(gt[b], expect_t) and torch.allclose(gw[:, j], expect_w)
    assert torch.all(gt[[0, 1, 3]] == 0)  # other samples do not depend on sample b


def test_network_gradients_against_finite_differences():
    torch.manual_seed(0)
    net = NLIFNetwork.from_sizes([5, 12, 3], weight_mean=3.0, weight_std=0.5, positive=True, seed=3).double()
    x = latency_encode(np.random.default_rng(0).uniform(size=(6, 4)), dtype=torch.float64)
    t_out, _ = net(x)
    assert torch.isfinite(t_out).all()
    t_out.sum().backward()
    w = net.layers[0].weight
    grad = w.grad.clone()
    h = 1e-6
    for i, j in [(0, 0), (1, 3), (4, 7), (2, 11)]:
        with torch.no_grad():
            w[i, j] += h
            up = net(x)[0].sum()
            w[i, j] -= 2 * h
            down = net(x)[0].sum()
            w[i, j] += h
        assert float(grad[i, j]) == pytest.approx(float((up - down) / (2 * h)), abs=1e-5)


# ---------------------------------------------------------------- layer, network, coding, loss


def test_layer_batch_and_single_sample_agree():
    layer = NLIFLayer(5, 7, seed=1)
    x = torch.rand(3, 5) * 2
    t, m = layer(x)
    t1, m1 = layer(x[1])
    assert t.shape == (3, 7) and m.shape == (3, 5, 7)
    assert torch.equal(t1, t[1]) and torch.equal(m1, m[1])


def test_layer_init_is_deterministic_and_positive_option():
    a, b = NLIFLayer(5, 60, seed=4), NLIFLayer(5, 60, seed=4)
    assert torch.equal(a.weight, b.weight)
    a.reset_parameters(0.0, 1.0, positive=True, seed=2)
    assert (a.weight >= 0).all()
    a.reset_parameters(10.0, 0.0)
    assert torch.allclose(a.weight, torch.full((5, 60), 2.0))


def test_network_forward_returns_masks_of_every_layer():
    net = NLIFNetwork.from_sizes([5, 10, 3], seed=0)
    t, masks = net(torch.rand(4, 5))
    assert t.shape == (4, 3) and [m.shape for m in masks] == [(4, 5, 10), (4, 10, 3)]


def test_latency_encode():
    t = latency_encode([[0.0, 1.0], [0.5, 0.25]])
    assert torch.allclose(t, torch.tensor([[0.15, 2.0, 0.0], [1.075, 0.6125, 0.0]]))
    assert latency_encode([[0.2]], bias_times=()).shape == (1, 1)
    with pytest.raises(ValueError, match="x must lie in"):
        latency_encode([[1.5]])
    with pytest.raises(ValueError, match="t_late"):
        latency_encode([[0.5]], t_early=2.0, t_late=1.0)


def test_first_spike_accuracy_breaks_ties_in_expectation():
    inf = math.inf
    t = torch.tensor([[0.5, 1.0, 2.0], [inf, inf, inf], [1.0, 1.0, 3.0], [2.0, 0.1, inf]])
    y = torch.tensor([0, 2, 1, 0])
    assert first_spike_accuracy(t, y) == pytest.approx((1 + 1 / 3 + 1 / 2 + 0) / 4)


def test_first_spike_loss_prefers_early_correct_spike():
    good = first_spike_loss(torch.tensor([[0.5, 3.0, math.inf]]), torch.tensor([0]), t_max=4.0)
    bad = first_spike_loss(torch.tensor([[3.0, 0.5, math.inf]]), torch.tensor([0]), t_max=4.0)
    assert float(good) < float(bad)


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize("kw", [dict(tau_s=0.0), dict(tau_s=-1.0), dict(theta=0.0)])
def test_non_positive_constants_rejected(kw):
    args = dict(tau_s=1.0, theta=1.0) | kw
    name = next(iter(kw))
    with pytest.raises(ValueError, match=name):
        NLIFLayer(2, 3, **args)
    with pytest.raises(ValueError, match=name):
        nlif_spike_times(torch.zeros(1, 2), torch.ones(2, 3), **args)
    with pytest.raises(ValueError, match=name):
        simulate_lif_euler(np.zeros((1, 2)), np.ones((2, 3)), **args)


def test_nan_spike_times_rejected():
    layer = NLIFLayer(2, 3)
    with pytest.raises(ValueError, match="t_in must not contain NaN"):
        layer(torch.tensor([[0.0, math.nan]]))
    with pytest.raises(ValueError, match="-inf"):
        layer(torch.tensor([[0.0, -math.inf]]))
    with pytest.raises(ValueError, match="t_in"):
        simulate_lif_euler(np.array([[0.0, np.nan]]), np.ones((2, 3)), 1.0, 1.0)


def test_shape_mismatches_rejected():
    layer = NLIFLayer(2, 3)
    with pytest.raises(ValueError, match="t_in must have 2 columns"):
        layer(torch.zeros(4, 5))
    with pytest.raises(TypeError, match="t_in must be a torch.Tensor"):
        layer(np.zeros((4, 2)))
    with pytest.raises(TypeError, match="floating-point"):
        layer(torch.zeros(4, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="layer shape mismatch"):
        NLIFNetwork([NLIFLayer(2, 3), NLIFLayer(4, 1)])
    with pytest.raises(TypeError, match="NLIFLayer"):
        NLIFNetwork([torch.nn.Linear(2, 3)])
    with pytest.raises(ValueError, match="at least one"):
        NLIFNetwork([])
    with pytest.raises(ValueError, match="weight has 3 rows"):
        simulate_lif_euler(np.zeros((1, 2)), np.ones((3, 1)), 1.0, 1.0)
    with pytest.raises(ValueError, match="in_features|>= 1"):
        NLIFLayer(0, 3)
    with pytest.raises(ValueError, match="one per layer"):
        NLIFNetwork.from_sizes([5, 4, 3], weight_mean=[1.0, 2.0, 3.0])


def test_weight_sum_penalty():
    from geode.neuro import weight_sum_penalty

    w = torch.tensor([[0.2, 1.0], [0.3, 0.5]], requires_grad=True)
    pen = weight_sum_penalty(w, 1.0)  # only the first neuron (sum 0.5) is below threshold
    assert float(pen.detach()) == pytest.approx(0.5)
    pen.backward()
    assert torch.equal(w.grad, torch.tensor([[-1.0, 0.0], [-1.0, 0.0]]))
    with pytest.raises(ValueError, match="theta"):
        weight_sum_penalty(w, 0.0)
