from __future__ import annotations

import pytest
import torch

from geode.core.quant import minmax_dequantize, minmax_quantize, pack_bits, pack_int4, unpack_bits, unpack_int4


@pytest.mark.parametrize("bits", [1, 2, 3, 5, 8])
def test_pack_bits_round_trips(bits):
    g = torch.Generator().manual_seed(bits)
    codes = torch.randint(0, 2**bits, (3, 17), generator=g)
    packed = pack_bits(codes, bits)
    assert packed.dtype == torch.uint8 and packed.shape == (3, (17 * bits + 7) // 8)
    assert torch.equal(unpack_bits(packed, bits, 17), codes)


def test_pack_bits_rejects_out_of_range_codes_and_bits():
    with pytest.raises(ValueError, match="codes"):
        pack_bits(torch.tensor([[8]]), 3)
    with pytest.raises(ValueError, match="bits"):
        pack_bits(torch.tensor([[1]]), 9)


def test_int4_packing_moved_to_core_is_the_one_optim_uses():
    import geode.optim as optim

    assert optim.pack_int4 is pack_int4 and optim.unpack_int4 is unpack_int4
    c = torch.arange(-8, 8, dtype=torch.int8).reshape(2, 8)
    assert torch.equal(unpack_int4(pack_int4(c)), c)


def test_minmax_grid_contains_zero_and_reconstructs_constants():
    w = torch.tensor([[0.0, 0.5, -0.25, 1.0]])
    c, s, z = minmax_quantize(w, bits=8, group_size=4)
    wq = minmax_dequantize(c, s, z)
    assert wq[0, 0] == 0.0 and torch.allclose(wq, w, atol=float(s.max()) / 2 + 1e-7)
    with pytest.raises(ValueError, match="clip"):
        minmax_quantize(w, bits=3, group_size=4, clip=0.0)
