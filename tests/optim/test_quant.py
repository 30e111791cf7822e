from __future__ import annotations

import pytest
import torch
from torch import nn

from geode.optim import (
    QuantLinear,
    dequantize_rtn,
    pack_int4,
    quantize_model,
    quantize_rtn,
    scale_parameters,
    unpack_int4,
)


def test_int4_packing_round_trips_every_code_and_halves_storage():
    codes = torch.arange(-8, 8, dtype=torch.int8).repeat(3, 2)  # every code at both nibble positions
    codes = torch.cat([codes, codes.flip(-1)], dim=1)
    packed = pack_int4(codes)
    assert packed.dtype == torch.uint8 and packed.shape == (3, codes.shape[1] // 2)
    assert torch.equal(unpack_int4(packed), codes)
    assert torch.equal(unpack_int4(packed, torch.float32), codes.float())


def test_packing_rejects_bad_codes():
    with pytest.raises(ValueError, match="even"):
        pack_int4(torch.zeros(2, 3, dtype=torch.int8))
    with pytest.raises(ValueError, match=r"\[-8, 7\]"):
        pack_int4(torch.full((1, 2), 8, dtype=torch.int8))
    with pytest.raises(TypeError):
        pack_int4(torch.zeros(1, 2))


@pytest.mark.parametrize("bits", [4, 8])
def test_rtn_error_is_at_most_half_a_step_and_exact_on_the_grid(bits):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(6, 64, generator=g)
    codes, scales = quantize_rtn(w, bits=bits, group_size=16)
    qmax = 2 ** (bits - 1) - 1
    assert scales.shape == (6, 4) and (scales > 0).all()
    assert int(codes.abs().max()) <= qmax + 1
    err = (dequantize_rtn(codes, scales) - w).abs().reshape(6, 4, 16)
    assert (err <= scales.unsqueeze(-1) / 2 + 1e-7).all()
    # a weight already on the grid is reproduced exactly
    again = dequantize_rtn(codes, scales)
    c2, s2 = quantize_rtn(again, bits=bits, group_size=16)
    assert torch.allclose(dequantize_rtn(c2, s2), again, atol=1e-6, rtol=0)


def test_rtn_validates_group_size_and_bits():
    with pytest.raises(ValueError, match="group_size"):
        quantize_rtn(torch.randn(2, 10), group_size=4)
    with pytest.raises(ValueError, match="bits"):
        quantize_rtn(torch.randn(2, 8), bits=3, group_size=4)


@pytest.mark.parametrize("pack", [True, False])
def test_quant_linear_forward_is_linear_with_the_dequantised_weight(pack):
    g = torch.Generator().manual_seed(1)
    lin = nn.Linear(64, 5)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(5, 64, generator=g))
    q = QuantLinear.from_linear(lin, bits=4, group_size=32, pack=pack)
    x = torch.randn(7, 64, generator=g)
    codes, scales = quantize_rtn(lin.weight, bits=4, group_size=32)
    ref = nn.functional.linear(x, dequantize_rtn(codes, scales), lin.bias)
    assert torch.allclose(q(x), ref, atol=1e-6)
    assert q.codes_packed.dtype == (torch.uint8 if pack else torch.int8)
    assert q.storage_bytes() == 5 * 64 // (2 if pack else 1) + 5 * 2 * 4 + 5 * 4
    # the gradient reaches the scales: d(loss)/d(scale_g) = sum_j codes_j * d(loss)/d(W_j)
    q(x).sum().backward()
    w_grad = x.sum(0).expand(5, 64)
    expected = (codes.float() * w_grad).reshape(5, 2, 32).sum(-1)
    assert torch.allclose(q.scales.grad, expected, atol=1e-4)


def test_quant_linear_rejects_non_positive_scales():
    codes = torch.zeros(2, 4, dtype=torch.int8)
    with pytest.raises(ValueError, match="positive"):
        QuantLinear(codes, torch.tensor([[1.0], [0.0]]), bits=4)


def test_quantize_model_swaps_linears_and_leaves_only_the_scales_trainable():
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    x = torch.randn(3, 32)
    with torch.no_grad():
        before = model(x)
    names = quantize_model(model, bits=8, group_size=32)
    assert names == ["0", "2"]
    assert all(isinstance(model[i], QuantLinear) for i in (0, 2))
    trainable = [p for p in model.parameters() if p.requires_grad]
    assert trainable == scale_parameters(model)
    with torch.no_grad():
        assert torch.allclose(model(x), before, atol=0.05 * float(before.abs().max()))  # int8 is close to float
    with pytest.raises(ValueError, match="no nn.Linear"):
        quantize_model(nn.Sequential(nn.ReLU()))


def test_quantize_model_keeps_the_lm_head_of_a_tiny_llama():
    from geode.models.tiny_lm import build_tiny_lm

    model = build_tiny_lm(24, d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, seed=0)
    names = quantize_model(model, bits=4, group_size=32)
    assert "lm_head" not in names and len(names) == 7
    ids = torch.randint(0, 24, (2, 6))
    assert torch.isfinite(model(input_ids=ids, labels=ids).loss)
