"""Tests for Pack3D attention, axial RoPE, the packed-sequence baselines and the repacking benchmark data."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from geode.layers import LearnedPositionalEmbedding, apply_rotary, rope_1d, rope_frequencies
from geode.layers.pack3d import (
    CLASS_NAMES,
    MODEL_KINDS,
    PACKINGS,
    DenseAxialRoPEAttention,
    Pack3DAttention,
    PackedSequenceAttention,
    axial_rope_3d,
    boundary_labels,
    check_coords,
    grid_coords,
    hilbert_index,
    macro_dice,
    make_segmenter,
    morton_index,
    pack3d_attention,
    packed_sequence_attention,
    packing_order,
    repacking_volumes,
)

torch.set_num_threads(1)
F64 = torch.float64


def box(shape: tuple[int, int, int]) -> torch.Tensor:
    return torch.as_tensor(grid_coords(shape))


def brute_pack3d(q, k, v, g, r, b):
    """Pack3D by its definition, query by query, with Python loops (independent of the tiled kernels)."""
    bsz, n, _, d = q.shape
    out = torch.zeros_like(v)
    for bi in range(bsz):
        gb = g[bi]
        ext = (gb.amax(0) + 1).tolist()  # each sample's own extent (issue 19: batch independence)
        blocks: dict[tuple, list[int]] = {}
        if b is not None:
            for m in range(n):
                blocks.setdefault(tuple((gb[m] // b).tolist()), []).append(m)
        for i in range(n):
            near = [m for m in range(n) if int((gb[m] - gb[i]).abs().max()) <= r]
            keys, vals = [k[bi, m] for m in near], [v[bi, m] for m in near]
            for c, members in blocks.items():
                inside = all(
                    int(gb[i, a]) - r <= c[a] * b and min(c[a] * b + b, ext[a]) - 1 <= int(gb[i, a]) + r
                    for a in range(3)
                )
                if not inside:
                    keys.append(k[bi, members].mean(0))
                    vals.append(v[bi, members].mean(0))
            kk, vv = torch.stack(keys), torch.stack(vals)
            s = torch.einsum("hd,shd->hs", q[bi, i], kk) / math.sqrt(d)
            out[bi, i] = torch.einsum("hs,shd->hd", s.softmax(-1), vv)
    return out


def brute_sequence(q, k, v, w, block_len):
    bsz, n, _, d = q.shape
    out = torch.zeros_like(v)
    for i in range(n):
        near = [m for m in range(n) if abs(m - i) <= w]
        keys, vals = [k[:, m] for m in near], [v[:, m] for m in near]
        if block_len is not None:
            for c in range(-(-n // block_len)):
                lo, hi = c * block_len, min(c * block_len + block_len, n) - 1
                if not (i - w <= lo and hi <= i + w):
                    keys.append(k[:, lo : hi + 1].mean(1))
                    vals.append(v[:, lo : hi + 1].mean(1))
        kk, vv = torch.stack(keys, 1), torch.stack(vals, 1)
        s = torch.einsum("bhd,bshd->bhs", q[:, i], kk) / math.sqrt(d)
        out[:, i] = torch.einsum("bhs,bshd->bhd", s.softmax(-1), vv)
    return out


def qkv(seed: int, b: int, n: int, heads: int = 2, d: int = 6, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(b, n, heads, d, generator=g, dtype=dtype) for _ in range(3))


# ------------------------------------------------------------------------------------------------ RoPE


def test_rope_frequencies_and_rotation_preserve_norms():
    assert torch.allclose(rope_frequencies(3, 1000.0), torch.tensor([1.0, 0.1, 0.01]))
    x = torch.randn(5, 8, dtype=F64)
    y = apply_rotary(x, torch.randn(5, 4, dtype=F64))
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    with pytest.raises(ValueError, match="channels"):
        apply_rotary(x, torch.zeros(5, 3))


def test_rope_1d_scores_depend_only_on_the_index_difference():
    q, k = torch.randn(1, 1, 16, dtype=F64), torch.randn(1, 1, 16, dtype=F64)
    pos = torch.tensor([3.0])

    def score(i, j):
        return float((rope_1d(q, pos * 0 + i) * rope_1d(k, pos * 0 + j)).sum())

    for i, j in [(5, 2), (40, 37), (1000, 997)]:
        assert score(i, j) == pytest.approx(score(3, 0), abs=1e-9)
    assert abs(score(5, 2) - score(5, 3)) > 1e-3


def test_axial_rope_scores_depend_only_on_coordinate_differences():
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 1, 3, 16, generator=gen, dtype=F64), torch.randn(1, 1, 3, 16, generator=gen, dtype=F64)

    def score(a, b):
        ga, gb = torch.tensor([a]), torch.tensor([b])
        return (axial_rope_3d(q, ga) * axial_rope_3d(k, gb)).sum(-1)

    ref = score([2, 5, 1], [0, 1, 4])
    for shift in ([1, 0, 0], [7, 3, 11], [0, 20, 2]):
        s = np.asarray(shift)
        torch.testing.assert_close(score((np.array([2, 5, 1]) + s).tolist(), (np.array([0, 1, 4]) + s).tolist()), ref)
    # <rot(q, a), rot(k, b)> = <rot(q, a - b), k>: relative offsets only
    torch.testing.assert_close(ref, (axial_rope_3d(q, torch.tensor([[2, 4, -3]])) * k).sum(-1))
    # each axis matters on its own (no aliasing between z, y and x)
    for axis in range(3):
        off = [0, 0, 0]
        off[axis] = 1
        assert (score(off, [0, 0, 0]) - score([0, 0, 0], [0, 0, 0])).abs().max() > 1e-3


def test_axial_rope_keeps_norms_origin_and_content_channels():
    x = torch.randn(2, 5, 3, 16, dtype=F64)
    g = torch.randint(0, 9, (2, 5, 3))
    y = axial_rope_3d(x, g)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(y[..., 12:], x[..., 12:])  # 16 channels: 2 pairs per axis, 4 unrotated
    torch.testing.assert_close(axial_rope_3d(x, torch.zeros(5, 3, dtype=torch.long)), x)
    with pytest.raises(ValueError, match="at least 6 channels"):
        axial_rope_3d(torch.randn(1, 2, 4), torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="coords must have shape"):
        axial_rope_3d(x, torch.zeros(5, 2, dtype=torch.long))


def test_learned_positional_embedding_adds_rows_by_index():
    pe = LearnedPositionalEmbedding(6, 4)
    x = torch.zeros(2, 5, 4)
    torch.testing.assert_close(pe(x)[1], pe.table[:5].detach())
    with pytest.raises(ValueError, match="N <= 6"):
        pe(torch.zeros(1, 7, 4))


# ------------------------------------------------------------------------------------------------ the kernel


CASES = [(1, 2), (1, None), (0, 3), (2, 2), (1, 4), (4, 2)]


@pytest.mark.parametrize(("r", "b"), CASES)
@pytest.mark.parametrize("method", ["tiles", "gather"])
def test_matches_the_definition_on_a_sparse_grid_whose_extent_blocks_do_not_divide(r, b, method):
    full = box((5, 3, 4))  # 5 x 3 x 4: neither 2 nor 3 nor 4 divides every extent
    gen = torch.Generator().manual_seed(r * 10 + (b or 0))
    g = torch.stack([full[torch.randperm(60, generator=gen)[:40]] for _ in range(2)])  # a different set per sample
    q, k, v = qkv(1, 2, 40)
    want = brute_pack3d(q, k, v, g, r, b)
    torch.testing.assert_close(pack3d_attention(q, k, v, g, r, b, method=method), want, atol=1e-12, rtol=0)


@pytest.mark.parametrize("method", ["tiles", "gather"])
def test_a_samples_output_does_not_depend_on_the_rest_of_the_batch(method):
    """Issue 19: the far-face block cut used the batch's extent, so a sample changed with its batch-mates."""
    gen = torch.Generator().manual_seed(7)
    small = box((5, 3, 4))[torch.randperm(60, generator=gen)[:40]]  # extent (5, 3, 4): blocks of 2 are cut
    big = box((6, 4, 6))[torch.randperm(144, generator=gen)[:40]]  # another extent
    q, k, v = qkv(1, 2, 40)
    alone = pack3d_attention(q[:1], k[:1], v[:1], small[None], 1, 2, method=method)
    both = pack3d_attention(q, k, v, torch.stack([small, big]), 1, 2, method=method)
    torch.testing.assert_close(both[:1], alone, atol=1e-12, rtol=0)
    other = pack3d_attention(q[1:], k[1:], v[1:], big[None], 1, 2, method=method)
    torch.testing.assert_close(both[1:], other, atol=1e-12, rtol=0)
    # a fixed grid_shape is the other way to make the cut independent of the batch
    fixed = pack3d_attention(q, k, v, torch.stack([small, big]), 1, 2, method=method, grid_shape=(6, 4, 6))
    torch.testing.assert_close(fixed[1:], other, atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="grid_shape"):
        pack3d_attention(q, k, v, torch.stack([small, big]), 1, 2, grid_shape=(5, 3, 4))


