from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from geode.llm import BVPOTrainer, PreferenceBatch, bvpo_loss, dpo_loss, mse_optimal_alpha, sequence_logprobs
from geode.llm.bvpo.experiment import (
    PROMPT_LEN,
    SIGN_A,
    SIGN_B,
    VOCAB,
    answers,
    empty_traces,
    gradient_draws,
    prefers_a,
    sample_prompts,
    total_variance,
    trace_noise_draws,
)
from geode.models import build_tiny_lm


@pytest.fixture(scope="module")
def tiny():
    return build_tiny_lm(VOCAB, d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, max_positions=16, seed=0)


def test_dpo_loss_matches_a_hand_computed_value():
    pc, pr = torch.tensor([-1.0, -2.0]), torch.tensor([-3.0, -1.5])
    rc, rr = torch.tensor([-1.5, -2.0]), torch.tensor([-2.0, -2.0])
    # margins: (0.5 - (-1.0)) = 1.5 and (0.0 - 0.5) = -0.5, beta = 0.5
    want = -(math.log(1 / (1 + math.exp(-0.75))) + math.log(1 / (1 + math.exp(0.25)))) / 2
    assert float(dpo_loss(pc, pr, rc, rr, beta=0.5)) == pytest.approx(want)
    # at the reference the loss is log 2 for any beta
    assert float(dpo_loss(rc, rr, rc, rr, beta=3.0)) == pytest.approx(math.log(2))


def test_bvpo_loss_is_the_alpha_mixture_and_recovers_both_extremes():
    g = torch.Generator().manual_seed(0)
    t = [torch.randn(4, generator=g) for _ in range(4)]
    e = [torch.randn(4, generator=g) for _ in range(4)]
    lt, le = dpo_loss(*t, beta=0.3), dpo_loss(*e, beta=0.3)
    assert float(bvpo_loss(*t, *e, alpha=1.0, beta=0.3)) == pytest.approx(float(lt))
    assert float(bvpo_loss(*t, *e, alpha=0.0, beta=0.3)) == pytest.approx(float(le))
    assert float(bvpo_loss(*t, *e, alpha=0.3, beta=0.3)) == pytest.approx(float(0.3 * lt + 0.7 * le))
    # a branch with weight 0 is not evaluated
    assert float(bvpo_loss(*t, None, None, None, None, alpha=1.0, beta=0.3)) == pytest.approx(float(lt))
    with pytest.raises(ValueError, match="alpha"):
        bvpo_loss(*t, *e, alpha=1.5)
    with pytest.raises(ValueError, match="beta"):
        dpo_loss(*t, beta=0.0)
    with pytest.raises(ValueError, match="ref_chosen"):
        dpo_loss(t[0], t[1], torch.zeros(3), t[3])


def test_mse_optimal_alpha_closed_form_and_limits():
    rng = np.random.default_rng(0)
    k, p = 4000, 3
    mean = np.array([1.0, -2.0, 0.5])
    sd = np.array([1.0, 2.0, 0.5])
    g = mean + sd * rng.standard_normal((k, p))
    e = mean + np.array([1.0, 1.0, 0.0])  # bias |b|^2 = 2, V = 1 + 4 + 0.25 = 5.25
    alpha, info = mse_optimal_alpha(g, e)
    assert info["variance"] == pytest.approx(5.25, rel=0.05)
    assert info["bias_sq"] == pytest.approx(2.0, rel=0.08)
    assert alpha == pytest.approx(2.0 / 7.25, rel=0.08)
    # alpha* minimises the empirical MSE alpha^2 V + (1 - alpha)^2 |b|^2 over a fine grid
    grid = np.linspace(0, 1, 1001)
    mse = grid**2 * info["variance"] + (1 - grid) ** 2 * info["bias_sq"]
    assert grid[mse.argmin()] == pytest.approx(alpha, abs=1e-3)
    # an unbiased empty branch takes all the weight; a noiseless trace branch keeps it
    assert mse_optimal_alpha(g, g.mean(0))[0] == pytest.approx(0.0, abs=1e-12)
    assert mse_optimal_alpha(np.tile(mean, (5, 1)), e)[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="trace_grads"):
        mse_optimal_alpha(g[:1], e)
    with pytest.raises(ValueError, match="empty_grad"):
        mse_optimal_alpha(g, e[:2])


