"""geode.optim's public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import torch
from torch import nn

import geode.optim as optim


def _t(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _params():
    return [nn.Parameter(_t(3, 2)), nn.Parameter(_t(2, seed=1))]


def _pos_params():
    return [nn.Parameter(_t(3, 2).abs() + 0.1), nn.Parameter(_t(2, seed=1).abs() + 0.1)]


def _qmodel():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2))
    optim.quantize_model(m, group_size=4, exclude=())
    return m


def _codes():
    return optim.quantize_rtn(_t(4, 8), group_size=4)


def _step(cls, params_fn):
    def step(params, lr=1e-3, eps=1e-3):
        opt = cls(params, lr=lr, eps=eps)
        x = _t(5, 2, seed=2)

        def closure():
            return ((x * params[0].sum(0)).sum() + params[1].sum()) ** 2

        opt.step(closure)
        return [p.detach() for p in params]

    return step


def _quant_forward(x):
    codes, scales = _codes()
    return optim.QuantLinear(codes, scales, bits=4)(x)


def _log_distance(x, y):
    return optim.LogMetric().distance(x, y)


METHODS = {
    "MeZO.step": _step(optim.MeZO, _params),
    "QZO.step": _step(optim.QZO, _pos_params),
    "HoZO.step": _step(optim.HoZO, _pos_params),
    "QuantLinear.forward": _quant_forward,
    "LogMetric.distance": _log_distance,
}

CALLS = {  # -> (args, kwargs), built fresh each time
    "MeZO": lambda: ((_params(),), {"lr": 1e-3, "eps": 1e-3, "weight_decay": 0.0, "clamp_min": -1.0, "clip": 10.0}),
    "MeZO.step": lambda: ((_params(),), {"lr": 1e-3, "eps": 1e-3}),
    "QZO": lambda: ((_pos_params(),), {"lr": 1e-3, "eps": 1e-3, "clip": 100.0, "clamp_min": 0.0}),
    "QZO.step": lambda: ((_pos_params(),), {"lr": 1e-3, "eps": 1e-3}),
    "HoZO": lambda: ((_pos_params(),), {"lr": 1e-2, "eps": 1e-3, "clip": 10.0}),
    "HoZO.step": lambda: ((_pos_params(),), {"lr": 1e-3, "eps": 1e-3}),
    "ZerothOrderOptimizer": lambda: ((_params(),), {"lr": 1e-3, "eps": 1e-3, "clip": 10.0}),
    "check_loss": lambda: ((1.5,), {"where": "closure"}),
    "optimizer_state_bytes": lambda: ((torch.optim.SGD(_params(), lr=0.1),), {}),
    "step_seed": lambda: ((0, 3), {}),
    "QuantLinear": lambda: (_codes(), {"bits": 4, "bias": _t(4, seed=3)}),
    "QuantLinear.forward": lambda: ((_t(3, 8, seed=4),), {}),
    "dequantize_rtn": lambda: (_codes(), {}),
    "quantize_rtn": lambda: ((_t(4, 8),), {"bits": 4, "group_size": 4}),
    "quantize_model": lambda: ((nn.Sequential(nn.Linear(8, 4)),), {"group_size": 4, "exclude": ()}),
    "scale_parameters": lambda: ((_qmodel(),), {}),
    "pack_int4": lambda: ((_codes()[0],), {}),
    "unpack_int4": lambda: ((optim.pack_int4(_codes()[0]),), {}),
    "EuclideanMetric": lambda: ((), {}),
    "LogMetric": lambda: ((), {}),
    "LogMetric.distance": lambda: ((_t(3).abs() + 0.1, _t(3, seed=1).abs() + 0.1), {}),
    "OrthantMetric": lambda: ((), {}),
    "get_metric": lambda: (("log",), {}),
}
NOT_CALLED: dict[str, str] = {}
OK: dict[str, dict[tuple[str, str], str]] = {
    "QuantLinear.forward": {  # a layer: the shape is checked, the values are not scanned (documented)
        ("x", "nan"): "a layer: a NaN row of x gives NaN outputs, as in torch's own layers (no per-step scan)",
        ("x", "inf"): "a layer: an inf row of x gives non-finite outputs, as in torch's own layers",
        ("x", "empty"): "a per-row map: an empty batch gives an empty output (documented)",
    },
}


PACKAGE = optim


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []
