"""Benchmark: exact event-based nLIF spike times against time-stepped LIF simulation.

The hot path of the causal-pieces method is the forward pass of an nLIF layer that returns exact first
spike times and causal sets (sort, cumulative sums, first valid prefix). Its strongest baseline is a
time-stepped simulation of the same neurons, as snntorch/norse-style libraries run it: a loop over
time steps in torch (dt = 0.01 tau_s), and our C-speed forward-Euler cross-check (scipy IIR filters,
dt = 1e-3 tau_s). Both baselines are only approximately right (error O(dt)); the exact layer has no
time-step error at all. Run with ``OMP_NUM_THREADS=1 python benchmarks/bench_causal_pieces.py``.
"""

from __future__ import annotations

import math
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from geode.core import speed_ratio  # noqa: E402
from geode.neuro import NLIFLayer, simulate_lif_euler  # noqa: E402
from geode.neuro.causal_pieces import count_causal_pieces, yinyang_spike_data  # noqa: E402
from geode.neuro.lif import NLIFNetwork  # noqa: E402

torch.set_num_threads(1)


def time_stepped_torch(
    t_in: torch.Tensor, weight: torch.Tensor, tau_s: float, theta: float, dt: float, t_end: float
) -> torch.Tensor:
    """First spike times by a torch loop over time steps (the way time-stepped SNN libraries simulate)."""
    batch, n_out = t_in.shape[0], weight.shape[1]
    idx = torch.round(t_in / dt).long()
    i_syn = torch.zeros(batch, n_out, dtype=weight.dtype)
    v = torch.zeros(batch, n_out, dtype=weight.dtype)
    out = torch.full((batch, n_out), math.inf, dtype=weight.dtype)
    decay = 1.0 - dt / tau_s
    for n in range(int(math.ceil(t_end / dt)) + 1):
        arrived = (idx == n).to(weight.dtype)  # (B, n_in) input spikes in this step
        i_syn = i_syn + arrived @ weight  # I(t_n), inputs of this step included
        v_new = v + (dt / tau_s) * i_syn  # V(t_{n+1}), forward Euler
        i_syn = decay * i_syn
        crossed = (v_new >= theta) & torch.isinf(out)
        frac = ((theta - v) / (v_new - v).clamp_min(1e-30)).clamp(0, 1)
        out = torch.where(crossed, (n + frac) * dt, out)  # v is V(t_n), v_new is V(t_{n+1})
        v = v_new
    return out


def main() -> None:
    x, _ = yinyang_spike_data(1000, seed=0)
    layer = NLIFLayer(5, 60, 1.0, 1.0, weight_mean=2.0, weight_std=1.0, seed=0)
    w = layer.weight.detach()
    t_end = 4.0

    def exact():
        with torch.no_grad():
            return layer(x)

    exact_t = exact()[0].double().numpy()
    exact_t[exact_t > t_end] = np.inf
    fin = np.isfinite(exact_t)

    def err(t):
        t = np.asarray(t, float)
        return float(np.max(np.abs(t[fin] - exact_t[fin]))), float(np.mean(np.isfinite(t) == fin))

    print("nLIF 5-60 layer, 1000 Yin-Yang samples, window 4 tau_s (speedup > 1: the exact layer is faster)")
    with torch.no_grad():
        base = time_stepped_torch(x, w, 1.0, 1.0, 1e-2, t_end).numpy()
    r = speed_ratio(exact, lambda: time_stepped_torch(x, w, 1.0, 1.0, 1e-2, t_end), repeats=5)
    e, a = err(base)
    print(
        f"  vs torch time-stepped loop, dt=1e-2: speedup {r['speedup']:7.1f}x  "
        f"(exact {r['candidate_s'] * 1e3:.1f} ms, baseline {r['baseline_s'] * 1e3:.1f} ms; "
        f"baseline max error {e:.1e}, spike agreement {a:.4f})"
    )
    r = speed_ratio(exact, lambda: simulate_lif_euler(x, w, 1.0, 1.0, dt=1e-3, t_end=t_end), repeats=2, warmup=0)
    e, a = err(simulate_lif_euler(x, w, 1.0, 1.0, dt=1e-3, t_end=t_end))
    print(
        f"  vs scipy forward Euler,      dt=1e-3: speedup {r['speedup']:7.1f}x  "
        f"(exact {r['candidate_s'] * 1e3:.1f} ms, baseline {r['baseline_s'] * 1e3:.1f} ms; "
        f"baseline max error {e:.1e}, spike agreement {a:.4f})"
    )

    net = NLIFNetwork.from_sizes([5, 60, 3], t_max=t_end, weight_mean=2.0, weight_std=1.0, seed=0)
    x2, _ = yinyang_spike_data(2000, seed=1)

    def loop_count() -> int:  # the same count, one input at a time with Python hashing
        seen = set()
        for b in range(0, x2.shape[0]):
            with torch.no_grad():
                from geode.neuro.causal_pieces import causal_path_masks

                _, masks = causal_path_masks(net, x2[b : b + 1])
            seen.add(b"".join(np.packbits(m.numpy()).tobytes() for m in masks))
        return len(seen)

    assert loop_count() == count_causal_pieces(net, x2)
    r = speed_ratio(lambda: count_causal_pieces(net, x2), loop_count, repeats=3)
    print(
        f"count_causal_pieces, 5-60-3 net, 2000 inputs: batched vs per-input loop speedup {r['speedup']:.1f}x "
        f"(batched {r['candidate_s'] * 1e3:.1f} ms, loop {r['baseline_s'] * 1e3:.1f} ms)"
    )


if __name__ == "__main__":
    main()