def test_sequence_logprobs_against_a_manual_sum(tiny):
    p, c = sample_prompts(3, 0)
    ids = torch.cat([p, empty_traces(3), answers(p, c, True)], 1)
    got = sequence_logprobs(tiny, ids, PROMPT_LEN)
    with torch.no_grad():
        lp = torch.log_softmax(tiny(input_ids=ids).logits.float(), -1)
    want = sum(lp[:, t - 1].gather(-1, ids[:, t : t + 1])[:, 0] for t in range(PROMPT_LEN, ids.shape[1]))
    assert torch.allclose(got.detach(), want, atol=1e-5)
    with pytest.raises(ValueError, match="start"):
        sequence_logprobs(tiny, ids, 0)


def test_preference_rule_and_answers():
    p, c = sample_prompts(64, 1)
    assert torch.equal(prefers_a(p), c % 2 == 0)
    ya, yb = answers(p, c, True), answers(p, c, False)
    assert torch.equal(ya[:, :2], yb[:, :2])  # the same digits
    assert bool(((ya[:, 2] == SIGN_A) == (c % 2 == 0)).all())
    assert bool(((ya[:, 2] == SIGN_A) ^ (yb[:, 2] == SIGN_A)).all())
    assert set(yb[:, 2].tolist()) <= {SIGN_A, SIGN_B}


def test_preference_batch_rejects_identical_answers_and_mismatched_prompts(tiny):
    p, c = sample_prompts(4, 2)
    e = empty_traces(4)
    ok = PreferenceBatch(torch.cat([p, e, answers(p, c, True)], 1), torch.cat([p, e, answers(p, c, False)], 1), 7)
    ok.validate("batch")
    same = PreferenceBatch(ok.chosen, ok.chosen.clone(), 7)
    with pytest.raises(ValueError, match="identical"):
        same.validate("batch")
    other = ok.rejected.clone()
    other[:, 1] = (other[:, 1] - 16 + 1) % 10 + 16
    with pytest.raises(ValueError, match="prompt"):
        PreferenceBatch(ok.chosen, other, 7).validate("batch")
    with pytest.raises(ValueError, match="shape"):
        PreferenceBatch(ok.chosen, ok.rejected[:2], 7).validate("batch")
    tr = BVPOTrainer(copy.deepcopy(tiny), alpha=0.0, lr=1e-3)
    with pytest.raises(ValueError, match="identical"):
        tr.loss(None, same)
    with pytest.raises(ValueError, match="trace"):
        BVPOTrainer(copy.deepcopy(tiny), alpha=0.5).loss(None, ok)
    with pytest.raises(ValueError, match="alpha"):
        BVPOTrainer(copy.deepcopy(tiny), alpha=-0.1)
    with pytest.raises(ValueError, match="optimizer"):
        BVPOTrainer(copy.deepcopy(tiny), alpha=0.5, optimizer="lbfgs")


def test_composite_gradient_is_the_mixture_and_trace_noise_contracts_as_alpha_squared(tiny):
    model = copy.deepcopy(tiny)
    g_t, g_e = trace_noise_draws(model, tiny, n=4, draws=6, beta=1.0, seed=0)
    assert g_t.shape[0] == 6 and g_e.shape == g_t.shape[1:]
    assert np.abs(g_e).sum() > 0 and np.ptp(g_t, axis=0).max() > 0  # traces do vary the gradient
    v1 = total_variance(g_t, np.broadcast_to(g_e, g_t.shape), 1.0)
    for a in (0.75, 0.5, 0.25, 0.0):
        # with prompts and answers fixed, the empty branch carries no trace noise: Var = alpha^2 V
        assert total_variance(g_t, np.broadcast_to(g_e, g_t.shape), a) == pytest.approx(a * a * v1, abs=1e-12)
    # two-trace control: (a^2 + (1-a)^2) V for independent equal-variance branches, smallest at a = 0.5
    d = gradient_draws(model, tiny, n=4, draws=5, beta=1.0, seed=1)
    assert set(d) == {"trace", "empty", "trace2"} and d["trace"].shape == d["empty"].shape


