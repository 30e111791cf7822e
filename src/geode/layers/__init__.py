"""Sequence-model layers in the ``torch.nn`` idiom, and the baselines the field's papers compare against.

Papers: RubiConv (:mod:`geode.layers.rubiconv`), Pack3D (:mod:`geode.layers.pack3d`), SpecDrop
(:mod:`geode.layers.specdrop`). Field-level baselines:
document-masked attention on packed sequences (:mod:`geode.layers.attention`), positional mechanisms indexed by
the packed sequence position, 1-D RoPE and learned absolute embeddings (:mod:`geode.layers.positional`).
"""

from __future__ import annotations

from geode.layers import pack3d as _pack3d
from geode.layers import rubiconv as _rubiconv
from geode.layers import specdrop as _specdrop
from geode.layers.attention import (
    check_cu_seqlens,
    dense_document_masked_attention,
    document_ids,
    document_masked_attention,
)
from geode.layers.pack3d import *  # noqa: F403
from geode.layers.positional import LearnedPositionalEmbedding, apply_rotary, rope_1d, rope_frequencies
from geode.layers.rubiconv import *  # noqa: F403
from geode.layers.specdrop import *  # noqa: F403

__all__ = [
    "LearnedPositionalEmbedding",
    "apply_rotary",
    "check_cu_seqlens",
    "dense_document_masked_attention",
    "document_ids",
    "document_masked_attention",
    "rope_1d",
    "rope_frequencies",
]
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_pack3d.__all__, *_rubiconv.__all__, *_specdrop.__all__]
