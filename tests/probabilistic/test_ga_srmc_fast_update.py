"""GA-SRMC's lean Fisher update: the chain equals a reference written from the formulas, and the generic update's."""

from __future__ import annotations

import numpy as np
import pytest

from geode.probabilistic import OnlineFisher
from geode.probabilistic.ga_srmc import GASRMC
from geode.probabilistic.ga_srmc.kernel import _SamplerFisher
from geode.probabilistic.targets import GaussianTarget


def _target(d: int = 5) -> GaussianTarget:
    a = np.random.default_rng(3).normal(size=(d, d)) / np.sqrt(d)
    return GaussianTarget(np.ones(d), a @ a.T + 0.1 * np.eye(d))


def _reference_chain(t, x0, tau, alpha, n, seed, *, warmup, clip, warm_alpha=100, lam=1.0):
    """GA-SRMC (MALA base, online Fisher metric, shifted tilted score) step by step from the module's formulas."""
    d = x0.shape[0]
    rng = np.random.default_rng(seed)
    x, lp, g = x0.copy(), t.log_prob(x0), t.grad_log_prob(x0)
    theta = np.zeros(d)
    F, pending, count, n_ref = lam * np.eye(d), [], 0, 0
    M, Finv = np.eye(d), np.eye(d) / lam  # M = I until the warm-up is over
    out = []
    for k in range(n):
        a = alpha * min(1.0, (k + 1) / warm_alpha)
        v = a * (M @ theta)
        shifted = bool(np.any(v))
        gt_x = t.grad_log_prob(x - v) if shifted else g
        xi = rng.standard_normal(d)
        y = x + tau * gt_x + np.sqrt(2 * tau) * xi
        lp_y, g_y = t.log_prob(y), t.grad_log_prob(y)
        gt_y = t.grad_log_prob(y - v) if shifted else g_y
        w = np.sqrt(2 * tau) * xi + tau * (gt_x + gt_y)
        log_ratio = (lp_y - v @ g_y) - (lp - v @ g) + 0.5 * xi @ xi - w @ w / (4 * tau)
        if np.log(rng.random(())) < log_ratio:
            x, lp, g = y, lp_y, g_y
        theta = theta + (k + 1) ** -0.6 * (g - theta)
        u = g
        if count >= warmup and count > 0:  # winsorise at Mahalanobis norm clip sqrt(d) under the last refresh
            m2 = (n_ref + 1) * u @ Finv @ u
            if m2 > clip**2 * d:
                u = u * np.sqrt(clip**2 * d / m2)
        pending.append(u)
        count += 1
        if len(pending) == d:  # fold in every d increments
            F = F + sum(np.outer(p, p) for p in pending)
            pending, n_ref = [], count
            Finv_new = np.linalg.inv(F)
            if count >= warmup:
                Finv, M = Finv_new, d * Finv_new / np.trace(Finv_new)
        out.append(x.copy())
    return np.array(out)


@pytest.mark.parametrize("clip", [5.0, 0.5])  # 0.5: the winsorising branch runs on most steps
def test_chain_matches_reference_formulas(clip):
    t = _target()
    x0 = t.sample(0, 1)[0]
    k = GASRMC(t.log_prob, t.grad_log_prob, 0.05, 2.0, fisher_warmup=10, fisher_clip=clip)
    rng, s, xs = np.random.default_rng(7), k.init(x0), []
    for _ in range(200):
        s, _ = k.step(rng, s)
        xs.append(s.position)
    ref = _reference_chain(t, x0, 0.05, 2.0, 200, 7, warmup=10, clip=clip)
    np.testing.assert_allclose(np.array(xs), ref, rtol=1e-9, atol=1e-12)


def _run(kernel, x0, n, seed):
    rng, s = np.random.default_rng(seed), kernel.init(x0)
    xs = []
    for _ in range(n):
        s, _ = kernel.step(rng, s)
        xs.append(s.position)
    return np.array(xs), s


@pytest.mark.parametrize("base", ["mala", "fisher-mala"])
@pytest.mark.parametrize("chains", [None, 3])  # one chain (the lean path) and a batch (the generic one)
@pytest.mark.parametrize("clip", [5.0, 0.5, None])
def test_bit_identical_to_generic_update(base, chains, clip):
    t = _target()
    x0 = t.sample(0, 1)[0] if chains is None else t.sample(0, chains)
    kw = dict(base=base, fisher_warmup=7, fisher_clip=clip)
    fast = GASRMC(t.log_prob, t.grad_log_prob, 0.05, 2.0, **kw)
    slow = GASRMC(t.log_prob, t.grad_log_prob, 0.05, 2.0, **kw)
    assert isinstance(fast.estimator, _SamplerFisher)
    e = slow.estimator
    slow.estimator = OnlineFisher(e.damping, e.refresh_every, warmup=e.warmup, clip=e.clip)
    a, sa = _run(fast, x0, 150, 1)
    b, sb = _run(slow, x0, 150, 1)
    np.testing.assert_array_equal(a, b)
    est_a, est_b = (sa.metric, sb.metric) if base == "mala" else (sa.fisher, sb.fisher)
    np.testing.assert_array_equal(est_a.metric, est_b.metric)
    np.testing.assert_array_equal(np.array(est_a.pending), np.array(est_b.pending))


def test_lean_update_keeps_the_checks():
    est = _SamplerFisher(clip=5.0)
    e0 = est.init(3)
    with pytest.raises(ValueError, match="u"):
        est.update(e0, np.array([1.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="u"):
        est.update(e0, np.ones(4))
    ref = OnlineFisher(clip=5.0)
    for u in ([1, 2, 3], np.array([1, 2, 3], dtype=np.int64), np.array([1.0, 2.0, 3.0], dtype=np.float32)):
        a, b = est.update(e0, u), ref.update(e0, u)
        np.testing.assert_array_equal(a.pending[0], b.pending[0])