@pytest.mark.parametrize("tile", [1, 2, 3, 5])
def test_tile_size_and_a_shared_layout_do_not_change_the_result(tile):
    g = box((4, 4, 3))[torch.randperm(48, generator=torch.Generator().manual_seed(3))[:30]]
    q, k, v = qkv(2, 3, 30)
    want = brute_pack3d(q, k, v, g.expand(3, 30, 3), 1, 2)
    torch.testing.assert_close(pack3d_attention(q, k, v, g, 1, 2, tile=tile), want, atol=1e-12, rtol=0)
    small = pack3d_attention(q, k, v, g, 1, 2, tile=tile, max_elements=50)  # many chunks
    torch.testing.assert_close(small, want, atol=1e-12, rtol=0)


def test_local_part_alone_is_masked_dense_attention():
    g = box((4, 3, 5))
    q, k, v = qkv(4, 2, 60)
    dist = (g[:, None, :] - g[None, :, :]).abs().amax(-1)
    for r in (0, 1, 2):
        s = torch.einsum("bnhd,bmhd->bhnm", q, k) / math.sqrt(6)
        s = s.masked_fill(dist > r, float("-inf"))
        want = torch.einsum("bhnm,bmhd->bnhd", s.softmax(-1), v)
        for method in ("tiles", "gather"):
            got = pack3d_attention(q, k, v, g, r, None, method=method)
            torch.testing.assert_close(got, want, atol=1e-12, rtol=0)


