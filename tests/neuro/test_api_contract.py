"""geode.neuro's public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

import geode.neuro as neuro


def _t(*shape, seed=0, low=0.0, high=2.0):
    g = torch.Generator().manual_seed(seed)
    return low + (high - low) * torch.rand(*shape, generator=g)


def _layer():
    layer = neuro.NLIFLayer(3, 2, tau_s=1.0, theta=1.0)
    with torch.no_grad():
        layer.weight.fill_(0.8)
    return layer


def _net():
    return neuro.NLIFNetwork([_layer(), neuro.NLIFLayer(2, 2, seed=1)])


def _release():
    return neuro.ReleaseNet(3, neuro.ReleaseInit(0.5, 0.3, 0))


def _release_data():
    x, y = neuro.yinyang_raw(6, 0)
    return {"train": (x, y), "val": (x, y), "test": (x, y)}


def _encoder():
    torch.manual_seed(0)
    return neuro.LFPEncoder(8, n_samples=64, layers=1, heads=2)


def _heads():
    torch.manual_seed(1)
    return nn.ModuleDict({"pred": nn.Linear(8, 8), "target": nn.Linear(8, 8)})


# main methods of the modules, as wrappers whose parameters carry the method's own argument names
def _nlif_layer_forward(t_in):
    return _layer()(t_in)


def _nlif_network_forward(t_in):
    return _net()(t_in)


def _release_forward(x):
    return _release()(x)


def _release_hidden_times(x):
    return _release().hidden_times(x)


def _encoder_forward(x):
    return _encoder()(x)


def _encoder_frames(x):
    return _encoder().frames(x)


def _layout_linear(n_channels, pitch=20.0):
    return neuro.ProbeLayout.linear(n_channels, pitch)


def _network_from_sizes(sizes, tau_s=1.0, theta=1.0, *, t_max=None, weight_mean=1.5, weight_std=1.0):
    return neuro.NLIFNetwork.from_sizes(
        sizes, tau_s, theta, t_max=t_max, weight_mean=weight_mean, weight_std=weight_std
    )


def _layer_reset_parameters(mean=1.5, std=1.0):
    return _layer().reset_parameters(mean, std)


METHODS = {
    "NLIFLayer.forward": _nlif_layer_forward,
    "NLIFLayer.reset_parameters": _layer_reset_parameters,
    "NLIFNetwork.forward": _nlif_network_forward,
    "NLIFNetwork.from_sizes": _network_from_sizes,
    "ReleaseNet.forward": _release_forward,
    "ReleaseNet.hidden_times": _release_hidden_times,
    "LFPEncoder.forward": _encoder_forward,
    "LFPEncoder.frames": _encoder_frames,
    "ProbeLayout.linear": _layout_linear,
}

CALLS = {  # -> (args, kwargs), built fresh each time
    # shared: lif
    "NLIFLayer": lambda: ((3, 2), {"tau_s": 1.0, "theta": 1.0, "t_max": 4.0, "weight_mean": 1.5, "weight_std": 1.0}),
    "NLIFLayer.forward": lambda: ((_t(4, 3),), {}),
    "NLIFLayer.reset_parameters": lambda: ((), {"mean": 1.5, "std": 1.0}),
    "NLIFNetwork": lambda: (([_layer(), neuro.NLIFLayer(2, 2)],), {}),
    "NLIFNetwork.forward": lambda: ((_t(4, 3),), {}),
    "NLIFNetwork.from_sizes": lambda: (
        ([3, 2, 2],),
        {"tau_s": 1.0, "theta": 1.0, "t_max": 4.0, "weight_mean": [1.5, 1.5], "weight_std": [1.0, 1.0]},
    ),
    "first_spike_accuracy": lambda: ((_t(4, 3), torch.tensor([0, 1, 2, 0])), {}),
    "first_spike_loss": lambda: ((_t(4, 3), torch.tensor([0, 1, 2, 0])), {"t_max": 4.0, "tau_s": 1.0}),
    "latency_encode": lambda: (
        (np.linspace(0.0, 1.0, 8).reshape(4, 2),),
        {"t_early": 0.15, "t_late": 2.0, "bias_times": (0.0, 0.5)},
    ),
    "nlif_spike_times": lambda: ((_t(4, 3), torch.full((3, 2), 0.8), 1.0, 1.0), {"t_max": 4.0}),
    "simulate_lif_euler": lambda: (
        (_t(2, 3).numpy().astype(float), np.full((3, 2), 0.8), 1.0, 1.0),
        {"tau_m": 10.0, "dt": 0.01, "t_end": 6.0},
    ),
    "weight_sum_penalty": lambda: ((torch.full((3, 2), 0.3), 1.0), {}),
    # causal-pieces
    "InitConfig": lambda: ((1.5, 1.0), {}),
    "ReleaseInit": lambda: ((0.5, 0.3, 0), {}),
    "ReleaseNet": lambda: ((3, neuro.ReleaseInit(0.5, 0.3, 0)), {"tau_s": 0.5, "theta": 1.0}),
    "ReleaseNet.forward": lambda: ((neuro.yinyang_raw(4, 0)[0],), {}),
    "ReleaseNet.hidden_times": lambda: ((neuro.yinyang_raw(4, 0)[0],), {}),
    "causal_path_masks": lambda: ((_net(), _t(4, 3)), {}),
    "count_causal_pieces": lambda: ((_net(), _t(6, 3)), {"param_samples": 1, "param_scale": 0.1}),
    "rank_correlation": lambda: (([1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 25.0]), {}),
    "release_inits": lambda: ((2, 0), {"offset": 0.2}),
    "run_init_study": lambda: (
        ([neuro.InitConfig(1.5, 1.0)],),
        {
            "sizes": (5, 3, 3),
            "n_train": 6,
            "n_test": 6,
            "epochs": 1,
            "lr": 0.005,
            "batch_size": 6,
            "tau_s": 1.0,
            "theta": 1.0,
            "t_max": 4.0,
            "silence_penalty": 0.1,
        },
    ),
    "train_release": lambda: ((_release(), _release_data()), {"lr": 0.01, "gamma": 0.1, "epochs": 1, "batch_size": 6}),
    "yinyang_raw": lambda: ((4, 0), {}),
    "yinyang_spike_data": lambda: ((4, 0), {"tau_s": 1.0}),
    # lfp-geossl
    "LFPEncoder": lambda: ((8,), {"n_samples": 64, "layers": 1, "heads": 2}),
    "LFPEncoder.forward": lambda: ((torch.randn(3, 64, generator=torch.Generator().manual_seed(0)),), {}),
    "LFPEncoder.frames": lambda: ((torch.randn(3, 64, generator=torch.Generator().manual_seed(0)),), {}),
    "LFPSession": lambda: (
        (np.zeros((4, 1, 8), np.float32), np.array([0, 0, 1, 1]), np.array([0.0, 20.0, 40.0, 60.0])),
        {"layout": neuro.ProbeLayout.linear(4), "fs": 250.0, "info": {}},
    ),
    "ProbeLayout": lambda: ((np.array([0.0, 20.0, 40.0]),), {}),
    "ProbeLayout.linear": lambda: ((4,), {"pitch": 20.0}),
    "depth_profile": lambda: (
        (np.array([10.0, 300.0, 900.0]),),
        {"boundaries": np.cumsum([0.0, 1, 1, 1, 1, 1, 1]) * 200},
    ),
    "distance_preserving_loss": lambda: (
        (_t(4, 3), torch.tensor([0.0, 20.0, 40.0, 60.0]), torch.tensor([0, 0, 1, 1])),
        {"alpha": 0.01},
    ),
    "geometry_contrastive_loss": lambda: (
        (_t(4, 3), torch.tensor([0.0, 20.0, 40.0, 60.0]), torch.tensor([0, 0, 1, 1])),
        {"delta": 40.0, "temperature": 0.1},
    ),
    "masked_prediction_loss": lambda: (
        (_encoder(), _heads(), torch.randn(3, 64, generator=torch.Generator().manual_seed(0)), torch.Generator()),
        {"mask_prob": 0.3, "span": 2, "temperature": 0.1},
    ),
    "simulate_session": lambda: (
        (0,),
        {
            "layout": neuro.ProbeLayout.linear(4),
            "n_windows": 1,
            "window_s": 0.5,
            "fs": 250.0,
            "rates": (200.0, 250.0),
            "tilt_deg": (0.0, 30.0),
            "offset_um": (0.0, 500.0),
            "conduction_um": 40.0,
        },
    ),
    "welch_features": lambda: ((np.random.default_rng(0).normal(size=(2, 64)), 250.0), {"nperseg": 32, "fmax": 100.0}),
}
NOT_CALLED = {
    "DECODE_T": "a constant (float)",
    "INIT_GRID": "a constant (tuple of InitConfig)",
    "REGIONS": "a constant (the atlas's regions)",
}
_INF = "inf means 'no spike' (documented); the output times may be inf too"
_EMPTY = "an empty batch gives an empty output (documented)"
_SPIKES = {("t_in", "inf"): _INF, ("t_in", "empty"): _EMPTY}
OK: dict[str, dict[tuple[str, str], str]] = {
    "NLIFLayer.forward": _SPIKES,
    "NLIFNetwork.forward": _SPIKES,
    "nlif_spike_times": _SPIKES,
    "causal_path_masks": _SPIKES,
    "simulate_lif_euler": {**_SPIKES, ("tau_m", "inf"): "tau_m = inf is the nLIF neuron (documented)"},
    "ReleaseNet.forward": {("x", "inf"): _INF, ("x", "empty"): _EMPTY},
    "ReleaseNet.hidden_times": {("x", "inf"): _INF, ("x", "empty"): _EMPTY},
    "count_causal_pieces": {("X", "inf"): "inf means 'no spike' (documented)"},
    "first_spike_accuracy": {
        ("t_out", "inf"): "inf means 'no spike'; a sample without spikes scores chance (documented)"
    },
    "first_spike_loss": {("t_out", "inf"): "a neuron that does not spike counts as spiking at t_max (documented)"},
    "latency_encode": {
        ("x", "empty"): "an empty batch gives an empty (0, d + len(bias_times)) tensor (documented)",
        ("bias_times", "empty"): "an empty sequence appends no bias spike (documented)",
    },
    "LFPEncoder.forward": {("x", "empty"): _EMPTY},
    "LFPEncoder.frames": {("x", "empty"): _EMPTY},
    "welch_features": {("x", "empty"): "an empty batch (no rows) gives an empty output (documented)"},
}


PACKAGE = neuro


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []
