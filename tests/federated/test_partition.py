"""Dirichlet label-skew partitions and client label mixes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geode.federated import dirichlet_partition, label_distribution


def _labels(n=600, c=10, seed=0):
    return np.random.default_rng(seed).integers(0, c, size=n)


def test_partition_is_a_partition():
    y = _labels()
    parts = dirichlet_partition(y, 20, 0.3, min_size=3, seed=1)
    allidx = np.concatenate(parts)
    assert len(parts) == 20
    assert np.array_equal(np.sort(allidx), np.arange(y.size))
    assert min(len(p) for p in parts) >= 3


def test_partitions_are_reproducible():
    y = _labels()
    a = dirichlet_partition(y, 15, 0.1, min_size=2, seed=7)
    b = dirichlet_partition(y, 15, 0.1, min_size=2, seed=7)
    c = dirichlet_partition(y, 15, 0.1, min_size=2, seed=8)
    assert all(np.array_equal(x, z) for x, z in zip(a, b))
    assert not all(np.array_equal(x, z) for x, z in zip(a, c))
    g = np.random.default_rng(3)
    d = dirichlet_partition(y, 15, 0.1, min_size=2, seed=g)
    e = dirichlet_partition(y, 15, 0.1, min_size=2, seed=np.random.default_rng(3))
    assert all(np.array_equal(x, z) for x, z in zip(d, e))


def test_small_alpha_is_more_skewed_than_large_alpha():
    y = _labels(3000)

    def mean_max_share(alpha):
        mix = label_distribution(y, dirichlet_partition(y, 20, alpha, min_size=1, seed=0), 10)
        return mix.max(axis=1).mean()

    assert mean_max_share(0.05) > 0.6 > mean_max_share(100.0)
    assert mean_max_share(100.0) < 0.25


def test_label_distribution_rows():
    y = np.array([0, 0, 1, 2, 2, 2])
    mix = label_distribution(y, [np.array([0, 1, 2]), np.array([3, 4, 5]), np.array([], dtype=int)], 4)
    np.testing.assert_allclose(mix, [[2 / 3, 1 / 3, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]])


def test_bad_input():
    y = _labels(50)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        dirichlet_partition(y, 5, 0.0)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        dirichlet_partition(y, 5, -1.0)
    with pytest.raises(ValueError, match="impossible partition"):
        dirichlet_partition(y, 10, 1.0, min_size=6)
    with pytest.raises(ValueError, match="no Dirichlet"):
        dirichlet_partition(y, 10, 0.01, min_size=5, max_retries=3)
    with pytest.raises(ValueError, match="n_clients must be >= 1"):
        dirichlet_partition(y, 0, 1.0)
    with pytest.raises(TypeError, match="integer class labels"):
        dirichlet_partition(np.array([0.5, 1.5]), 2, 1.0)
    with pytest.raises(ValueError, match="labels must not be empty"):
        dirichlet_partition(np.array([], dtype=int), 2, 1.0)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(10, 200),
    k=st.integers(1, 8),
    alpha=st.floats(0.05, 10.0),
    seed=st.integers(0, 10_000),
)
def test_every_example_goes_to_exactly_one_client(n, k, alpha, seed):
    y = np.random.default_rng(seed).integers(0, 4, size=n)
    parts = dirichlet_partition(y, k, alpha, min_size=0, seed=seed)
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(n))
