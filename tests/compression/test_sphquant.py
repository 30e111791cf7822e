from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from geode.compression import (
    SPHCodebook,
    SPHCodes,
    SPHLinear,
    angles_to_vectors,
    sph_bits_per_weight,
    sph_decode,
    sph_encode,
    spherical_kmeans,
    sphquant_model,
    vectors_to_angles,
)


def _positive_units(k, seed):
    v = torch.randn(k, 8, generator=torch.Generator().manual_seed(seed)).abs()
    return v / v.norm(dim=1, keepdim=True)


def test_angles_give_positive_unit_vectors_and_invert():
    phi = torch.rand(50, 7, generator=torch.Generator().manual_seed(0)) * (math.pi / 2)
    c = angles_to_vectors(phi)
    assert torch.allclose(c.norm(dim=1), torch.ones(50), atol=1e-6)
    assert (c >= 0).all()
    assert torch.allclose(vectors_to_angles(c), phi, atol=1e-5)
    with pytest.raises(ValueError, match="phi"):
        angles_to_vectors(torch.zeros(3, 6))


def test_encode_decode_is_exact_on_the_codebook_and_radius_grid():
    cb = _positive_units(16, 1)
    g = torch.Generator().manual_seed(2)
    idx = torch.randint(0, 16, (4, 8), generator=g)
    signs = torch.randint(0, 2, (4, 8, 8), generator=g) * 2 - 1
    radius = torch.randint(1, 256, (4, 8), generator=g).float()
    radius[:, 0] = 255  # the group maximum sits on the top of the grid, so the scale is exactly 1/255 * 255
    w = (radius.unsqueeze(-1) * signs * cb[idx]).reshape(4, 64)
    codes = sph_encode(w, cb, radius_bits=8, group_size=64)
    assert torch.equal(codes.index, idx)
    assert torch.allclose(sph_decode(codes, cb), w, atol=1e-4)


def test_high_precision_round_trip_error_vanishes():
    w = torch.randn(16, 64, generator=torch.Generator().manual_seed(3))
    dirs = w.abs().reshape(-1, 8)
    dirs = dirs / dirs.norm(dim=1, keepdim=True)
    cb = spherical_kmeans(dirs, dirs.shape[0], iters=1, seed=0)  # every direction is a codeword
    err = (sph_decode(sph_encode(w, cb, radius_bits=16, group_size=64), cb) - w).norm() / w.norm()
    assert err < 1e-4


def test_an_outlier_changes_only_its_radius():
    cb = _positive_units(32, 4)
    w = torch.randn(2, 16, generator=torch.Generator().manual_seed(5))
    a = sph_encode(w, cb, radius_bits=8, group_size=16)
    w2 = w.clone()
    w2[0, :8] *= 50.0
    b = sph_encode(w2, cb, radius_bits=8, group_size=16)
    assert torch.equal(a.index, b.index) and torch.equal(a.signs, b.signs)


def test_kmeans_centres_are_positive_unit_vectors():
    u = _positive_units(500, 6)
    c = spherical_kmeans(u, 16, iters=5, seed=0)
    assert (c >= 0).all() and torch.allclose(c.norm(dim=1), torch.ones(16), atol=1e-5)
    with pytest.raises(ValueError, match="n_codes"):
        spherical_kmeans(u[:4], 16)


def test_finetuning_keeps_codebook_on_the_positive_sphere_and_lowers_the_error():
    gen = torch.Generator().manual_seed(7)
    model = nn.Sequential(nn.Linear(128, 32))
    x = torch.randn(256, 128, generator=gen)
    h = {"0": 2 * x.T @ x / 256}
    info = sphquant_model(
        model, h, ["0"], direction_bits=6, radius_bits=6, group_size=64, finetune_steps=30, lr=0.02, seed=0
    )
    c = info["codebook"].vectors().detach()
    assert torch.allclose(c.norm(dim=1), torch.ones(64), atol=1e-5) and (c >= -1e-7).all()
    assert info["error_after"] < info["error_before"]
    assert isinstance(model[0], SPHLinear)


