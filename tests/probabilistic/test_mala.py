"""MALA, FisherMALA, the online Fisher estimate and the sample driver."""

from __future__ import annotations

import numpy as np
import pytest

from geode.probabilistic import (
    MALA,
    SRMC,
    FisherMALA,
    OnlineFisher,
    anisotropic_gaussian,
    sample,
)
from geode.probabilistic.mala import _log_q_ratio, _rmatvec
from geode.probabilistic.targets import GaussianTarget


def _std_normal_1d():
    return (lambda x: -0.5 * np.sum(x * x, axis=-1)), (lambda x: -x)


def _log_ratio(lp, grad, x, y, tau, pre=None):
    """The kernel's own MH log ratio r(x -> y), with the noise recovered from y."""
    gx, gy = grad(x), grad(y)
    if pre is None:
        xi = (y - x - tau * gx) / np.sqrt(2 * tau)
        z = None
    else:
        R, c = pre
        z = np.linalg.solve(R, (y - x)[..., None])[..., 0]
        xi = (z - tau * c[:, None] * _rmatvec(R, gx)) / np.sqrt(2 * tau * c[:, None])
    return lp(y) - lp(x) + _log_q_ratio(xi, z, gx, gy, tau, pre)


@pytest.mark.parametrize("preconditioned", [False, True])
def test_mh_log_ratio_is_antisymmetric_so_detailed_balance_holds(preconditioned):
    # pi(x) q(y|x) a(x,y) = pi(y) q(x|y) a(y,x)  <=>  r(x->y) = -r(y->x) with r the full log ratio
    t = anisotropic_gaussian(20.0, 3, rotated=True, seed=4)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(50, 3)), rng.normal(size=(50, 3))
    pre = None
    if preconditioned:
        a = rng.normal(size=(3, 3))
        R, c = np.linalg.cholesky(a @ a.T + np.eye(3)), 0.7
        pre = (np.broadcast_to(R, (50, 3, 3)), np.full(50, c))
    fwd = _log_ratio(t.log_prob, t.grad_log_prob, x, y, 0.3, pre)
    bwd = _log_ratio(t.log_prob, t.grad_log_prob, y, x, 0.3, pre)
    np.testing.assert_allclose(fwd, -bwd, atol=1e-9)


