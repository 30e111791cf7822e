"""Benchmark: a training step of SDS-LoRA against LoRA on SmolLM2-sized linear layers.

SDS-LoRA's forward is LoRA's; its backward adds two thin QR decompositions (of B, m x r, and of
A^T, n x r) and one extra (tokens x n) @ (n x r) product per layer and step. The step timed here is
forward + backward + Adam update of one adapted ``nn.Linear`` on a batch of 8 sequences of 128
tokens, for the shapes of SmolLM2-135M's projections (576 x 576 attention, 576 x 1536 / 1536 x 576
MLP) and r in {8, 16}. The target is an overhead of at most 1.3x. Run with
``OMP_NUM_THREADS=1 python benchmarks/bench_sds_lora.py``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
from torch import nn  # noqa: E402

from geode.adapters import LoRALinear  # noqa: E402
from geode.adapters.sds_lora import SDSLoRALinear  # noqa: E402
from geode.core import speed_ratio  # noqa: E402
from geode.core.random import torch_generator  # noqa: E402

torch.set_num_threads(1)


def make_step(cls: type, n_in: int, n_out: int, r: int, x: torch.Tensor):
    base = nn.Linear(n_in, n_out)
    layer = cls(base, r, 2 * r, generator=torch_generator(0))
    with torch.no_grad():
        layer.lora_B.normal_(0, 0.02, generator=torch_generator(1))
    opt = torch.optim.Adam([layer.lora_A, layer.lora_B], lr=1e-4)
    target = torch.randn(*x.shape[:-1], n_out, generator=torch_generator(2))

    def step():
        loss = (layer(x) - target).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step


def main() -> None:
    x = torch.randn(8, 128, 576, generator=torch_generator(3))
    x_wide = torch.randn(8, 128, 1536, generator=torch_generator(4))
    print("training step (forward + backward + Adam) of one adapted layer, 8 x 128 tokens; overhead = SDS / LoRA")
    worst = 0.0
    for n_in, n_out, inputs in ((576, 576, x), (576, 1536, x), (1536, 576, x_wide)):
        for r in (8, 16):
            res = speed_ratio(
                make_step(SDSLoRALinear, n_in, n_out, r, inputs),
                make_step(LoRALinear, n_in, n_out, r, inputs),
                repeats=15,
                warmup=3,
            )
            overhead = 1.0 / res["speedup"]
            worst = max(worst, overhead)
            print(
                f"  {n_in:4d} -> {n_out:4d}, r={r:2d}: SDS {res['candidate_s'] * 1e3:6.2f} ms, LoRA "
                f"{res['baseline_s'] * 1e3:6.2f} ms, overhead {overhead:.3f}x (speedup {res['speedup']:.3f})"
            )
    print(f"worst overhead {worst:.3f}x (target <= 1.3x): {'met' if worst <= 1.3 else 'NOT met'}")


if __name__ == "__main__":
    main()
