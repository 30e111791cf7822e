"""GAE: the direct rotation, the faithfulness gap, exactness on a pure rotation, feature identities, baselines."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from geode.analysis import SparseAutoencoder, fvu, train_sae
from geode.analysis.gae import (
    GAE,
    active_subspace,
    dictionary_subspace,
    direct_rotation,
    faithfulness_gap,
    mean_shift_adapt,
    planted_features,
    refit_decoder,
    rotation_towards,
    sample_activations,
    shifted_activations,
)

torch.set_num_threads(1)


def _orth(rng, d, k):
    return np.linalg.qr(rng.normal(size=(d, k)))[0]


def _oracle_sae(pf, threshold=0.2):
    """A hand-built ReLU dictionary whose decoder rows are the planted features (float64)."""
    m, d = pf.features.shape
    sae = SparseAutoencoder(d, m, activation="relu", dtype=torch.float64)
    with torch.no_grad():
        sae.W_dec.copy_(torch.as_tensor(pf.features))
        sae.W_enc.copy_(torch.as_tensor(pf.features.T))
        sae.b_enc.fill_(-threshold)
        sae.b_dec.zero_()
    return sae


def _codes(sae, x):
    with torch.no_grad():
        return sae.encode(torch.as_tensor(x, dtype=sae.W_dec.dtype)).numpy()


# ------------------------------------------------------------------ subspace geometry


def test_faithfulness_gap_known_values():
    # two lines in the plane at angle t: gap = sin t
    t = 0.4
    assert faithfulness_gap([[1.0], [0.0]], [[math.cos(t)], [math.sin(t)]]) == pytest.approx(math.sin(t))
    rng = np.random.default_rng(0)
    u = _orth(rng, 10, 3)
    assert faithfulness_gap(u, u @ _orth(rng, 3, 3) * 2.0) == pytest.approx(0.0, abs=1e-7)  # same span
    b = np.linalg.qr(rng.normal(size=(10, 10)))[0]
    assert faithfulness_gap(b[:, :3], b[:, 3:6]) == pytest.approx(math.sqrt(3))
    # equals ||P_U - P_V||_F / sqrt 2
    v = _orth(rng, 10, 3)
    assert faithfulness_gap(u, v) == pytest.approx(np.linalg.norm(u @ u.T - v @ v.T) / math.sqrt(2), rel=1e-8)
    # unequal dimensions: (k_u + k_v)/2 - sum cos^2
    assert faithfulness_gap(b[:, :2], b[:, :3]) == pytest.approx(math.sqrt(0.5))


def test_direct_rotation_maps_one_subspace_onto_the_other_minimally():
    rng = np.random.default_rng(1)
    u, v = _orth(rng, 12, 4), _orth(rng, 12, 4)
    t = direct_rotation(u, v)
    np.testing.assert_allclose(t.T @ t, np.eye(12), atol=1e-10)
    assert np.linalg.det(t) == pytest.approx(1.0)
    assert faithfulness_gap(t @ u, v) == pytest.approx(0.0, abs=1e-7)
    # agrees with the Procrustes alignment: T U R = V with R = argmin ||U R - V||
    a, _, bt = np.linalg.svd(u.T @ v)
    np.testing.assert_allclose(t @ u @ (a @ bt), v, atol=1e-9)
    # identity on the common orthogonal complement
    both = np.hstack([u, v])
    comp = np.linalg.svd(np.eye(12) - both @ np.linalg.pinv(both))[0][:, :4]
    np.testing.assert_allclose(t @ comp, comp, atol=1e-9)
    np.testing.assert_allclose(direct_rotation(u, u), np.eye(12), atol=1e-10)


def test_planted_rotation_is_the_direct_rotation():
    pf = planted_features(0, d=16, m=20, k_active=4)
    t = rotation_towards(pf, 35.0)
    np.testing.assert_allclose(direct_rotation(pf.active, t @ pf.active), t, atol=1e-9)
    angles = np.degrees(np.arccos(np.clip(np.linalg.svd(pf.active.T @ t @ pf.active)[1], -1, 1)))
    np.testing.assert_allclose(angles, 35.0, atol=1e-6)


def test_active_subspace_recovers_the_planted_subspace():
    pf = planted_features(1, d=32, m=64, k_active=6, noise=0.01)
    x = sample_activations(pf, 3000, 2)
    u, mu, ev = active_subspace(x, energy=0.99)
    assert u.shape == (32, 6) and mu.shape == (32,) and np.all(np.diff(ev) <= 1e-12)
    assert faithfulness_gap(u, pf.active) < 0.05


# ------------------------------------------------------------------ GAE on a pure rotation
# (at exactly 90 degrees every principal angle is pi/2 and the alignment inside the subspace is not
# determined by the subspaces: no subspace method can be exact there)


@pytest.mark.parametrize("theta", [20.0, 60.0, 85.0])
def test_gae_is_exact_on_a_pure_rotation_and_keeps_feature_identities(theta):
    pf = planted_features(2, d=16, m=24, k_active=4, noise=0.0)
    sae = _oracle_sae(pf)
    x_id = sample_activations(pf, 1500, 3) + 0.5
    t = rotation_towards(pf, theta)
    shift = np.random.default_rng(4).normal(size=16)
    x_ood = (x_id - 0.5) @ t.T + shift  # a pure rotation of the active subspace, and a shift
    gae = GAE(mode="direct", k=4, refit=False).fit(sae, x_ood, X_id=x_id)
    assert gae.gap_ == pytest.approx(math.sqrt(4) * math.sin(math.radians(theta)), rel=1e-6)
    assert gae.gap_after_ == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_allclose(gae.rotation_, t, atol=1e-8)
    # the same features fire, with the same strengths, on corresponding points
    np.testing.assert_allclose(_codes(gae.adapted_, x_ood), _codes(sae, x_id), atol=1e-9)
    assert fvu(gae.adapted_, x_ood) == pytest.approx(fvu(sae, x_id), rel=1e-9)
    assert fvu(sae, x_ood) > fvu(sae, x_id) + 0.05 * theta / 90
    # the constrained refit keeps the encoder, so the feature activations do not change, and it cannot do worse
    full = GAE(mode="direct", k=4).fit(sae, x_ood, X_id=x_id)
    np.testing.assert_allclose(_codes(full.adapted_, x_ood), _codes(gae.adapted_, x_ood), atol=1e-12)
    assert fvu(full.adapted_, x_ood) <= fvu(gae.adapted_, x_ood) + 1e-9
    assert full.identity_cosine_ > 0.9


def test_gae_without_id_sample_uses_the_ood_usage_and_b_dec():
    pf = planted_features(3, d=16, m=24, k_active=4, noise=0.0)
    sae = _oracle_sae(pf)
    x_id = sample_activations(pf, 1500, 5)
    with torch.no_grad():
        sae.b_dec.copy_(torch.as_tensor(x_id.mean(0)))  # a trained dictionary's b_dec sits near the ID mean
    x_ood = x_id @ rotation_towards(pf, 25.0).T
    gae = GAE(mode="direct", k=4, refit=False).fit(sae, x_ood)
    assert gae.gap_after_ == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_allclose(_codes(gae.adapted_, x_ood), _codes(sae, x_id), atol=1e-9)
    np.testing.assert_allclose(gae.adapted_.b_dec.detach().numpy(), x_ood.mean(0), atol=1e-9)


def test_gae_leaves_the_input_dictionary_untouched():
    pf = planted_features(4, d=16, m=24, k_active=4)
    sae = _oracle_sae(pf)
    before = {n: p.detach().clone() for n, p in sae.named_parameters()}
    x_ood = sample_activations(pf, 500, 6, theta_deg=30.0)
    GAE(mode="direct", k=4).fit(sae, x_ood)
    GAE(mode="theory", k=4).fit(sae, x_ood)
    for n, p in sae.named_parameters():
        assert torch.equal(p.detach(), before[n])


# ------------------------------------------------------------------ a trained dictionary under shift


def test_gae_recovers_a_trained_dictionary_under_a_planted_shift():
    pf = planted_features(5, d=32, m=64, k_active=8, p_active=3 / 64)
    x_id = sample_activations(pf, 4000, 7)
    sae = train_sae(x_id, 64, activation="topk", k=4, steps=300, batch_size=128, seed=0)
    x_ood = sample_activations(pf, 1000, 8, theta_deg=45.0, scale=1.25)
    x_test = sample_activations(pf, 1000, 9, theta_deg=45.0, scale=1.25)
    gae = GAE(mode="direct").fit(sae, x_ood, X_id=x_id[:1000])
    f_un, f_gae = fvu(sae, x_test), fvu(gae.adapted_, x_test)
    assert f_gae < 0.5 * f_un
    assert gae.gap_ > 1.0 and gae.gap_after_ < 1e-6
    assert fvu(mean_shift_adapt(sae, x_ood), x_test) > f_gae
    assert fvu(refit_decoder(sae, x_ood), x_ood) < fvu(mean_shift_adapt(sae, x_ood), x_ood)


# ------------------------------------------------------------------ the release's "theory" mode


@pytest.mark.parametrize("theta", [20.0, 60.0])
def test_theory_mode_rotates_the_atoms_like_the_data_and_keeps_everything_else(theta):
    # on a pure direct rotation (angles < 90 degrees) U_ood R U_ref^T acts as T on the dictionary's span
    pf = planted_features(2, d=16, m=24, k_active=4, noise=0.0)
    sae = _oracle_sae(pf)
    t = rotation_towards(pf, theta)
    x_ood = sample_activations(pf, 3000, 3) @ t.T + 0.3
    gae = GAE(k=4).fit(sae, x_ood)  # mode="theory" is the default
    assert gae.mode == "theory" and gae.k_ == 4
    np.testing.assert_allclose(gae.adapted_.W_dec.detach().numpy(), pf.features @ t.T, atol=1e-9)
    assert gae.gap_ == pytest.approx(math.sqrt(4) * math.sin(math.radians(theta)), rel=1e-6)
    for name in ("W_enc", "b_enc", "b_dec"):  # encoder and biases are the release's: unchanged
        assert torch.equal(getattr(gae.adapted_, name), getattr(sae, name))
    # the encoder still reads the ID directions: codes of rotated inputs shrink, so the atoms alone cannot be exact
    assert fvu(gae.adapted_, x_ood - 0.3) < fvu(sae, x_ood - 0.3)


def test_theory_mode_rescales_every_atom_to_its_norm_and_is_the_identity_at_full_rank():
    rng = np.random.default_rng(0)
    sae = SparseAutoencoder(8, 20, activation="relu", seed=1, dtype=torch.float64)
    with torch.no_grad():
        sae.W_dec.mul_(torch.as_tensor(rng.uniform(0.5, 2.0, size=(20, 1))))
    x = rng.normal(size=(500, 8)) @ rng.normal(size=(8, 8))
    w0 = sae.W_dec.detach().numpy().copy()
    part = GAE(k=3).fit(sae, x)
    w = part.adapted_.W_dec.detach().numpy()
    np.testing.assert_allclose(np.linalg.norm(w, axis=1), np.linalg.norm(w0, axis=1), rtol=1e-10)
    p_ood = part.U_ood_ @ part.U_ood_.T
    np.testing.assert_allclose(w @ p_ood, w, atol=1e-10)  # every atom lies in the OOD subspace
    # r = d: U_ref and U_ood span everything, R = U_ood^T U_ref and the map is the identity
    full = GAE(k=8).fit(sae, x)
    np.testing.assert_allclose(full.adapted_.W_dec.detach().numpy(), w0, atol=1e-10)


def test_theory_mode_energy_rule_counts_squared_eigenvalues():
    rng = np.random.default_rng(1)
    q = np.linalg.qr(rng.normal(size=(6, 6)))[0]
    # eigenvalues 10, 1, 1, ... : variance share of the top one is 10/15 but its squared share is 100/105
    x = rng.normal(size=(20000, 6)) * np.sqrt([10.0, 1, 1, 1, 1, 1]) @ q.T
    sae = SparseAutoencoder(6, 12, seed=0, dtype=torch.float64)
    assert GAE(energy=0.9).fit(sae, x).k_ == 1
    assert GAE(mode="direct", energy=0.9, refit=False).fit(sae, x).k_ > 1


def test_shift_kinds_limits_and_sizes():
    pf = planted_features(8, d=16, m=24, k_active=4)
    np.testing.assert_array_equal(
        shifted_activations(pf, 50, 1, "rotation", 30.0), sample_activations(pf, 50, 1, theta_deg=30.0, scale=1.25)
    )
    base = shifted_activations(pf, 400, 2, "warp", 0.0)
    for kind in ("stretch", "new_features", "warp"):  # strength 0 is the ID distribution (same draws)
        np.testing.assert_allclose(shifted_activations(pf, 400, 2, kind, 0.0), base, atol=1e-12)
    # new features and the warp put variance into the unused directions; the stretch does not
    for kind, leaves in (("new_features", True), ("warp", True), ("stretch", False)):
        x = shifted_activations(pf, 4000, 3, kind, 1.0)
        var_unused = np.var(x @ pf.unused, axis=0).sum()
        assert (var_unused > 0.05) == leaves, kind
    with pytest.raises(ValueError, match="kind"):
        shifted_activations(pf, 10, 0, "shear", 1.0)


def test_dictionary_subspace_of_the_oracle_is_the_planted_subspace():
    pf = planted_features(6, d=16, m=24, k_active=4, noise=0.0)
    u = dictionary_subspace(_oracle_sae(pf), sample_activations(pf, 500, 1), 4)
    assert faithfulness_gap(u, pf.active) < 1e-8


# ------------------------------------------------------------------ bad input


def test_validation_errors():
    pf = planted_features(7, d=16, m=24, k_active=4)
    sae = _oracle_sae(pf)
    x = sample_activations(pf, 100, 1)
    with pytest.raises(ValueError, match="X_ood must have 16 columns"):
        GAE().fit(sae, x[:, :8])
    with pytest.raises(TypeError, match="SparseAutoencoder"):
        GAE().fit("sae", x)
    bad = x.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        GAE().fit(sae, bad)
    with pytest.raises(ValueError, match="energy"):
        GAE(energy=0.0)
    with pytest.raises(ValueError, match="ridge"):
        GAE(ridge=-1.0)
    with pytest.raises(ValueError, match="mode"):
        GAE(mode="affine")
    with pytest.raises(ValueError, match="constant"):
        active_subspace(np.ones((10, 4)))
    with pytest.raises(ValueError, match="same shape"):
        direct_rotation(np.eye(4)[:, :2], np.eye(4)[:, :3])
    with pytest.raises(ValueError, match="orthonormal"):
        direct_rotation(2 * np.eye(4)[:, :2], np.eye(4)[:, :2])
    with pytest.raises(ValueError, match="same space"):
        faithfulness_gap(np.eye(4)[:, :2], np.eye(5)[:, :2])
    with pytest.raises(ValueError, match="theta_deg"):
        rotation_towards(pf, 120.0)
