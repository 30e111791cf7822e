"""Benchmark of the AGOP: batched hooked backward passes against a naive per-sequence loop.

One case (the issue's): the AGOP of the next-token loss at ``blocks.0`` of the 2-layer transformer of the
claim over a batch of agreement-language sequences, computed by :func:`~geode.analysis.agop_engagement.agop`
(chunks of 128 sequences, one backward pass each) against :func:`~geode.analysis.agop_engagement.agop_loop`
(one backward pass per sequence, the naive per-example Jacobian loop). Both give the same matrix (tested).

Sizes: ``smoke`` d=16 over 32 sequences; ``quick`` d=64 over 512 sequences (the claim's set-up);
``full`` d=256, 4 layers, over 2048 sequences.
"""

from __future__ import annotations

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {
    "smoke": dict(d=16, n_layers=2, heads=2, n=32),
    "quick": dict(d=64, n_layers=2, heads=2, n=512),
    "full": dict(d=256, n_layers=4, heads=4, n=2048),
}


def cases(size: str) -> list[BenchCase]:
    """AGOP at one layer: batched hooks vs a per-sequence loop."""
    import numpy as np
    import torch

    from geode.analysis.agop_engagement import AgreementLanguage, TinyTransformer, agop, agop_loop

    if size not in _SIZES:
        raise ValueError(f"size must be one of {sorted(_SIZES)}; got {size!r}")
    s = _SIZES[size]
    lang = AgreementLanguage()
    model = TinyTransformer(lang.vocab_size, lang.length, d=s["d"], n_layers=s["n_layers"], heads=s["heads"])
    ids = torch.as_tensor(lang.sample(s["n"], np.random.default_rng(0))[0])
    desc = f"d={s['d']}, {s['n_layers']} layers, {s['n']} sequences of {lang.length} tokens"
    return [
        BenchCase(
            f"AGOP of the next-token loss at blocks.0, batched (128/pass) vs per-sequence loop, {desc}",
            candidate=lambda: agop(model, ids, "blocks.0", batch_size=128),
            baselines={"per-sequence loop": lambda: agop_loop(model, ids, "blocks.0")},
        )
    ]
