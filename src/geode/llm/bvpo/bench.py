"""Benchmark of BVPO's training step against trace-based DPO's.

A BVPO step evaluates two branches (the trace batch and the separately sampled empty-trace batch) where DPO
evaluates one; the empty-trace sequences are shorter (no trace tokens). The candidate is one BVPO step
(alpha = 0.5: forward of policy and reference on both branches, backward, AdamW); the baselines are one
trace-based DPO step on the same trace batch (the per-step cost BVPO adds to) and one trace-based DPO step
on twice the pairs (the compute-matched baseline of the claim). Sizes: ``smoke`` a 1-layer d=32 Llama,
``quick`` the claim's tiny Llama (2 layers, d=64, 8 pairs per branch) and a wider one (4 layers, d=256,
64 pairs), ``full`` the wider one on 256 pairs.
"""

from __future__ import annotations

import copy
from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]


def _case(model: Any, n: int, name: str) -> BenchCase:
    import numpy as np
    import torch

    from geode.llm.bvpo.experiment import preference_batches
    from geode.llm.bvpo.trainer import BVPOTrainer

    rng = np.random.default_rng(0)
    gen = torch.Generator().manual_seed(0)
    tb = preference_batches(model, n, rng, gen, trace=True)
    eb = preference_batches(model, n, rng, gen, trace=False)
    tb2 = preference_batches(model, 2 * n, rng, gen, trace=True)
    ref = copy.deepcopy(model)
    bvpo = BVPOTrainer(copy.deepcopy(model), ref, alpha=0.5, beta=1.0, lr=1e-5)
    dpo = BVPOTrainer(copy.deepcopy(model), ref, alpha=1.0, beta=1.0, lr=1e-5)
    dpo2 = BVPOTrainer(copy.deepcopy(model), ref, alpha=1.0, beta=1.0, lr=1e-5)
    return BenchCase(
        f"{name}: one training step, {n} pairs per branch",
        candidate=lambda: bvpo.step(tb, eb),
        baselines={
            "trace-based DPO step": lambda: dpo.step(tb, None),
            "DPO step on 2x pairs": lambda: dpo2.step(tb2, None),
        },
        differs={"*": "other preference objectives (trace-based DPO, DPO on twice the pairs)"},
    )


def cases(size: str) -> list[BenchCase]:
    """One BVPO step against one trace-based DPO step."""
    from geode.llm.bvpo.experiment import VOCAB
    from geode.models import build_tiny_lm

    if size == "smoke":
        m = build_tiny_lm(VOCAB, d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, max_positions=16, seed=0)
        return [_case(m, 4, "tiny Llama (1 layer, d=32)")]
    wide = build_tiny_lm(VOCAB, d_model=256, n_layers=4, n_heads=4, n_kv_heads=2, max_positions=16, seed=0)
    if size == "quick":
        small = build_tiny_lm(
            VOCAB, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=128, max_positions=16, seed=0
        )
        return [
            _case(small, 8, "the claim's tiny Llama (2 layers, d=64)"),
            _case(wide, 64, "tiny Llama (4 layers, d=256)"),
        ]
    return [_case(wide, 256, "tiny Llama (4 layers, d=256)")]
