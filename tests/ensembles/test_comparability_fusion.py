"""Comparability recovery: exact recovery under matched radial distortion, the gauge, stability under mismatch,
simplex invariants, validation and the claim check."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geode.ensembles import ComparabilityRecovery, TemperatureScaling, clr, geometry_descriptor, mean_fusion, softmax
from geode.ensembles.comparability_fusion import DESCRIPTORS, VARIANTS, project_log_scales
from geode.ensembles.comparability_fusion.experiment import radial_oracles

ALL = [(v, d, b) for v in VARIANTS for d in DESCRIPTORS for b in (False, True)]


def latent(n=300, c=6, seed=0, scale=1.0):
    return softmax(scale * np.random.default_rng(seed).normal(size=(n, c)))


def assert_on_simplex(p):
    assert np.all(np.isfinite(p)) and np.all(p >= 0)
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-9)


@pytest.mark.parametrize(("variant", "descriptor", "bias"), ALL)
def test_exact_recovery_under_matched_radial_distortion(variant, descriptor, bias):
    # p_m = softmax(tau_m clr(q)): the rectified oracles coincide, = softmax(tau_bar clr(q)), tau_bar = geo-mean
    # (exact as long as no probability falls below the log floor eps)
    q = latent(scale=0.5)
    taus = np.array([0.4, 1.0, 2.5, 5.0])
    P = softmax(taus[:, None, None] * clr(q)[None])
    cr = ComparabilityRecovery(variant, descriptor, bias=bias, eps=1e-12).fit(P)
    tau_bar = float(np.exp(np.mean(np.log(taus))))
    np.testing.assert_allclose(cr.scales_, tau_bar / taus, rtol=1e-6)
    R = cr.transform(P)
    np.testing.assert_allclose(R, np.broadcast_to(softmax(tau_bar * clr(q)), R.shape), atol=1e-6)
    np.testing.assert_allclose(cr.biases_, 0.0, atol=1e-6)
    assert math.isclose(float(np.mean(np.log(cr.scales_))), 0.0, abs_tol=1e-12)


def test_recovery_undoes_a_planted_power_map():
    # a power map p -> p^gamma / Z is a radial distortion in clr coordinates
    q = latent(seed=1)
    gammas = np.array([0.5, 2.0, 3.0])
    P = q[None] ** gammas[:, None, None]
    P /= P.sum(-1, keepdims=True)
    R = ComparabilityRecovery(eps=1e-15).fit_transform(P)
    np.testing.assert_allclose(R[0], R[1], atol=1e-9)
    np.testing.assert_allclose(R[0], R[2], atol=1e-9)


def test_alternating_fixed_point_and_convergence():
    q = latent(seed=2, scale=0.5)
    taus = np.array([0.3, 1.0, 3.0])
    P = softmax(taus[:, None, None] * clr(q)[None])
    cr = ComparabilityRecovery("alternating", eps=1e-12).fit(P)
    assert cr.n_iter_ == 1  # the closed form is already the fixed point: one round confirms it
    # with noise, the alternating variant converges and stays within the bounds
    _, Pn, _ = radial_oracles(500, taus, seed=3)
    cr = ComparabilityRecovery("alternating", tol=1e-8).fit(Pn)
    assert cr.n_iter_ < cr.max_iter
    assert np.all((cr.scales_ >= 1e-2) & (cr.scales_ <= 1e2))


def test_identical_oracles_are_left_alone_and_fuse_to_themselves():
    q = latent(seed=4)
    P = np.repeat(q[None], 3, axis=0)
    for variant in VARIANTS:
        cr = ComparabilityRecovery(variant).fit(P)
        np.testing.assert_allclose(cr.scales_, 1.0, atol=1e-9)
        np.testing.assert_allclose(cr.fuse(P), q, atol=1e-9)


def test_oracle_permutation_permutes_the_scales_and_common_scale_is_unidentifiable():
    _, P, _ = radial_oracles(400, [0.5, 1.0, 2.0], seed=5)
    perm = [2, 0, 1]
    a = ComparabilityRecovery().fit(P).scales_
    b = ComparabilityRecovery().fit(P[perm]).scales_
    np.testing.assert_allclose(b, a[perm], rtol=1e-12)
    # multiplying every tau by one factor leaves the scales unchanged (the gauge fixes the common scale)
    q = latent(seed=6, scale=0.5)
    taus = np.array([0.5, 1.0, 2.0])
    s1 = ComparabilityRecovery(eps=1e-12).fit(softmax(taus[:, None, None] * clr(q)[None])).scales_
    s2 = ComparabilityRecovery(eps=1e-12).fit(softmax(3 * taus[:, None, None] * clr(q)[None])).scales_
    np.testing.assert_allclose(s1, s2, rtol=1e-9)


def test_projection_of_log_scales_is_the_euclidean_projection():
    rng = np.random.default_rng(7)
    for _ in range(20):
        u = rng.normal(scale=3, size=5)
        lo, hi = -1.0, 2.0
        x = project_log_scales(u, lo, hi)
        assert abs(x.sum()) < 1e-9 and x.min() >= lo - 1e-12 and x.max() <= hi + 1e-12
        # KKT: x = clip(u - nu) for one nu; every feasible point is at least as far from u
        for _ in range(50):
            y = rng.uniform(lo, hi, 5)
            y -= y.mean()
            if y.min() < lo or y.max() > hi:
                continue
            assert np.sum((x - u) ** 2) <= np.sum((y - u) ** 2) + 1e-9
    with pytest.raises(ValueError, match="low <= 0 <= high"):
        project_log_scales([0.0], 0.5, 1.0)


def test_scale_bounds_are_respected():
    q = latent(seed=8)
    taus = np.array([0.01, 1.0, 100.0])  # needs scales 1e2 and 1e-2 ... beyond [0.5, 2]
    P = softmax(taus[:, None, None] * clr(q)[None])
    cr = ComparabilityRecovery(scale_bounds=(0.5, 2.0)).fit(P)
    assert np.all(cr.scales_ >= 0.5 - 1e-12) and np.all(cr.scales_ <= 2.0 + 1e-12)
    assert abs(np.log(cr.scales_).sum()) < 1e-9


def test_stable_recovery_under_approximate_mismatch():
    # non-radial perturbation of size s: the disagreement of the rectified oracles grows smoothly from zero
    q = latent(n=2000, seed=9, scale=0.5)
    taus = np.array([0.5, 1.0, 3.0])
    rng = np.random.default_rng(10)
    noise = rng.normal(size=(3, 2000, 6))
    errs = []
    for s in (0.0, 0.01, 0.05, 0.2):
        P = softmax(taus[:, None, None] * clr(q)[None] + s * noise)
        R = ComparabilityRecovery(eps=1e-12).fit_transform(P)
        errs.append(float(np.abs(R - R.mean(0)).mean()))
    assert errs[0] < 1e-10
    assert errs[1] < errs[2] < errs[3]
    assert errs[1] < 0.01 and errs[2] < 0.05  # roughly linear in the perturbation


def test_recovery_beats_direct_fusion_on_the_synthetic_setup():
    # the claim's setup at small scale: closed form + global TS has a clearly lower KL than mean + global TS
    q, P, y = radial_oracles(2000, [0.4, 1.0, 2.5, 5.0], seed=11)
    h = 1000
    base = TemperatureScaling().fit(mean_fusion(P[:, :h]), y[:h]).transform(mean_fusion(P[:, h:]))
    cr = ComparabilityRecovery().fit(P[:, :h])
    ours = TemperatureScaling().fit(cr.fuse(P[:, :h]), y[:h]).transform(cr.fuse(P[:, h:]))
    from geode.ensembles import kl_divergence

    assert kl_divergence(q[h:], ours).mean() < 0.7 * kl_divergence(q[h:], base).mean()


@st.composite
def hard_stacks(draw):
    m, n, c = draw(st.integers(1, 4)), draw(st.integers(1, 10)), draw(st.integers(2, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    P = softmax(draw(st.sampled_from([0.1, 1.0, 10.0, 100.0])) * rng.normal(size=(m, n, c)))
    hard = rng.random((m, n)) < 0.4
    P = np.where(hard[..., None], np.eye(c)[rng.integers(0, c, (m, n))], P)
    return P


@settings(max_examples=60, deadline=None)
@given(hard_stacks(), st.sampled_from(ALL))
def test_rectified_and_fused_outputs_stay_on_the_simplex(P, config):
    variant, descriptor, bias = config
    cr = ComparabilityRecovery(variant, descriptor, bias=bias).fit(P)
    assert np.all(np.isfinite(cr.scales_)) and np.all(np.isfinite(cr.biases_))
    assert_on_simplex(cr.transform(P))
    for rule in ("mean", "log", "vote"):
        assert_on_simplex(cr.fuse(P, rule=rule))


def test_geometry_descriptors_closed_forms():
    P = np.array([[[0.5, 0.5], [1.0, 0.0]]])
    np.testing.assert_allclose(geometry_descriptor(P, "max_prob"), [0.75])
    np.testing.assert_allclose(geometry_descriptor(P, "entropy"), [np.log(2) / 2])
    z = np.log(1e-6) / 2
    np.testing.assert_allclose(geometry_descriptor(P, "clr_norm_floored"), [np.sqrt(2 * z * z) / 2])
    # shared support: the hard row has one class above the floor and is skipped; the flat row has norm 0
    np.testing.assert_allclose(geometry_descriptor(P, "clr_norm"), [0.0])
    Q = np.array([[[0.2, 0.8, 0.0], [0.5, 0.5, 0.0]], [[0.6, 0.4, 0.0], [0.1, 0.1, 0.8]]])
    # support per row: {0, 1} in both; oracle 0: |log 0.2 - log 0.8| / sqrt 2 and 0; oracle 1: log 1.5 / sqrt 2, 0
    np.testing.assert_allclose(
        geometry_descriptor(Q, "clr_norm"), [np.log(4) / np.sqrt(2) / 2, np.log(1.5) / np.sqrt(2) / 2]
    )
    assert np.isnan(geometry_descriptor(np.array([[[1.0, 0.0]]]), "clr_norm")).all()


def test_validation_errors():
    q = latent(n=20, c=3)
    P = np.stack([q, q])
    with pytest.raises(ValueError, match="variant must be one of"):
        ComparabilityRecovery("closed")
    with pytest.raises(ValueError, match="descriptor must be one of"):
        ComparabilityRecovery(descriptor="tail")
    with pytest.raises(ValueError, match=r"scale_bounds\[0\] must be <= 1.0"):
        ComparabilityRecovery(scale_bounds=(2.0, 3.0))
    with pytest.raises(TypeError, match="bias must be a bool"):
        ComparabilityRecovery(bias=1)
    with pytest.raises(RuntimeError, match="not fitted"):
        ComparabilityRecovery().transform(P)
    cr = ComparabilityRecovery().fit(P)
    with pytest.raises(ValueError, match="2 oracles and 3 classes"):
        cr.transform(P[:1])
    with pytest.raises(ValueError, match="sum to one"):
        ComparabilityRecovery().fit(P * 1.1)
    with pytest.raises(ValueError, match="non-negative"):
        ComparabilityRecovery().fit(-P)
    with pytest.raises(ValueError, match="mismatched"):
        ComparabilityRecovery().fit([q, q[:5]])
    # normalising on request
    np.testing.assert_allclose(ComparabilityRecovery().fit(P * 2.0, normalize=True).scales_, 1.0)


# --- the claim check ---------------------------------------------------------------------------------------


def test_claim_thresholds_are_the_issues():
    from geode.claims import load_claim

    c = load_claim("comparability-fusion")
    got = {t.name: (t.metric, t.op, t.value) for t in (*c.thresholds, *c.floors)}
    assert got == {
        "synthetic": ("synthetic_kl_reduction", ">=", 0.5),
        "real": ("real_nll_gain", ">", 0.0),
        "real_second": ("real2_nll_gain", ">", 0.0),
        "synthetic_headroom": ("synthetic_bias_headroom", ">=", 1.5),
        "oracles_trained": ("real_min_oracle_acc", ">=", 0.7),
    }
    assert c.reproduced == "synthetic and real and real_second" and c.partial == "synthetic"
    assert {f.name for f in c.floors} == {"synthetic_headroom", "oracles_trained"}
    import geode.ensembles.comparability_fusion.claim as claim_module

    assert "Comparability recovery" in c.doc and "Revision 1's verdict" in claim_module.__doc__


def test_claim_smoke_run():
    from geode.claims import load_claim

    c = load_claim("comparability-fusion")
    out = c.run("smoke", 0)
    assert all(math.isfinite(v) for v in out.metrics.values())
    assert "fusion" in out.figures
    assert out.metrics["noiseless_recovery_max_abs_diff"] < 1e-8
    # at the default floor the shared-support descriptor finds the exact scales; revision 1's does not
    assert out.metrics["noiseless_scale_log_error"] < 1e-9
    assert out.metrics["noiseless_scale_log_error_floored"] > 1e-2
    assert out.tuned and {r["method"] for r in out.tuned} == {"direct", "cr", "random"}


# --- the shared-support descriptor, the alternating bias, sklearn ------------------------------------------


def test_exact_recovery_at_the_default_floor_when_probabilities_fall_below_it():
    # the audit's case: q* ~ Dirichlet(0.5), C = 8, exact power maps; many probabilities are below 1e-6
    rng = np.random.default_rng(3)
    q = rng.dirichlet(np.full(8, 0.5), size=2000)
    taus = np.array([0.3, 0.8, 2.0, 4.0])
    P = q[None] ** taus[:, None, None]
    P /= P.sum(-1, keepdims=True)
    assert np.mean(P < 1e-6) > 0.02
    tau_bar = float(np.exp(np.mean(np.log(taus))))
    cr = ComparabilityRecovery().fit(P)  # default eps = 1e-6 and support floor 1e-4
    np.testing.assert_allclose(cr.scales_, tau_bar / taus, rtol=1e-9)
    floored = ComparabilityRecovery(descriptor="clr_norm_floored").fit(P)
    assert np.max(np.abs(np.log(floored.scales_ * taus / tau_bar))) > 0.1  # revision 1's descriptor is off


def test_alternating_with_biases_undoes_class_offsets_too():
    # p_m = softmax(tau_m clr(q) + beta_m): with bias=True the exact solution a_m tau_m = tau_bar,
    # b_m = c - a_m mu_m is the alternating fixed point; the rectified oracles coincide
    q = latent(n=600, seed=4, scale=0.7)
    taus = np.array([0.5, 1.0, 2.0])
    beta = np.random.default_rng(5).normal(scale=0.8, size=(3, 6))
    beta -= beta.mean(axis=1, keepdims=True)
    P = softmax(taus[:, None, None] * clr(q)[None] + beta[:, None, :])
    cr = ComparabilityRecovery("alternating", bias=True, eps=1e-12, tol=1e-10, max_iter=500).fit(P)
    R = cr.transform(P)
    np.testing.assert_allclose(R, np.broadcast_to(R.mean(axis=0), R.shape), atol=1e-5)
    assert np.abs(cr.biases_).max() > 0.1
    np.testing.assert_allclose(cr.scales_ * taus, (cr.scales_ * taus)[0], rtol=1e-5)
    # without the biases the offsets cannot be undone
    R0 = ComparabilityRecovery("alternating", eps=1e-12).fit_transform(P)
    assert np.abs(R0 - R0.mean(axis=0)).max() > 1e-2


def test_sklearn_estimator_contract():
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV

    cr = ComparabilityRecovery("alternating", bias=True, scale_bounds=[0.1, 10.0], layout="samples")
    params = cr.get_params()
    assert params["variant"] == "alternating" and params["scale_bounds"] == [0.1, 10.0]
    twin = clone(cr)
    assert twin.get_params() == params and twin is not cr
    assert cr.set_params(descriptor="entropy").descriptor == "entropy"
    with pytest.raises(ValueError, match="descriptor"):
        cr.set_params(descriptor="tail").fit(np.full((4, 2, 3), 1 / 3))
    # samples first: GridSearchCV splits the samples and selects by the fused log-likelihood
    q, P, y = radial_oracles(600, [0.4, 1.0, 2.5], seed=0)
    X = np.swapaxes(P, 0, 1)  # (N, M, C)
    search = GridSearchCV(
        ComparabilityRecovery(layout="samples"), {"descriptor": ["clr_norm", "entropy"], "pool": ["mean", "log"]}, cv=3
    ).fit(X, y)
    assert search.best_params_["descriptor"] in ("clr_norm", "entropy")
    best = search.best_estimator_
    assert best.transform(X).shape == X.shape
    np.testing.assert_allclose(
        best.transform(X),
        np.swapaxes(
            ComparabilityRecovery(**{k: v for k, v in best.get_params().items() if k != "layout"}).fit(P).transform(P),
            0,
            1,
        ),
    )
    assert best.score(X, y) == pytest.approx(-float(np.mean(-np.log(best.fuse(X)[np.arange(600), y]))))
