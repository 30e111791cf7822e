"""Field-level ensembles: simplex helpers, fusion baselines, temperature scaling and the mutual-correction
baselines, on hand-made inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from geode.ensembles import (
    MutualCorrection,
    PerOracleTemperatureScaling,
    TemperatureScaling,
    accuracy,
    as_oracle_stack,
    check_simplex,
    clr,
    confidence_gate,
    direct_fusion,
    expected_calibration_error,
    fit_inverse_temperature,
    kl_divergence,
    log_pool,
    majority_vote,
    mean_fusion,
    mutual_targets,
    nll,
    softmax,
)


def assert_on_simplex(p: np.ndarray) -> None:
    assert np.all(np.isfinite(p)), "NaN or inf on the simplex"
    assert np.all(p >= 0), "negative probability"
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-9)


@st.composite
def oracle_stacks(draw, hard: bool = True):
    """(M, N, C) soft outputs, with some hard 0/1 rows and exact zeros."""
    m = draw(st.integers(1, 4))
    n = draw(st.integers(1, 12))
    c = draw(st.integers(2, 6))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    scale = draw(st.sampled_from([0.1, 1.0, 5.0, 40.0]))
    P = softmax(scale * rng.normal(size=(m, n, c)))
    if hard:
        mask = rng.random((m, n)) < 0.3
        onehot = np.eye(c)[rng.integers(0, c, (m, n))]
        P = np.where(mask[..., None], onehot, P)
        zero = rng.random((m, n, c)) < 0.2
        P = np.where(zero, 0.0, P)
        P[P.sum(-1) == 0] = 1.0 / c
        P = P / P.sum(-1, keepdims=True)
    return P


# --- simplex helpers -----------------------------------------------------------------------------------


def test_clr_sums_to_zero_and_softmax_inverts_it():
    rng = np.random.default_rng(0)
    p = softmax(rng.normal(size=(50, 7)))
    z = clr(p)
    np.testing.assert_allclose(z.sum(-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(softmax(z), p, atol=1e-12)
    # hard 0/1 rows stay finite
    assert np.all(np.isfinite(clr(np.array([[1.0, 0.0, 0.0]]))))


def test_check_simplex_errors_and_normalize():
    with pytest.raises(ValueError, match="non-negative"):
        check_simplex("p", [[1.2, -0.2]])
    with pytest.raises(ValueError, match="sum to one"):
        check_simplex("p", [[0.5, 0.6]])
    np.testing.assert_allclose(check_simplex("p", [[1.0, 3.0]], normalize=True), [[0.25, 0.75]])
    with pytest.raises(ValueError, match="all-zero row"):
        check_simplex("p", [[0.0, 0.0]], normalize=True)
    with pytest.raises(ValueError, match="at least 2 classes"):
        check_simplex("p", [[1.0]])
    with pytest.raises(ValueError, match="finite"):
        check_simplex("p", [[np.nan, 1.0]])


def test_oracle_stack_rejects_mismatched_shapes():
    a, b = np.full((3, 2), 0.5), np.full((4, 2), 0.5)
    with pytest.raises(ValueError, match="mismatched"):
        as_oracle_stack("P", [a, b])
    with pytest.raises(ValueError, match="3 dimension"):
        as_oracle_stack("P", a)
    assert as_oracle_stack("P", [a, a]).shape == (2, 3, 2)


def test_metrics_closed_forms():
    p = np.array([[0.5, 0.5], [0.9, 0.1]])
    y = np.array([0, 1])
    assert nll(p, y) == pytest.approx(-(np.log(0.5) + np.log(0.1)) / 2)
    assert accuracy(p, y) == pytest.approx(0.5)
    # ECE with 15 bins: bins of 0.5 (acc 1, conf 0.5) and 0.9 (acc 0, conf 0.9): (0.5 + 0.9) / 2
    assert expected_calibration_error(p, y) == pytest.approx(0.7)
    q = np.array([[0.25, 0.75], [0.9, 0.1]])
    np.testing.assert_allclose(kl_divergence(p, q), [0.5 * np.log(2) + 0.5 * np.log(0.5 / 0.75), 0.0])
    with pytest.raises(ValueError, match="labels in"):
        nll(p, [0, 2])


# --- fusion rules --------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(oracle_stacks())
def test_every_fusion_rule_stays_on_the_simplex(P):
    for rule in ("mean", "log", "vote"):
        out = direct_fusion(P, rule)
        assert out.shape == P.shape[1:]
        assert_on_simplex(out)


@settings(max_examples=50, deadline=None)
@given(oracle_stacks(hard=False), st.integers(1, 5))
def test_identical_oracles_fuse_to_themselves(P, m):
    p = P[0]
    same = np.repeat(p[None], m, axis=0)
    np.testing.assert_allclose(mean_fusion(same), p, atol=1e-12)
    # the log pool is exact for rows above the log floor
    ok = p.min(axis=1) > 1e-5
    np.testing.assert_allclose(log_pool(same)[ok], p[ok], atol=1e-9)


def test_pools_on_a_hand_made_example():
    P = np.array([[[0.8, 0.2]], [[0.4, 0.6]]])
    np.testing.assert_allclose(mean_fusion(P), [[0.6, 0.4]])
    np.testing.assert_allclose(mean_fusion(P, [3.0, 1.0]), [[0.7, 0.3]])
    g = np.sqrt([0.8 * 0.4, 0.2 * 0.6])
    np.testing.assert_allclose(log_pool(P), [g / g.sum()])
    # a tie between two oracles shares the vote; a third breaks it
    np.testing.assert_allclose(majority_vote(P), [[0.5, 0.5]])
    P3 = np.concatenate([P, [[[0.3, 0.7]]]])
    np.testing.assert_allclose(majority_vote(P3), [[0.0, 1.0]])
    with pytest.raises(ValueError, match="rule must be one of"):
        direct_fusion(P, "median")
    with pytest.raises(ValueError, match="one entry per oracle"):
        mean_fusion(P, [1.0])


# --- temperature scaling -------------------------------------------------------------------------------


def test_fit_inverse_temperature_matches_a_scalar_minimiser():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(400, 5)) * 2
    y = rng.integers(0, 5, 400)
    beta = fit_inverse_temperature(z, y)

    def f(b):
        logits = b * z
        lse = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
        return float(np.mean(lse - logits[np.arange(400), y]))

    ref = minimize_scalar(f, bounds=(1e-3, 10), method="bounded", options={"xatol": 1e-10}).x
    assert float(beta) == pytest.approx(ref, rel=1e-5)
    # soft targets: the KL fit of a scale recovers a planted one exactly
    t = softmax(0.7 * z)
    assert float(fit_inverse_temperature(z, t)) == pytest.approx(0.7, rel=1e-8)


def test_temperature_scaling_recovers_a_planted_temperature():
    rng = np.random.default_rng(2)
    n, c = 20000, 6
    z = rng.normal(size=(n, c)) * 1.5
    y = (softmax(z).cumsum(1) < rng.random(n)[:, None]).sum(1).clip(max=c - 1)
    p_over = softmax(3.0 * z)  # overconfident by T = 3
    ts = TemperatureScaling().fit(p_over, y)
    assert ts.temperature_ == pytest.approx(3.0, rel=0.05)
    assert_on_simplex(ts.transform(p_over))
    with pytest.raises(RuntimeError, match="not fitted"):
        TemperatureScaling().transform(p_over)


def test_per_oracle_temperature_scaling_undoes_planted_temperatures():
    rng = np.random.default_rng(3)
    n, c = 20000, 5
    z = rng.normal(size=(n, c)) * 1.5
    y = (softmax(z).cumsum(1) < rng.random(n)[:, None]).sum(1).clip(max=c - 1)
    taus = np.array([0.5, 1.0, 4.0])
    P = softmax(taus[:, None, None] * z[None])
    po = PerOracleTemperatureScaling().fit(P, y)
    np.testing.assert_allclose(po.temperatures_, taus, rtol=0.06)
    assert_on_simplex(po.fuse(P))
    with pytest.raises(ValueError, match="3 oracles"):
        po.transform(P[:2])


@settings(max_examples=40, deadline=None)
@given(oracle_stacks())
def test_temperature_scaling_keeps_hard_inputs_on_the_simplex(P):
    n = P.shape[1]
    y = np.arange(n) % P.shape[2]
    assert_on_simplex(TemperatureScaling().fit(P[0], y).transform(P[0]))
    assert_on_simplex(PerOracleTemperatureScaling().fit(P, y).fuse(P))


# --- mutual-correction baselines -----------------------------------------------------------------------


def test_mutual_targets_and_confidence_gate():
    t = mutual_targets([0, 1, 2], [0, 2, 1], [0.5, 0.25, 1.0], 3)
    np.testing.assert_allclose(t, [[1, 0, 0], [0, 0.75, 0.25], [0, 1, 0]])
    w_t, w_v = confidence_gate([0.9, 0.4, 0.5], [0.6, 0.8, 0.5])
    assert w_t.tolist() == [0.0, 1.0, 0.0] and w_v.tolist() == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match=r"weight must lie in \[0, 1\]"):
        mutual_targets([0], [1], [1.5], 2)
    with pytest.raises(ValueError, match="labels_partner must hold labels"):
        mutual_targets([0], [3], [0.5], 2)


def test_information_maximization_closed_forms():
    import torch

    from geode.ensembles.mutual import information_maximization

    uniform = torch.full((4, 4), 0.25)
    assert float(information_maximization(uniform)) == pytest.approx(0.0, abs=1e-6)
    diverse_onehot = torch.eye(4)
    assert float(information_maximization(diverse_onehot)) == pytest.approx(-np.log(4), abs=1e-5)


def _tiny_models(seed=0):
    import torch

    torch.manual_seed(seed)
    t = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    v = torch.nn.Linear(3, 4)
    return t, v


def test_teacher_student_leaves_the_partner_and_the_inputs_untouched():
    import torch

    t, v = _tiny_models()
    before_t = [p.detach().clone() for p in t.parameters()]
    x = np.random.default_rng(0).normal(size=(40, 3)).astype(np.float32)
    mt, mv, hist = MutualCorrection("teacher_student", rounds=2, epochs=1, seed=0).fit(t, v, x)
    for a, b in zip(v.parameters(), mv.parameters()):
        assert torch.equal(a, b)
    for a, b in zip(before_t, t.parameters()):
        assert torch.equal(a, b)  # fit trains copies
    assert any(not torch.equal(a, b) for a, b in zip(t.parameters(), mt.parameters()))
    assert len(hist) == 3 and hist[0]["mean_w_t"] == 1.0 and hist[0]["mean_w_v"] == 0.0


def test_mutual_correction_is_deterministic_and_validates():
    import torch

    t, v = _tiny_models()
    x = np.random.default_rng(1).normal(size=(30, 3)).astype(np.float32)
    y = np.arange(30) % 4
    a = MutualCorrection("naive", rounds=2, epochs=2, im_weight=0.5, seed=3).fit(t, v, x, y=y)
    b = MutualCorrection("naive", rounds=2, epochs=2, im_weight=0.5, seed=3).fit(t, v, x, y=y)
    assert a[2] == b[2]
    for p, q in zip(a[0].parameters(), b[0].parameters()):
        assert torch.equal(p, q)
    with pytest.raises(ValueError, match="scheme must be one of"):
        MutualCorrection("mutual")
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        MutualCorrection(rounds=0)
    with pytest.raises(ValueError, match="y must hold one label per row of x"):
        MutualCorrection().fit(t, v, x, y=y[:5])
    with pytest.raises(ValueError, match="same classes"):
        MutualCorrection().fit(t, torch.nn.Linear(3, 5), x)


class _OneWay(MutualCorrection):
    """A gate that sends the target's pseudo-labels to the partner only: (w_T, w_V) = (0, 1)."""

    def gate(self, state):
        n = state.probs_t.shape[0]
        return np.zeros(n), np.ones(n)


