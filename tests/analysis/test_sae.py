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


# ------------------------------------------------------------------ JumpReLU and pretrained folders


def _jumprelu(seed=0):
    g = torch.Generator().manual_seed(seed)
    sae = SparseAutoencoder(6, 10, activation="jumprelu", seed=seed, dtype=torch.float64)
    with torch.no_grad():
        sae.b_enc.copy_(torch.randn(10, generator=g, dtype=torch.float64) * 0.1)
        sae.b_dec.copy_(torch.randn(6, generator=g, dtype=torch.float64))
        sae.threshold.copy_(torch.rand(10, generator=g, dtype=torch.float64) * 0.5)
    return sae


def test_jumprelu_keeps_pre_activations_above_the_threshold_and_zero_threshold_is_relu():
    sae = _jumprelu()
    x = torch.randn(200, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    pre = sae.pre_activations(x)
    a = sae.encode(x)
    above = pre > sae.threshold
    assert torch.equal(a[above], pre[above]) and bool((a[~above] == 0).all())
    # a jump: every kept value exceeds its feature's threshold (no value in (0, threshold])
    assert bool((a[above] > sae.threshold.expand_as(a)[above]).all()) and bool(above.any())
    relu = SparseAutoencoder(6, 10, activation="relu", seed=0, dtype=torch.float64)
    with torch.no_grad():
        sae.threshold.zero_()
        for n in ("W_enc", "b_enc", "W_dec", "b_dec"):
            getattr(relu, n).copy_(getattr(sae, n))
    assert torch.equal(sae.encode(x), relu.encode(x))


def test_save_and_load_a_folder_round_trip(tmp_path):
    import json

    pytest.importorskip("safetensors")  # the SAELens layout needs the llm extra
    for sae in (_jumprelu(2), SparseAutoencoder(6, 10, activation="topk", k=3, seed=3)):
        sae.save_pretrained(tmp_path / sae.activation)
        cfg = json.loads((tmp_path / sae.activation / "cfg.json").read_text())
        assert cfg["d_sae"] == 10
        out = SparseAutoencoder.from_pretrained(tmp_path / sae.activation)
        assert out.activation == sae.activation and out.k == sae.k
        x = torch.randn(50, 6, dtype=sae.W_dec.dtype)
        assert torch.equal(out(x), sae(x))


def test_load_a_gemmascope_npz_and_clear_errors(tmp_path):
    sae = _jumprelu(4)
    arrays = {n: getattr(sae, n).detach().numpy() for n in ("W_enc", "W_dec", "b_enc", "b_dec", "threshold")}
    np.savez(tmp_path / "params.npz", **arrays)
    out = SparseAutoencoder.from_pretrained(tmp_path)  # no cfg.json: a stored threshold means JumpReLU
    assert out.activation == "jumprelu"
    assert torch.equal(out.threshold, sae.threshold)
    np.savez(tmp_path / "bad.npz", W_dec=arrays["W_dec"])
    with pytest.raises(ValueError, match="lacks"):
        SparseAutoencoder.from_pretrained(tmp_path / "bad.npz")
    arrays["W_enc"] = arrays["W_enc"][:, :5]
    np.savez(tmp_path / "shape.npz", **arrays)
    with pytest.raises(ValueError, match="W_enc must have shape"):
        SparseAutoencoder.from_pretrained(tmp_path / "shape.npz")
    with pytest.raises(FileNotFoundError):
        SparseAutoencoder.from_pretrained(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="jumprelu"):
        train_sae(np.random.default_rng(0).normal(size=(20, 6)), 4, activation="jumprelu")


def test_jumprelu_fine_tuning_keeps_the_thresholds_and_gae_keeps_them():
    from geode.analysis.gae import GAE

    sae = _jumprelu(5)
    x = np.random.default_rng(0).normal(size=(300, 6))
    tuned = train_sae(x, init=sae, steps=5, batch_size=32)
    assert torch.equal(tuned.threshold, sae.threshold)
    assert not torch.equal(tuned.W_dec, sae.W_dec)
    adapted = GAE(k=2).fit(sae, x).adapted_
    assert torch.equal(adapted.threshold, sae.threshold) and adapted.activation == "jumprelu"
    obj = type("Obj", (), {n: getattr(sae, n).detach() for n in ("W_enc", "b_enc", "W_dec", "b_dec", "threshold")})
    assert torch.equal(SparseAutoencoder.from_saelens(obj, activation="jumprelu").threshold, sae.threshold)
