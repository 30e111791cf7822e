"""The sparse autoencoder: activations, FVU, training, fine-tuning, the SAELens adapter, bad input."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from geode.analysis import SparseAutoencoder, fvu, train_sae

torch.set_num_threads(1)


def _sparse_data(n=2000, d=16, m=32, seed=0):
    rng = np.random.default_rng(seed)
    f = rng.normal(size=(m, d))
    f /= np.linalg.norm(f, axis=1, keepdims=True)
    codes = np.where(rng.random((n, m)) < 3 / m, rng.uniform(0.5, 1.5, size=(n, m)), 0.0)
    return codes @ f + 0.01 * rng.normal(size=(n, d))


def test_topk_keeps_at_most_k_nonnegative_features_and_relu_is_nonnegative():
    x = torch.randn(50, 8)
    topk = SparseAutoencoder(8, 20, activation="topk", k=3)
    a = topk.encode(x)
    assert a.shape == (50, 20) and bool((a >= 0).all())
    assert int((a > 0).sum(1).max()) <= 3
    assert bool((SparseAutoencoder(8, 20).encode(x) >= 0).all())


def test_identity_dictionary_reconstructs_exactly():
    sae = SparseAutoencoder(4, 4, dtype=torch.float64)
    with torch.no_grad():
        sae.W_enc.copy_(torch.eye(4))
        sae.W_dec.copy_(torch.eye(4))
    x = np.abs(np.random.default_rng(0).normal(size=(30, 4)))
    assert fvu(sae, x) == pytest.approx(0.0, abs=1e-14)


@pytest.mark.parametrize("activation", ["relu", "topk"])
def test_training_lowers_fvu_and_is_deterministic(activation):
    x = _sparse_data()
    init = fvu(train_sae(x, 32, activation=activation, k=4, steps=0, seed=1), x)
    a = train_sae(x, 32, activation=activation, k=4, steps=200, batch_size=128, l1_coeff=1e-3, seed=1)
    b = train_sae(x, 32, activation=activation, k=4, steps=200, batch_size=128, l1_coeff=1e-3, seed=1)
    assert fvu(a, x) < 0.75 * init and fvu(a, x) < 0.5
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)
    if activation == "topk":
        np.testing.assert_allclose(a.W_dec.detach().norm(dim=1).numpy(), 1.0, atol=1e-5)


def test_fine_tuning_starts_from_a_copy():
    x = _sparse_data()
    base = train_sae(x, 32, activation="topk", k=4, steps=50, seed=2)
    before = base.W_dec.detach().clone()
    tuned = train_sae(2.0 * x, init=base, steps=50, seed=3)
    assert torch.equal(base.W_dec.detach(), before)
    assert tuned.activation == "topk" and tuned.k == 4
    assert fvu(tuned, 2.0 * x) < fvu(base, 2.0 * x)


def test_from_saelens_copies_the_weights():
    src = SparseAutoencoder(6, 10, seed=4)
    with torch.no_grad():
        src.b_enc.fill_(0.3)
    obj = SimpleNamespace(**{n: getattr(src, n).detach().clone() for n in ("W_enc", "b_enc", "W_dec", "b_dec")})
    out = SparseAutoencoder.from_saelens(obj)
    x = torch.randn(5, 6)
    assert torch.allclose(out(x), src(x))
    with pytest.raises(TypeError, match="missing"):
        SparseAutoencoder.from_saelens(SimpleNamespace(W_enc=1))


def test_validation_errors():
    with pytest.raises(ValueError, match="k .*required"):
        SparseAutoencoder(4, 8, activation="topk")
    with pytest.raises(ValueError, match="activation"):
        SparseAutoencoder(4, 8, activation="gelu")
    with pytest.raises(ValueError, match="k must be <= 8"):
        SparseAutoencoder(4, 8, activation="topk", k=9)
    with pytest.raises(ValueError, match="d_sae is required"):
        train_sae(np.zeros((10, 4)))
    with pytest.raises(ValueError, match="shape"):
        train_sae(np.zeros(10), 4)
    with pytest.raises(ValueError, match="finite"):
        train_sae(np.full((10, 4), np.nan), 4)
    sae = SparseAutoencoder(4, 8)
    with pytest.raises(ValueError, match="d_in = 4"):
        fvu(sae, np.zeros((10, 3)))
    with pytest.raises(ValueError, match="constant"):
        fvu(sae, np.ones((10, 4)))
    with pytest.raises(ValueError, match="steps"):
        train_sae(np.zeros((10, 4)), 4, steps=-1)