def test_each_model_trains_on_its_own_gate_weights():
    # (w_T, w_V) = (0, 1): the target model trains exactly as in self-training (its own pseudo-labels), the
    # partner on the target's; swapping the weights between the two models (the audit's surviving mutation)
    # would leave the partner self-trained and move the target
    import torch

    t, v = _tiny_models(3)
    x = np.random.default_rng(2).normal(size=(40, 3)).astype(np.float32)
    kw = dict(rounds=2, epochs=2, seed=4)
    mt_self, mv_self, _ = MutualCorrection("self", **kw).fit(t, v, x)
    mt_one, mv_one, hist = _OneWay("self", **kw).fit(t, v, x)
    assert hist[0]["mean_w_t"] == 0.0 and hist[0]["mean_w_v"] == 1.0
    for a, b in zip(mt_self.parameters(), mt_one.parameters()):
        assert torch.equal(a, b)
    assert any(not torch.equal(a, b) for a, b in zip(mv_self.parameters(), mv_one.parameters()))


def test_batched_inference_is_invisible():
    from geode.ensembles.mutual import _forward

    t, _ = _tiny_models(5)
    import torch

    x = torch.as_tensor(np.random.default_rng(6).normal(size=(50, 3)), dtype=torch.float32)
    p1, f1 = _forward(t, x, chunk=7)
    p2, f2 = _forward(t, x, chunk=4096)
    np.testing.assert_allclose(p1, p2, atol=1e-6)
    np.testing.assert_allclose(f1, f2, atol=1e-6)
    assert p1.shape == (50, 4)
