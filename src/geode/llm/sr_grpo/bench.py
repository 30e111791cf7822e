"""Benchmark of SR-GRPO's reward: the forward pass that yields the hidden states plus the stable rank, against
the forward pass alone.

The issue asks that the stable-rank computation cost be negligible (< 5%) relative to one forward pass. The
candidate runs the evaluator's forward pass over prompt + response and the batched stable rank of the
response states (:func:`response_stable_rank`); the baseline is the same forward pass without the stable rank.
The ratio ``baseline / candidate`` is therefore ``1 / (1 + overhead)``: 0.95 or more means < ~5% overhead.
Sizes: ``smoke`` a 1-layer d=32 Llama, ``quick`` the claim's tiny Llama (2 layers, d=64) on 64 responses of
6 tokens and a wider one (4 layers, d=256) on 32 responses of 64 tokens, ``full`` SmolLM2-135M on 8
responses of 256 tokens.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]


def _case(model: Any, n: int, p: int, t: int, vocab: int, name: str) -> BenchCase:
    import torch

    from geode.llm.sr_grpo.reward import response_stable_rank

    g = torch.Generator().manual_seed(0)
    prompt = torch.randint(4, vocab, (n, p), generator=g)
    resp = torch.randint(4, vocab, (n, t), generator=g)
    mask = torch.ones(n, t, dtype=torch.bool)
    model.eval()

    def forward() -> Any:
        with torch.no_grad():
            return model.base_model(input_ids=torch.cat([prompt, resp], 1)).last_hidden_state[:, p:]

    def forward_and_sr() -> Any:
        return response_stable_rank(forward(), mask)

    return BenchCase(
        f"{name}: forward + stable rank of {n} responses x {t} tokens",
        candidate=forward_and_sr,
        baselines={"forward pass alone": forward},
        differs={
            "*": "the baseline is the forward pass alone, a part of the candidate's work (which adds the stable rank)"
        },
    )


def cases(size: str) -> list[BenchCase]:
    """Forward pass with and without the stable-rank reward."""
    from geode.models import build_tiny_lm

    if size == "smoke":
        m = build_tiny_lm(26, d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, max_positions=16, seed=0)
        return [_case(m, 8, 7, 6, 26, "tiny Llama (1 layer, d=32)")]
    if size == "quick":
        small = build_tiny_lm(26, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=128, max_positions=16, seed=0)
        wide = build_tiny_lm(512, d_model=256, n_layers=4, n_heads=4, n_kv_heads=2, max_positions=128, seed=0)
        return [
            _case(wide, 32, 32, 64, 512, "tiny Llama (4 layers, d=256)"),
            _case(small, 64, 7, 6, 26, "the claim's tiny Llama (2 layers, d=64)"),
        ]
    from geode.models import load_smollm2

    model, _ = load_smollm2()
    return [_case(model, 8, 64, 256, model.config.vocab_size, "SmolLM2-135M")]
