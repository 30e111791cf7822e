"""geode.layers's public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import geode.layers as layers


def _t(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _grid(n=2):
    return torch.as_tensor(layers.grid_coords((n, n, n)))


def _net():
    torch.manual_seed(0)
    return layers.SpecDropNet(n_in=4, hidden=6, n_out=3, num_branches=2, num_categories=2)


# main methods of the modules, as wrappers whose parameters carry the method's own argument names
def _pe_forward(x):
    return layers.LearnedPositionalEmbedding(8, 4)(x)


def _dense_axial_forward(x, coords):
    torch.manual_seed(0)
    return layers.DenseAxialRoPEAttention(12, 2)(x, coords)


def _pack3d_forward(x, coords, grid_shape=None):
    torch.manual_seed(0)
    return layers.Pack3DAttention(12, 2, local_radius=1, block_size=2)(x, coords, grid_shape)


def _packed_seq_forward(x, coords=None):
    torch.manual_seed(0)
    return layers.PackedSequenceAttention(8, 2, window=3, block_len=4)(x, coords)


def _segmenter_forward(x, coords):
    torch.manual_seed(0)
    return layers.make_segmenter("pack3d", dim=12, depth=1, heads=2, block_size=2, max_positions=8)(x, coords)


def _rubiconv_forward(x, cu_seqlens):
    torch.manual_seed(0)
    return layers.RubiConv(channels=4, max_len=16, filter_hidden=8)(x, cu_seqlens)


def _branch_forward(x):
    torch.manual_seed(0)
    return layers.BranchMLP(4, 6, 3, 2)(x)


def _router_forward(x):
    torch.manual_seed(0)
    return layers.LearnedRouterMerge(4, 2)(x)


def _specdrop_merge_forward(category):
    return layers.SpecDropMerge(2, 2)(category)


def _specdrop_net_forward(x, category=None, keep=None):
    return _net()(x, category, keep)


METHODS = {
    "LearnedPositionalEmbedding.forward": _pe_forward,
    "DenseAxialRoPEAttention.forward": _dense_axial_forward,
    "Pack3DAttention.forward": _pack3d_forward,
    "PackedSequenceAttention.forward": _packed_seq_forward,
    "TokenSegmenter.forward": _segmenter_forward,
    "RubiConv.forward": _rubiconv_forward,
    "BranchMLP.forward": _branch_forward,
    "LearnedRouterMerge.forward": _router_forward,
    "SpecDropMerge.forward": _specdrop_merge_forward,
    "SpecDropNet.forward": _specdrop_net_forward,
}

_CU = [0, 3, 8]
_CONV = lambda: ((_t(8, 4), _t(4, 5, seed=1), _CU), {})  # noqa: E731
_QKV = lambda: ((_t(8, 2, 4), _t(8, 2, 4, seed=1), _t(8, 2, 4, seed=2), _CU), {})  # noqa: E731
_PACKED_QKV = lambda: (_t(1, 8, 2, 4), _t(1, 8, 2, 4, seed=1), _t(1, 8, 2, 4, seed=2))  # noqa: E731

CALLS = {  # -> (args, kwargs), built fresh each time
    # positional and attention
    "LearnedPositionalEmbedding": lambda: ((8, 4), {"init_std": 0.02}),
    "LearnedPositionalEmbedding.forward": lambda: ((_t(2, 5, 4),), {}),
    "apply_rotary": lambda: ((_t(1, 5, 4), _t(5, 2, seed=1)), {}),
    "check_cu_seqlens": lambda: ((_CU, 8), {}),
    "dense_document_masked_attention": _QKV,
    "document_ids": lambda: ((torch.tensor(_CU),), {}),
    "document_masked_attention": lambda: (_QKV()[0], {"block_size": 4}),
    "rope_1d": lambda: ((_t(1, 5, 4),), {"base": 10000.0}),
    "rope_frequencies": lambda: ((2,), {"base": 100.0}),
    # pack3d
    "DenseAxialRoPEAttention": lambda: ((12, 2), {"rope_base": 100.0}),
    "DenseAxialRoPEAttention.forward": lambda: ((_t(1, 8, 12), _grid()), {}),
    "Pack3DAttention": lambda: ((12, 2), {"local_radius": 1, "block_size": 2, "rope_base": 100.0}),
    "Pack3DAttention.forward": lambda: ((_t(1, 8, 12), _grid()), {}),
    "PackedSequenceAttention": lambda: ((8, 2), {"window": 3, "block_len": 4, "rope_base": 10000.0}),
    "PackedSequenceAttention.forward": lambda: ((_t(1, 8, 8),), {}),
    "TokenSegmenter": lambda: ((1, 4, 12, 1, lambda: layers.DenseAxialRoPEAttention(12, 2)), {}),
    "TokenSegmenter.forward": lambda: ((_t(1, 8, 1), _grid()), {}),
    "axial_rope_3d": lambda: ((_t(1, 8, 2, 12), _grid()), {"base": 100.0}),
    "boundary_labels": lambda: ((np.pad(np.ones((2, 2, 2)), 1),), {}),
    "check_coords": lambda: ((_grid(), 1, 8), {}),
    "grid_coords": lambda: (((2, 2, 2),), {}),
    "hilbert_index": lambda: ((layers.grid_coords((2, 2, 2)),), {}),
    "macro_dice": lambda: ((np.arange(8).reshape(2, 2, 2) % 4, np.arange(8).reshape(2, 2, 2) % 3), {}),
    "make_segmenter": lambda: (("pack3d",), {"dim": 12, "depth": 1, "heads": 2, "rope_base": 100.0}),
    "morton_index": lambda: ((layers.grid_coords((2, 2, 2)),), {}),
    "pack3d_attention": lambda: ((*_PACKED_QKV(), _grid()), {"local_radius": 1, "block_size": 2, "scale": 0.5}),
    "packed_sequence_attention": lambda: ((*_PACKED_QKV(), 3, 4), {"scale": 0.5}),
    "packing_order": lambda: (((2, 2, 2), "hilbert"), {}),
    "repacking_volumes": lambda: ((1,), {"size": 6}),
    # rubiconv
    "PackedConvPlan": lambda: (tuple(layers.plan_packed_conv(_CU, 8, 5).__dict__.values()), {}),
    "RubiConv": lambda: ((4, 16), {"filter_hidden": 8, "filter_omega": 1.0, "decay": (3.0, 15.0)}),
    "RubiConv.forward": lambda: ((_t(8, 4), _CU), {}),
    "cu_seqlens_from_lengths": lambda: (([3, 5],), {}),
    "fft_size": lambda: ((9,), {}),
    "packed_long_conv": _CONV,
    "padded_batch_conv": _CONV,
    "per_document_conv": _CONV,
    "per_document_conv_loop": _CONV,
    "plan_packed_conv": lambda: ((_CU, 8, 5), {}),
    "sample_document_lengths": lambda: ((64,), {"mix": "short"}),
    "single_fft_conv": _CONV,
    # specdrop
    "BranchMLP": lambda: ((4, 6, 3, 2), {}),
    "BranchMLP.forward": lambda: ((_t(5, 4),), {}),
    "LearnedRouterMerge": lambda: ((4, 2), {}),
    "LearnedRouterMerge.forward": lambda: ((_t(5, 4),), {}),
    "SpecDropMerge": lambda: ((2, 2), {"p_active": 0.7, "p_inactive": 0.3}),
    "SpecDropMerge.forward": lambda: ((torch.tensor([0, 1, 1]),), {}),
    "SpecDropNet": lambda: ((4, 6, 3, 2), {"num_categories": 2, "p_active": 0.7, "p_inactive": 0.3}),
    "SpecDropNet.forward": lambda: ((_t(5, 4), torch.tensor([0, 1, 1, 0, 1])), {"keep": torch.tensor([1.0, 0.0])}),
    "branch_pruning_drops": lambda: (
        (_net(), _t(6, 4), torch.tensor([0, 1, 2, 0, 1, 2]), torch.tensor([0, 1, 0, 1, 0, 1]), 2),
        {},
    ),
    "specialization_index": lambda: ((torch.tensor([[0.3, 0.0], [0.1, 0.2]]), [0, 1]), {}),
}
NOT_CALLED = {
    "CLASS_NAMES": "a constant (tuple of names)",
    "MODEL_KINDS": "a constant (tuple of names)",
    "PACKINGS": "a constant (tuple of names)",
    "MIXES": "a constant (tuple of names)",
}
_HOT = "NaN/inf propagate like torch's own layers: no per-step scan in a training forward (documented)"
_NAN = lambda *names: {(n, kind): _HOT for n in names for kind in ("nan", "inf")}  # noqa: E731
_EMPTY_BATCH = "an empty batch gives an empty output (documented)"
OK: dict[str, dict[tuple[str, str], str]] = {
    **{n: _NAN("x") for n in METHODS if n != "SpecDropMerge.forward"},
    **{
        n: _NAN("q", "k", "v")
        for n in (
            "dense_document_masked_attention",
            "document_masked_attention",
            "pack3d_attention",
            "packed_sequence_attention",
        )
    },
    **{
        n: _NAN("x", "kernel")
        for n in (
            "packed_long_conv",
            "padded_batch_conv",
            "per_document_conv",
            "per_document_conv_loop",
            "single_fft_conv",
        )
    },
    "LearnedPositionalEmbedding.forward": {**_NAN("x"), ("x", "empty"): _EMPTY_BATCH},
    "BranchMLP.forward": {**_NAN("x"), ("x", "empty"): _EMPTY_BATCH},
    "LearnedRouterMerge.forward": {**_NAN("x"), ("x", "empty"): _EMPTY_BATCH},
    "RubiConv.forward": {
        **_NAN("x"),
        ("x", "empty"): "0 tokens is a valid packing (cu_seqlens [0, 0]); the error names the cu_seqlens that no "
        "longer end at x's length",
    },
    "TokenSegmenter.forward": {
        **_NAN("x"),
        ("x", "wrong shape"): "(8, 1, 1) is a valid batch of 8 one-token samples; the error names the coords that "
        "no longer match it",
    },
    "apply_rotary": {**_NAN("x", "angles"), ("x", "empty"): _EMPTY_BATCH},
    "axial_rope_3d": {**_NAN("x"), ("x", "empty"): _EMPTY_BATCH},
    "rope_1d": {**_NAN("x"), ("x", "empty"): _EMPTY_BATCH},
    "boundary_labels": {("occupancy", "wrong shape"): "an (N, 1, 1) column is a valid (S_z, S_y, S_x) grid"},
    "cu_seqlens_from_lengths": {("lengths", "empty"): "no documents give the offsets [0] (documented)"},
}


PACKAGE = layers


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []


def test_audit_cu_seqlens_from_lengths_fractional():
    # the audit: [1.5, 2] gave [0, 1, 3] and [0.9, 0.9] gave [0, 0, 0] (fractional lengths truncated)
    with pytest.raises(ValueError, match=r"lengths must be whole numbers; got 1.5 at index 0"):
        layers.cu_seqlens_from_lengths([1.5, 2])
    with pytest.raises(ValueError, match=r"lengths must be whole numbers; got 0.9 at index 0"):
        layers.cu_seqlens_from_lengths([0.9, 0.9])
    with pytest.raises(ValueError, match="lengths"):
        layers.cu_seqlens_from_lengths(torch.tensor([2.0, 0.5]))
    assert layers.cu_seqlens_from_lengths([3.0, 2]).tolist() == [0, 3, 5]  # whole floats are still accepted
    assert layers.cu_seqlens_from_lengths(np.array([3, 1, 2])).tolist() == [0, 3, 4, 6]