def test_sph_linear_forward_storage_and_bits():
    cb = _positive_units(256, 8)
    w = torch.randn(16, 128, generator=torch.Generator().manual_seed(9))
    codes = sph_encode(w, cb, radius_bits=8, group_size=128)
    lin = SPHLinear(codes, cb, direction_bits=8, radius_bits=8, bias=torch.zeros(16))
    x = torch.randn(3, 128)
    wq = sph_decode(SPHCodes(codes.signs, codes.index, codes.radius, codes.scales.half().float()), cb)
    assert torch.allclose(lin(x), x @ wq.T, atol=1e-5)
    assert lin.bits_per_weight() == sph_bits_per_weight(8, 8, 128) == 3.125
    assert lin.storage_bytes() == 16 * 16 * 3 + 16 * 2 + 16 * 4  # sign byte + 16-bit code per 8 weights
    # 16-bit joint codes wrap through int16 and come back intact
    c16 = codes._replace(index=1023 - codes.index, radius=codes.radius % 64)
    lin16 = SPHLinear(c16, cb[:1].repeat(1024, 1), direction_bits=10, radius_bits=6)
    assert lin16.code.dtype == torch.int16
    assert torch.equal(lin16.codes().index, c16.index) and torch.equal(lin16.codes().radius, c16.radius)
    with pytest.raises(ValueError, match="radius"):
        SPHLinear(codes, cb[:1].repeat(1024, 1), direction_bits=10, radius_bits=6)


def test_bad_inputs_name_the_argument():
    cb = _positive_units(16, 10)
    with pytest.raises(ValueError, match="multiple of 8"):
        sph_encode(torch.randn(2, 12), cb, group_size=8)
    with pytest.raises(ValueError, match="group_size"):
        sph_encode(torch.randn(2, 64), cb, group_size=12)
    with pytest.raises(ValueError, match="radius_bits"):
        sph_encode(torch.randn(2, 64), cb, radius_bits=0, group_size=64)
    with pytest.raises(ValueError, match="codebook"):
        SPHLinear(sph_encode(torch.randn(2, 64), cb, group_size=64), cb, direction_bits=5, radius_bits=8)
    with pytest.raises(ValueError, match="vectors"):
        SPHCodebook(torch.ones(4, 7))


def test_a_group_size_that_does_not_fit_names_the_layer_and_one_that_does():
    """The default group_size (128) on a small model: the error names the layer and a group_size for every layer.

    It used to say only "pad the columns with zeros", which a caller of ``sphquant_model`` cannot do.
    """
    model = nn.Sequential(nn.Linear(64, 96), nn.GELU(), nn.Linear(96, 10))
    x = torch.randn(32, 64, generator=torch.Generator().manual_seed(0))
    from geode.compression import calibration_hessians

    hessians = calibration_hessians(model, [x], ["0", "2"])
    with pytest.raises(ValueError, match=r"'0'.*in_features=64.*group_size=32"):
        sphquant_model(model, hessians, ["0", "2"], finetune_steps=0)
    assert all(isinstance(model[i], nn.Linear) for i in (0, 2))  # nothing was replaced
    with pytest.raises(ValueError, match=r"'0'.*in_features=12.*multiple of 8"):  # no group size fits at all
        sphquant_model(nn.Sequential(nn.Linear(12, 4)), {"0": torch.eye(12)}, ["0"], finetune_steps=0)
    info = sphquant_model(model, hessians, ["0", "2"], group_size=32, direction_bits=4, finetune_steps=0)
    assert info["bits_per_weight"] == sph_bits_per_weight(4, 8, 32)


def _random_layer(n_out, n_in, direction_bits, radius_bits, *, group_size=32, bias=True, seed=11):
    gen = torch.Generator().manual_seed(seed)
    cb = torch.randn(2**direction_bits, 8, generator=gen).abs()
    cb = cb / cb.norm(dim=1, keepdim=True)
    w = torch.randn(n_out, n_in, generator=gen)
    codes = sph_encode(w, cb, radius_bits=radius_bits, group_size=group_size)
    b = torch.randn(n_out, generator=gen) if bias else None
    return SPHLinear(codes, cb, direction_bits=direction_bits, radius_bits=radius_bits, bias=b)


def _dequantised_product(lin, x):
    """Today's reference: dequantise the whole weight, then multiply (the path taken before issue 44)."""
    b = None if lin.bias is None else lin.bias.to(x.dtype)
    return nn.functional.linear(x, lin.dequantize().to(x.dtype), b)


def _assert_close_to_scale(y, ref):
    scale = float(ref.abs().max())
    assert y.shape == ref.shape and y.dtype == ref.dtype
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-6 * scale)


