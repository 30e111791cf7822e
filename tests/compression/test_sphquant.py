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
