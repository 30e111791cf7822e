"""Sequence-model layers in the ``torch.nn`` idiom, and the baselines the field's papers compare against.

Papers: RubiConv (:mod:`geode.layers.rubiconv`), Pack3D (:mod:`geode.layers.pack3d`), SpecDrop
(:mod:`geode.layers.specdrop`). Field-level baselines:
document-masked attention on packed sequences (:mod:`geode.layers.attention`), positional mechanisms indexed by
the packed sequence position, 1-D RoPE and learned absolute embeddings (:mod:`geode.layers.positional`).

Papers and their names
----------------------
Every paper's public names are importable from the field (``from geode.layers import RubiConv``) and from the
paper's package (``from geode.layers.rubiconv import RubiConv``); ``geode show <slug>`` prints the same with an
example.

``rubiconv``: RubiConv, boundary-respecting FFT long convolution on packed sequences::

    from geode.layers import (MIXES, PackedConvPlan, RubiConv, cu_seqlens_from_lengths, fft_size, packed_long_conv,
                              padded_batch_conv, per_document_conv, per_document_conv_loop, plan_packed_conv,
                              sample_document_lengths, single_fft_conv)

* ``packed_long_conv``: ``(x, kernel, cu_seqlens) -> y``, the exact per-document causal convolution (differentiable);
* ``RubiConv``: the ``nn.Module`` mixer (implicit or explicit filter) taking ``cu_seqlens`` in ``forward``;
* ``plan_packed_conv`` (returns ``PackedConvPlan``): the reusable bucketing of one packing;
* ``per_document_conv``, ``padded_batch_conv``, ``single_fft_conv``: the loop reference, the padded batch, the
  single FFT over the row (it leaks across documents);
* ``per_document_conv_loop``: the same loop with a hand-written backward (the fair forward+backward baseline);
* ``cu_seqlens_from_lengths``: document lengths to FlashAttention-style offsets; ``fft_size``: the FFT size rule;
* ``sample_document_lengths``, ``MIXES``: synthetic packings (a tuple of the length-mix names).

``pack3d``: Pack3D, geometry-aware local-global attention on packed 3-D tokens::

    from geode.layers import (CLASS_NAMES, MODEL_KINDS, PACKINGS, DenseAxialRoPEAttention, Pack3DAttention,
                              PackedSequenceAttention, TokenSegmenter, axial_rope_3d, boundary_labels, check_coords,
                              grid_coords, hilbert_index, macro_dice, make_segmenter, morton_index,
                              pack3d_attention, packed_sequence_attention, packing_order, repacking_volumes)

* ``Pack3DAttention``: the layer, ``forward(x, coords)``: exact 3-D neighbourhood, block summaries, axial RoPE;
* ``pack3d_attention``: its kernel on projected queries, keys and values; ``axial_rope_3d``: the rotary embedding;
* ``DenseAxialRoPEAttention``: dense attention with the same RoPE (the speed baseline);
* ``PackedSequenceAttention``, ``packed_sequence_attention``: the sequence-index (packed order) baseline;
* ``TokenSegmenter``, ``make_segmenter``, ``MODEL_KINDS``: a per-token classifier and its matched variants (a tuple
  of their kinds);
* ``grid_coords``, ``packing_order``, ``PACKINGS``, ``morton_index``, ``hilbert_index``: grids and packings (a
  tuple of the packing names);
* ``repacking_volumes``, ``boundary_labels``, ``CLASS_NAMES``, ``macro_dice``: the repacking benchmark (a tuple of
  the class names) and its score;
* ``check_coords``: validate integer grid coordinates.

``specdrop``: SpecDrop, fixed parameter-free category routing::

    from geode.layers import (BranchMLP, LearnedRouterMerge, SpecDropMerge, SpecDropNet, branch_pruning_drops,
                              specialization_index)

* ``SpecDropMerge``: the fixed merge weights :math:`a_k(c)/S` of a batch of category tags;
* ``SpecDropNet``: K branches merged by SpecDrop, No-Routing or a learned router; ``BranchMLP``: the branches;
* ``LearnedRouterMerge``: the learned softmax router baseline (with its load-balancing loss);
* ``branch_pruning_drops``, ``specialization_index``: the pruning analysis of branch specialisation.
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
