"""Benchmark of SaMA: a training step of one adapted layer against LoRA (and the Kronecker adapter) at equal budget.

The step timed is forward + backward + Adam update of one adapted ``nn.Linear`` (``d x d``) on a batch of
tokens, ``x`` not requiring a gradient. Equal parameter budgets (``2 r d``): LoRA of rank r, SaMA with
``p = c = r`` blocks and inner width 1 (computed block-wise, never forming :math:`\\Delta W`), and the
shared-block Kronecker adapter (inner width r). Sizes: ``smoke`` d = 32, r = 4, 2 x 16 tokens; ``quick``
d = 576 (SmolLM2-135M's attention width), r = 8, 8 x 128 tokens; ``full`` d = 4096, r = 16, 4 x 512 tokens.
LoRA is the baseline the method replaces (and the fastest); peak memory is measured by the harness.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": (32, 4, (2, 16)), "quick": (576, 8, (8, 128)), "full": (4096, 16, (4, 512))}


def _step(make: Any, d: int, x: Any) -> Any:
    import torch
    from torch import nn

    from geode.core.random import torch_generator

    layer = make(nn.Linear(d, d), torch_generator(0))
    params = [p for p in layer.parameters() if p.requires_grad]
    with torch.no_grad():
        for p in params:
            p.normal_(0, 0.02, generator=torch_generator(1))
    opt = torch.optim.Adam(params, lr=1e-4)
    target = torch.randn(*x.shape[:-1], d, generator=torch_generator(2))

    def step() -> Any:
        loss = (layer(x) - target).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step


def cases(size: str) -> list[BenchCase]:
    """SaMA against LoRA and the shared-block Kronecker adapter, one training step at equal budget."""
    import torch

    from geode.adapters import LoRALinear
    from geode.adapters.sama import SaMALinear
    from geode.core.random import torch_generator

    d, r, (batch, tokens) = _SIZES[size]
    x = torch.randn(batch, tokens, d, generator=torch_generator(3))
    return [
        BenchCase(
            f"SaMA training step, {d} x {d}, p = c = {r}, {2 * r * d} parameters, {batch} x {tokens} tokens",
            candidate=_step(lambda lin, g: SaMALinear(lin, r, r, 1, generator=g), d, x),
            baselines={
                f"LoRA r={r}": _step(lambda lin, g: LoRALinear(lin, r, generator=g), d, x),
                "Kronecker (shared blocks)": _step(
                    lambda lin, g: SaMALinear(lin, r, r, r, shared=True, generator=g), d, x
                ),
            },
            differs={
                "*": (
                    "other adapter parameterisations (LoRA, shared Kronecker blocks) with their own initial "
                    "weights; the losses differ by design"
                )
            },
        )
    ]