def test_radius_spanning_the_grid_is_dense_attention_with_the_same_rope():
    torch.manual_seed(0)
    g = box((4, 3, 4))[torch.randperm(48)]
    x = torch.randn(2, 48, 24, dtype=F64)
    dense = DenseAxialRoPEAttention(24, 2).double()
    for b in (None, 1, 2, 4):
        pack = Pack3DAttention(24, 2, local_radius=3, block_size=b).double()
        pack.load_state_dict(dense.state_dict())
        torch.testing.assert_close(pack(x, g), dense(x, g), atol=1e-12, rtol=0)


def test_blocks_inside_the_neighbourhood_are_not_summarised_again():
    # r = 1, b = 2 on a 6^3 grid: exactly one block lies inside each 3^3 neighbourhood, so every query sees
    # 27 exact keys and 26 of the 27 summaries; dropping that rule would change the result
    g = box((6, 6, 6))
    q, k, v = qkv(5, 1, 216)
    got = pack3d_attention(q, k, v, g, 1, 2)
    torch.testing.assert_close(got, brute_pack3d(q, k, v, g[None], 1, 2), atol=1e-12, rtol=0)
    assert (got - pack3d_attention(q, k, v, g, 1, 3)).abs().max() > 1e-3


@pytest.mark.parametrize(
    ("w", "block_len", "tile"), [(3, 5, None), (0, 4, None), (3, None, 2), (13, 64, None), (2, 7, 5)]
)
def test_packed_sequence_attention_matches_its_definition(w, block_len, tile):
    q, k, v = qkv(6, 2, 37, d=4)
    got = packed_sequence_attention(q, k, v, w, block_len, tile=tile)
    torch.testing.assert_close(got, brute_sequence(q, k, v, w, block_len), atol=1e-12, rtol=0)


# ------------------------------------------------------------------------------------------------ invariance


