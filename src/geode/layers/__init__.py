"""Sequence-model layers in the ``torch.nn`` idiom, and the baselines the field's papers compare against.

Papers: RubiConv (:mod:`geode.layers.rubiconv`), Pack3D (:mod:`geode.layers.pack3d`). Field-level baselines:
document-masked attention on packed sequences (:mod:`geode.layers.attention`), positional mechanisms indexed by
the packed sequence position, 1-D RoPE and learned absolute embeddings (:mod:`geode.layers.positional`).
"""

from __future__ import annotations

from geode.layers.attention import (
    check_cu_seqlens,
    dense_document_masked_attention,
    document_ids,
    document_masked_attention,
)
from geode.layers.pack3d import (
    DenseAxialRoPEAttention,
    Pack3DAttention,
    PackedSequenceAttention,
    axial_rope_3d,
    pack3d_attention,
)
from geode.layers.positional import LearnedPositionalEmbedding, apply_rotary, rope_1d, rope_frequencies
from geode.layers.rubiconv import (
    RubiConv,
    packed_long_conv,
    padded_batch_conv,
    per_document_conv,
    plan_packed_conv,
    single_fft_conv,
)

__all__ = [
    "DenseAxialRoPEAttention",
    "LearnedPositionalEmbedding",
    "Pack3DAttention",
    "PackedSequenceAttention",
    "RubiConv",
    "apply_rotary",
    "axial_rope_3d",
    "check_cu_seqlens",
    "dense_document_masked_attention",
    "document_ids",
    "document_masked_attention",
    "pack3d_attention",
    "packed_long_conv",
    "padded_batch_conv",
    "per_document_conv",
    "plan_packed_conv",
    "rope_1d",
    "rope_frequencies",
    "single_fft_conv",
]
