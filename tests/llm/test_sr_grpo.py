from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from geode.core import stable_rank
from geode.llm import (
    CompactGRPO,
    StableRankReward,
    best_of_n,
    group_advantages,
    grpo_loss,
    k3_kl,
    response_hidden_states,
    response_logprobs,
    response_stable_rank,
    sample_responses,
)
from geode.llm.sr_grpo.experiment import DigitSum
from geode.models import build_tiny_lm


@pytest.fixture(scope="module")
def tiny():
    return build_tiny_lm(26, d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, max_positions=16, seed=0)


def test_stable_rank_range_scale_invariance_and_repeated_states():
    g = torch.Generator().manual_seed(0)
    h = torch.randn(5, 6, 16, generator=g, dtype=torch.float64)
    sr = response_stable_rank(h)
    assert sr.shape == (5,)
    assert bool((sr >= 1 - 1e-12).all() and (sr <= 6 + 1e-12).all())
    assert torch.allclose(response_stable_rank(3.7 * h), sr)
    rep = torch.randn(16, generator=g, dtype=torch.float64).expand(6, 16)  # one state repeated: rank one
    assert float(response_stable_rank(rep)) == pytest.approx(1.0)
    orth = torch.eye(16, dtype=torch.float64)[:6] * 2.5  # equal orthogonal states: SR = T
    assert float(response_stable_rank(orth)) == pytest.approx(6.0)
    # a degenerate repetition loop (states collapsing onto one direction) lowers the stable rank
    loop = h[0].clone()
    loop[2:] = loop[1]
    assert float(response_stable_rank(loop)) < float(response_stable_rank(h[0]))
    assert float(response_stable_rank(h[0])) == pytest.approx(float(stable_rank(h[0])))


def test_padding_is_ignored_and_empty_responses_are_rejected():
    g = torch.Generator().manual_seed(1)
    h = torch.randn(2, 5, 8, generator=g, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    sr = response_stable_rank(h, mask)
    assert float(sr[0]) == pytest.approx(float(stable_rank(h[0, :3])))
    assert float(sr[1]) == pytest.approx(float(stable_rank(h[1])))
    with pytest.raises(ValueError, match="empty"):
        response_stable_rank(h, torch.tensor([[0] * 5, [1] * 5], dtype=torch.bool))
    with pytest.raises(ValueError, match="empty"):
        response_stable_rank(torch.zeros(0, 8))
    with pytest.raises(ValueError, match="mask"):
        response_stable_rank(h, torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="hidden_states"):
        response_stable_rank(np.ones((3, 3)))


def test_group_advantages_sum_to_zero_per_group_and_groups_of_one_fail():
    r = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 5.0, 5.0, 5.0])
    a = group_advantages(r, 4)
    assert torch.allclose(a.reshape(2, 4).sum(1), torch.zeros(2, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(a[4:], torch.zeros(4, dtype=torch.float64))  # equal rewards: no signal
    s = torch.tensor([1.0, 2, 3, 4]).std()
    assert float(a[0]) == pytest.approx(-1.5 / (float(s) + 1e-4))
    with pytest.raises(ValueError, match="group_size"):
        group_advantages(r, 1)
    with pytest.raises(ValueError, match="multiple"):
        group_advantages(r, 3)


def test_k3_kl_is_nonnegative_and_zero_at_equality_and_its_mean_estimates_kl():
    lp = torch.log(torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64))
    assert torch.allclose(k3_kl(lp, lp), torch.zeros(3, dtype=torch.float64))
    ref = torch.log(torch.tensor([0.4, 0.4, 0.2], dtype=torch.float64))
    assert bool((k3_kl(lp, ref) >= 0).all())
    # E_{x ~ pi}[k3] = KL(pi || ref) exactly
    kl = float((lp.exp() * (lp - ref)).sum())
    assert float((lp.exp() * k3_kl(lp, ref)).sum()) == pytest.approx(kl)


def test_grpo_loss_gradient_is_the_policy_gradient_at_beta_zero():
    g = torch.Generator().manual_seed(2)
    logp = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5], dtype=torch.float64)
    mask = torch.ones(4, 3, dtype=torch.bool)
    grpo_loss(logp, logp.detach(), adv, mask, beta=0.0).backward()
    assert torch.allclose(logp.grad, -adv[:, None].expand(4, 3) / 3 / 4)