def test_pack3d_is_equivariant_to_any_repacking():
    torch.manual_seed(1)
    attn = Pack3DAttention(64, 4, local_radius=1, block_size=4)
    g = box((8, 8, 8))
    x = torch.randn(2, 512, 64)
    y = attn(x, g)
    for kind in ("raster_xyz", "morton", "hilbert", "block_shuffle", "random"):
        order = torch.as_tensor(packing_order((8, 8, 8), kind, 3))
        y_p = attn(x[:, order], g[order])
        assert (y_p - y[:, order]).abs().max() < 1e-5, kind
    # one permutation per sample
    perms = torch.stack([torch.randperm(512) for _ in range(2)])
    xs = torch.stack([x[i, perms[i]] for i in range(2)])
    gs = torch.stack([g[perms[i]] for i in range(2)])
    ys = attn(xs, gs)
    for i in range(2):
        assert (ys[i] - y[i, perms[i]]).abs().max() < 1e-5


def test_the_segmenter_is_equivariant_and_the_sequence_baselines_are_not():
    g = box((8, 8, 8))
    x = torch.rand(2, 512, 1)
    order = torch.as_tensor(packing_order((8, 8, 8), "hilbert"))
    for kind in MODEL_KINDS:
        torch.manual_seed(2)
        model = make_segmenter(kind, dim=24, heads=2, max_positions=512)
        with torch.no_grad():
            if model.pos is not None:
                model.pos.table.normal_()  # a trained-looking table, not the near-zero initialisation
            diff = (model(x[:, order], g[order]) - model(x, g)[:, order]).abs().max()
        if kind in ("pack3d", "dense"):
            assert diff < 1e-5, kind
        else:
            assert diff > 1e-2, kind


def test_packed_rope_and_window_see_the_order_not_the_geometry():
    torch.manual_seed(3)
    attn = PackedSequenceAttention(24, 2, window=13, block_len=64)
    g = box((6, 6, 6))
    x = torch.randn(1, 216, 24)
    order = torch.randperm(216)
    assert (attn(x[:, order], g[order]) - attn(x, g)[:, order]).abs().max() > 1e-2
    torch.testing.assert_close(attn(x, g), attn(x))  # coords are ignored


# ------------------------------------------------------------------------------------------------ gradients


@pytest.mark.parametrize("method", ["tiles", "gather"])
def test_gradcheck_pack3d(method):
    g = box((3, 3, 2))[torch.randperm(18, generator=torch.Generator().manual_seed(0))[:14]]
    q, k, v = (t.requires_grad_(True) for t in qkv(7, 2, 14, heads=1))
    assert torch.autograd.gradcheck(lambda a, b, c: pack3d_attention(a, b, c, g, 1, 2, method=method), (q, k, v))


def test_gradcheck_packed_sequence():
    q, k, v = (t.requires_grad_(True) for t in qkv(8, 1, 11, heads=2, d=2))
    assert torch.autograd.gradcheck(lambda a, b, c: packed_sequence_attention(a, b, c, 2, 3, tile=3), (q, k, v))


def test_gradients_reach_every_parameter_and_stay_finite_on_sparse_sets():
    torch.manual_seed(4)
    attn = Pack3DAttention(24, 2, local_radius=1, block_size=2)
    g = box((5, 5, 5))[torch.randperm(125)[:40]]  # an empty grid cell has no key: its slot stays finite
    x = torch.randn(2, 40, 24, requires_grad=True)
    attn(x, g).square().sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
    for name, p in attn.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name


# ------------------------------------------------------------------------------------------------ validation


