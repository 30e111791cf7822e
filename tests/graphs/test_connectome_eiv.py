"""Connectome EIV: simulator moments against theory, graph construction, pipeline identities, validation."""

from __future__ import annotations

import numpy as np
import pytest

from geode.graphs.connectome_eiv import (
    LatentCommunityModel,
    cv_r2,
    eiv_decomposition,
    gcn_features,
    knn_graph,
    normalized_adjacency,
    raw_features,
    sample_correlation,
)


def test_true_correlation_is_a_valid_correlation_matrix_with_community_blocks():
    m = LatentCommunityModel(12, 3, phi=0.3)
    L = np.full(12, 0.5)
    C = m.true_correlation(L)
    assert np.allclose(np.diag(C), 1) and np.allclose(C, C.T)
    assert np.linalg.eigvalsh(C).min() > 0
    assert np.isclose(C[0, 1], 0.25) and np.isclose(C[0, 11], 0.25 * 0.3)  # L L Phi within / between communities


def test_time_series_have_unit_variance_and_the_model_covariance():
    m = LatentCommunityModel(6, 2, phi=0.4)
    L = np.array([[0.3, 0.6, 0.9, 0.2, 0.5, 0.7]])
    x = m.time_series(L, 200_000, np.random.default_rng(0))[0]
    assert np.allclose(x.var(0), 1, atol=0.02)
    assert np.allclose(np.cov(x.T), m.true_correlation(L[0]), atol=0.02)


def test_sample_correlation_moments_match_theory():
    """E Ĉ = C up to O(1/T); Var Ĉ_jl = (1 - rho^2)^2 / T to first order (Gaussian data)."""
    m = LatentCommunityModel(4, 1, loading_range=(0.7, 0.7), delta_sd=0.0)
    rng = np.random.default_rng(1)
    L = np.full((4000, 4), 0.7)
    T = 200
    C = sample_correlation(m.time_series(L, T, rng))
    rho = 0.49
    assert abs(C[:, 0, 1].mean() - rho) < 0.005
    assert abs(C[:, 0, 1].var() * T / (1 - rho**2) ** 2 - 1) < 0.08
    assert np.allclose(C[:, range(4), range(4)], 1)


def test_independent_scans_share_the_latent_connectome_only():
    m = LatentCommunityModel(12, 3)
    s = m.sample(40, 50, 0)
    assert s.corr.shape == s.corr_indep.shape == s.true_corr.shape == (40, 12, 12)
    iu = np.triu_indices(12, 1)
    e1, e2 = (s.corr - s.true_corr)[:, iu[0], iu[1]].ravel(), (s.corr_indep - s.true_corr)[:, iu[0], iu[1]].ravel()
    assert abs(np.corrcoef(e1, e2)[0, 1]) < 0.1  # independent estimation errors
    assert abs(np.corrcoef(e1, e1 + e2)[0, 1] - np.sqrt(0.5)) < 0.1
    s2 = m.sample(40, 50, 0)
    assert np.array_equal(s.corr, s2.corr)


def test_knn_graph_and_normalisation():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((10, 10))
    M = M + M.T
    A = knn_graph(M, 3)
    assert np.array_equal(A, A.T) and np.all(np.diag(A) == 0) and np.all(A.sum(1) >= 3)
    row = np.abs(M[0])
    row[0] = 0
    top = np.argsort(-row)[:3]
    assert np.all(A[0, top] == 1)
    Ah = normalized_adjacency(A)
    ev = np.linalg.eigvalsh(Ah)
    assert ev.max() == pytest.approx(1.0, abs=1e-9) and ev.min() > -1
    # a constant signal on a regular graph is a fixed point of Â
    ring = np.roll(np.eye(8), 1, 1) + np.roll(np.eye(8), -1, 1)
    assert np.allclose(normalized_adjacency(ring) @ np.ones(8), np.ones(8))


def test_gcn_features_with_an_empty_graph_are_the_raw_features():
    m = LatentCommunityModel(6, 2)
    s = m.sample(5, 30, 0)
    Ah = normalized_adjacency(np.zeros((6, 6)))
    assert np.allclose(Ah, np.eye(6))
    f = gcn_features(s.corr, s.true_corr, 2)
    assert f.shape == raw_features(s.corr).shape == (5, 36)


def test_decomposition_telescopes_and_cv_r2_recovers_a_linear_signal():
    d = eiv_decomposition(0.5, 0.6, 0.55, 0.45)
    assert d["smoothing"] + d["graph_estimation"] + d["double_dipping"] == pytest.approx(d["total"]) == -0.05
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 10))
    y = X @ rng.standard_normal(10) + 0.1 * rng.standard_normal(120)
    assert cv_r2(X, y) > 0.95
    assert cv_r2(X, rng.standard_normal(120)) < 0.1


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="multiple of K"):
        LatentCommunityModel(10, 3)
    with pytest.raises(ValueError, match="phi"):
        LatentCommunityModel(6, 2, phi=1.0)
    with pytest.raises(ValueError, match="T must be"):
        LatentCommunityModel(6, 2).sample(4, 2, 0)
    with pytest.raises(ValueError, match="k must be"):
        knn_graph(np.eye(4), 4)
    with pytest.raises(ValueError, match="symmetric"):
        normalized_adjacency(np.triu(np.ones((3, 3)), 1))
    with pytest.raises(ValueError, match="shape"):
        gcn_features(np.zeros((2, 3, 3)), np.zeros((2, 4, 4)), 1)
