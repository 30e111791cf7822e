"""Tests of CPA: FP4 formats against their tables, the CPA loss, TIS, the FP4 layers and the GRPO loop."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from geode.core.quant import E2M1_VALUES, fp4_quantize, mxfp4_quantize, nvfp4_quantize
from geode.llm.cpa import (
    FP4Linear,
    LowPrecisionGRPO,
    cpa_logprob_gap,
    cpa_loss,
    cpa_token_objective,
    fake_quant_disabled,
    fp4_layers,
    quantize_model,
    ste_fp4,
    truncated_is_weights,
)
from geode.llm.cpa.experiment import ReversalReward, greedy_reward, split_prompts
from geode.llm.grpo import grpo_loss, response_logprobs
from geode.models import build_tiny_lm
from geode.models.tasks import Reversal

SIGNED = sorted({s * v for v in E2M1_VALUES for s in (1.0, -1.0)})  # the 15 values of E2M1


def _tiny(seed: int = 0, vocab: int = 26):
    return build_tiny_lm(vocab, d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, d_ff=64, max_positions=16, seed=seed)


# ---------------------------------------------------------------- FP4 formats against their tables


@pytest.mark.parametrize("fmt", ["nvfp4", "mxfp4"])
@pytest.mark.parametrize("scale", [1.0, 2.0**-7, 2.0**5])
def test_every_e2m1_value_round_trips(fmt, scale):
    block = 16 if fmt == "nvfp4" else 32
    vals = torch.tensor(SIGNED + [6.0] * (block - len(SIGNED)), dtype=torch.float32) * scale
    x = torch.stack([vals, vals.flip(0)])
    assert torch.equal(fp4_quantize(x, fmt), x)


def test_e2m1_ties_round_to_even_mantissa_as_the_vllm_table():
    # midpoints between neighbours: 0.25 0.75 1.25 1.75 2.5 3.5 5  ->  0 1 1 2 2 4 4
    mids = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
    want = [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0]
    x = torch.tensor(mids + [-m for m in mids] + [6.0, -6.0])  # amax 6: NVFP4 scales are exactly 1
    q = nvfp4_quantize(x)
    assert q.tolist() == want + [-w for w in want] + [6.0, -6.0]
    xm = torch.cat([x, torch.full((16,), 6.0)])  # one MXFP4 block, scale 2^(2-2) = 1
    assert fp4_quantize(xm, "mxfp4").tolist()[:16] == q.tolist()
    down = fp4_quantize(xm, "mxfp4", ties="toward_zero").tolist()[:7]
    assert down == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0]


def test_mxfp4_quantize_kept_its_convention_and_agrees_off_ties():
    x = torch.randn(8, 64, generator=torch.Generator().manual_seed(0))
    assert torch.equal(mxfp4_quantize(x), fp4_quantize(x, "mxfp4", ties="toward_zero"))
    assert torch.equal(mxfp4_quantize(x), fp4_quantize(x, "mxfp4"))  # no exact ties in Gaussian draws


def _nearest(x, scale):
    grid = torch.tensor(SIGNED, dtype=torch.float64)
    y = (x.double() / scale).clamp(-6, 6)
    return grid[(y[..., None] - grid).abs().argmin(-1)] * scale


def test_mxfp4_scale_rule_and_nearest_value():
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(1)) * 3
    blocks = x.reshape(4, 2, 32)
    scale = torch.exp2(torch.floor(torch.log2(blocks.abs().amax(-1, keepdim=True))) - 2)  # E8M0: a power of two
    want = _nearest(blocks, scale.double()).reshape(4, 64).float()
    assert torch.equal(fp4_quantize(x, "mxfp4"), want)


def test_nvfp4_scale_rule_and_nearest_value():
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(2)) * 0.1
    blocks = x.reshape(4, 4, 16)
    amax = blocks.abs().amax(-1, keepdim=True)
    gs = 448.0 * 6.0 / amax.max()
    sf = (gs * amax / 6.0).to(torch.float8_e4m3fn).float()
    # the block scales are E4M3 numbers, the largest block's is E4M3's maximum 448
    assert float(sf.max()) == 448.0
    assert torch.equal(sf.to(torch.float8_e4m3fn).float(), sf)
    want = _nearest(blocks, (sf / gs).double()).reshape(4, 64).float()
    torch.testing.assert_close(fp4_quantize(x, "nvfp4"), want, rtol=1e-6, atol=0)


@pytest.mark.parametrize("fmt", ["nvfp4", "mxfp4"])
def test_fp4_is_idempotent_odd_and_power_of_two_equivariant(fmt):
    x = torch.randn(6, 64, generator=torch.Generator().manual_seed(3))
    q = fp4_quantize(x, fmt)
    assert torch.equal(fp4_quantize(q, fmt), q)
    assert torch.equal(fp4_quantize(-x, fmt), -q)
    assert torch.equal(fp4_quantize(x * 8.0, fmt), q * 8.0)
    assert torch.equal(fp4_quantize(torch.zeros(2, 64), fmt), torch.zeros(2, 64))
    assert fp4_quantize(x.bfloat16(), fmt).dtype == torch.bfloat16


def test_nvfp4_is_more_accurate_than_mxfp4_and_an_all_zero_block_stays_zero():
    x = torch.randn(64, 256, generator=torch.Generator().manual_seed(4))
    err = {f: float((fp4_quantize(x, f) - x).pow(2).mean()) for f in ("nvfp4", "mxfp4")}
    assert err["nvfp4"] < err["mxfp4"]
    x[0, :16] = 0
    q = fp4_quantize(x, "nvfp4")
    assert torch.isfinite(q).all() and torch.equal(q[0, :16], torch.zeros(16))


def test_fp4_bad_input():
    with pytest.raises(ValueError, match="block size 16"):
        fp4_quantize(torch.randn(4, 24), "nvfp4")
    with pytest.raises(ValueError, match="block size 32"):
        fp4_quantize(torch.randn(4, 48), "mxfp4")
    with pytest.raises(ValueError, match="fmt"):
        fp4_quantize(torch.randn(4, 32), "fp4")
    with pytest.raises(ValueError, match="ties"):
        fp4_quantize(torch.randn(4, 32), ties="up")
    with pytest.raises(TypeError):
        fp4_quantize(torch.ones(4, 32, dtype=torch.int64))
    with pytest.raises(ValueError, match="finite"):
        fp4_quantize(torch.full((1, 16), float("nan")))
    with pytest.raises(ValueError, match="multiple of the nvfp4 block size 16"):
        FP4Linear(24, 8)
    m = torch.nn.Sequential(torch.nn.Linear(32, 8), torch.nn.Linear(8, 4))
    with pytest.raises(ValueError, match="'1'"):
        quantize_model(m, skip=())
    assert isinstance(m[0], torch.nn.Linear) and type(m[0]) is torch.nn.Linear  # nothing replaced


# ---------------------------------------------------------------- the CPA loss


def test_cpa_loss_matches_the_formula_with_clamps_and_token_normaliser():
    s = torch.tensor([[0.0, -1.0], [0.5, 0.25]], requires_grad=True)
    t = torch.tensor([[0.1, -0.5], [0.0, 0.5]])
    m = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    d = t - s.detach()
    want = ((d.exp() - d - 1) * m).sum() / 3.0
    torch.testing.assert_close(cpa_loss(s, t, m), want)
    torch.testing.assert_close(cpa_loss(s, t, m, num_tokens=6.0), want / 2)
    torch.testing.assert_close(cpa_loss(s, t, m, loss_type="mse"), (((s - t) ** 2) * m).sum() / 3.0)
    torch.testing.assert_close(cpa_loss(s, t, m, loss_type="abs_logprob"), ((s - t).abs() * m).sum() / 3.0)
    big = cpa_loss(torch.zeros(1, 1), torch.full((1, 1), 100.0), torch.ones(1, 1))
    assert float(big) == 10.0  # Delta clipped at 20, the objective at 10
    assert float(cpa_loss(s, t, torch.zeros(2, 2))) == 0.0
    assert cpa_logprob_gap(s, t, torch.zeros(2, 2)) == 0.0


def test_k3_properties():
    d = torch.linspace(-3, 3, 61, dtype=torch.float64)
    k = cpa_token_objective(torch.zeros_like(d), d)
    assert (k >= 0).all() and float(k[30]) == 0.0 and int((k == 0).sum()) == 1
    small = torch.tensor([1e-3, -1e-3], dtype=torch.float64)
    torch.testing.assert_close(
        cpa_token_objective(torch.zeros(2, dtype=torch.float64), small), small**2 / 2, rtol=1e-3, atol=0
    )
    assert float(k[40]) > float(k[20])  # asymmetric: e^D - D - 1 grows faster for D > 0


def test_cpa_gradient_flows_only_to_the_student_and_matches_finite_differences():
    g = torch.Generator().manual_seed(0)
    s = (torch.randn(3, 4, generator=g, dtype=torch.float64) * 0.3).requires_grad_()
    t = (s.detach() + torch.randn(3, 4, generator=g, dtype=torch.float64) * 0.3).requires_grad_()
    m = torch.rand(3, 4, generator=g) > 0.3
    cpa_loss(s, t, m).backward()
    assert t.grad is None
    d = (t - s).detach()
    torch.testing.assert_close(s.grad, (1 - d.exp()) * m / m.sum())  # d k3 / d logp_fq = 1 - e^Delta
    assert torch.autograd.gradcheck(lambda x: cpa_loss(x, t.detach(), m), (s.detach().clone().requires_grad_(),))


def test_cpa_loss_bad_input():
    with pytest.raises(ValueError, match="loss_type"):
        cpa_token_objective(torch.zeros(2), torch.zeros(2), loss_type="kl")
    with pytest.raises(ValueError, match="same shape"):
        cpa_loss(torch.zeros(2, 3), torch.zeros(2, 2), torch.ones(2, 3))
    with pytest.raises(ValueError, match="mask"):
        cpa_loss(torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(3))


def test_truncated_is_weights_and_weighted_grpo_loss():
    tr = torch.tensor([[0.0, -1.0, -3.0]])
    ro = torch.tensor([[-2.0, -1.0, -0.5]])
    w = truncated_is_weights(tr, ro, cap=2.0)
    torch.testing.assert_close(w, torch.tensor([[2.0, 1.0, float(np.exp(-2.5))]]))
    logp = torch.randn(4, 3, requires_grad=True)
    adv, mask = torch.tensor([1.0, -1.0, 0.5, -0.5]), torch.ones(4, 3, dtype=torch.bool)
    a = grpo_loss(logp, logp.detach(), adv, mask, beta=0.0)
    b = grpo_loss(logp, logp.detach(), adv, mask, beta=0.0, is_weights=torch.ones(4, 3))
    torch.testing.assert_close(a, b)
    with pytest.raises(ValueError, match="cap"):
        truncated_is_weights(tr, ro, cap=0.0)


# ---------------------------------------------------------------- FP4 layers


def test_fp4_linear_off_is_linear_on_is_quantised_and_ste_passes_gradients():
    lin = torch.nn.Linear(32, 8)
    q = FP4Linear.from_linear(lin)
    assert q.weight is lin.weight
    x = torch.randn(5, 32, requires_grad=True)
    q.enabled = False
    torch.testing.assert_close(q(x), lin(x))
    q.enabled = True
    want = torch.nn.functional.linear(fp4_quantize(x.detach()), fp4_quantize(lin.weight.detach()), lin.bias)
    torch.testing.assert_close(q(x), want)
    y = torch.randn(7, 16, requires_grad=True)
    ste_fp4(y).sum().backward()
    assert torch.equal(y.grad, torch.ones_like(y))


def test_cpa_loss_is_zero_when_quantisation_is_off_and_teacher_context_restores_state():
    model = _tiny()
    n = quantize_model(model)
    assert n == len(fp4_layers(model)) == 7  # q, k, v, o, gate, up, down; the LM head stays full precision
    ids = torch.randint(4, 26, (3, 8), generator=torch.Generator().manual_seed(0))
    model.train()
    with fake_quant_disabled(model) as k:
        assert k == 7 and not model.training and not any(m.enabled for m in fp4_layers(model))
        student = response_logprobs(model, ids[:, :4], ids[:, 4:])
        teacher = response_logprobs(model, ids[:, :4], ids[:, 4:])
    assert model.training and all(m.enabled for m in fp4_layers(model))
    assert float(cpa_loss(student, teacher, torch.ones_like(student, dtype=torch.bool))) == 0.0
    quantised = response_logprobs(model, ids[:, :4], ids[:, 4:])
    assert float(cpa_loss(quantised, teacher, torch.ones_like(student, dtype=torch.bool))) > 0
    with pytest.raises(RuntimeError, match="boom"):
        with fake_quant_disabled(model):
            raise RuntimeError("boom")
    assert model.training and all(m.enabled for m in fp4_layers(model))
    with pytest.raises(RuntimeError, match="no enabled"):
        with fake_quant_disabled(_tiny(), require_enabled=True):
            pass


def test_fp4_amplifies_the_same_stack_difference():
    # the same bf16-vs-fp32 difference moves token log-probs far more through FP4 rounding than without it
    task = Reversal(n_symbols=10, length=5)
    model = build_tiny_lm(26, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=128, max_positions=16, seed=1)
    ids = torch.cat(split_prompts(task, 32, 0), 1)
    p, r = ids[:, :7], ids[:, 7:]

    def gap(m: torch.nn.Module) -> float:
        with torch.no_grad():
            a = response_logprobs(m, p, r)
            b = response_logprobs(copy.deepcopy(m).to(torch.bfloat16), p, r)
        return float((a - b).abs().mean())

    full = gap(model)
    quantize_model(model)
    model.eval()
    assert gap(model) > 3 * full


# ---------------------------------------------------------------- the low-precision GRPO loop


def _trainer(model, **kw):
    task = Reversal(n_symbols=10, length=3)
    defaults = dict(group_size=4, lr=1e-3, max_new_tokens=4, eos_token_id=3, seed=0)
    return LowPrecisionGRPO(model, ReversalReward(task), **(defaults | kw)), task


def test_trainer_modes_validate_and_step():
    with pytest.raises(ValueError, match="qat"):
        _trainer(_tiny(), rollout="full", qat=True)
    with pytest.raises(ValueError, match="cpa_coef"):
        _trainer(_tiny(), qat=False, cpa_coef=1e-3)
    with pytest.raises(ValueError, match="correction"):
        _trainer(_tiny(), correction="mis")
    tr, task = _trainer(_tiny(), cpa_coef=0.1, correction="tis")
    prompts = split_prompts(task, 2, 0)[0]
    st = tr.step(prompts)
    assert st.finite and np.isfinite([st.loss, st.mismatch_mean, st.cpa_gap, st.cpa_loss]).all()
    assert st.mismatch_mean > 0 and st.cpa_gap > 0
    full, _ = _trainer(_tiny(), rollout="full", qat=False)
    assert not fp4_layers(full.policy) and not any(m.enabled for m in fp4_layers(full.engine))
    assert full.step(prompts).mismatch_mean < st.mismatch_mean  # no FP4 rounding: a smaller mismatch
    with tr.full_precision():
        assert 0.0 <= greedy_reward(tr.policy, task, prompts) <= 1.0


def test_cpa_with_zero_weight_and_tis_with_huge_cap_recover_the_plain_fp4_step():
    task = Reversal(n_symbols=10, length=3)
    prompts = split_prompts(task, 2, 0)[0]
    params = []
    for kw in (dict(), dict(cpa_coef=0.0, track_gap=True)):
        tr, _ = _trainer(_tiny(), **kw)
        for _ in range(2):
            tr.step(prompts)
        params.append([p.detach().clone() for p in tr.policy.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*params))
    # TIS with weights all equal to one (rollout == trainer numerics) is the plain step
    a, _ = _trainer(_tiny(), rollout="full", qat=False, rollout_dtype=torch.float32)
    b, _ = _trainer(_tiny(), rollout="full", qat=False, rollout_dtype=torch.float32, correction="tis", tis_cap=1e9)
    sa, sb = a.step(prompts), b.step(prompts)
    assert sa.mismatch_mean < 1e-6 and abs(sa.loss - sb.loss) < 1e-6


def test_reversal_reward():
    task = Reversal(n_symbols=10, length=3)
    p, t = split_prompts(task, 4, 0)
    eos = torch.full((4, 1), 3)
    rew = ReversalReward(task)
    assert torch.equal(rew(p, torch.cat([t, eos], 1)), torch.ones(4, dtype=torch.float64))
    assert torch.equal(t, p[:, 1:4].flip(1))
    wrong = torch.cat([t[:, :1], (t[:, 1:] + 1 - 16) % 10 + 16, eos], 1)
    assert torch.allclose(rew(p, wrong), torch.full((4,), 1 / 3, dtype=torch.float64))