@pytest.mark.parametrize(
    ("direction_bits", "radius_bits", "code_dtype"),
    [(8, 8, torch.int16), (6, 10, torch.int16), (4, 4, torch.uint8), (3, 5, torch.uint8), (8, 12, torch.int32)],
)
@pytest.mark.parametrize("shape", [(1,), (2,), (4,), (1, 3), (2, 1, 2)])
def test_table_product_equals_dequantise_then_matmul(direction_bits, radius_bits, code_dtype, shape):
    """Issue 44: a few rows decode inside the product (no weight materialised) and give today's output."""
    lin = _random_layer(256, 128, direction_bits, radius_bits)
    assert lin.code.dtype == code_dtype
    x = torch.randn(*shape, 128, generator=torch.Generator().manual_seed(12))
    assert lin.uses_lookup(x)
    with torch.no_grad():
        _assert_close_to_scale(lin(x), _dequantised_product(lin, x))


def test_table_product_bias_float64_and_the_fallback_rows():
    lin = _random_layer(256, 128, 8, 8, bias=True)
    gen = torch.Generator().manual_seed(13)
    x64 = torch.randn(2, 128, generator=gen, dtype=torch.float64)
    assert lin.uses_lookup(x64)
    _assert_close_to_scale(lin(x64), _dequantised_product(lin, x64))  # float64 tables: float64 output
    many = torch.randn(5, 128, generator=gen)  # above the row threshold: dequantise then multiply, as before
    assert not lin.uses_lookup(many)
    assert torch.equal(lin(many), _dequantised_product(lin, many))
    # one row of a batch through both paths agrees
    _assert_close_to_scale(lin(many[:1]), lin(many)[:1])
    nobias = _random_layer(256, 128, 8, 8, bias=False)
    _assert_close_to_scale(nobias(many[:1]), _dequantised_product(nobias, many[:1]))
    # a codebook larger than out_features: the tables would outgrow the weight, so it dequantises
    wide = _random_layer(32, 128, 6, 10)
    assert not wide.uses_lookup(many[:1])
    assert lin(torch.empty(0, 128)).shape == (0, 256)


def test_table_product_keeps_autograd_through_the_dequantised_weight():
    lin = _random_layer(256, 128, 8, 8)
    x = torch.randn(1, 128, generator=torch.Generator().manual_seed(14), requires_grad=True)
    assert not lin.uses_lookup(x)  # a gradient is wanted: the differentiable dequantise path
    lin(x).sum().backward()
    torch.testing.assert_close(x.grad, lin.dequantize().sum(0, keepdim=True))
    with torch.no_grad():
        assert lin.uses_lookup(x)
    lin.codebook.requires_grad_(True)  # fine-tuning the codebook through the layer
    assert not lin.uses_lookup(x.detach())


def test_table_product_weight_memory_and_state_dict():
    """The layer holds its packed codes only (<= 1/4 of fp32; 3 bytes per 8 weights at W3), column-major."""
    n_out, n_in = 256, 256
    lin = _random_layer(n_out, n_in, 8, 8, group_size=128, bias=False)
    held = sum(b.numel() * b.element_size() for name, b in lin.named_buffers() if name != "codebook")
    assert lin.storage_bytes() == held == n_out * n_in // 8 * 3 + n_out * 2 * 2
    assert lin.storage_bytes() <= n_in * n_out  # a quarter of fp32's 4 bytes per weight
    assert lin.code.shape == lin.signs.shape == (n_out, n_in // 8)
    assert lin.code.T.is_contiguous() and lin.signs.T.is_contiguous()
    # a state dict round trip (and one through torch.save) reproduces the codes and the product
    other = _random_layer(n_out, n_in, 8, 8, group_size=128, bias=False, seed=15)
    other.load_state_dict(lin.state_dict())
    import io

    buf = io.BytesIO()
    torch.save(lin.state_dict(), buf)
    buf.seek(0)
    third = _random_layer(n_out, n_in, 8, 8, group_size=128, bias=False, seed=16)
    third.load_state_dict(torch.load(buf))
    x = torch.randn(1, n_in, generator=torch.Generator().manual_seed(17))
    for layer in (other, third):
        assert torch.equal(layer.codes().index, lin.codes().index)
        assert torch.equal(layer(x), lin(x))
    # buffers assigned row-major (e.g. an older checkpoint loaded with assign=True) give the same product
    third.code, third.signs = lin.code.contiguous(), lin.signs.contiguous()
    _assert_close_to_scale(third(x), lin(x))
