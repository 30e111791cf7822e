from __future__ import annotations

import numpy as np
import pytest
import torch

from geode.models.tasks import (
    CLASS_TOKEN0,
    FIRST_SYMBOL,
    SPECIAL_TOKENS,
    Copy,
    KeywordClassification,
    ModularArithmetic,
    Reversal,
    TokenMappedTask,
    answer_accuracy,
)
from geode.models.tiny_lm import (
    build_tiny_lm,
    evaluate_lm,
    last_token_features,
    lm_loss,
    pretrained_tiny_lm,
    train_lm,
)

TINY = dict(d_model=32, n_layers=1, n_heads=2, n_kv_heads=1)


@pytest.fixture(scope="session")
def copy_lm():
    """A tiny Llama trained on copy (memoised by pretrained_tiny_lm, so other tests reuse it)."""
    return pretrained_tiny_lm(Copy(n_symbols=8, length=4), steps=150, lr=1e-2, seed=0, **TINY)


# ------------------------------------------------------------------------------------------ tasks


def test_modular_arithmetic_answers_are_right():
    task = ModularArithmetic(p=7, op="sub")
    b = task.sample(200, 0)
    ids = b.input_ids.numpy()
    a, bb, c = ids[:, 1] - FIRST_SYMBOL, ids[:, 3] - FIRST_SYMBOL, ids[:, 5] - FIRST_SYMBOL
    assert np.array_equal(c, (a - bb) % 7)
    assert (ids[:, 2] == SPECIAL_TOKENS["SUB"]).all() and (ids[:, -1] == SPECIAL_TOKENS["EOS"]).all()
    assert (b.labels[:, :5] == -100).all() and torch.equal(b.labels[:, 5:], b.input_ids[:, 5:])
    assert task.vocab_size == FIRST_SYMBOL + 7 and ids.shape == (200, task.seq_len)


@pytest.mark.parametrize("cls, flip", [(Copy, False), (Reversal, True)])
def test_copy_and_reversal(cls, flip):
    task = cls(n_symbols=10, length=5)
    b = task.sample(50, 3)
    x, y = b.input_ids[:, 1:6], b.input_ids[:, 7:12]
    assert torch.equal(y, x.flip(1) if flip else x)
    assert (b.labels[:, :7] == -100).all() and (b.labels[:, 7:] == b.input_ids[:, 7:]).all()
    assert int(b.input_ids.max()) < task.vocab_size


def test_tasks_are_deterministic_given_the_seed():
    task = KeywordClassification()
    a, b, c = task.sample(30, 5), task.sample(30, 5), task.sample(30, 6)
    assert torch.equal(a.input_ids, b.input_ids) and not torch.equal(a.input_ids, c.input_ids)


def test_keyword_classification_labels_and_keywords():
    task = KeywordClassification(n_classes=4, length=20, keywords_per_class=2, p_true=0.6, p_other=0.0)
    b = task.sample(400, 0)
    y = b.targets.numpy()
    assert np.array_equal(b.input_ids[:, -1].numpy(), y + CLASS_TOKEN0)
    x = b.input_ids[:, 1:-2].numpy() - FIRST_SYMBOL
    for k, kw in enumerate(task.class_keywords):
        counts = np.isin(x, kw).sum(1)
        assert counts[y == k].mean() > 10 and counts[y != k].max() == 0  # p_other = 0: no foreign keywords
    # the majority keyword class predicts the label well, but not perfectly with distractors
    noisy = KeywordClassification(n_classes=4, length=8, p_true=0.25, p_other=0.2)
    b = noisy.sample(2000, 1)
    xs = b.input_ids[:, 1:-2].numpy() - FIRST_SYMBOL
    votes = np.stack([np.isin(xs, kw).sum(1) for kw in noisy.class_keywords], 1)
    acc = (votes.argmax(1) == b.targets.numpy()).mean()
    assert 0.4 < acc < 0.95


def test_task_validation_errors():
    with pytest.raises(ValueError, match="p must be >= 2"):
        ModularArithmetic(p=1)
    with pytest.raises(ValueError, match="op must be one of"):
        ModularArithmetic(op="div")
    with pytest.raises(ValueError, match="p_true \\+ p_other"):
        KeywordClassification(p_true=0.8, p_other=0.3)
    with pytest.raises(ValueError, match="disjoint"):
        KeywordClassification(n_classes=2, keywords=((0, 1), (1, 2)))
    with pytest.raises(ValueError, match="n_classes"):
        KeywordClassification(n_classes=9)
    with pytest.raises(ValueError, match="n must be >= 1"):
        Copy().sample(0, 0)


