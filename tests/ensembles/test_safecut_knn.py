"""SafeCut's exact kNN (top-k on the similarity, the float32 option) and the frozen partner's graph cache
(issue 44): the cached graph gives the same reliabilities and the same adaptation, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from geode.ensembles import SafeCut, cut_reliability, knn_graph
from geode.ensembles.safecut.cutstat import GraphCache


def _old_torch_cosine(x, k):
    """The torch backend before issue 44: top-k smallest of ``1 - similarity`` over the whole block, float64."""
    import torch

    xt = torch.as_tensor(x / np.linalg.norm(x, axis=1, keepdims=True))
    d = (1.0 - xt @ xt.T).clamp_(min=0.0)
    d.fill_diagonal_(float("inf"))
    vals, idx = torch.topk(d, k, dim=1, largest=False, sorted=True)
    return idx.numpy(), vals.numpy()


def test_topk_on_the_similarity_is_the_old_search_bit_for_bit():
    x = np.random.default_rng(0).normal(size=(300, 16))
    i_old, d_old = _old_torch_cosine(x, 12)
    i_new, d_new = knn_graph(x, 12, metric="cosine", backend="torch", chunk=64)
    np.testing.assert_array_equal(i_new, i_old)
    np.testing.assert_array_equal(d_new, d_old)  # the same values: 1 - s of the same float64 products


@pytest.mark.parametrize("backend", ["brute", "torch"])
@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_float32_search_agrees_with_float64_up_to_rounding(backend, metric):
    x = np.random.default_rng(1).normal(size=(200, 12))
    i64, d64 = knn_graph(x, 7, metric=metric, backend=backend)
    i32, d32 = knn_graph(x, 7, metric=metric, backend=backend, dtype="float32", chunk=50)
    assert d32.dtype == np.float64 and i32.dtype == np.int64
    np.testing.assert_allclose(d32, d64, atol=1e-5)
    assert np.mean(np.sort(i32, axis=1) == np.sort(i64, axis=1)) > 0.99  # near-ties may swap
    with pytest.raises(ValueError, match="dtype"):
        knn_graph(x, 3, dtype="float16")
    with pytest.raises(ValueError, match="knn_dtype"):
        SafeCut(knn_dtype="half")


def test_graph_cache_reuses_only_an_unchanged_graph():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(120, 8)), rng.integers(0, 3, 120)
    cache = GraphCache()
    r0 = cut_reliability(x, y, k=6)
    r1 = cut_reliability(x, y, k=6, cache=cache)
    r2 = cut_reliability(x.copy(), y, k=6, cache=cache)  # equal features, another array: a hit
    assert (cache.misses, cache.hits) == (1, 1)
    np.testing.assert_array_equal(r1, r0)
    np.testing.assert_array_equal(r2, r0)
    y2 = rng.integers(0, 3, 120)  # new labels on a cached graph: exact
    np.testing.assert_array_equal(cut_reliability(x, y2, k=6, cache=cache), cut_reliability(x, y2, k=6))
    assert cache.hits == 2
    for fallback in (False, True):  # the cached mask is not edited by the fallback
        got = cut_reliability(x, y, k=6, fallback_knn=fallback, cache=cache)
        np.testing.assert_array_equal(got, cut_reliability(x, y, k=6, fallback_knn=fallback))
    x[0, 0] += 1.0  # an in-place edit of the caller's array invalidates
    np.testing.assert_array_equal(cut_reliability(x, y, k=6, cache=cache), cut_reliability(x, y, k=6))
    cut_reliability(x, y, k=5, cache=cache)  # other settings: rebuilt
    cut_reliability(x, y, k=5, dtype="float32", cache=cache)
    assert cache.misses == 4
    cache.clear()
    cut_reliability(x, y, k=5, cache=cache)
    assert cache.misses == 5
    with pytest.raises(TypeError, match="GraphCache"):
        cut_reliability(x, y, k=5, cache={})


def _bed():
    import torch

    from geode.ensembles.safecut.experiment import FrozenEncoderClassifier, MLPClassifier

    torch.manual_seed(0)
    t = MLPClassifier(4, 3, hidden=8)
    v = FrozenEncoderClassifier(4, 3, hidden=8, generator=torch.Generator().manual_seed(3))
    x = np.random.default_rng(5).normal(size=(90, 4)).astype(np.float32)
    return t, v, x, np.arange(90) % 3


@pytest.mark.parametrize("reliability", ["cut", "shuffled"])
def test_fit_builds_the_partner_graph_once_and_matches_an_uncached_fit(reliability, monkeypatch):
    import torch

    import geode.ensembles.safecut.safecut as mod

    t, v, x, y = _bed()
    method = SafeCut(k=6, epochs=3, reliability=reliability, seed=2)
    run = method.start(t, v, x, y=y)
    for e in range(method.epochs):
        run.epoch(e)
    assert (run.partner_graph.misses, run.partner_graph.hits) == (1, 3)
    got_t, got_v, hist = method.fit(t, v, x, y=y)
    assert hist == run.history

    class NoCache(GraphCache):
        def graph(self, X, key, build):
            self.misses += 1
            return tuple(build())

    monkeypatch.setattr(mod, "GraphCache", NoCache)
    ref_t, ref_v, ref_hist = method.fit(t, v, x, y=y)
    assert ref_hist == hist
    for p, q in zip([*got_t.parameters(), *got_v.parameters()], [*ref_t.parameters(), *ref_v.parameters()]):
        assert torch.equal(p, q)


def test_a_run_is_fit_split_into_train_pass_and_refresh():
    t, v, x, y = _bed()
    method = SafeCut(k=6, epochs=2, seed=1)
    run = method.start(t, v, x, y=y)
    for e in range(2):
        run.train_pass()
        run.refresh(e)
    assert run.history == method.fit(t, v, x, y=y)[2]
    assert len(run.history) == 3 and run.w_t.shape == run.w_p.shape == (90,)
