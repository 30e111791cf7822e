"""Benchmark of SPIRIT's hot path: decoding a request with self-speculation against plain greedy decoding.

Candidate: greedy self-speculative decoding (k = 3) with 4 of 6 middle layers skipped on an 8-layer tiny
Llama; baselines: plain greedy decoding (AR) and a SWIFT-like 3-layer skip set. The model is untrained
(random weights), so acceptance is low and this times the mechanics (drafting and verification forwards),
not the claim's speed-up, which the claim measures with trained weights and a cost model.

Measured (quick, one loaded core): 0.48x [0.47-0.51] vs AR greedy (random weights: drafts rarely
accepted), peak memory ratio 0.90.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": (4, 6), "quick": (8, 12), "full": (8, 32)}


def _same_tokens(ours: Any, other: Any) -> None:
    """Greedy self-speculative decoding must emit exactly the AR greedy tokens (only the drafts differ)."""
    from geode.claims.bench import assert_same_output

    tokens = lambda out: list(out[0] if isinstance(out, tuple) else out)  # noqa: E731
    assert_same_output(tokens(ours), tokens(other), rtol=0, atol=0)


def cases(size: str) -> list[BenchCase]:
    """One case: a prompt of 8 tokens, ``max_new`` new tokens."""
    import torch

    from geode.inference.spirit import greedy_decode, self_speculative_decode
    from geode.models.tiny_lm import build_tiny_lm

    torch.set_num_threads(1)
    n_layers, max_new = _SIZES[size]
    model = build_tiny_lm(32, d_model=64, n_layers=n_layers, max_positions=128, seed=0).eval()
    prompt = [1, 17, 18, 19, 20, 21, 22, 2]
    mid = list(range(1, n_layers - 1))
    return [
        BenchCase(
            f"decode {max_new} tokens, {n_layers}-layer tiny Llama, k = 3",
            candidate=lambda: self_speculative_decode(model, prompt, max_new, mid[: 2 * len(mid) // 3], k=3),
            baselines={
                "AR greedy": lambda: greedy_decode(model, prompt, max_new),
                "SWIFT-like skip set": lambda: self_speculative_decode(
                    model, prompt, max_new, mid[: len(mid) // 2], k=3
                ),
            },
            compare=_same_tokens,
        )
    ]
