"""Sequence-model layers in the ``torch.nn`` idiom, and the baselines the field's papers compare against.

Papers: RubiConv (:mod:`geode.layers.rubiconv`). Field-level baselines: document-masked attention on packed
sequences (:mod:`geode.layers.attention`).
"""

from __future__ import annotations

from geode.layers.attention import (
    check_cu_seqlens,
    dense_document_masked_attention,
    document_ids,
    document_masked_attention,
)
from geode.layers.rubiconv import (
    RubiConv,
    packed_long_conv,
    padded_batch_conv,
    per_document_conv,
    plan_packed_conv,
    single_fft_conv,
)

__all__ = [
    "RubiConv",
    "check_cu_seqlens",
    "dense_document_masked_attention",
    "document_ids",
    "document_masked_attention",
    "packed_long_conv",
    "padded_batch_conv",
    "per_document_conv",
    "plan_packed_conv",
    "single_fft_conv",
]
