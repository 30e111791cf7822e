"""Tests of optimization engagement: AGOP closed forms, subspace identities, invariances, bad input."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from geode.analysis.agop_engagement import (  # noqa: E402
    AgreementLanguage,
    TinyTransformer,
    agop,
    agop_loop,
    concept_subspace,
    engagement,
    subspace_alignment,
)
from geode.analysis.agop_engagement.experiment import checkpoint_steps  # noqa: E402


class _Linear(torch.nn.Module):
    """h = x (an identity 'layer'), logits = W h."""

    def __init__(self, w: np.ndarray) -> None:
        super().__init__()
        self.layer = torch.nn.Identity()
        self.w = torch.nn.Linear(w.shape[1], w.shape[0], bias=False, dtype=torch.float64)
        with torch.no_grad():
            self.w.weight.copy_(torch.as_tensor(w))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w(self.layer(x))


def test_agop_of_linear_map_is_wtw_in_closed_form() -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 5))
    x = rng.standard_normal((40, 5))
    model = _Linear(w)
    # loss = sum of the outputs dotted with a fixed direction per example: g_n = W^T s_n
    s = rng.choice([-1.0, 1.0], size=(40, 3))
    s_t = torch.as_tensor(s)

    def loss_fn(out: torch.Tensor, xb: torch.Tensor) -> torch.Tensor:
        idx = [int(np.flatnonzero((x == xb[i].numpy()).all(1))[0]) for i in range(len(xb))]
        return (out * s_t[idx]).sum()

    g = agop(model, torch.as_tensor(x), "layer", loss_fn=loss_fn, batch_size=7).numpy()
    expected = w.T @ (s.T @ s / 40) @ w
    np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-12)
    # sign patterns with orthogonal columns ((1/N) sum s s^T = I) give exactly W^T W
    h = np.array([[1, 1, 1], [1, -1, 1], [1, 1, -1], [1, -1, -1]], float)
    np.testing.assert_allclose(h.T @ h / 4, np.eye(3))
    s_h = torch.as_tensor(h)
    xs = torch.as_tensor(rng.standard_normal((4, 5)))
    gh = agop(model, xs, "layer", loss_fn=lambda out, xb: (out * s_h).sum(), batch_size=4).numpy()
    np.testing.assert_allclose(gh, w.T @ w, rtol=1e-10)


def test_agop_of_linear_softmax_matches_closed_form() -> None:
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 6))
    x = rng.standard_normal((30, 6))
    y = rng.integers(0, 4, 30)
    model = _Linear(w)
    y_t = torch.as_tensor(y)
    g = agop(
        model,
        torch.as_tensor(x),
        "layer",
        loss_fn=lambda o, xb: torch.nn.functional.cross_entropy(o, y_t, reduction="sum"),
        batch_size=30,
    ).numpy()
    z = x @ w.T
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    r = p - np.eye(4)[y]
    np.testing.assert_allclose(g, w.T @ (r.T @ r / 30) @ w, rtol=1e-9)


def test_batched_agop_equals_per_sequence_loop_on_transformer() -> None:
    lang = AgreementLanguage()
    model = TinyTransformer(lang.vocab_size, lang.length, d=16, heads=2, seed=0)
    ids = torch.as_tensor(lang.sample(10, np.random.default_rng(0))[0])
    a = agop(model, ids, "blocks.0", batch_size=4)
    b = agop_loop(model, ids, "blocks.0")
    assert a.shape == (16, 16)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-9)
    assert torch.linalg.eigvalsh(a).min() > -1e-9
    v = agop(model, ids, "blocks.1", positions=-2)  # one token per sequence
    assert not torch.allclose(v, agop(model, ids, "blocks.1"))


def test_engagement_identities() -> None:
    rng = np.random.default_rng(2)
    q, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    u, v = q[:, :3], q[:, 3:5]
    p = u @ u.T
    assert engagement(p, u, normalize=False) == pytest.approx(1.0)
    assert engagement(p, v, normalize=False) == pytest.approx(0.0, abs=1e-12)
    assert engagement(p, u) == pytest.approx(8 / 3)  # normalised by k/d
    assert engagement(np.eye(8), u) == pytest.approx(1.0)  # isotropic AGOP: like a random subspace
    assert subspace_alignment(p, u) == pytest.approx(1.0)
    assert subspace_alignment(p, v) == pytest.approx(0.0, abs=1e-12)
    # average over many random subspaces ~ 1
    a = rng.standard_normal((8, 8))
    g = a @ a.T
    es = [engagement(g, rng.standard_normal((8, 2))) for _ in range(4000)]
    assert np.mean(es) == pytest.approx(1.0, abs=0.05)


def test_engagement_invariances() -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 6))
    g = a @ a.T
    u = rng.standard_normal((6, 2))
    e = engagement(g, u)
    assert engagement(7.5 * g, u) == pytest.approx(e)  # scale of the AGOP
    assert engagement(g, u @ rng.standard_normal((2, 2))) == pytest.approx(e)  # basis of the span
    r, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    assert engagement(r @ g @ r.T, r @ u) == pytest.approx(e)  # rotation of the representation
    assert subspace_alignment(r @ g @ r.T, r @ u) == pytest.approx(subspace_alignment(g, u))


def test_concept_subspace_recovers_the_separating_direction() -> None:
    rng = np.random.default_rng(4)
    direction = np.zeros(10)
    direction[3] = 1.0
    y = rng.integers(0, 2, 400)
    x = rng.standard_normal((400, 10)) + 1.0 * np.outer(2 * y - 1, direction)
    u = concept_subspace(x, y, 1)
    assert u.shape == (10, 1)
    assert abs(u[3, 0]) > 0.95
    # three classes: 2 directions, orthonormal
    y3 = rng.integers(0, 3, 600)
    means = 4.0 * np.eye(10)[:3]
    x3 = rng.standard_normal((600, 10)) + means[y3]
    u3 = concept_subspace(x3, y3)
    assert u3.shape == (10, 2)
    np.testing.assert_allclose(u3.T @ u3, np.eye(2), atol=1e-10)
    assert np.linalg.norm(u3[:3]) ** 2 > 1.9  # lives in the span of the class means


def test_bad_input() -> None:
    lang = AgreementLanguage()
    model = TinyTransformer(lang.vocab_size, lang.length, d=16, heads=2)
    ids = torch.as_tensor(lang.sample(4, np.random.default_rng(0))[0])
    with pytest.raises(ValueError, match="available: .*blocks.0"):
        agop(model, ids, "blocks.9")
    x = np.random.default_rng(0).standard_normal((20, 4))
    with pytest.raises(ValueError, match="labels must have one entry"):
        concept_subspace(x, np.zeros(19))
    with pytest.raises(ValueError, match="k must be <="):
        concept_subspace(x, np.arange(20) % 2, 2)
    with pytest.raises(ValueError, match="k must be <="):
        concept_subspace(x[:, :2], np.arange(20) % 5, 3)
    with pytest.raises(ValueError, match="subspace must have 4 rows"):
        engagement(np.eye(4), np.ones((3, 1)))
    with pytest.raises(ValueError, match="positive trace"):
        engagement(np.zeros((4, 4)), np.ones((4, 1)))
    with pytest.raises(ValueError, match="symmetric"):
        engagement(np.triu(np.ones((4, 4))), np.ones((4, 1)))


def test_checkpoint_steps_and_language() -> None:
    s = checkpoint_steps(2000, 30)
    assert len(s) == 30 and s[0] == 0 and s[-1] == 2000 and s == sorted(set(s))
    lang = AgreementLanguage()
    ids, plural, lemma = lang.sample(200, np.random.default_rng(0))
    assert ids.shape == (200, lang.length) and ids.max() < lang.vocab_size
    np.testing.assert_array_equal(ids[:, -1], lang.verb_id(lemma, plural))
    subj_plural = (ids[:, 1] - 1) >= lang.n_nouns
    np.testing.assert_array_equal(subj_plural, plural.astype(bool))