def _mala_acceptance_1d(tau: float, n: int = 120) -> float:
    """E_{x ~ N(0,1), xi ~ N(0,1)} min(1, e^r) by Gauss-Hermite quadrature."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(n)
    w = weights / weights.sum()
    x, xi = np.meshgrid(nodes, nodes, indexing="ij")
    y = (1 - tau) * x + np.sqrt(2 * tau) * xi
    r = -0.5 * y**2 + 0.5 * x**2 - (x - y + tau * y) ** 2 / (4 * tau) + 0.5 * xi**2
    return float(np.sum(np.outer(w, w) * np.minimum(1.0, np.exp(r))))


def test_mala_on_a_1d_gaussian_is_stationary_reversible_and_accepts_at_the_closed_form_rate():
    lp, g = _std_normal_1d()
    tau, n = 0.8, 400_000
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, 1))
    kernel = MALA(lp, g, tau)
    state, info = kernel.step(rng, kernel.init(x))
    y = state.position
    # acceptance at stationarity against quadrature
    assert info.acceptance_rate.mean() == pytest.approx(_mala_acceptance_1d(tau), abs=4e-3)
    # stationarity: N(0, 1) moments (5 standard errors)
    se = 1 / np.sqrt(n)
    assert abs(y.mean()) < 5 * se and abs(y.var() - 1) < 5 * np.sqrt(2) * se
    assert abs(np.mean(y**4) - 3) < 5 * np.sqrt(96) * se
    # reversibility: (X0, X1) is exchangeable
    for f in (lambda a, b: a * b**3, lambda a, b: a**2 * b):
        d = f(x, y) - f(y, x)
        assert abs(d.mean()) < 5 * d.std() / np.sqrt(n)


def test_mala_keeps_a_correlated_gaussian_invariant():
    cov = np.array([[2.0, 0.9], [0.9, 1.0]])
    t = GaussianTarget(np.array([1.0, -2.0]), cov)
    n = 40_000
    res = sample(MALA(t.log_prob, t.grad_log_prob, 0.4), t.sample(2, n), 5, seed=3, store=True)
    final = res.samples[-1]
    np.testing.assert_allclose(final.mean(axis=0), t.mean, atol=5 * np.sqrt(2.0 / n))
    np.testing.assert_allclose(np.cov(final.T), cov, atol=0.06)
    assert 0.3 < res.acceptance_rate < 1.0


def test_single_chain_and_batch_shapes_and_determinism():
    lp, g = _std_normal_1d()
    k = MALA(lp, g, 0.5)
    one = sample(k, np.zeros(3), 20, seed=5, burn_in=4, record_every=7)
    assert one.samples.shape == (20, 3) and one.mean.shape == (3,)
    assert np.ndim(one.chain_acceptance_rate) == 0
    np.testing.assert_array_equal(one.checkpoints, [7, 14, 20])
    np.testing.assert_allclose(one.running_means[-1], one.mean)
    np.testing.assert_allclose(one.mean, one.samples.mean(axis=0))
    again = sample(k, np.zeros(3), 20, seed=5, burn_in=4, record_every=7)
    np.testing.assert_array_equal(one.samples, again.samples)
    many = sample(k, np.zeros((6, 3)), 10, seed=5, store=False)
    assert many.samples is None and many.mean.shape == (6, 3) and many.chain_acceptance_rate.shape == (6,)
    # burn-in then resume from the final state reproduces one long run
    a = sample(k, np.zeros(3), 10, seed=np.random.default_rng(9))
    rng = np.random.default_rng(9)
    first = sample(k, np.zeros(3), 4, seed=rng)
    second = sample(k, first.final_state, 6, seed=rng)
    np.testing.assert_array_equal(a.samples, np.concatenate([first.samples, second.samples]))


def test_online_fisher_converges_to_the_true_fisher_from_exact_scores():
    t = anisotropic_gaussian(10.0, 4, rotated=True, seed=1)
    est = OnlineFisher(damping=1.0, refresh_every=50)
    state = est.init(4)
    for x in t.sample(0, 20_000):
        state = est.update(state, t.grad_log_prob(x))
    rel = np.linalg.norm(state.fisher - t.fisher) / np.linalg.norm(t.fisher)
    assert rel < 0.05
    # the trace-normalised metric, its square root and scale are consistent
    np.testing.assert_allclose(np.trace(state.metric), 4.0)
    np.testing.assert_allclose(state.scale[..., None, None] * state.factor @ state.factor.T, state.metric, atol=1e-10)
    Finv = np.linalg.inv(state.scatter)
    np.testing.assert_allclose(state.metric, 4 * Finv / np.trace(Finv), rtol=1e-8)
    # the oracle: d S^-1 / tr S^-1 = d Sigma / tr Sigma
    np.testing.assert_allclose(state.metric, 4 * t.cov / np.trace(t.cov), atol=0.05)


def test_online_fisher_refreshes_every_k_updates_and_starts_at_identity():
    est = OnlineFisher(damping=2.0, refresh_every=3)
    s = est.init(2, (5,))
    np.testing.assert_array_equal(s.metric, np.broadcast_to(np.eye(2), (5, 2, 2)))
    u = np.random.default_rng(0).normal(size=(5, 2))
    s1 = est.update(s, u)
    s2 = est.update(s1, u)
    assert s2.count == 2 and len(s2.pending) == 2
    np.testing.assert_array_equal(s2.metric, s.metric)  # not yet refreshed
    np.testing.assert_allclose(s2.fisher, (2 * np.eye(2) + 2 * u[:, :, None] * u[:, None, :]) / 3)
    s3 = est.update(s2, u)
    assert s3.pending == () and s3.count == 3
    F = 2 * np.eye(2) + 3 * u[:, :, None] * u[:, None, :]
    np.testing.assert_allclose(s3.scatter, F)
    Finv = np.linalg.inv(F)
    np.testing.assert_allclose(s3.metric, 2 * Finv / np.trace(Finv, axis1=1, axis2=2)[:, None, None], rtol=1e-10)
    with pytest.raises(FloatingPointError, match="overflowed"):
        est.refresh(est.update(est.update(s3, np.full((5, 2), 1e200)), u)._replace(pending=(np.full((5, 2), 1e200),)))


def test_single_chain_lapack_refresh_matches_the_batched_refresh():
    est = OnlineFisher(damping=0.5, refresh_every=7)
    u = np.random.default_rng(3).normal(size=(7, 2, 5))  # 7 updates of 2 chains
    batch, one = est.init(5, (2,)), est.init(5)
    for k in range(7):
        batch, one = est.update(batch, u[k]), est.update(one, u[k, 1])
    for field in ("scatter", "factor", "scale", "metric"):
        np.testing.assert_allclose(getattr(one, field), getattr(batch, field)[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(one.factor @ one.factor.T, np.linalg.inv(one.scatter), rtol=1e-10)


def test_fisher_mala_learns_the_fisher_and_samples_the_target():
    t = anisotropic_gaussian(30.0, 3, rotated=True, seed=2)
    k = FisherMALA(t.log_prob, t.grad_log_prob, 0.3, refresh_every=10)
    res = sample(k, t.sample(0, 64), 1500, seed=1, store=False)
    state = res.final_state
    rel = np.linalg.norm(state.fisher.fisher - t.fisher, axis=(1, 2)) / np.linalg.norm(t.fisher)
    assert np.median(rel) < 0.2
    assert res.acceptance_rate == pytest.approx(0.574, abs=0.05)  # the step size adapts to the target
    # the final positions are (approximately) target draws
    pos = state.position
    z = np.linalg.solve(np.linalg.cholesky(t.cov), pos.T).T
    assert abs(z.mean()) < 0.15 and abs(z.var() - 1) < 0.2


def test_alpha_zero_srmc_is_exactly_the_base_kernel():
    t = anisotropic_gaussian(10.0, 3, rotated=True)
    x0 = t.sample(0, 5)
    mala = sample(MALA(t.log_prob, t.grad_log_prob, 0.3), x0, 30, seed=7)
    sr0 = sample(SRMC(t.log_prob, t.grad_log_prob, 0.3, 0.0), x0, 30, seed=7)
    np.testing.assert_array_equal(mala.samples, sr0.samples)
    fm = sample(FisherMALA(t.log_prob, t.grad_log_prob, 0.3, refresh_every=4), x0, 30, seed=7)
    srf0 = sample(SRMC(t.log_prob, t.grad_log_prob, 0.3, 0.0, base="fisher-mala", refresh_every=4), x0, 30, seed=7)
    np.testing.assert_array_equal(fm.samples, srf0.samples)
    np.testing.assert_array_equal(fm.final_state.step_size, srf0.final_state.step_size)


def test_bad_inputs_raise_clear_errors():
    lp, g = _std_normal_1d()
    with pytest.raises(ValueError, match="step_size must be > 0"):
        MALA(lp, g, 0.0)
    with pytest.raises(ValueError, match="step_size"):
        FisherMALA(lp, g, -1.0)
    with pytest.raises(TypeError, match="log_prob must be callable"):
        MALA(None, g, 0.1)
    k = MALA(lp, g, 0.1)
    with pytest.raises(ValueError, match="position must contain only finite"):
        k.init(np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="position must have 1 or 2"):
        k.init(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="grad_log_prob must return the shape"):
        MALA(lp, lambda x: x[..., :-1], 0.1).init(np.zeros(3))
    with pytest.raises(ValueError, match="log_prob must return shape"):
        MALA(lambda x: np.zeros(3), g, 0.1).init(np.zeros(3))
    with pytest.raises(ValueError, match="log_prob.*finite"):
        MALA(lambda x: -np.inf * np.ones(x.shape[:-1]), g, 0.1).init(np.zeros(3))
    with pytest.raises(ValueError, match="damping"):
        OnlineFisher(damping=0.0)
    with pytest.raises(ValueError, match="target_accept"):
        FisherMALA(lp, g, 0.1, target_accept=1.0)
    with pytest.raises(ValueError, match="n_steps"):
        sample(k, np.zeros(2), 0, seed=0)
    with pytest.raises(TypeError, match="kernel"):
        sample(object(), np.zeros(2), 3, seed=0)


def test_a_chain_that_produces_nan_stops_with_an_error_naming_the_step():
    # the score turns NaN beyond |x| > 1.5: a bug in the user's gradient
    def grad(x):
        return np.where(np.abs(x) > 1.5, np.nan, -x)

    k = MALA(lambda x: -0.5 * np.sum(x * x, axis=-1), grad, 1.0)
    with pytest.raises(FloatingPointError, match=r"chain\(s\) \[.*\] produced a non-finite .* at step \d+"):
        sample(k, np.zeros((8, 2)), 500, seed=0)
    # the kernel itself rejects such a proposal and flags it
    state = k.init(np.full(2, 1.4))
    flagged = False
    rng = np.random.default_rng(0)
    for _ in range(50):
        new, info = k.step(rng, state)
        flagged |= bool(info.is_divergent)
        assert np.all(np.isfinite(new.logdensity_grad))
    assert flagged


def test_proposals_outside_the_support_are_rejected():
    # log density -inf outside the unit box: such proposals are rejected, the chain stays inside
    def lp(x):
        return np.where(np.all(np.abs(x) < 1, axis=-1), -0.5 * np.sum(x * x, axis=-1), -np.inf)

    res = sample(MALA(lp, lambda x: -x, 0.5), np.zeros((16, 2)), 200, seed=0)
    assert np.all(np.abs(res.samples) < 1)
    with pytest.raises(FloatingPointError, match="non-finite"):
        sample(MALA(lambda x: np.where(lp(x) > -np.inf, lp(x), np.nan), lambda x: -x, 0.5), np.zeros(2), 200, seed=0)
