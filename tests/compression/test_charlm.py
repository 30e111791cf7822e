"""The compression field's shared character-LM bed: splits, windows, unigram perplexity, perplexity."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from geode.compression.charlm import eval_windows, perplexity, text_splits, train_lm, unigram_perplexity


def test_splits_are_contiguous_80_10_10_and_windows_do_not_overlap():
    ids = np.arange(1000)
    tr, va, te = text_splits(ids)
    assert (len(tr), len(va), len(te)) == (800, 100, 100)
    assert np.array_equal(np.concatenate([tr, va, te]), ids)
    w = eval_windows(te, seq=30, n=10)
    assert w.shape == (3, 30) and w.flatten().tolist() == list(range(900, 990))
    with pytest.raises(ValueError, match="seq"):
        eval_windows(te, seq=1, n=3)


def test_unigram_perplexity_of_a_uniform_text_is_the_vocabulary_size():
    ids = np.tile(np.arange(7), 50)
    assert unigram_perplexity(ids, ids, 7) == pytest.approx(7.0)


class _Uniform(torch.nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab
        self.bias = torch.nn.Parameter(torch.zeros(vocab))

    def forward(self, input_ids):
        logits = self.bias.expand(*input_ids.shape, self.vocab)
        return type("Out", (), {"logits": logits})()


def test_perplexity_of_uniform_logits_is_the_vocabulary_size_and_training_learns_the_frequencies():
    model = _Uniform(5)
    w = torch.randint(0, 5, (4, 9), generator=torch.Generator().manual_seed(0))
    assert perplexity(model, w, batch=3) == pytest.approx(5.0)
    train = np.random.default_rng(0).choice(5, size=2000, p=[0.6, 0.1, 0.1, 0.1, 0.1])

    def loss(x):
        logits = model(input_ids=x).logits[:, :-1]
        return torch.nn.functional.cross_entropy(logits.reshape(-1, 5), x[:, 1:].reshape(-1))

    train_lm(model, train, loss, steps=200, batch=8, seq=16, lr=0.1, rng=np.random.default_rng(1))
    probs = torch.softmax(model.bias.detach(), 0)
    assert probs[0] == pytest.approx(0.6, abs=0.05)
    # the trained model scores the windows' targets as the train frequencies do, below the uniform 5
    w = eval_windows(train, 16, 50)
    targets = w[:, 1:].flatten().numpy()
    assert perplexity(model, w) == pytest.approx(unigram_perplexity(train, targets, 5), rel=0.02)
    assert not math.isclose(unigram_perplexity(train, train, 5), 5.0, rel_tol=0.05)
