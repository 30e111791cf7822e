"""Benchmark of RubiConv: the packed long convolution against the per-document FFT loop and the padded batch.

Forward+backward, and forward alone, on a "mixed" packing of documents (the strongest CPU baseline is the
per-document loop of FFTs; issue 19's goal on a CPU is >= 1.5x over it at 64k tokens, forward and
backward); ``full`` size is meant for a GPU machine.
"""

from __future__ import annotations

from geode.claims.bench import BenchCase, Target

__all__ = ["cases"]

_TOTALS = {"smoke": 2_048, "quick": 65_536, "full": 262_144}


def cases(size: str) -> list[BenchCase]:
    """Forward+backward at ``N`` packed tokens (mixed document lengths), 64 channels."""
    import numpy as np
    import torch

    from geode.layers.rubiconv import (
        cu_seqlens_from_lengths,
        packed_long_conv,
        padded_batch_conv,
        per_document_conv,
        sample_document_lengths,
    )

    total, d = _TOTALS[size], 64
    lengths = sample_document_lengths(total, "mixed", np.random.default_rng(0))
    cu = cu_seqlens_from_lengths(lengths)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(total, d, generator=gen)
    k = torch.randn(d, total, generator=gen) * torch.exp(-torch.arange(total) / 1000.0)
    g = torch.randn(total, d, generator=gen)

    def fwd_bwd(fn):
        def step():
            xx = x.detach().requires_grad_(True)
            kk = k.detach().requires_grad_(True)
            fn(xx, kk, cu).backward(g)
            return xx.grad

        return step

    def fwd(fn):
        return lambda: fn(x, k, cu)

    return [
        BenchCase(
            f"forward+backward, {total} tokens, {lengths.size} documents, D={d}",
            candidate=fwd_bwd(packed_long_conv),
            target=Target(
                "ratio",
                ">=",
                1.5,
                "issues 19 and 44: >= 1.5x the per-document FFT loop, forward + backward",
                baseline="per-document FFT loop",
            ),
            baselines={
                "per-document FFT loop": fwd_bwd(per_document_conv),
                "padded batch": fwd_bwd(padded_batch_conv),
            },
        ),
        BenchCase(
            f"forward, {total} tokens, {lengths.size} documents, D={d}",
            candidate=fwd(packed_long_conv),
            baselines={"per-document FFT loop": fwd(per_document_conv), "padded batch": fwd(padded_batch_conv)},
        ),
    ]
