"""Pairwise-masked secure summation: the masks cancel exactly, the server sees only masked uploads."""

from __future__ import annotations

import numpy as np
import pytest

from geode.federated import (
    client_mask,
    decode_fixed_point,
    encode_fixed_point,
    pairwise_masks,
    secure_sum,
)


def test_masks_cancel_exactly():
    masks = pairwise_masks(7, 1000, seed=3)
    total = np.zeros(1000, dtype=np.uint64)
    for m in masks:
        total += m
    assert np.all(total == 0)  # bit-exact, modulo 2^64
    assert np.array_equal(masks[2], client_mask(2, 7, 1000, seed=3))  # a client needs only its own pair seeds


def test_sum_is_exact_for_representable_values():
    rng = np.random.default_rng(0)
    x = rng.integers(-1000, 1000, size=(5, 64)) / 8.0  # dyadic values are exact in fixed point
    res = secure_sum(x, seed=1, frac_bits=20)
    np.testing.assert_array_equal(res.total, x.sum(axis=0))


def test_sum_of_floats_is_accurate_to_the_fixed_point_resolution():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6, 300)) * 100
    res = secure_sum(x, seed=2, frac_bits=24)
    assert np.max(np.abs(res.total - x.sum(axis=0))) <= 6 * 2.0**-25 + 1e-9


def test_the_server_never_sees_one_clients_statistics():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 2000))
    res = secure_sum(x, seed=5)
    view = res.server_view
    assert view.shape == x.shape and view.dtype == np.uint64
    for i in range(4):
        decoded = decode_fixed_point(view[i], res.frac_bits)
        assert not np.allclose(decoded, x[i], atol=1.0)  # an upload is not the client's data
        # and is statistically unrelated to it: uniform 64-bit words, no correlation with x_i
        top = (view[i] >> np.uint64(32)).astype(np.float64) / 2.0**32
        assert abs(top.mean() - 0.5) < 0.03 and abs(np.corrcoef(top, x[i])[0, 1]) < 0.1
    # two very different data sets give uploads with the same distribution; only the total differs
    res0 = secure_sum(np.zeros_like(x), seed=5)
    assert not np.array_equal(res0.server_view, view)
    # the sum of a strict subset of uploads is still masked
    partial = np.zeros(2000, dtype=np.uint64)
    for y in view[:3]:
        partial += y
    assert not np.allclose(decode_fixed_point(partial, res.frac_bits), x[:3].sum(axis=0), atol=1.0)


def test_fixed_point_round_trip_and_overflow():
    x = np.array([-2.5, 0.0, 3.25, -1e6])
    np.testing.assert_array_equal(decode_fixed_point(encode_fixed_point(x, 16), 16), x)
    with pytest.raises(ValueError, match="too large for frac_bits"):
        encode_fixed_point(np.array([2.0**50]), 24)
    with pytest.raises(ValueError, match="too large for frac_bits"):
        secure_sum(np.full((3, 2), 2.0**38), frac_bits=24)
    with pytest.raises(TypeError, match="uint64"):
        decode_fixed_point(np.zeros(2), 4)


def test_secure_sum_bad_input():
    with pytest.raises(ValueError, match="at least 2 clients"):
        secure_sum(np.ones((1, 3)))
    with pytest.raises(ValueError, match="finite"):
        secure_sum(np.array([[1.0, np.nan], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="2 dimension"):
        secure_sum(np.ones(3))
    with pytest.raises(ValueError, match="n_clients must be >= 2"):
        pairwise_masks(1, 3)
