"""Benchmark of the exact nLIF layer: closed-form spike times against a time-stepped simulation.

The hot path of the causal-pieces study is the hidden layer of the released network ([4, 30, 3] on
Yin-Yang): :func:`geode.neuro.nlif_spike_times` gives every first-spike time (and causal set) in one
vectorised pass. The strongest usual baseline is a time-stepped (snnTorch/Norse-style) simulation of the
same current-based neurons in PyTorch, here at dt = 0.01 (its spike times are off by up to ~0.1 here; the closed
form is exact). Sizes: ``smoke`` 200 inputs, ``quick`` 5,000 (the training set), ``full`` 50,000.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_N = {"smoke": 200, "quick": 5_000, "full": 50_000}


def _same_spike_times(ours: Any, stepped: Any) -> None:
    """The time loop finds each first spike up to its step: the same neurons fire (silent ones are inf), and the
    firing times agree within two steps of dt = 0.01 (97% of them; all within 15 steps)."""
    import torch

    from geode.claims.bench import assert_same_output

    fired = torch.isfinite(ours)
    agree = (fired == torch.isfinite(stepped)).float().mean().item()
    if agree < 0.99:
        raise AssertionError(f"the sides fire on different neurons ({1 - agree:.1%} of the entries)")
    both = fired & torch.isfinite(stepped)
    gap = (ours[both] - stepped[both]).abs()
    if (gap <= 0.02).float().mean().item() < 0.97:  # a slow crossing near threshold may move by a few steps more
        raise AssertionError(f"only {(gap <= 0.02).float().mean().item():.1%} of the spike times agree within 2 steps")
    assert_same_output(ours[both], stepped[both], rtol=0, atol=0.15)


def cases(size: str) -> list[BenchCase]:
    """Forward of the 4-30 hidden nLIF layer on ``N`` Yin-Yang inputs: closed form vs a dt = 0.01 time loop."""
    import torch

    from geode.neuro.causal_pieces.release import DECODE_T, ReleaseInit, ReleaseNet, yinyang_raw

    n = _N[size]
    x, _ = yinyang_raw(n, 0)
    net = ReleaseNet(30, ReleaseInit(0.8, 0.8, 0))
    w = net.hidden.weight.detach()
    tau, theta, dt = net.hidden.tau_s, net.hidden.theta, 0.01

    def closed_form():
        with torch.no_grad():
            return net.hidden(x)[0]

    def time_stepped():
        # Exact-decay update of the synaptic current I and the non-leaky membrane V, first threshold crossing.
        current = torch.zeros(n, w.shape[1])
        v = torch.zeros(n, w.shape[1])
        out = torch.full((n, w.shape[1]), float("inf"))
        decay = torch.exp(torch.tensor(-dt / tau))
        steps = int(DECODE_T / dt) + 1
        for k in range(steps):
            t = k * dt
            arriving = ((x >= t) & (x < t + dt)).to(w.dtype)
            current = current * decay + arriving @ w
            v = v + current * dt / tau
            fired = (v >= theta) & torch.isinf(out)
            out = torch.where(fired, torch.full_like(out, t + dt), out)
        return out

    return [
        BenchCase(
            f"hidden nLIF layer 4-30, {n} Yin-Yang inputs, forward",
            candidate=closed_form,
            baselines={"time-stepped PyTorch, dt = 0.01": time_stepped},
            compare=_same_spike_times,
        )
    ]
