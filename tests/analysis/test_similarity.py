"""Properties of the extrinsic similarity measures: identities, invariances, closed forms, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import pdist
from scipy.stats import rankdata, spearmanr

from geode.analysis import (
    canonical_correlations,
    cca,
    linear_cka,
    procrustes_distance,
    pwcca,
    rbf_cka,
    rdm,
    rsa,
    svcca,
)
from geode.analysis.similarity import _rank

ALL = [linear_cka, rbf_cka, cca, svcca, pwcca, rsa]


def _data(seed=0, n=60, d1=5, d2=7):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d1))
    y = np.tanh(x @ rng.normal(size=(d1, d2))) + 0.3 * rng.normal(size=(n, d2))
    return rng, x, y


def _orth(rng, d):
    return np.linalg.qr(rng.normal(size=(d, d)))[0]


def _naive_cka(x, y):
    """HSIC with an explicit centring matrix: the textbook formula."""
    n = x.shape[0]
    h = np.eye(n) - np.ones((n, n)) / n
    k, l_ = x @ x.T, y @ y.T
    hs = lambda a, b: np.trace(a @ h @ b @ h)  # noqa: E731
    return hs(k, l_) / math.sqrt(hs(k, k) * hs(l_, l_))


# ------------------------------------------------------------------ identities


@pytest.mark.parametrize("measure", ALL)
def test_identical_inputs_give_similarity_one(measure):
    _, x, _ = _data()
    assert measure(x, x) == pytest.approx(1.0, abs=1e-10)


def test_procrustes_distance_is_zero_for_identical_inputs():
    _, x, _ = _data()
    assert procrustes_distance(x, x) == pytest.approx(0.0, abs=1e-6)
    assert procrustes_distance(x, x, kind="euclidean") == pytest.approx(0.0, abs=1e-6)


# ------------------------------------------------------------------ CKA


def test_linear_cka_invariant_to_orthogonal_maps_isotropic_scale_and_shift():
    rng, x, y = _data()
    base = linear_cka(x, y)
    assert linear_cka(x @ _orth(rng, 5), y) == pytest.approx(base, rel=1e-10)
    assert linear_cka(x, 3.5 * y @ _orth(rng, 7) + 2.0) == pytest.approx(base, rel=1e-10)
    assert linear_cka(x, y) == pytest.approx(linear_cka(y, x), rel=1e-12)


def test_linear_cka_is_not_invariant_to_anisotropic_scaling():
    rng, x, y = _data()
    assert abs(linear_cka(x * np.array([10, 1, 1, 1, 0.1]), y) - linear_cka(x, y)) > 1e-3


def test_linear_cka_matches_the_explicit_hsic_formula_in_both_forms():
    rng, x, y = _data(n=20)
    assert linear_cka(x, y) == pytest.approx(_naive_cka(x, y), rel=1e-10)
    wide = rng.normal(size=(20, 40))  # d > n: the Gram form is used
    assert linear_cka(wide, y) == pytest.approx(_naive_cka(wide, y), rel=1e-10)


def test_linear_cka_of_two_features_is_the_squared_correlation():
    rng = np.random.default_rng(1)
    a = rng.normal(size=50)
    b = a + rng.normal(size=50)
    assert linear_cka(a, b) == pytest.approx(np.corrcoef(a, b)[0, 1] ** 2, rel=1e-10)


def test_linear_cka_closed_form_small_example():
    # X = (1, 2, 3)^T centres to x = (-1, 0, 1): ||x^T x||_F = 2. Y = [[1, 0], [0, 1], [1, 1]] centres to
    # columns (1, -2, 1)/3 and (-2, 1, 1)/3: Y^T x = (0, 1), ||Y^T x||^2 = 1, Y^T Y = [[2, -1], [-1, 2]] / 3
    # with ||.||_F = sqrt(10) / 3. CKA = 1 / (2 sqrt(10) / 3) = 3 / (2 sqrt(10)).
    got = linear_cka([[1.0], [2.0], [3.0]], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert got == pytest.approx(3 / (2 * math.sqrt(10)), abs=1e-12)
    # X = (1, 2, 3, 4), Y = (1, 2, 4, 3): corr = 0.8, CKA = 0.64
    assert linear_cka([1.0, 2, 3, 4], [1.0, 2, 4, 3]) == pytest.approx(0.64, abs=1e-12)


def test_rbf_cka_invariances_and_linear_limit():
    rng, x, y = _data()
    base = rbf_cka(x, y)
    assert 0.0 <= base <= 1.0
    assert rbf_cka(2.0 * x @ _orth(rng, 5) - 1.0, y) == pytest.approx(base, rel=1e-8)
    # very wide kernels: exp(-d^2 / 2s^2) ~ 1 - d^2 / 2s^2 and centring leaves the linear kernel
    assert rbf_cka(x, y, bandwidth=1e3) == pytest.approx(linear_cka(x, y), abs=1e-4)


# ------------------------------------------------------------------ CCA family


def test_cca_invariant_to_invertible_linear_maps():
    rng, x, y = _data()
    a = rng.normal(size=(5, 5)) + 3 * np.eye(5)
    b = rng.normal(size=(7, 7)) + 3 * np.eye(7)
    np.testing.assert_allclose(canonical_correlations(x @ a + 1, y @ b), canonical_correlations(x, y), atol=1e-10)
    assert cca(x @ a, y) == pytest.approx(cca(x, y), abs=1e-10)
    assert svcca(x @ a, y @ b, keep=1.0) == pytest.approx(svcca(x, y, keep=1.0), abs=1e-10)


def test_canonical_correlation_of_single_features_is_the_absolute_correlation():
    rng = np.random.default_rng(2)
    a = rng.normal(size=40)
    b = -a + rng.normal(size=40)
    assert canonical_correlations(a, b)[0] == pytest.approx(abs(np.corrcoef(a, b)[0, 1]), rel=1e-10)


def test_cca_is_one_for_a_linear_image_and_handles_rank_deficiency():
    rng, x, _ = _data()
    y = x @ rng.normal(size=(5, 9))  # rank 5 in 9 features
    rho = canonical_correlations(x, y)
    assert rho.shape == (5,)
    np.testing.assert_allclose(rho, 1.0, atol=1e-10)


def test_svcca_invariant_to_orthogonal_maps_and_scale():
    rng, x, y = _data()
    assert svcca(x @ _orth(rng, 5) * 4.0, y) == pytest.approx(svcca(x, y), abs=1e-10)


def test_pwcca_invariances_and_asymmetry():
    rng, x, y = _data()
    b = rng.normal(size=(7, 7)) + 3 * np.eye(7)
    assert pwcca(x, y @ b) == pytest.approx(pwcca(x, y), abs=1e-10)
    perm = rng.permutation(5)
    assert pwcca(-2.0 * x[:, perm], y) == pytest.approx(pwcca(x, y), abs=1e-10)
    assert 0.0 < pwcca(x, rng.normal(size=(60, 7))) < 1.0


# ------------------------------------------------------------------ RSA


def test_rsa_matches_spearman_of_the_rdms_and_pearson_option():
    _, x, y = _data()
    assert rsa(x, y) == pytest.approx(spearmanr(pdist(x), pdist(y))[0], abs=1e-12)
    assert rsa(x, y, compare="pearson") == pytest.approx(np.corrcoef(pdist(x), pdist(y))[0, 1], abs=1e-12)
    assert rsa(x, y, metric="correlation") == pytest.approx(
        spearmanr(pdist(x, "correlation"), pdist(y, "correlation"))[0], abs=1e-12
    )


def test_rsa_invariances():
    rng, x, y = _data()
    base = rsa(x, y)
    assert rsa(5 * x @ _orth(rng, 5) + 3, y) == pytest.approx(base, abs=1e-12)
    # squared Euclidean RDMs are a monotone transform of Euclidean ones: Spearman does not move
    assert rsa(x, y, metric="sqeuclidean") == pytest.approx(base, abs=1e-12)


def test_rank_matches_scipy_with_ties():
    v = np.random.default_rng(3).integers(0, 6, 200).astype(float)
    np.testing.assert_allclose(_rank(v), rankdata(v))


def test_rdm_is_condensed_and_validates_rows():
    x = np.arange(12.0).reshape(4, 3)
    assert rdm(x).shape == (6,)
    with pytest.raises(ValueError, match="correlation"):
        rdm(np.ones((4, 3)), metric="correlation")
    with pytest.raises(ValueError, match="metric"):
        rdm(x, metric="manhattan")


# ------------------------------------------------------------------ Procrustes


def test_procrustes_invariances_symmetry_and_range():
    rng, x, y = _data(d2=5)
    base = procrustes_distance(x, y)
    assert 0.0 < base <= math.pi / 2
    assert procrustes_distance(x, 0.1 * y @ _orth(rng, 5) + 4) == pytest.approx(base, abs=1e-10)
    assert procrustes_distance(y, x) == pytest.approx(base, abs=1e-12)
    assert procrustes_distance(x, y, kind="euclidean") == pytest.approx(math.sqrt(2 - 2 * math.cos(base)), abs=1e-10)


def test_procrustes_angle_satisfies_the_triangle_inequality():
    rng = np.random.default_rng(4)
    for _ in range(20):
        a, b, c = (rng.normal(size=(15, 4)) for _ in range(3))
        assert procrustes_distance(a, c) <= procrustes_distance(a, b) + procrustes_distance(b, c) + 1e-12


def test_procrustes_handles_different_widths_by_padding():
    rng, x, _ = _data()
    wide = np.hstack([x, np.zeros((60, 3))]) @ _orth(rng, 8)
    assert procrustes_distance(x, wide) == pytest.approx(0.0, abs=1e-6)


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("measure", [*ALL, procrustes_distance])
def test_bad_input_fails_with_clear_errors(measure):
    _, x, y = _data()
    with pytest.raises(ValueError, match="same number of samples"):
        measure(x, y[:-1])
    with pytest.raises(ValueError, match="at least 3 samples"):
        measure(x[:2], y[:2])
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="X must contain only finite"):
        measure(bad, y)
    with pytest.raises(ValueError, match="Y .*constant|constant"):
        measure(x, np.ones_like(y))
    with pytest.raises(ValueError, match="shape"):
        measure(x[:, :, None], y)


def test_bad_options():
    _, x, y = _data()
    with pytest.raises(ValueError, match="bandwidth"):
        rbf_cka(x, y, bandwidth=0.0)
    with pytest.raises(ValueError, match="keep"):
        svcca(x, y, keep=0.0)
    with pytest.raises(ValueError, match="compare"):
        rsa(x, y, compare="kendall")
    with pytest.raises(ValueError, match="kind"):
        procrustes_distance(x, y, kind="cosine")
    with pytest.raises(TypeError, match="X must be an array"):
        linear_cka(object(), y)
