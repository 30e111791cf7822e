"""inr-error: Pythagoras for nested projections, exact prediction on geometric ladders, the worst-case bound,
the families' fits, the test signals, the MRI operator and the claim check."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geode.sciml.inr_error import (
    BilinearGrid,
    CPFactorisation,
    ErrorPredictor,
    FourierFeatures,
    HashGrid,
    UndersampledFourier,
    estimate_rho,
    fit_family,
    piecewise_chirp,
    sample_image,
    shepp_logan,
)


def _errors(preds: np.ndarray, truth: np.ndarray) -> np.ndarray:
    return np.linalg.norm((preds - truth).reshape(len(preds), -1), axis=1)


def _orthonormal(n: int, seed: int) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))
    return q


# --------------------------------------------------------------------------------------------------
# Nested orthogonal projections: Pythagoras, and the orthogonal rule is exact on geometric ladders
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("family", "signal", "levels"),
    [
        ("svd", "image", [2, 4, 8, 16]),
        (FourierFeatures(scale=6.0), "image", [4, 8, 16, 32]),
        (BilinearGrid(), "image", [2, 4, 8, 16]),
        (FourierFeatures(scale=30.0), "chirp", [4, 8, 16, 32, 64]),
        (BilinearGrid(), "chirp", [8, 16, 32, 64]),
    ],
)
def test_pythagoras_for_nested_least_squares(family, signal, levels):
    # f - f_{k+1} is orthogonal to f_{k+1} - f_k, so e_k^2 = sum_{j >= k} d_j^2 + e_{L-1}^2 exactly
    f = sample_image("china", 32) if signal == "image" else piecewise_chirp(512)
    preds = fit_family(family, f, levels)
    e = _errors(preds, f)
    d = ErrorPredictor().fit(preds).differences
    tail_sums = np.cumsum((d**2)[::-1])[::-1]
    np.testing.assert_allclose(e[:-1] ** 2, tail_sums + e[-1] ** 2, rtol=1e-8)
    assert np.all(np.diff(e) <= 1e-9)  # nested: the error never grows


def test_svd_ladder_errors_are_the_tail_singular_values():
    f = sample_image("flower", 32)
    s = np.linalg.svd(f, compute_uv=False)
    preds = fit_family("svd", f, [1, 3, 9])
    np.testing.assert_allclose(_errors(preds, f), [np.sqrt((s[r:] ** 2).sum()) for r in (1, 3, 9)], rtol=1e-10)


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.8])
def test_orthogonal_rule_is_exact_for_geometric_singular_values(rho):
    # sigma_i = rho^i: rank-R truncation errors contract by exactly rho per unit of rank, tails included
    n = 64
    u, v = _orthonormal(n, 1), _orthonormal(n, 2)
    f = (u * rho ** np.arange(n)) @ v.T
    levels = [1, 2, 3, 4, 5, 6]
    preds = fit_family("svd", f, levels)
    truth = _errors(preds, f)
    est = ErrorPredictor("orthogonal").fit(preds, levels)
    assert est.rho_ == pytest.approx(rho, rel=1e-9)
    np.testing.assert_allclose(est.predict_global().error, truth, rtol=1e-8)
    # the same with rho given; the worst-case rule is an upper bound
    np.testing.assert_allclose(ErrorPredictor(rho=rho).fit(preds).predict_global().error, truth, rtol=1e-8)
    wc = ErrorPredictor("worst_case").fit(preds).predict_global().error
    assert np.all(wc >= truth * (1 - 1e-12))


@pytest.mark.parametrize("name", ["china", "flower"])
def test_bound_holds_on_truncated_svd_of_natural_images(name):
    # P1-P3 hold exactly for the SVD; with rho the largest true contraction (P2), d/(1+rho) <= e <= upper bound
    f = sample_image(name, 32)
    levels = [1, 2, 4, 8, 16]
    preds = fit_family("svd", f, levels)
    e = _errors(preds, f)
    rho = float(np.max(e[1:] / e[:-1]))
    p = ErrorPredictor("worst_case", rho=rho).fit(preds, levels).predict_global()
    assert np.all(p.lower <= e) and np.all(e <= p.upper)
    assert np.all(e <= ErrorPredictor("orthogonal", rho=rho).fit(preds).predict_global().upper)


def test_worst_case_rule_is_exact_for_coherent_increments():
    # f_k = (1 - rho^k) v: all increments point the same way, e_k = rho^k |v|, the triangle inequality is tight
    rho, v = 0.5, np.random.default_rng(0).standard_normal(50)
    preds = np.stack([(1 - rho**k) * v for k in range(5)])
    p = ErrorPredictor("worst_case").fit(preds).predict_global()
    np.testing.assert_allclose(p.error, rho ** np.arange(5) * np.linalg.norm(v), rtol=1e-12)
    np.testing.assert_allclose(p.upper, p.error)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(3, 7),
    st.floats(0.05, 0.9),
    st.integers(0, 10_000),
)
def test_bound_brackets_the_error_on_planted_contracting_ladders(n_levels, rho, seed):
    # any ladder with e_{k+1} <= rho e_k: d_k / (1 + rho) <= e_k <= sum_{j >= k} d_j + rho d_{L-2} / (1 - rho)
    rng = np.random.default_rng(seed)
    f = rng.standard_normal(30)
    norms = np.cumprod(np.concatenate([[1.0], rho * rng.uniform(0.2, 1.0, n_levels - 1)]))
    dirs = rng.standard_normal((n_levels, 30))
    preds = f + dirs / np.linalg.norm(dirs, axis=1, keepdims=True) * norms[:, None]
    truth = _errors(preds, f)
    for rule in ("orthogonal", "worst_case"):
        p = ErrorPredictor(rule, rho=rho).fit(preds).predict_global()
        assert np.all(truth <= p.upper * (1 + 1e-12))
        assert np.all(truth >= p.lower * (1 - 1e-12))
        assert np.all(p.error <= p.upper * (1 + 1e-12))


def test_predictions_are_zero_when_levels_agree():
    preds = np.repeat(np.random.default_rng(3).standard_normal((1, 8, 8)), 4, axis=0)
    for rule in ("orthogonal", "worst_case"):
        est = ErrorPredictor(rule).fit(preds, [2, 4, 8, 16])
        p = est.predict_global()
        assert p.rho == 0.0
        np.testing.assert_array_equal(p.error, 0.0)
        np.testing.assert_array_equal(p.upper, 0.0)
        np.testing.assert_array_equal(est.heatmap(4), 0.0)


def test_heatmaps_have_the_signal_shape_and_match_the_global_prediction():
    f = sample_image("china", 32)
    levels = [2, 4, 8, 16]
    preds = fit_family("svd", f, levels)
    orth = ErrorPredictor("orthogonal").fit(preds, levels)
    wc = ErrorPredictor("worst_case").fit(preds, levels)
    g = orth.predict_global().error
    for k, lv in enumerate(levels):
        h = orth.heatmap(lv)
        assert h.shape == f.shape and np.all(h >= 0)
        assert np.linalg.norm(h) == pytest.approx(g[k], rel=1e-10)  # the pointwise rule sums to the global one
        assert wc.heatmap(lv).shape == f.shape
        assert np.all(wc.heatmap(lv) >= h - 1e-12)  # l1 of increments >= l2 of increments, pointwise


def test_estimate_rho():
    assert estimate_rho([8.0, 4.0, 2.0, 1.0]) == pytest.approx(0.5)
    assert estimate_rho([1.0, 3.0]) == 0.95  # growing differences: clipped
    assert estimate_rho([1.0, 3.0], rho_max=0.5) == 0.5
    assert estimate_rho([1.0, 0.0]) == 0.0
    with pytest.raises(ValueError, match="at least two"):
        estimate_rho([1.0])
    with pytest.raises(ValueError, match=">= 0"):
        estimate_rho([1.0, -1.0])


# --------------------------------------------------------------------------------------------------
# Families
# --------------------------------------------------------------------------------------------------


def test_grid_reproduces_bilinear_functions_and_is_separable():
    x = (np.arange(20) + 0.5) / 20
    f = 1.0 + 2.0 * x[:, None] - 0.5 * x[None, :] + 3.0 * np.outer(x, x)  # bilinear: in every grid's span
    np.testing.assert_allclose(fit_family("grid", f, [1, 3]), np.stack([f, f]), atol=1e-10)
    g = np.sin(6 * x)
    preds = fit_family("grid", g, [2, 4, 8])
    assert preds.shape == (3, 20)
    assert np.all(np.diff(_errors(preds, g)) < 0)


class _Wrapped:
    """A generic operator (not an UndersampledFourier instance): exercises the dense design-matrix path."""

    def __init__(self, op):
        self.op, self.shape, self.measurement_shape = op, op.shape, op.measurement_shape

    def forward(self, x):
        return self.op.forward(x)

    def adjoint(self, y):
        return self.op.adjoint(y)


@pytest.mark.parametrize("family", ["grid", FourierFeatures(scale=4.0)])
def test_inverse_fit_separable_path_equals_dense_path(family):
    op = UndersampledFourier((16, 16), acceleration=2.0, seed=1)
    f = shepp_logan(16)
    y = op.forward(f) + 0.01 * np.random.default_rng(0).standard_normal(op.measurement_shape)
    a = fit_family(family, y, [2, 4], operator=op)
    b = fit_family(family, y, [2, 4], operator=_Wrapped(op))
    np.testing.assert_allclose(a, b, atol=1e-8)
    assert a.shape == (2, 16, 16) and np.isrealobj(a)


def test_fully_sampled_inverse_fit_equals_direct_fit():
    # with every k-space row kept, A is unitary and min |A g - A f| = min |g - f|
    op = UndersampledFourier((16, 16), rows=np.arange(16))
    f = sample_image("flower", 16)
    for family in ("grid", FourierFeatures(scale=3.0)):
        np.testing.assert_allclose(
            fit_family(family, op.forward(f), [2, 4], operator=op), fit_family(family, f, [2, 4]), atol=1e-8
        )


def test_hash_grid_encoding_is_a_partition_of_unity_and_the_fit_improves_with_table_size():
    hg = HashGrid(n_levels=4, min_resolution=2, steps=60, seed=0)
    w = hg.encoding((12, 12), 16)
    assert w.shape == (144, 64)
    np.testing.assert_allclose(np.asarray(w.sum(axis=1)).ravel(), 4.0)  # (bi)linear weights sum to 1 per level
    f = sample_image("china", 16)
    preds = fit_family(hg, f, [4, 64])
    e = _errors(preds, f)
    assert e[1] < e[0] < np.linalg.norm(f)
    np.testing.assert_array_equal(preds, fit_family(hg, f, [4, 64]))  # deterministic given the seed


def test_cp_recovers_a_rank_one_tensor_and_folds_images():
    rng = np.random.default_rng(0)
    a, b, c = rng.standard_normal(4), rng.standard_normal(5), rng.standard_normal(6)
    x = np.einsum("i,j,k->ijk", a, b, c)
    preds = fit_family(CPFactorisation(iterations=30), x, [1, 2])
    np.testing.assert_allclose(preds[0], x, atol=1e-8)
    img = sample_image("china", 32)
    p = fit_family(CPFactorisation(block=8), img, [1, 4, 16])
    assert p.shape == (3, 32, 32) and np.all(np.diff(_errors(p, img)) < 0)
    assert fit_family("cp", piecewise_chirp(128), [1, 2]).shape == (2, 128)


# --------------------------------------------------------------------------------------------------
# Signals and the MRI operator
# --------------------------------------------------------------------------------------------------


def test_shepp_logan_has_the_ellipse_table_intensities():
    n = 256

    def at(img, x, y):  # value at the pixel containing (x, y) in [-1, 1]^2, y up
        return img[int((1 - y) / 2 * n), int((x + 1) / 2 * n)]

    mod, orig = shepp_logan(n), shepp_logan(n, modified=False)
    assert at(mod, 0.0, 0.0) == pytest.approx(0.2) and at(orig, 0.0, 0.0) == pytest.approx(1.02)  # brain
    assert at(mod, 0.0, 0.9) == pytest.approx(1.0) and at(orig, 0.0, 0.9) == pytest.approx(2.0)  # skull
    assert at(mod, 0.0, 0.35) == pytest.approx(0.3) and at(orig, 0.0, 0.35) == pytest.approx(1.03)
    assert at(mod, 0.22, 0.0) == pytest.approx(0.0) and at(orig, -0.22, 0.0) == pytest.approx(1.0)  # ventricles
    assert at(mod, 0.95, 0.95) == 0.0 and at(mod, -0.95, -0.95) == 0.0
    assert mod.shape == (n, n) and mod.min() == pytest.approx(0.0) and mod.max() == pytest.approx(1.0)


def test_undersampled_fourier_adjoint_dot_product_and_sampling():
    op = UndersampledFourier((32, 24), acceleration=4.0, center_fraction=0.1, seed=5)
    assert op.measurement_shape == (8, 24) and op.acceleration == pytest.approx(4.0)
    assert {0, 1, 31}.issubset(set(op.rows.tolist()))  # the centre (k = 0, +-1) is always kept
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 24)) + 1j * rng.standard_normal((32, 24))
    y = rng.standard_normal((8, 24)) + 1j * rng.standard_normal((8, 24))
    assert np.vdot(op.forward(x), y) == pytest.approx(np.vdot(x, op.adjoint(y)), rel=1e-12)
    np.testing.assert_allclose(op.forward(x), np.fft.fft2(x, norm="ortho")[op.rows], atol=1e-12)
    np.testing.assert_allclose(op.forward(op.adjoint(y)), y, atol=1e-12)  # S S^T = I
    assert op.mask().sum() == 8 * 24
    batch = op.forward(np.stack([x.real, x.imag]))
    assert batch.shape == (2, 8, 24)


def test_undersampled_fourier_torch_matches_numpy():
    import torch

    op = UndersampledFourier((16, 16), seed=2)
    x = np.random.default_rng(1).standard_normal((16, 16))
    np.testing.assert_allclose(op.forward(torch.as_tensor(x)).numpy(), op.forward(x), atol=1e-12)
    y = op.forward(x)
    np.testing.assert_allclose(op.adjoint(torch.as_tensor(y)).numpy(), op.adjoint(y), atol=1e-12)


def test_test_signals():
    s = piecewise_chirp(1024)
    assert s.shape == (1024,) and np.all(np.isfinite(s))
    img = sample_image("flower", 64)
    assert img.shape == (64, 64) and 0.0 <= img.min() and img.max() <= 1.0


# --------------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------------


def test_bad_input_raises_naming_the_argument():
    f = sample_image("china", 16)
    op = UndersampledFourier((16, 16), seed=0)
    with pytest.raises(ValueError, match="at least two compression levels"):
        fit_family("grid", f, [4])
    with pytest.raises(ValueError, match="strictly increasing"):
        fit_family("grid", f, [4, 2, 8])
    with pytest.raises(ValueError, match="strictly increasing"):
        fit_family("grid", f, [4, 4])
    with pytest.raises(TypeError, match="levels must be integers"):
        fit_family("grid", f, [1.5, 2.5])
    with pytest.raises(ValueError, match="measurement_shape"):
        fit_family("grid", np.zeros((16, 16), complex), [2, 4], operator=op)
    with pytest.raises(ValueError, match="family must be one of"):
        fit_family("mlp", f, [2, 4])
    with pytest.raises(ValueError, match="directly only"):
        fit_family("svd", op.forward(f), [2, 4], operator=op)
    with pytest.raises(ValueError, match="dimension"):
        fit_family("svd", piecewise_chirp(64), [1, 2])
    with pytest.raises(ValueError, match="rule must be one of"):
        ErrorPredictor("average")
    with pytest.raises(ValueError, match="rho must be < 1"):
        ErrorPredictor(rho=1.0)
    with pytest.raises(ValueError, match="at least two levels"):
        ErrorPredictor(rho=0.5).fit(np.zeros((1, 4)))
    with pytest.raises(ValueError, match="pass rho"):
        ErrorPredictor().fit(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="levels has 2 entries"):
        ErrorPredictor().fit(np.zeros((3, 4)), [1, 2])
    with pytest.raises(RuntimeError, match="call fit"):
        ErrorPredictor().predict_global()
    est = ErrorPredictor().fit(np.random.default_rng(0).standard_normal((3, 4)), [1, 2, 4])
    with pytest.raises(ValueError, match="level must be one of"):
        est.heatmap(3)
    with pytest.raises(ValueError, match="scale must be > 0"):
        FourierFeatures(scale=0.0)
    with pytest.raises(ValueError, match="steps must be >= 1"):
        HashGrid(steps=0)
    with pytest.raises(ValueError, match="acceleration must be >= 1"):
        UndersampledFourier((8, 8), acceleration=0.5)
    with pytest.raises(ValueError, match="name must be one of"):
        sample_image("lena")


# --------------------------------------------------------------------------------------------------
# The claim check
# --------------------------------------------------------------------------------------------------


def test_claim_thresholds_floors_and_controls():
    from geode.claims import load_claim

    c = load_claim("inr-error")
    got = {t.name: (t.metric, t.op, t.value, t.agg) for t in (*c.thresholds, *c.floors)}
    assert got == {
        "tight": ("authors_heldout_max_family_ratio_error", "<=", 0.30, "2 of 3"),
        "loose": ("authors_heldout_max_family_ratio_error", "<=", 0.50, "2 of 3"),
        "beats_raw": ("authors_vs_raw", "<=", 0.8, "2 of 3"),
        "covers": ("worst_case_coverage", ">=", 0.95, "2 of 3"),
        "informative": ("bound_over_true_median", "<=", 3.0, "2 of 3"),
        "local": ("heatmap_r", ">=", 0.6, "2 of 3"),
        "tight_ours": ("max_family_median_ratio_error", "<=", 0.30, "2 of 3"),
        "ours_beats_raw": ("orthogonal_vs_raw", "<=", 0.8, "2 of 3"),
        "ladders_fit": ("floor_ladder_decreasing_fraction", ">=", 0.9, "all"),
        "finite": ("nonfinite_fraction", "<=", 0.0, "all"),
    }
    controls = {t.name: t.controls for t in (*c.thresholds, *c.floors)}
    assert controls["tight"] == controls["loose"] == ("control_other_signal_max_family_ratio_error",)
    assert controls["covers"] == ("raw_difference_coverage",)
    assert controls["informative"] == ("capped_rho_bound_over_true_median",)
    assert controls["local"] == ("heatmap_r_mismatched",)
    assert c.reproduced == "tight and beats_raw and covers and informative and local"
    assert c.partial == "loose and covers"
    assert {f.name for f in c.floors} == {"ladders_fit", "finite"}
    assert c.revision == 2 and c.min_seeds >= 3


def test_claim_smoke_run_is_finite_and_deterministic():
    from geode.claims import load_claim

    c = load_claim("inr-error")
    a, b = c.run("smoke", 0), c.run("smoke", 0)
    assert a.metrics == b.metrics
    assert all(math.isfinite(v) for v in a.metrics.values())
    assert {"error_curves", "authors_heldout", "error_heatmaps"} <= set(a.figures)
    assert 0.0 <= a.metrics["worst_case_coverage"] <= 1.0
    assert {f"median_ratio_error_{f}" for f in ("grid", "fourier", "svd", "hash", "cp")} <= set(a.metrics)
    assert {f"authors_c_{f}" for f in ("grid", "svd", "fourier", "hash")} <= set(a.metrics)
    assert 0.0 <= a.metrics["authors_hash_gap_share"] < 1.0  # hash restarts differ: the gap term is positive
    assert a.metrics["authors_hash_eta_over_difference"] > 0.0
    # the authors' constant is the smallest that covers every calibration level: in-sample coverage is total
    assert a.metrics["authors_bound_coverage"] >= 0.0 and a.metrics["raw_difference_coverage"] <= 1.0
    assert a.tuned and {r["method"] for r in a.tuned} == {
        f"{rule}/{f}" for rule in ("scaled difference", "orthogonal") for f in ("grid", "svd", "fourier")
    }
    verdict, _checks = c.verdict(a.metrics)
    assert verdict in ("reproduced", "partial", "not reproduced", "inconclusive")


def test_claim_rotates_the_held_out_signal_with_the_seed():
    from geode.sciml.inr_error.claim import run

    # smoke signals: china and the phantom; seed k holds out signal k mod 2 and calibrates on the other
    held = [run("smoke", s).summary.split("held-out ")[1].split(":")[0] for s in (0, 1, 2)]
    assert held == ["china", "phantom", "china"]


def test_not_contracting_ladders_are_flagged_and_the_difference_baseline_is_the_raw_differences():
    import warnings

    from geode.sciml.inr_error import NotContractingWarning, raw_rho

    # errors that fall additively (CP-like): differences do not decay, the estimate reaches the cap
    f = np.cumsum(np.ones((5, 8)), axis=0)
    assert raw_rho(np.linalg.norm(np.diff(f, axis=0), axis=1)) == pytest.approx(1.0)
    with pytest.warns(NotContractingWarning, match="not contracting"):
        p = ErrorPredictor().fit(f)
    assert p.rho_clipped_ and p.rho_ == pytest.approx(0.95)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = ErrorPredictor(warn=False).fit(f)
        assert quiet.rho_clipped_
        geometric = ErrorPredictor().fit([np.zeros(4), np.full(4, 0.5), np.full(4, 0.75), np.full(4, 0.875)])
        assert not geometric.rho_clipped_ and geometric.raw_rho_ == pytest.approx(0.5)
        given = ErrorPredictor(rho=0.3).fit(f)
        assert not given.rho_clipped_
    base = ErrorPredictor("difference", warn=False).fit(f).predict_global()
    d = np.linalg.norm(np.diff(f, axis=0), axis=1)
    assert np.allclose(base.error, [*d, d[-1]])
    assert np.allclose(ErrorPredictor("difference").fit(f[:3]).heatmap(0), 1.0)


# --------------------------------------------------------------------------------------------------
# The authors' calibrated predictor (ScaledDifferencePredictor)
# --------------------------------------------------------------------------------------------------


def test_scaled_difference_predictor_by_hand():
    from geode.sciml.inr_error import ScaledDifferencePredictor

    rng = np.random.default_rng(0)
    f = rng.standard_normal((5, 3, 4))
    levels = [2, 4, 6, 8, 10]
    d = np.linalg.norm(np.diff(f.reshape(5, -1), axis=0), axis=1)
    p = ScaledDifferencePredictor(block=1).fit(f, levels)
    assert p.levels_.tolist() == [2, 4, 6, 8]  # the finest level has no finer neighbour
    np.testing.assert_allclose(p.bound_, (10 - np.array([2, 4, 6, 8])) * d)
    np.testing.assert_allclose(p.predict(3.0), 3.0 * d)  # c x the raw difference: d* - d_k cancels
    # block 2 with d* = 12: the mean of two adjacent differences
    q = ScaledDifferencePredictor(block=2, d_star=12).fit(f, levels)
    assert q.levels_.tolist() == [2, 4, 6]
    np.testing.assert_allclose(q.predict(1.0), [(d[i] + d[i + 1]) / 2 for i in range(3)])
    np.testing.assert_allclose(q.bound_, (12 - np.array([2, 4, 6])) * q.predict(1.0))
    # calibration: the smallest c whose prediction lies above every true error
    e = np.array([1.0, 2.0, 0.5, 0.1])
    c = p.calibrate(e)
    assert np.all(p.predict(c) >= e - 1e-12) and np.any(np.isclose(p.predict(c), e))
    np.testing.assert_allclose(p.heatmap(4, 2.0), 2.0 * np.abs(f[1] - f[-1]))


def test_scaled_difference_predictor_optimisation_gap_from_restarts():
    from geode.sciml.inr_error import ScaledDifferencePredictor

    rng = np.random.default_rng(1)
    f = rng.standard_normal((4, 6))
    restarts = [f[k] + 0.1 * rng.standard_normal((3, 6)) for k in range(4)]
    p = ScaledDifferencePredictor().fit(f, [1, 2, 3, 4], restarts=restarts)
    eta, eta_norm = [], []
    for r in restarts:
        pairs = [(np.linalg.norm(r[i] - r[j]), r[i] - r[j]) for i in range(3) for j in range(i + 1, 3)]
        best = max(pairs, key=lambda t: t[0])
        eta_norm.append(best[0])
        eta.append(best[1])
    d = np.linalg.norm(np.diff(f, axis=0), axis=1)
    de = np.linalg.norm(np.diff(np.array(eta), axis=0), axis=1)
    gap = 4 - np.array([1, 2, 3])
    np.testing.assert_allclose(p.bound_, gap * d + gap * de + np.array(eta_norm[:3]))
    np.testing.assert_allclose(p.eta_, eta_norm[:3])
    # without restarts the gap is zero and the bound is the scaled difference alone
    np.testing.assert_allclose(ScaledDifferencePredictor().fit(f, [1, 2, 3, 4]).bound_, gap * d)


def test_scaled_difference_predictor_bad_input():
    from geode.sciml.inr_error import ScaledDifferencePredictor

    f = np.zeros((3, 4))
    with pytest.raises(RuntimeError, match="fit"):
        ScaledDifferencePredictor().predict(1.0)
    with pytest.raises(ValueError, match="block"):
        ScaledDifferencePredictor(block=3).fit(f, [1, 2, 3])
    with pytest.raises(ValueError, match="levels"):
        ScaledDifferencePredictor().fit(f, [1, 2])
    with pytest.raises(ValueError, match="d_star"):
        ScaledDifferencePredictor(d_star=1).fit(f, [1, 2, 3])
    with pytest.raises(ValueError, match="restarts"):
        ScaledDifferencePredictor().fit(f, [1, 2, 3], restarts=[np.zeros((2, 4))])
    p = ScaledDifferencePredictor().fit(np.arange(12.0).reshape(3, 4), [1, 2, 3])
    with pytest.raises(ValueError, match="true_errors"):
        p.calibrate([1.0])
    with pytest.raises(ValueError, match="c"):
        p.predict(0.0)
    with pytest.raises(ValueError, match="level"):
        p.heatmap(3)
