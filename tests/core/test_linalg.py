from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from geode.core import effective_rank, polar, principal_angles, sign_fixed_qr, stable_rank

seeds = st.integers(0, 2**31 - 1)
dims = st.integers(1, 7)


def _rand(seed, m, n):
    return np.random.default_rng(seed).normal(size=(m, n))


@settings(max_examples=40, deadline=None)
@given(seeds, dims, dims)
def test_stable_and_effective_rank_lie_between_one_and_the_rank(seed, m, n):
    a = _rand(seed, m, n)
    k = min(m, n)
    assert 1 - 1e-9 <= stable_rank(a) <= k + 1e-9
    assert 1 - 1e-9 <= effective_rank(a) <= k + 1e-9
    # scale invariance
    assert stable_rank(3.7 * a) == pytest.approx(stable_rank(a))
    assert effective_rank(3.7 * a) == pytest.approx(effective_rank(a))


def test_ranks_on_known_spectra():
    d = np.diag([3.0, 3.0, 3.0, 0.0])
    assert stable_rank(d) == pytest.approx(3.0)
    assert effective_rank(d) == pytest.approx(3.0)
    # stable rank of diag(2, 1) is (4 + 1) / 4
    assert stable_rank(np.diag([2.0, 1.0])) == pytest.approx(1.25)
    # effective rank: p = (2/3, 1/3), exp(H)
    p = np.array([2 / 3, 1 / 3])
    assert effective_rank(np.diag([2.0, 1.0])) == pytest.approx(np.exp(-(p * np.log(p)).sum()))
    assert stable_rank(np.zeros((3, 3))) == 0.0


@settings(max_examples=40, deadline=None)
@given(seeds, st.integers(2, 7), st.integers(1, 7))
def test_sign_fixed_qr_is_the_unique_qr(seed, m, n):
    a = _rand(seed, m, n)
    q, r = sign_fixed_qr(a)
    k = min(m, n)
    assert q.shape == (m, k) and r.shape == (k, n)
    np.testing.assert_allclose(q @ r, a, atol=1e-10)
    np.testing.assert_allclose(q.T @ q, np.eye(k), atol=1e-10)
    assert np.all(np.diag(r) >= 0)
    assert np.allclose(np.tril(r, -1), 0)
    # uniqueness: flipping column signs of the input's QR does not change the answer
    q2, r2 = sign_fixed_qr(a @ np.diag(np.ones(n)))
    np.testing.assert_allclose(q2, q, atol=1e-10)


def test_sign_fixed_qr_matches_gram_schmidt_and_torch_gradients_flow():
    a = np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    q, _ = sign_fixed_qr(a)
    g1 = a[:, 0] / np.linalg.norm(a[:, 0])
    v = a[:, 1] - (a[:, 1] @ g1) * g1
    np.testing.assert_allclose(q, np.stack([g1, v / np.linalg.norm(v)], 1), atol=1e-12)
    t = torch.tensor(a, requires_grad=True)
    qt, rt = sign_fixed_qr(t)
    assert torch.all(torch.diagonal(rt) >= 0)
    assert torch.autograd.gradcheck(lambda x: sign_fixed_qr(x)[0], (t,))


@settings(max_examples=40, deadline=None)
@given(seeds, st.integers(1, 6), st.integers(1, 6))
def test_polar_factors(seed, extra, n):
    a = _rand(seed, n + extra - 1, n)
    u, p = polar(a)
    np.testing.assert_allclose(u @ p, a, atol=1e-10)
    np.testing.assert_allclose(u.T @ u, np.eye(n), atol=1e-10)
    np.testing.assert_allclose(p, p.T, atol=1e-10)
    assert np.linalg.eigvalsh(p).min() >= -1e-10
    # U is the nearest matrix with orthonormal columns: closer than the QR factor
    q, _ = np.linalg.qr(a)
    assert np.linalg.norm(a - u) <= np.linalg.norm(a - q) + 1e-10


def test_polar_torch_matches_numpy():
    a = _rand(0, 5, 3)
    u, p = polar(torch.tensor(a))
    un, pn = polar(a)
    np.testing.assert_allclose(u.numpy(), un, atol=1e-10)
    np.testing.assert_allclose(p.numpy(), pn, atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(seeds, st.integers(3, 8))
def test_principal_angles_invariances(seed, m):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(m, 2)), rng.normal(size=(m, 2))
    ang = principal_angles(a, b)
    assert np.all((ang >= -1e-12) & (ang <= np.pi / 2 + 1e-12)) and np.all(np.diff(ang) >= -1e-12)
    # invariant to a change of basis inside each subspace and to a common rotation
    g = rng.normal(size=(2, 2)) + 3 * np.eye(2)
    rot, _ = np.linalg.qr(rng.normal(size=(m, m)))
    np.testing.assert_allclose(principal_angles(a @ g, b), ang, atol=1e-7)
    np.testing.assert_allclose(principal_angles(rot @ a, rot @ b), ang, atol=1e-7)
    np.testing.assert_allclose(principal_angles(a, a @ g), 0.0, atol=1e-6)


def test_principal_angles_known_values():
    e = np.eye(3)
    np.testing.assert_allclose(principal_angles(e[:, :1], e[:, 1:2]), [np.pi / 2])
    theta = 0.3
    v = np.array([[np.cos(theta)], [np.sin(theta)], [0.0]])
    np.testing.assert_allclose(principal_angles(e[:, :1], v), [theta])
    t = principal_angles(torch.tensor(e[:, :1]), torch.tensor(v))
    assert float(t[0]) == pytest.approx(theta)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="a must have at least 2 dimensions"):
        stable_rank(np.ones(3))
    with pytest.raises(ValueError, match="a must contain only finite"):
        polar(np.array([[np.nan]]))
    with pytest.raises(ValueError, match="same number of rows"):
        principal_angles(np.ones((3, 1)), np.ones((4, 1)))