def test_sampling_masks_after_eos_and_greedy_is_deterministic(tiny):
    task = DigitSum()
    p, _, _ = task.sample(3, 0)
    r1, m1 = sample_responses(tiny, p, n=1, max_new_tokens=6, temperature=0.0, eos_token_id=task.eos)
    r2, _ = sample_responses(tiny, p, n=1, max_new_tokens=6, temperature=0.0, eos_token_id=task.eos)
    assert torch.equal(r1, r2)
    r, m = sample_responses(tiny, p, n=4, max_new_tokens=6, generator=torch.Generator().manual_seed(0), eos_token_id=5)
    assert r.shape == (12, 6) and m.shape == (12, 6)
    for row, mk in zip(r, m):
        hit = (row == 5).nonzero()
        if len(hit):
            k = int(hit[0])
            assert mk[: k + 1].all() and not mk[k + 1 :].any()
        else:
            assert mk.all()


def test_response_logprobs_match_a_manual_computation(tiny):
    g = torch.Generator().manual_seed(3)
    p = torch.randint(4, 26, (2, 4), generator=g)
    r = torch.randint(4, 26, (2, 3), generator=g)
    lp = response_logprobs(tiny, p, r)
    with torch.no_grad():
        ids = torch.cat([p, r], 1)
        logits = tiny(input_ids=ids).logits
    for t in range(3):
        ref = torch.log_softmax(logits[:, 3 + t], -1).gather(1, r[:, t : t + 1])[:, 0]
        assert torch.allclose(lp[:, t], ref, atol=1e-5)


def test_reward_follows_trls_signature_and_matches_the_batched_stable_rank(tiny):
    reward = StableRankReward(copy.deepcopy(tiny), eos_token_id=3)
    prompts = [[1, 16, 5, 17, 4], [1, 18, 5, 19, 4]]
    comps = [[20, 21, 3, 22], [23, 24, 25]]
    out = reward(prompts=prompts, completions=["x", "y"], completion_ids=comps, trainer_state=None)
    assert len(out) == 2 and all(1.0 <= v <= 3.0 + 1e-9 for v in out)
    h = response_hidden_states(reward.evaluator, torch.tensor([prompts[0]]), torch.tensor([[20, 21, 3]]))
    assert out[0] == pytest.approx(float(response_stable_rank(h[0])))  # tokens after EOS ignored
    with pytest.raises(ValueError, match="tokenizer"):
        reward(prompts=["a"], completions=["b"])
    with pytest.raises(ValueError, match="empty"):
        reward(prompts=[[1, 2]], completions=[[]])


def test_the_reward_plugs_into_geodes_grpo_trainers_as_well(tiny):
    """Passed as ``CompactGRPO``'s ``reward_fn(prompt_ids, response_ids, mask)``, the reward scores the responses.

    It used to read the positional mask as the completions (TRL's keyword signature) and silently score the
    stable rank of the tokens 0 and 1.
    """
    reward = StableRankReward(copy.deepcopy(tiny), eos_token_id=3)
    prompts = torch.tensor([[1, 16, 5, 17, 4], [1, 18, 5, 19, 4]])
    resp = torch.tensor([[20, 21, 22, 3], [23, 3, 24, 25]])
    mask = torch.tensor([[True, True, True, True], [True, True, False, False]])
    want = response_stable_rank(response_hidden_states(reward.evaluator, prompts, resp), mask)
    got = reward(prompts, resp, mask)
    assert isinstance(got, torch.Tensor) and got.shape == (2,)
    assert torch.allclose(got, want)
    assert torch.allclose(reward.scores(prompts, resp), want)  # the mask from eos_token_id (up to the first EOS)
    with pytest.raises(ValueError, match="mask"):
        reward(prompts, resp, mask[:, :2])
    # inside the trainer: the step's mean reward is the mean stable rank of the sampled responses
    policy = copy.deepcopy(tiny)
    trainer = CompactGRPO(policy, reward, group_size=2, max_new_tokens=3, eos_token_id=3, seed=0)
    gen = torch.Generator().manual_seed(0)
    r, m = sample_responses(policy, prompts, n=2, max_new_tokens=3, eos_token_id=3, generator=gen)
    expected = response_stable_rank(response_hidden_states(reward.evaluator, prompts.repeat_interleave(2, 0), r), m)
    assert trainer.step(prompts).reward_mean == pytest.approx(float(expected.mean()))