def test_bad_inputs_fail_with_clear_errors():
    attn = Pack3DAttention(24, 2)
    x = torch.randn(1, 8, 24)
    g = box((2, 2, 2))
    with pytest.raises(TypeError, match="coords must hold integer"):
        attn(x, g.float())
    with pytest.raises(ValueError, match=r"coords must have shape \(1, 8, 3\)"):
        attn(x, g[:, :2])
    with pytest.raises(ValueError, match=r"coords must have shape"):
        attn(x, g[:7])
    with pytest.raises(ValueError, match=r"repeats grid point \(0, 0, 1\)"):
        attn(x, torch.cat([g[:7], g[1:2]]))
    with pytest.raises(ValueError, match="coords must be >= 0"):
        attn(x, g - 1)
    with pytest.raises(TypeError, match="integer torch.Tensor"):
        attn(x, g.tolist())
    with pytest.raises(ValueError, match=r"x must have shape \(B, N, 24\)"):
        attn(torch.randn(1, 8, 12), g)
    with pytest.raises(TypeError, match="floating-point"):
        attn(torch.ones(1, 8, 24, dtype=torch.long), g)
    with pytest.raises(ValueError, match="divisible by heads"):
        Pack3DAttention(25, 2)
    with pytest.raises(ValueError, match=">= 6 for axial RoPE"):
        Pack3DAttention(16, 4)
    with pytest.raises(ValueError, match="local_radius must be >= 0"):
        Pack3DAttention(24, 2, local_radius=-1)
    with pytest.raises(ValueError, match="block_size must be >= 1"):
        Pack3DAttention(24, 2, block_size=0)
    with pytest.raises(ValueError, match="rope_base must be > 1.0"):
        Pack3DAttention(24, 2, rope_base=1.0)
    with pytest.raises(ValueError, match="method must be one of"):
        pack3d_attention(*qkv(0, 1, 8), g, method="flash")
    with pytest.raises(ValueError, match="q and k must have the same shape"):
        pack3d_attention(torch.randn(1, 8, 2, 6), torch.randn(1, 8, 2, 4), torch.randn(1, 8, 2, 6), g)
    with pytest.raises(ValueError, match="position must be one of"):
        PackedSequenceAttention(24, 2, position="learned")
    assert check_coords(g, 3, 8).shape == (3, 8, 3)


def test_empty_sequences_give_empty_outputs():
    q, k, v = qkv(0, 2, 0)
    assert pack3d_attention(q, k, v, torch.zeros(0, 3, dtype=torch.long)).shape == (2, 0, 2, 6)
    assert packed_sequence_attention(q, k, v, 2, 3).shape == (2, 0, 2, 6)


# ------------------------------------------------------------------------------------------------ the data


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_hilbert_curve_is_a_bijection_with_unit_steps(k):
    g = grid_coords((2**k,) * 3)
    h = hilbert_index(g, k)
    assert np.array_equal(np.sort(h), np.arange(8**k))
    walk = g[np.argsort(h)]
    assert np.all(np.abs(np.diff(walk, axis=0)).sum(1) == 1)  # face-adjacent steps only
    m = morton_index(g, k)
    assert np.array_equal(np.sort(m), np.arange(8**k))


def test_morton_interleaves_bits_z_first():
    assert morton_index(np.array([[0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 2]])).tolist() == [1, 2, 4, 7, 8]
    with pytest.raises(TypeError, match="integers"):
        morton_index(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="shape"):
        hilbert_index(np.zeros((2, 2), dtype=int))


@settings(max_examples=20, deadline=None)
@given(shape=st.tuples(st.integers(1, 7), st.integers(1, 7), st.integers(1, 7)), seed=st.integers(0, 99))
def test_every_packing_is_a_permutation_of_the_grid(shape, seed):
    n = int(np.prod(shape))
    for kind in PACKINGS:
        order = packing_order(shape, kind, seed)
        assert np.array_equal(np.sort(order), np.arange(n)), kind


