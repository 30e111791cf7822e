"""Benchmark: inference of PoLAR-VBLL against a MAP head, both one backbone pass.

PoLAR-VBLL's predictive is one pass through the adapted backbone and a Monte Carlo average over the
Gaussian logits of the last layer (256 draws of a (n, K) matrix: no further backbone pass). The
baseline is the same backbone with a deterministic linear (MAP) head. For scale, a sampling-based
Bayesian adapter (BLoB / MC-dropout style) that needs K = 10 backbone passes is timed too. Backbone:
a tiny Llama (d = 128, 2 layers) with PoLAR r = 8 on every projection, 256 sequences of 15 tokens.
Run with ``OMP_NUM_THREADS=1 python benchmarks/bench_polar_vbll.py``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
from torch import nn  # noqa: E402

from geode.adapters import inject_adapters  # noqa: E402
from geode.adapters.polar_vbll import PoLARLinear, VBLLClassifier, predict_proba  # noqa: E402
from geode.core import speed_ratio  # noqa: E402
from geode.core.random import torch_generator  # noqa: E402
from geode.models.tasks import KeywordClassification  # noqa: E402
from geode.models.tiny_lm import build_tiny_lm  # noqa: E402

torch.set_num_threads(1)


def main() -> None:
    task = KeywordClassification()
    model = build_tiny_lm(task.vocab_size, d_model=128, n_layers=2, seed=0)
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    inject_adapters(model, targets, lambda lin: PoLARLinear(lin, 8, 16, generator=torch_generator(0)))
    x = task.sample(256, 1).input_ids[:, :-1]
    vbll = VBLLClassifier(128, 6, generator=torch_generator(2))
    lin = nn.Linear(128, 6)

    def polar_vbll():
        return predict_proba(model, vbll, x, n_samples=256, generator=torch_generator(3))

    def polar_map():
        return predict_proba(model, lin, x)

    def ten_passes():
        return torch.stack([predict_proba(model, lin, x) for _ in range(10)]).mean(0)

    print("inference on 256 sequences (speedup > 1: PoLAR-VBLL is faster)")
    r = speed_ratio(polar_vbll, polar_map, repeats=9, warmup=2)
    print(
        f"  PoLAR-VBLL vs PoLAR-MAP (both one pass): {r['candidate_s'] * 1e3:.1f} ms vs "
        f"{r['baseline_s'] * 1e3:.1f} ms, time ratio {1 / r['speedup']:.3f}x"
    )
    r = speed_ratio(polar_vbll, ten_passes, repeats=5, warmup=1)
    print(
        f"  PoLAR-VBLL vs 10-pass sampling baseline: {r['candidate_s'] * 1e3:.1f} ms vs "
        f"{r['baseline_s'] * 1e3:.1f} ms, speedup {r['speedup']:.2f}x"
    )


if __name__ == "__main__":
    main()