def test_token_mapped_task_maps_every_id():
    task = Reversal(n_symbols=4, length=3)
    token_map = np.arange(task.vocab_size) * 3 + 100
    mapped = TokenMappedTask(task, token_map)
    a, b = task.sample(10, 2), mapped.sample(10, 2)
    assert torch.equal(b.input_ids, a.input_ids * 3 + 100)
    assert torch.equal(b.labels == -100, a.labels == -100)
    with pytest.raises(ValueError, match="distinct"):
        TokenMappedTask(task, np.zeros(task.vocab_size))


def test_answer_accuracy_of_perfect_and_wrong_logits():
    b = Copy(n_symbols=5, length=3).sample(8, 0)
    logits = torch.nn.functional.one_hot(b.input_ids.roll(-1, 1), 32).float() * 10
    assert answer_accuracy(logits, b.labels) == 1.0
    assert answer_accuracy(-logits, b.labels) == 0.0


# ------------------------------------------------------------------------------------------ models


def test_build_is_deterministic_and_validates():
    a, b, c = build_tiny_lm(20, seed=1, **TINY), build_tiny_lm(20, seed=1, **TINY), build_tiny_lm(20, seed=2, **TINY)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)
    with pytest.raises(ValueError, match="divisible by n_heads"):
        build_tiny_lm(20, d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="arch must be one of"):
        build_tiny_lm(20, arch="mamba")


def test_gpt2_builds_and_runs():
    model = build_tiny_lm(24, arch="gpt2", d_model=16, n_layers=1, n_heads=2)
    b = Copy(n_symbols=8, length=2).sample(4, 0)
    assert torch.isfinite(lm_loss(model, b))


def test_training_learns_copy_and_is_memoised(copy_lm):
    task = Copy(n_symbols=8, length=4)
    ev = evaluate_lm(copy_lm, task.sample(256, 99))
    assert ev["loss"] < 0.5 and ev["accuracy"] > 0.5
    again = pretrained_tiny_lm(task, steps=150, lr=1e-2, seed=0, **TINY)
    assert again is not copy_lm
    assert all(torch.equal(a, b) for a, b in zip(again.state_dict().values(), copy_lm.state_dict().values()))
    with torch.no_grad():
        next(again.parameters()).add_(1.0)  # a copy: changing it leaves the memo alone
    third = pretrained_tiny_lm(task, steps=150, lr=1e-2, seed=0, **TINY)
    assert all(torch.equal(a, b) for a, b in zip(third.state_dict().values(), copy_lm.state_dict().values()))


def test_train_lm_returns_losses_and_validates():
    model = build_tiny_lm(24, seed=0, **TINY)
    losses = train_lm(model, Copy(n_symbols=8, length=2), steps=5, batch_size=4, seed=0)
    assert losses.shape == (5,) and np.isfinite(losses).all()
    with pytest.raises(ValueError, match="lr must be > 0"):
        train_lm(model, Copy(n_symbols=8), steps=1, lr=0.0)
    for p in model.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="nothing to train"):
        train_lm(model, Copy(n_symbols=8), steps=1)


def test_last_token_features_are_the_final_normed_hidden_state(copy_lm):
    b = Copy(n_symbols=8, length=4).sample(3, 0)
    f = last_token_features(copy_lm, b.input_ids)
    out = copy_lm(input_ids=b.input_ids, output_hidden_states=True)
    assert f.shape == (3, 32)
    assert torch.allclose(f, out.hidden_states[-1][:, -1])
    assert torch.allclose(copy_lm.lm_head(f), out.logits[:, -1], atol=1e-5)


@pytest.mark.needs_lm
def test_tokenizer_token_map_on_smollm2():
    from transformers import AutoTokenizer

    from geode.models import prepare_smollm2_cache
    from geode.models.tasks import tokenizer_token_map

    tok = AutoTokenizer.from_pretrained(str(prepare_smollm2_cache()))
    task = KeywordClassification()
    token_map = tokenizer_token_map(tok, task.vocab_size)
    assert len(set(token_map.tolist())) == task.vocab_size
    assert all(len(tok.encode(tok.decode([t]), add_special_tokens=False)) >= 1 for t in token_map[FIRST_SYMBOL:])
    b = TokenMappedTask(task, token_map).sample(2, 0)
    assert int(b.input_ids.max()) < len(tok)