def test_best_of_n_picks_the_highest_score_per_group():
    assert best_of_n([0.1, 0.9, 0.5, 2.0, 1.0, 3.0], 3).tolist() == [1, 2]
    with pytest.raises(ValueError, match="multiple"):
        best_of_n([1.0, 2.0, 3.0], 2)


def test_compact_grpo_moves_the_policy_towards_the_rewarded_token(tiny):
    # reward: 1 when the first response token is symbol 0 (id 16): its probability must rise
    policy = copy.deepcopy(tiny)
    p = torch.tensor([[1, 17, 5, 18, 4]] * 4)

    def prob16() -> float:
        with torch.no_grad():
            return float(torch.softmax(policy(input_ids=p[:1]).logits[0, -1], -1)[16])

    before = prob16()
    trainer = CompactGRPO(
        policy, lambda pr, r, m: (r[:, 0] == 16).double(), group_size=8, lr=3e-3, max_new_tokens=2, temperature=1.5
    )
    for _ in range(15):
        trainer.step(p)
    assert prob16() > before + 0.02
    with pytest.raises(ValueError, match="group_size"):
        CompactGRPO(policy, lambda *a: None, group_size=1)


def test_trl_grpo_trainer_trains_a_tiny_model_with_the_reward(tmp_path):
    """One real ``trl.GRPOTrainer`` step on a tiny Llama with the stable-rank reward as its only reward."""
    pytest.importorskip("trl")
    pytest.importorskip("datasets")
    from datasets import Dataset
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from trl import GRPOConfig, GRPOTrainer

    vocab = {"<pad>": 0, "<eos>": 1, **{chr(ord("a") + i): i + 2 for i in range(24)}}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    backend.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")  # one token per character
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", eos_token="<eos>")
    tok.padding_side = "left"
    policy = build_tiny_lm(26, d_model=16, n_layers=1, n_heads=2, max_positions=32, seed=0)
    reward = StableRankReward(build_tiny_lm(26, d_model=16, n_layers=1, n_heads=2, max_positions=32, seed=1), tok)
    seen: list[tuple[list, list]] = []

    def spy(prompts, completions, completion_ids=None, **kw):
        out = reward(prompts=prompts, completions=completions, completion_ids=completion_ids, **kw)
        seen.append((list(completion_ids), out))
        return out

    spy.__name__ = reward.__name__
    cfg = GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=4,
        learning_rate=1e-2,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        bf16=False,
    )
    ds = Dataset.from_dict({"prompt": ["abc", "bcd", "cde", "def"]})
    trainer = GRPOTrainer(model=policy, reward_funcs=[spy], args=cfg, train_dataset=ds, processing_class=tok)
    before = [p.detach().clone() for p in policy.parameters()]
    trainer.train()
    assert seen, "GRPOTrainer never called the reward"
    for ids, scores in seen:
        assert len(ids) == len(scores) == 4
        for c, s in zip(ids, scores):  # 1 <= stable rank <= number of completion tokens
            assert 1 - 1e-9 <= s <= len(c) + 1e-9
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.parameters())), "the policy did not move"
