"""Benchmark of SDS-LoRA: a training step of one adapted layer against the same step with plain LoRA.

SDS-LoRA's forward is LoRA's; its backward adds two thin SVDs (polar bases of B, m x r, and of A^T,
n x r) and one extra (tokens x n) @ (n x r) product per layer and step. The dual-branch reading
(:class:`SDSDualLoRALinear`, after its re-parameterisation) has a two-branch forward and no per-step
factorisation. The step timed is forward + backward + Adam update of one adapted ``nn.Linear`` with
``x`` not requiring a gradient (as in revision 1's ``benchmarks/bench_sds_lora.py``, which this module
replaces), for SmolLM2-135M's projection shapes (576 x 576 attention, 576 -> 1536 and 1536 -> 576 MLP).
Sizes: ``smoke`` a 32 -> 48 layer on 2 x 16 tokens; ``quick`` the three shapes at r = 8 (attention) and
r = 16 (MLP) on 8 x 128 tokens; ``full`` the three shapes at r = 8 and 16 on 8 x 512 tokens. The
baseline is plain LoRA (the only, hence strongest, baseline); revision 1 set a target of at most 1.3x
overhead.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase, Target

__all__ = ["cases"]

_SHAPES = {
    "smoke": ([(32, 48, 4)], (2, 16)),
    "quick": ([(576, 576, 8), (576, 1536, 16), (1536, 576, 16)], (8, 128)),
    "full": ([(n_in, n_out, r) for n_in, n_out in ((576, 576), (576, 1536), (1536, 576)) for r in (8, 16)], (8, 512)),
}


_TARGET = Target("ratio", ">=", 1 / 1.3, "revision 1 and issue 44: an SDS-LoRA step <= 1.3x LoRA's", baseline="LoRA")


def _step(cls: Any, n_in: int, n_out: int, r: int, x: Any, dual: bool = False) -> Any:
    import torch
    from torch import nn

    from geode.core.random import torch_generator

    base = nn.Linear(n_in, n_out)
    with torch.no_grad():  # the same frozen weights on every side (nn.Linear draws from the global stream)
        base.weight.normal_(0, n_in**-0.5, generator=torch_generator(4))
        base.bias.zero_()
    layer = cls(base, r, 2 * r, generator=torch_generator(0))
    with torch.no_grad():
        layer.lora_B.normal_(0, 0.02, generator=torch_generator(1))
    if dual:
        layer.reparameterize()
    opt = torch.optim.Adam([layer.lora_A, layer.lora_B], lr=1e-4)
    target = torch.randn(*x.shape[:-1], n_out, generator=torch_generator(2))

    def step() -> Any:
        loss = (layer(x) - target).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step


def cases(size: str) -> list[BenchCase]:
    """SDS-LoRA (gradient reading, then dual-branch reading) against LoRA, one training step per shape."""
    import torch

    from geode.adapters import LoRALinear
    from geode.adapters.sds_lora import SDSDualLoRALinear, SDSLoRALinear
    from geode.core.random import torch_generator

    shapes, (batch, tokens) = _SHAPES[size]
    inputs = {n: torch.randn(batch, tokens, n, generator=torch_generator(3 + n)) for n in {s[0] for s in shapes}}
    out = []
    for n_in, n_out, r in shapes:
        x = inputs[n_in]
        lora = _step(LoRALinear, n_in, n_out, r, x)
        out.append(
            BenchCase(
                f"SDS-LoRA training step, {n_in} -> {n_out}, r={r}, {batch} x {tokens} tokens",
                candidate=_step(SDSLoRALinear, n_in, n_out, r, x),
                baselines={"LoRA": lora},
                target=_TARGET,
            )
        )
    n_in, n_out, r = shapes[0]
    out.append(
        BenchCase(
            f"SDS-LoRA dual-branch training step, {n_in} -> {n_out}, r={r}, {batch} x {tokens} tokens",
            candidate=_step(SDSDualLoRALinear, n_in, n_out, r, inputs[n_in], dual=True),
            baselines={"LoRA": _step(LoRALinear, n_in, n_out, r, inputs[n_in])},
            target=_TARGET,
        )
    )
    return out
