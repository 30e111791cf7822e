"""Negative weight drift and activation sparsity (Shvetsov et al., "Bug or Feature²").

Standard losses with positively biased activations (ReLU, GELU, SiLU) give positive pre-activations a
non-negative expected gradient at initialisation, so the weights downstream of those activations drift
negative early in training; with ReLU this raises activation sparsity, and accuracy falls off a cliff
beyond ~70% sparsity. This package holds the measurements (:func:`downstream_drift`,
:func:`expected_preactivation_gradient`, :class:`SparsityMonitor`), the activation zoo
(:class:`QuantileReLU`, :class:`ReLU2`, :class:`ClippedReLU2`, :class:`GELU2`, :class:`ClippedGELU2`) and
the claim check (``geode reproduce weight-drift``).

Examples
--------
The paper's statistic, the drift of the downstream weights and the sparsity of an MLP you train yourself. Here,
as in the claim's quick-mode finding, the output matrix drifts down (the hidden one need not):

>>> import torch
>>> from torch import nn
>>> from geode.analysis import QuantileReLU, SparsityMonitor, expected_preactivation_gradient, downstream_drift
>>> _ = torch.manual_seed(0)
>>> x, y = torch.randn(512, 20), torch.randint(0, 10, (512,))
>>> net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
>>> stat = expected_preactivation_gradient(net, x, y)    # E[dL/dz | z > 0] at each activation, at init
>>> sorted(stat)                                         # one value per activation module, by name
['1', '3']
>>> opt = torch.optim.Adam(net.parameters(), lr=1e-3)
>>> snapshot = lambda: {"hidden": net[2].weight.detach().clone(), "output": net[4].weight.detach().clone()}
>>> history = [snapshot()]
>>> for step in range(50):
...     opt.zero_grad()
...     nn.functional.cross_entropy(net(x), y).backward()
...     opt.step()
...     history.append(snapshot())
>>> drift = downstream_drift(history)        # mean change of each downstream matrix, in units of its initial std
>>> len(drift["output"]), float(drift["output"][0]), bool(drift["output"][-1] < 0)
(51, 0.0, True)
>>> with SparsityMonitor(net) as monitor:                # fraction of exact zeros at every activation
...     _ = net(x)
>>> all(0.2 < s["sparsity"] < 0.8 for s in monitor.summary().values())
True
>>> sparse = nn.Sequential(nn.Linear(20, 64), QuantileReLU(0.9), nn.Linear(64, 10))  # a target sparsity
>>> with SparsityMonitor(sparse) as monitor:
...     _ = sparse(x)
>>> round(monitor.summary()["1"]["sparsity"], 2)
0.9
"""

from __future__ import annotations

from geode.analysis.weight_drift.drift import (
    ACTIVATIONS,
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

__all__ = [
    "ACTIVATIONS",
    "GELU2",
    "ClippedGELU2",
    "ClippedReLU2",
    "QuantileReLU",
    "ReLU2",
    "SparsityMonitor",
    "downstream_drift",
    "expected_preactivation_gradient",
    "make_activation",
]