def test_packings_have_their_layouts():
    g = grid_coords((4, 4, 4))
    xyz = g[packing_order((4, 4, 4), "raster_xyz")]
    assert np.array_equal(xyz[:4], [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]])  # z runs fastest
    yzx = g[packing_order((4, 4, 4), "raster_yzx")]
    assert np.array_equal(yzx[4], [1, 0, 0]) and np.array_equal(yzx[16], [0, 1, 0])
    bs = g[packing_order((4, 4, 4), "block_shuffle", 0, block=2)]
    cubes = (bs // 2).reshape(8, 8, 3)
    assert all(len({tuple(c) for c in cube}) == 1 for cube in cubes)  # 8 consecutive tokens = one 2^3 cube
    assert not np.array_equal(packing_order((4, 4, 4), "random", 0), packing_order((4, 4, 4), "random", 1))
    assert np.array_equal(packing_order((4, 4, 4), "random", 5), packing_order((4, 4, 4), "random", 5))
    with pytest.raises(ValueError, match="packing must be one of"):
        packing_order((4, 4, 4), "snake")


def test_boundary_labels_on_a_box():
    occ = np.zeros((7, 7, 7), dtype=bool)
    occ[1:6, 2:5, 2:5] = True  # 5 x 3 x 3 box
    lab = boundary_labels(occ)
    assert lab[0, 0, 0] == 0
    assert lab[1, 3, 3] == 2 and lab[5, 3, 3] == 2  # top and bottom faces: z-surface
    assert lab[3, 2, 3] == 3 and lab[3, 3, 2] == 3  # side faces: xy-surface
    assert lab[3, 3, 3] == 1 and (lab == 1).sum() == 3  # the column z = 2..4 at (3, 3)
    assert len(CLASS_NAMES) == 4


def test_volumes_are_seeded_and_keep_off_the_faces():
    occ, lab = repacking_volumes(6, 10, seed=3)
    occ2, lab2 = repacking_volumes(6, 10, seed=3)
    assert np.array_equal(occ, occ2) and np.array_equal(lab, lab2)
    assert occ.shape == (6, 10, 10, 10) and occ.dtype == np.float32
    for a in (1, 2, 3):
        assert occ.take([0, 9], axis=a).sum() == 0
    assert set(np.unique(lab)) == {0, 1, 2, 3}
    assert np.array_equal(lab, boundary_labels(occ > 0))
    with pytest.raises(ValueError, match="size must be >= 6"):
        repacking_volumes(1, 5)


def test_macro_dice():
    t = np.array([0, 1, 1, 2, 3, 3])
    assert macro_dice(t, t)[0] == 1.0
    p = np.array([0, 1, 0, 2, 3, 1])
    score, per = macro_dice(p, t)
    assert per == {1: pytest.approx(2 / 4), 2: 1.0, 3: pytest.approx(2 / 3)}
    assert score == pytest.approx((0.5 + 1 + 2 / 3) / 3)
    assert macro_dice(np.zeros(3), np.zeros(3))[0] == 1.0  # absent classes score 1
    with pytest.raises(ValueError, match="same shape"):
        macro_dice(t, t[:3])


# ------------------------------------------------------------------------------------------------ claim v2 (issue 19)


def test_3d_baselines_differ_from_pack3d_only_in_the_position_signal():
    """Same weights: position='none' in the 3-D neighbourhood is equivariant; 1-D RoPE on the packed index is not."""
    torch.manual_seed(4)
    ref = Pack3DAttention(24, 2, 1, 2)
    none, rope = Pack3DAttention(24, 2, 1, 2, position="none"), Pack3DAttention(24, 2, 1, 2, position="rope1d")
    none.load_state_dict(ref.state_dict())
    rope.load_state_dict(ref.state_dict())
    g = box((4, 4, 4))
    x = torch.randn(1, 64, 24)
    order = torch.randperm(64, generator=torch.Generator().manual_seed(1))
    assert (none(x[:, order], g[order]) - none(x, g)[:, order]).abs().max() < 1e-5
    assert (rope(x[:, order], g[order]) - rope(x, g)[:, order]).abs().max() > 1e-2
    assert (ref(x, g) - none(x, g)).abs().max() > 1e-3  # axial RoPE does act
    with pytest.raises(ValueError, match="position must be one of"):
        Pack3DAttention(24, 2, position="sinusoidal")


def test_marker_task_labels_and_claim_thresholds():
    from geode.claims import load_claim
    from geode.layers.pack3d.claim import MARKER_RADIUS, marker_volumes

    x, lab = marker_volumes(3, 8, np.random.default_rng(0))
    assert x.shape == (3, 8, 8, 8, 2) and lab.shape == (3, 8, 8, 8)
    g = grid_coords((8, 8, 8)).reshape(8, 8, 8, 3)
    for i in range(3):
        m = np.argwhere(x[i, ..., 1] == 1)
        assert m.shape == (1, 3)
        dist = np.sqrt(((g - m[0]) ** 2).sum(-1))
        occ = x[i, ..., 0] > 0
        assert np.array_equal(lab[i] == 0, ~occ)
        assert np.array_equal(lab[i] == 2, occ & (dist <= MARKER_RADIUS))
    c = load_claim("pack3d")
    t = {x.name: x for x in (*c.thresholds, *c.floors)}
    assert (t["invariant"].value, t["learned_pe_fails"].value, t["rope1d_fails"].value) == (0.01, 0.15, 0.15)
    assert t["invariant"].controls == ("rope1d_3d_dice_range",)
    assert {f.name for f in c.floors} == {"learned_pe_floor", "rope1d_floor"}
    assert t["pack3d_floor"].controls == ("dice_untrained_pack3d_in_distribution",)