def test_bvpo_step_gradient_equals_the_weighted_branch_gradients(tiny):
    p, c = sample_prompts(4, 3)
    e = empty_traces(4)
    tr_ = torch.tensor([[2, 17, 18, 7]]).repeat(4, 1)
    tb = PreferenceBatch(torch.cat([p, tr_, answers(p, c, True)], 1), torch.cat([p, tr_, answers(p, c, False)], 1), 7)
    p2, c2 = sample_prompts(4, 4)
    eb = PreferenceBatch(
        torch.cat([p2, e, answers(p2, c2, True)], 1), torch.cat([p2, e, answers(p2, c2, False)], 1), 7
    )
    policy = copy.deepcopy(tiny)
    for q in policy.parameters():
        q.requires_grad_(True)
    # move off the reference so the gradients are not the symmetric ones at margin 0
    with torch.no_grad():
        for q in policy.parameters():
            q.add_(0.05 * torch.randn(q.shape, generator=torch.Generator().manual_seed(5)))

    def grad(alpha):
        t = BVPOTrainer(policy, tiny, alpha=alpha, beta=0.7)
        loss = t.loss(tb if alpha > 0 else None, eb if alpha < 1 else None)
        gs = torch.autograd.grad(loss, [q for q in policy.parameters()], allow_unused=True)
        return torch.cat(
            [(x if x is not None else torch.zeros_like(q)).reshape(-1) for x, q in zip(gs, policy.parameters())]
        )

    g1, g0, gm = grad(1.0), grad(0.0), grad(0.3)
    assert torch.allclose(gm, 0.3 * g1 + 0.7 * g0, atol=1e-6)


def test_branch_gradients_feed_mse_optimal_alpha_without_hand_assembly(tiny):
    """``BVPOTrainer.branch_gradient``: the flat DPO gradient of one branch, the input of ``mse_optimal_alpha``.

    alpha* used to need a hand-written loop (log-probabilities, DPO loss, autograd, flattening) or the private
    ``geode.llm.bvpo.experiment.branch_gradient``.
    """
    p, c = sample_prompts(4, 3)
    e = empty_traces(4)
    tr_ = torch.tensor([[2, 17, 18, 7]]).repeat(4, 1)
    tb = PreferenceBatch(torch.cat([p, tr_, answers(p, c, True)], 1), torch.cat([p, tr_, answers(p, c, False)], 1), 7)
    eb = PreferenceBatch(torch.cat([p, e, answers(p, c, True)], 1), torch.cat([p, e, answers(p, c, False)], 1), 7)
    policy = copy.deepcopy(tiny)
    with torch.no_grad():  # off the reference, so the gradients are not the symmetric ones at margin 0
        for q in policy.parameters():
            q.requires_grad_(True)
            q.add_(0.05 * torch.randn(q.shape, generator=torch.Generator().manual_seed(5)))
    trainer = BVPOTrainer(policy, tiny, alpha=0.5, beta=0.7)
    g_t = trainer.branch_gradient(tb)
    n_params = sum(q.numel() for q in policy.parameters() if q.requires_grad)
    assert g_t.shape == (n_params,) and g_t.dtype == torch.float64
    loss = BVPOTrainer(policy, tiny, alpha=1.0, beta=0.7).loss(tb, None)
    want = torch.cat([x.reshape(-1) for x in torch.autograd.grad(loss, list(policy.parameters()))]).double()
    assert torch.allclose(g_t, want, atol=1e-10)
    assert all(q.grad is None for q in policy.parameters())  # the policy's .grad is left alone
    alpha, info = mse_optimal_alpha(torch.stack([g_t, 1.01 * g_t]), trainer.branch_gradient(eb))
    assert 0.0 <= alpha <= 1.0 and info["K"] == 2.0
    with pytest.raises(ValueError, match="identical"):
        trainer.branch_gradient(PreferenceBatch(tb.chosen, tb.chosen.clone(), 7))


def test_empty_trace_dpo_step_raises_the_preferred_sign_off(tiny):
    policy = copy.deepcopy(tiny)
    for q in policy.parameters():
        q.requires_grad_(True)
    p, c = sample_prompts(16, 6)
    e = empty_traces(16)
    eb = PreferenceBatch(torch.cat([p, e, answers(p, c, True)], 1), torch.cat([p, e, answers(p, c, False)], 1), 7)

    def margin(m):
        with torch.no_grad():
            return float((sequence_logprobs(m, eb.chosen, 7) - sequence_logprobs(m, eb.rejected, 7)).mean())

    before = margin(policy)
    tr = BVPOTrainer(policy, tiny, alpha=0.0, beta=1.0, lr=3e-3)
    losses = [tr.step(None, eb) for _ in range(10)]
    assert margin(policy) > before + 0.1
    assert losses[-1] < losses[0]
    assert all(not q.requires_grad for q in tr.ref_model.parameters())
