"""Benchmark of RubiConv: the packed long convolution against the per-document FFT loop and the padded batch.

Forward+backward, and forward alone, on a "mixed" packing of documents (the strongest CPU baseline is the
per-document loop of FFTs; issue 19's goal on a CPU is >= 1.5x over it at 64k tokens, forward and
backward); ``full`` size is meant for a GPU machine. The forward+backward baseline is the loop with its own
backward (:func:`per_document_conv_loop`, issue 44): autograd through :func:`per_document_conv`'s slices builds a
full-size gradient per document and overstated the speed-up about 5x (the claim still times that one).
"""

from __future__ import annotations

from geode.claims.bench import BenchCase, Target

__all__ = ["cases"]

_TOTALS = {"smoke": 2_048, "quick": 65_536, "full": 262_144}


def _same_gradients(candidate, baseline) -> None:
    """Input and kernel gradients agree to 1e-5 of each one's largest entry (float32 sums over 2k tokens)."""
    import torch

    for name, a, b in zip(("grad_x", "grad_kernel"), candidate, baseline):
        scale = max(1.0, float(b.abs().max()))
        err = float((a - b).abs().max())
        assert err <= 1e-5 * scale, f"{name}: max abs difference {err:.3g} > 1e-5 x {scale:.3g}"
    assert all(isinstance(t, torch.Tensor) for t in (*candidate, *baseline))


def cases(size: str) -> list[BenchCase]:
    """Forward+backward at ``N`` packed tokens (mixed document lengths), 64 channels."""
    import numpy as np
    import torch

    from geode.layers.rubiconv import (
        cu_seqlens_from_lengths,
        packed_long_conv,
        padded_batch_conv,
        per_document_conv,
        per_document_conv_loop,
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
            return xx.grad, kk.grad

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
            compare=_same_gradients,
            baselines={
                "per-document FFT loop": fwd_bwd(per_document_conv_loop),
                "padded batch": fwd_bwd(padded_batch_conv),
            },
        ),
        BenchCase(
            f"forward, {total} tokens, {lengths.size} documents, D={d}",
            candidate=fwd(packed_long_conv),
            baselines={"per-document FFT loop": fwd(per_document_conv), "padded batch": fwd(padded_batch_conv)},
        ),
    ]
