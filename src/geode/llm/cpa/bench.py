"""Benchmark of CPA's training step against a plain FP4-rollout GRPO step, and of the NVFP4 fake quantiser.

- *CPA step vs FP4 step*: one :meth:`LowPrecisionGRPO.step` (weight sync, FP4 rollout, QAT forward and
  backward) with the CPA term (one extra full-precision forward on the sampled tokens) against the same
  step without it. The ratio ``baseline / candidate`` is the share of the plain step's speed that CPA keeps.
- *NVFP4 fake quantisation*: :func:`geode.core.quant.fp4_quantize` against an element-wise reference
  (nearest E2M1 value by a search over the eight magnitudes, the textbook definition) on one weight matrix.

On a CPU, FP4 is emulated, so no speed-up of FP4 over BF16 rollouts can show here (the paper's 8-19% needs
Blackwell FP4 kernels); the benchmark measures CPA's overhead, which is what a user pays on any hardware.
Sizes: ``smoke`` a 1-layer d=32 Llama; ``quick`` the claim's tiny Llama (2 layers, d=64) and a 4096 x 4096
weight; ``full`` SmolLM2-135M.
"""

from __future__ import annotations

import copy
from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]


def _step_case(model: Any, name: str, *, n_prompts: int, group: int, length: int) -> BenchCase:
    import numpy as np

    from geode.llm.cpa.experiment import ReversalReward, split_prompts
    from geode.llm.cpa.trainer import LowPrecisionGRPO
    from geode.models.tasks import Reversal

    task = Reversal(n_symbols=10, length=length)
    reward = ReversalReward(task)
    rng = np.random.default_rng(0)
    prompts = split_prompts(task, n_prompts, rng)[0]
    kw = dict(group_size=group, lr=1e-4, max_new_tokens=length + 1, eos_token_id=3, seed=0)
    cpa = LowPrecisionGRPO(copy.deepcopy(model), reward, cpa_coef=1e-3, **kw)
    plain = LowPrecisionGRPO(copy.deepcopy(model), reward, **kw)
    return BenchCase(
        f"{name}: one GRPO step, {n_prompts} prompts x {group} FP4 (NVFP4 W4A4) rollouts of {length + 1} tokens",
        candidate=lambda: cpa.step(prompts),
        baselines={"FP4-rollout GRPO step without CPA": lambda: plain.step(prompts)},
        differs={"*": "GRPO without CPA is the ablated method; its statistics differ by design"},
    )


def _reference_fp4(x: Any) -> Any:
    """NVFP4 by definition: per-block scales as the recipe, then the nearest of the 8 magnitudes by search."""
    import torch

    from geode.core.quant import E2M1_VALUES

    blocks = x.float().reshape(*x.shape[:-1], -1, 16)
    amax = blocks.abs().amax(-1, keepdim=True)
    gs = 448.0 * 6.0 / amax.amax()
    sf = (gs * amax / 6.0).to(torch.float8_e4m3fn).float()
    y = (blocks * torch.where(sf > 0, gs / sf, 0.0)).clamp(-6, 6)
    grid = torch.tensor(E2M1_VALUES)
    q = grid[(y.abs()[..., None] - grid).abs().argmin(-1)] * y.sign()
    return (q * sf / gs).reshape(x.shape)


def _quant_case(rows: int, cols: int) -> BenchCase:
    import torch

    from geode.core.quant import fp4_quantize

    w = torch.randn(rows, cols, generator=torch.Generator().manual_seed(0))
    return BenchCase(
        f"NVFP4 fake quantisation of a {rows} x {cols} weight",
        candidate=lambda: fp4_quantize(w, "nvfp4"),
        baselines={"element-wise nearest-value reference": lambda: _reference_fp4(w)},
    )


def cases(size: str) -> list[BenchCase]:
    """CPA's step against the plain FP4 step; the fake quantiser against a reference."""
    from geode.models import build_tiny_lm

    if size == "smoke":
        m = build_tiny_lm(16 + 10, d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, d_ff=64, max_positions=16, seed=0)
        return [_step_case(m, "tiny Llama (1 layer, d=32)", n_prompts=2, group=4, length=3), _quant_case(64, 64)]
    if size == "quick":
        m = build_tiny_lm(16 + 10, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=128, max_positions=32, seed=0)
        return [
            _step_case(m, "the claim's tiny Llama (2 layers, d=64)", n_prompts=8, group=8, length=5),
            _quant_case(4096, 4096),
        ]
    from geode.models import load_smollm2

    model, _ = load_smollm2()
    return [_step_case(model.float(), "SmolLM2-135M", n_prompts=4, group=8, length=16), _quant_case(4096, 4096)]
