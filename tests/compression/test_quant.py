from __future__ import annotations

import pytest
import torch
from torch import nn

from geode.compression import (
    PackedLinear,
    calibration_hessians,
    gptq_quantize,
    linear_names,
    output_error,
    pad_columns,
    replace_linears,
    rtn_quantize,
)
from geode.core.quant import minmax_dequantize


@pytest.mark.parametrize("bits", [2, 3, 4])
def test_rtn_error_is_at_most_half_a_step_and_idempotent(bits):
    w = torch.randn(8, 64, generator=torch.Generator().manual_seed(0))
    c, s, z = rtn_quantize(w, bits=bits, group_size=16)
    wq = minmax_dequantize(c, s, z)
    step = s.repeat_interleave(16, dim=1)
    assert ((wq - w).abs() <= 0.5 * step + 1e-6).all()
    c2, s2, z2 = rtn_quantize(wq, bits=bits, group_size=16)
    assert torch.allclose(minmax_dequantize(c2, s2, z2), wq, atol=1e-5)


def test_rtn_at_eight_bits_is_nearly_exact():
    w = torch.randn(4, 32, generator=torch.Generator().manual_seed(1))
    wq = minmax_dequantize(*rtn_quantize(w, bits=8, group_size=32))
    assert (wq - w).abs().max() < (w.max() - w.min()) / 255


def test_bad_group_size_and_bits_raise_clear_errors():
    with pytest.raises(ValueError, match="group_size"):
        rtn_quantize(torch.randn(2, 10), bits=3, group_size=4)
    with pytest.raises(ValueError, match="bits"):
        rtn_quantize(torch.randn(2, 8), bits=0, group_size=4)
    with pytest.raises(ValueError, match="hessian"):
        gptq_quantize(torch.randn(2, 8), torch.eye(4), bits=3, group_size=4)
    assert pad_columns(torch.ones(2, 10), 8).shape == (2, 16)


def test_gptq_with_identity_hessian_equals_rtn():
    # H = I: no error is propagated (the inverse Hessian is diagonal), so GPTQ is RTN on the same grid
    w = torch.randn(6, 32, generator=torch.Generator().manual_seed(2))
    r = minmax_dequantize(*rtn_quantize(w, bits=3, group_size=8))
    g = minmax_dequantize(*gptq_quantize(w, torch.eye(32), bits=3, group_size=8, damp=1e-6))
    assert torch.allclose(r, g, atol=1e-5)


def test_gptq_lowers_the_output_error_of_rtn_on_correlated_inputs():
    gen = torch.Generator().manual_seed(3)
    w = torch.randn(32, 64, generator=gen)
    x = torch.randn(512, 64, generator=gen) @ torch.randn(64, 64, generator=gen)
    h = 2 * x.T @ x / 512
    r = minmax_dequantize(*rtn_quantize(w, bits=3, group_size=32))
    g = minmax_dequantize(*gptq_quantize(w, h, bits=3, group_size=32))
    assert output_error(w, g, h) < 0.8 * output_error(w, r, h)


def test_output_error_matches_its_definition():
    gen = torch.Generator().manual_seed(4)
    w, a, x = torch.randn(5, 8, generator=gen), torch.randn(5, 8, generator=gen), torch.randn(40, 8, generator=gen)
    h = x.T @ x
    expect = ((x @ (a - w).T) ** 2).sum() / ((x @ w.T) ** 2).sum()
    assert torch.allclose(output_error(w, a, h), expect, rtol=1e-5)


def test_packed_linear_matches_the_dequantised_weight_and_counts_its_bits():
    lin = nn.Linear(64, 16)
    q = PackedLinear.from_linear(lin, bits=3, group_size=32)
    c, s, z = rtn_quantize(lin.weight, bits=3, group_size=32)
    assert torch.equal(q.codes(), c.long())
    w = minmax_dequantize(c, s.half().float(), z.half().float())
    x = torch.randn(4, 64)
    assert torch.allclose(q(x), x @ w.T + lin.bias, atol=1e-5)
    assert q.bits_per_weight() == 3 + 32 / 32
    assert q.storage_bytes() == 16 * 24 + 2 * 16 * 2 * 2 + 16 * 4


def test_calibration_hessians_and_replacement():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
    names = linear_names(model, exclude=())
    assert names == ["0", "2"]
    x = torch.randn(10, 8)
    h = calibration_hessians(model, [x[:5], x[5:]], names)
    assert torch.allclose(h["0"], 2 * x.double().T @ x.double() / 10)
    replace_linears(model, lambda n, lin: PackedLinear.from_linear(lin, bits=8, group_size=8), names)
    assert isinstance(model[2], PackedLinear)


def test_packed_linear_suggests_a_group_size_that_divides_the_layer():
    """``PackedLinear.from_linear`` with the default group_size (128) on a 96-wide layer says which one fits."""
    with pytest.raises(ValueError, match=r"in_features=96.*group_size=96"):
        PackedLinear.from_linear(nn.Linear(96, 8))
    with pytest.raises(ValueError, match=r"in_features=96.*group_size=48"):  # the largest divisor up to 64
        PackedLinear.from_linear(nn.Linear(96, 8), group_size=64)
    h = 2.0 * torch.eye(96, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"group_size=96"):
        PackedLinear.from_linear(nn.Linear(96, 8), hessian=h)
    assert PackedLinear.from_linear(nn.Linear(96, 8), group_size=96).group_size == 96
