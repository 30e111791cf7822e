"""SafeCut: the cut statistic (hand-made graph, brute force, limit cases), the gate's identities and limits,
SafeCut's reduction to self-training, validation and the claim check."""

from __future__ import annotations

import math

import numpy as np
import pytest

from geode.ensembles import MutualCorrection, SafeCutGate, SafeCutRounds, confidence_gate, cut_statistic, knn_graph
from geode.ensembles.mutual import RoundState


def brute_force_cut_statistic(x: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    n = x.shape[0]
    pi = np.bincount(y) / n
    z = np.zeros(n)
    for i in range(n):
        d = [(float(np.linalg.norm(x[i] - x[j])), j) for j in range(n) if j != i]
        d.sort()
        nbrs = d[:k]
        w = np.array([1.0 / (1.0 + dist) for dist, _ in nbrs])
        cut = sum(wi for wi, (_, j) in zip(w, nbrs) if y[j] != y[i])
        p = pi[y[i]]
        mu = (1 - p) * w.sum()
        sd = math.sqrt(p * (1 - p) * (w**2).sum())
        z[i] = (cut - mu) / sd if sd > 0 else 0.0
    return z


def test_cut_statistic_on_a_hand_made_graph():
    # points 0, 1, 3, 6 on a line, labels 0 0 1 1, k = 1:
    # 0 -> 1 (w 1/2, same), 1 -> 0 (w 1/2, same), 3 -> 1 (w 1/3, cut), 6 -> 3 (w 1/4, same); pi = (1/2, 1/2)
    # mu_i = w_i / 2, sigma_i = w_i / 2  =>  Z = (J - w/2) / (w/2) = -1, -1, +1, -1
    x = np.array([[0.0], [1.0], [3.0], [6.0]])
    parts = cut_statistic(x, [0, 0, 1, 1], k=1, return_parts=True)
    np.testing.assert_array_equal(parts.neighbors[:, 0], [1, 0, 1, 2])
    np.testing.assert_allclose(parts.weights[:, 0], [1 / 2, 1 / 2, 1 / 3, 1 / 4])
    np.testing.assert_allclose(parts.cut, [0, 0, 1 / 3, 0])
    np.testing.assert_allclose(parts.z, [-1.0, -1.0, 1.0, -1.0])


@pytest.mark.parametrize("seed", range(5))
def test_cut_statistic_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(25, 3))
    y = rng.integers(0, 3, 25)
    y[:3] = [0, 1, 2]
    for k in (1, 4, 24):
        np.testing.assert_allclose(cut_statistic(x, y, k), brute_force_cut_statistic(x, y, k), atol=1e-10)


def test_knn_graph_matches_a_full_sort_and_chunking_is_invisible():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 4))
    idx, dist = knn_graph(x, 7)
    d = np.linalg.norm(x[:, None] - x[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    np.testing.assert_array_equal(idx, np.argsort(d, axis=1, kind="stable")[:, :7])
    np.testing.assert_allclose(dist, np.sort(d, axis=1)[:, :7], atol=1e-10)
    idx2, dist2 = knn_graph(x, 7, chunk=7)
    np.testing.assert_array_equal(idx, idx2)
    np.testing.assert_allclose(dist, dist2)


def test_perfectly_separated_clusters_give_the_closed_form():
    # labels = clusters, k below the cluster size: no edge is cut, Z_i = -mu_i / sigma_i
    rng = np.random.default_rng(1)
    centers = np.array([[0.0, 0.0], [100.0, 0.0], [0.0, 100.0]])
    y = np.repeat([0, 1, 2], [10, 20, 30])
    x = centers[y] + rng.normal(scale=0.5, size=(60, 2))
    parts = cut_statistic(x, y, k=5, return_parts=True)
    assert np.all(parts.cut == 0)
    pi = np.array([10, 20, 30])[y] / 60
    w = parts.weights
    expected = -(1 - pi) * w.sum(1) / np.sqrt(pi * (1 - pi) * (w**2).sum(1))
    np.testing.assert_allclose(parts.z, expected)
    assert np.all(parts.z < 0)


def test_random_labels_follow_the_null_distribution():
    # labels independent of the geometry: Z has mean ~0 and variance ~1 (that is what mu, sigma standardise)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3000, 5))
    y = rng.integers(0, 4, 3000)
    z = cut_statistic(x, y, k=20)
    assert abs(z.mean()) < 0.06
    assert abs(z.std() - 1.0) < 0.08


def test_wrong_labels_get_high_z():
    # two clusters, a few labels flipped: the flipped ones have the highest Z
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(size=(50, 2)), rng.normal(size=(50, 2)) + 8])
    y = np.repeat([0, 1], 50)
    flipped = np.array([3, 17, 60, 88])
    y[flipped] = 1 - y[flipped]
    z = cut_statistic(x, y, k=10)
    assert set(np.argsort(z)[-4:]) == set(flipped)


def test_single_label_gives_zero_and_validation():
    x = np.random.default_rng(4).normal(size=(10, 2))
    np.testing.assert_array_equal(cut_statistic(x, np.zeros(10, dtype=int), k=3), 0.0)
    with pytest.raises(ValueError, match=r"k must be <= n_samples - 1 = 9"):
        cut_statistic(x, np.zeros(10, dtype=int), k=10)
    with pytest.raises(ValueError, match="one label per row"):
        cut_statistic(x, np.zeros(9, dtype=int), k=3)
    with pytest.raises(TypeError, match="integer class labels"):
        cut_statistic(x, np.zeros(10), k=3)
    with pytest.raises(ValueError, match="non-negative"):
        cut_statistic(x, -np.ones(10, dtype=int), k=3)
    with pytest.raises(ValueError, match="k must be >= 1"):
        cut_statistic(x, np.zeros(10, dtype=int), k=0)
    with pytest.raises(ValueError, match="finite"):
        cut_statistic(np.full((10, 2), np.nan), np.zeros(10, dtype=int), k=3)


# --- the gate ------------------------------------------------------------------------------------------


def test_gate_identities():
    rng = np.random.default_rng(5)
    zt, zv = rng.normal(size=200), rng.normal(size=200)
    gate = SafeCutGate(tau=0.7)
    w_t, w_v = gate.weights(zt, zv)
    assert np.all((w_t >= 0) & (w_t < 1) & (w_v >= 0) & (w_v < 1))
    assert np.all((w_t == 0) | (w_v == 0))  # one direction per sample
    np.testing.assert_array_equal(w_t > 0, zv < zt)  # the partner supervises when its Z is lower
    # swapping the models swaps the directions
    s_t, s_v = gate.weights(zv, zt)
    np.testing.assert_allclose(s_t, w_v, atol=1e-15)
    np.testing.assert_allclose(s_v, w_t, atol=1e-15)
    # strength: w = tanh(|dZ| / (2 tau))
    np.testing.assert_allclose(w_t + w_v, np.tanh(np.abs(zt - zv) / 1.4), atol=1e-12)


def test_gate_limits():
    z = np.array([-2.0, 0.0, 3.0])
    w_t, w_v = SafeCutGate(1.0).weights(z, z)  # equal reliabilities: no exchange
    assert np.all(w_t == 0) and np.all(w_v == 0)
    w_t, w_v = SafeCutGate(math.inf).weights(z, -z)
    assert np.all(w_t == 0) and np.all(w_v == 0)
    # tau -> 0 with Z replaced by minus the confidence: confidence-gated exchange
    rng = np.random.default_rng(6)
    ct, cv = rng.random(100), rng.random(100)
    h_t, h_v = SafeCutGate(1e-9).weights(-ct, -cv)
    c_t, c_v = confidence_gate(ct, cv)
    np.testing.assert_allclose(h_t, c_t, atol=1e-6)
    np.testing.assert_allclose(h_v, c_v, atol=1e-6)
    with pytest.raises(ValueError, match="tau must be > 0"):
        SafeCutGate(0.0)
    with pytest.raises(ValueError, match="z_t and z_v must have the same length"):
        SafeCutGate().weights([0.0, 1.0], [0.0])


def test_gate_on_samples_the_target_model_gets_wrong():
    # two clusters; the target model mislabels 8 scattered points of the first, the partner labels all right:
    # on those points the partner supervises the target model, strongly, and never the other way round
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(size=(40, 2)), rng.normal(size=(40, 2)) + 10])
    lv = np.repeat([0, 2], 40)
    lt = lv.copy()
    wrong = np.zeros(80, dtype=bool)
    wrong[rng.choice(40, 8, replace=False)] = True
    lt[wrong] = 1
    probs_t, probs_v = np.eye(3)[lt], np.eye(3)[lv]
    w_t, w_v = SafeCutRounds(k=10).gate(RoundState(probs_t, probs_v, x, x, 0))
    assert np.all(w_t[wrong] > 0.3) and np.all(w_v[wrong] == 0)


# --- SafeCut's training --------------------------------------------------------------------------------


def _models():
    import torch

    from geode.ensembles.safecut.experiment import FrozenEncoderClassifier, MLPClassifier

    torch.manual_seed(0)
    return MLPClassifier(4, 3, hidden=8), FrozenEncoderClassifier(4, 3, hidden=8, generator=torch.Generator())


def test_safecut_with_equal_reliabilities_is_self_training():
    import torch

    t, v = _models()
    x = np.random.default_rng(8).normal(size=(50, 4)).astype(np.float32)
    y = np.arange(50) % 3
    kw = {"rounds": 2, "epochs": 2, "im_weight": 0.5, "seed": 4}
    a_t, a_v, ha = SafeCutRounds(tau=math.inf, k=5, **kw).fit(t, v, x, y=y)
    b_t, b_v, hb = MutualCorrection("self", **kw).fit(t, v, x, y=y)
    for p, q in zip(list(a_t.parameters()) + list(a_v.parameters()), list(b_t.parameters()) + list(b_v.parameters())):
        assert torch.equal(p, q)
    assert [h["acc_t"] for h in ha] == [h["acc_t"] for h in hb]


def test_safecut_fit_runs_deterministically_and_validates():
    t, v = _models()
    x = np.random.default_rng(9).normal(size=(40, 4)).astype(np.float32)
    y = np.arange(40) % 3
    h1 = SafeCutRounds(k=5, rounds=2, epochs=1, seed=1).fit(t, v, x, y=y)[2]
    h2 = SafeCutRounds(k=5, rounds=2, epochs=1, seed=1).fit(t, v, x, y=y)[2]
    assert h1 == h2 and len(h1) == 3
    assert {"mean_w_t", "mean_w_v", "net_correction_t", "net_correction_v"} <= set(h1[0])
    with pytest.raises(ValueError, match="k must be <= n_samples - 1"):
        SafeCutRounds(k=40, rounds=1, epochs=1).fit(t, v, x)
    with pytest.raises(ValueError, match="k must be >= 1"):
        SafeCutRounds(k=0)


def test_complementary_failure_data_fails_on_complementary_halves():
    from geode.ensembles.safecut.experiment import complementary_failure_data

    d = complementary_failure_data(50, 60, shift=2.0, seed=0)
    assert d.x_target.shape == (50, 16) and d.x_source.shape == (60, 16) and d.x_partner.shape == (60, 16)
    d0 = complementary_failure_data(50, 60, shift=0.0, seed=0)
    d1 = complementary_failure_data(50, 60, shift=0.0, seed=0)
    np.testing.assert_array_equal(d0.x_source, d1.x_source)


# --- the claim check -----------------------------------------------------------------------------------


def test_claim_thresholds_are_the_issues():
    from geode.claims import load_claim

    c = load_claim("safecut")
    got = {t.name: (t.metric, t.op, t.value) for t in (*c.thresholds, *c.floors)}
    assert got == {
        "beats_source": ("gain_vs_source_only_pts", ">=", 2.0),
        "beats_naive": ("gain_vs_naive_pts", ">=", 2.0),
        "beats_confidence": ("gain_vs_confidence_pts", ">=", 2.0),
        "headroom": ("ceiling_gap_pts", ">=", 10.0),
        "no_collapse": ("collapsed_methods", "<=", 0.0),
    }
    assert c.reproduced == "beats_source and beats_naive and beats_confidence"
    assert c.partial == "beats_source and beats_naive"
    assert {f.name for f in c.floors} == {"headroom", "no_collapse"}
    for t in c.thresholds[:3]:  # every verdict threshold has the shuffled-gate control
        assert t.controls == (f"control_{t.metric}",)
    assert "cut statistic" in c.doc


def test_claim_smoke_run():
    from geode.claims import load_claim

    c = load_claim("safecut")
    out = c.run("smoke", 0)
    assert all(math.isfinite(v) for v in out.metrics.values())
    assert {"accuracy"} <= set(out.figures)
    assert 0.0 <= out.metrics["acc_safecut"] <= 1.0
    assert {row["method"] for row in out.tuned} == {
        "self-training",
        "teacher->student",
        "naive exchange",
        "confidence gating",
        "SafeCut rounds",
        "shuffled gate",
        "SafeCut",
    }
    assert "swap_acc_safecut" in out.metrics and "acc_ceiling" in out.metrics
    assert c.verdict(out)[0] in ("reproduced", "partial", "not reproduced", "inconclusive")


def test_knn_backends_and_the_cosine_metric_agree_with_brute_force():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(150, 6))
    i_b, d_b = knn_graph(x, 7)
    i_s, d_s = knn_graph(x, 7, backend="sklearn")
    np.testing.assert_allclose(d_s, d_b, atol=1e-10)
    np.testing.assert_array_equal(i_s, i_b)  # continuous data: no ties
    # cosine: brute force on 1 - cos, and invariance to rescaling each row
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    cos_d = 1.0 - xn @ xn.T
    np.fill_diagonal(cos_d, np.inf)
    ref = np.sort(cos_d, axis=1)[:, :7]
    for backend in ("brute", "sklearn"):
        idx, d = knn_graph(x * rng.uniform(0.5, 3.0, size=(150, 1)), 7, metric="cosine", backend=backend)
        np.testing.assert_allclose(d, ref, atol=1e-10)
        np.testing.assert_allclose(np.take_along_axis(cos_d, idx, axis=1), ref, atol=1e-10)
    y = rng.integers(0, 3, size=150)
    np.testing.assert_allclose(cut_statistic(x, y, k=7, backend="sklearn"), cut_statistic(x, y, k=7), atol=1e-10)
    with pytest.raises(ValueError, match="zero row"):
        knn_graph(np.vstack([x, np.zeros(6)]), 3, metric="cosine")
    with pytest.raises(ValueError, match="metric"):
        knn_graph(x, 3, metric="manhattan")


# --- the released method (revision 2) --------------------------------------------------------------------


def test_mutual_mask_matches_a_set_of_edges():
    from geode.ensembles import mutual_mask

    rng = np.random.default_rng(11)
    x = rng.normal(size=(80, 5))
    nbr, _ = knn_graph(x, 6, metric="cosine")
    edges = {(i, int(j)) for i in range(80) for j in nbr[i]}
    want = np.array([[(int(j), i) in edges for j in nbr[i]] for i in range(80)])
    np.testing.assert_array_equal(mutual_mask(nbr), want)
    assert 0 < want.mean() < 1
    with pytest.raises(ValueError, match="neighbors"):
        mutual_mask(np.array([[1], [5]]))


def _reliability_by_hand(x, y, k, tau, fallback):
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    sim = xn @ xn.T
    np.fill_diagonal(sim, -np.inf)
    nbr = np.argsort(-sim, axis=1, kind="stable")[:, :k]
    adj = np.zeros(sim.shape, bool)
    adj[np.repeat(np.arange(len(x)), k), nbr.ravel()] = True
    out = np.empty(len(x))
    for i in range(len(x)):
        js = [j for j in nbr[i] if adj[j, i]]
        if not js and fallback:
            js = list(nbr[i])
        if not js:
            out[i] = 0.1
            continue
        w = np.exp(-(1 - sim[i, js]) / tau)
        out[i] = np.exp(-np.sum(w * (y[js] != y[i])) / (w.sum() + 1e-8))
    return out


@pytest.mark.parametrize("fallback", [True, False])
def test_cut_reliability_matches_a_direct_computation(fallback):
    from geode.ensembles import cut_reliability

    rng = np.random.default_rng(12)
    x = rng.normal(size=(120, 6))
    y = rng.integers(0, 3, 120)
    got = cut_reliability(x, y, k=7, tau_sim=0.3, fallback_knn=fallback)
    np.testing.assert_allclose(got, _reliability_by_hand(x, y, 7, 0.3, fallback), atol=1e-10)
    r_s = cut_reliability(x * 3.0, y, k=7, tau_sim=0.3, fallback_knn=fallback, backend="sklearn")
    np.testing.assert_allclose(r_s, got, atol=1e-10)  # cosine: scale-free; backends agree
    assert np.all((got >= np.exp(-1) - 1e-12) & (got <= 1)) or not fallback


def test_cut_reliability_limits_and_validation():
    from geode.ensembles import cut_reliability

    rng = np.random.default_rng(13)
    c = np.eye(4)[:, :3] * 10  # three directions + one tiny cluster
    x = np.vstack([c[i] + 0.1 * rng.normal(size=(10, 3)) for i in range(3)])
    y = np.repeat(np.arange(3), 10)
    np.testing.assert_allclose(cut_reliability(x, y, k=5), 1.0)  # clusters labelled by cluster: nothing cut
    r = cut_reliability(x, (y + (np.arange(30) % 2)) % 3, k=5)  # labels alternate inside each cluster
    assert r.mean() < 0.8 and r.min() >= np.exp(-1) - 1e-12
    with pytest.raises(TypeError, match="integer"):
        cut_reliability(x, y.astype(float))
    with pytest.raises(ValueError, match="tau_sim"):
        cut_reliability(x, y, k=5, tau_sim=0.0)


def test_iic_and_diversity_closed_forms():
    import torch

    from geode.ensembles import diversity_loss, iic_loss

    c = 4
    onehot = torch.eye(c).repeat(5, 1)  # balanced, the two views identical: MI = log C
    assert float(iic_loss(onehot, onehot)) == pytest.approx(-np.log(c), abs=1e-5)
    uniform = torch.full((20, c), 1.0 / c)  # independent views: MI = 0
    assert float(iic_loss(uniform, onehot)) == pytest.approx(0.0, abs=1e-6)
    assert float(diversity_loss(onehot)) == pytest.approx(-np.log(c), abs=1e-6)
    assert float(diversity_loss(torch.eye(c)[[0] * 8])) == pytest.approx(0.0, abs=1e-6)  # collapsed batch


def test_release_gates_are_complementary():
    from geode.ensembles import SafeCut

    w_t, w_p = np.array([1.0, 0.5, 0.4]), np.array([0.4, 0.5, 1.0])
    g_p2t, g_t2p = SafeCut(beta=6.0).gates(w_t, w_p)
    np.testing.assert_allclose(g_p2t + g_t2p, 1.0)
    np.testing.assert_allclose(g_p2t, 1 / (1 + np.exp(-6.0 * (w_p - w_t))))
    np.testing.assert_allclose(SafeCut(beta=0.0).gates(w_t, w_p)[0], 0.5)
    assert all(np.all(g == 1) for g in SafeCut(reliability="naive").gates(w_t, w_p))
    s = SafeCut(epochs=5)
    assert s.ema_momentum(0) == pytest.approx(0.7) and s.ema_momentum(4) == pytest.approx(0.95)
    for bad in ({"beta": -1.0}, {"ema_start": 1.0}, {"reliability": "z"}, {"k": 0}):
        with pytest.raises(ValueError):
            SafeCut(**bad)


class _FixedGates:
    """A SafeCut whose gates are forced to (g_p2t, g_t2p) = given constants (to pin the training directions)."""

    @staticmethod
    def make(g_p2t, g_t2p, **kw):
        from geode.ensembles import SafeCut

        class Fixed(SafeCut):
            def gates(self, w_t, w_p):
                n = np.asarray(w_t).shape[0]
                return np.full(n, g_p2t), np.full(n, g_t2p)

        return Fixed(k=5, iic_weight=0.0, div_weight=0.0, epochs=2, lr=1e-2, seed=3, **kw)


def _kl(p, q):
    return float(np.sum(p * (np.log(p) - np.log(q))))


@pytest.mark.parametrize("direction", ["p2t", "t2p"])
def test_release_each_model_trains_on_its_own_gate(direction):
    import torch

    from geode.ensembles.mutual import _forward

    t, v = _models()
    x = torch.as_tensor(np.random.default_rng(14).normal(size=(60, 4)), dtype=torch.float32)
    gp, gt = (1.0, 0.0) if direction == "p2t" else (0.0, 1.0)
    a_t, a_v, _ = _FixedGates.make(gp, gt, temporal_weight=0.0).fit(t, v, x)
    same_t = all(torch.equal(p, q) for p, q in zip(a_t.parameters(), t.parameters()))
    same_v = all(torch.equal(p, q) for p, q in zip(a_v.parameters(), v.parameters()))
    p_t0, p_v0 = _forward(t, x)[0], _forward(v, x)[0]
    before = _kl(p_v0, p_t0) if direction == "p2t" else _kl(p_t0, p_v0)
    if direction == "p2t":  # only the partner -> target distillation is on: the partner must not move
        assert same_v and not same_t
        assert _kl(_forward(a_v, x)[0], _forward(a_t, x)[0]) < before
    else:
        assert same_t and not same_v
        assert _kl(_forward(a_t, x)[0], _forward(a_v, x)[0]) < before


def test_release_fit_is_deterministic_and_the_control_shuffles():
    from geode.ensembles import SafeCut

    t, v = _models()
    x = np.random.default_rng(16).normal(size=(60, 4)).astype(np.float32)
    y = np.arange(60) % 3
    h1 = SafeCut(k=5, epochs=2, seed=1).fit(t, v, x, y=y)[2]
    h2 = SafeCut(k=5, epochs=2, seed=1).fit(t, v, x, y=y)[2]
    assert h1 == h2 and len(h1) == 3
    assert {"mean_g_p2t", "mean_g_t2p", "acc_t", "acc_v", "net_correction_t", "net_correction_v"} <= set(h1[0])
    assert h1[0]["mean_g_p2t"] + h1[0]["mean_g_t2p"] == pytest.approx(1.0)
    feats = np.random.default_rng(17).normal(size=(60, 3))
    probs = np.eye(3)[y] * 0.8 + 0.2 / 3
    r_cut = SafeCut(k=5).reliabilities(feats, probs, np.random.default_rng(0))
    r_shuf = SafeCut(k=5, reliability="shuffled").reliabilities(feats, probs, np.random.default_rng(0))
    np.testing.assert_allclose(np.sort(r_shuf), np.sort(r_cut))
    assert not np.allclose(r_shuf, r_cut)
    with pytest.raises(ValueError, match="k must be <= n_samples - 1"):
        SafeCut(k=80, epochs=1).fit(t, v, x)


def test_cosine_knn_with_zero_rows_treats_them_as_orthogonal():
    from geode.ensembles import cut_reliability

    rng = np.random.default_rng(18)
    x = np.vstack([rng.normal(size=(30, 4)), np.zeros((2, 4))])
    for backend in ("brute", "sklearn", "torch"):
        idx, d = knn_graph(x, 5, metric="cosine", backend=backend, zero_rows="orthogonal")
        np.testing.assert_allclose(d[30:], 1.0)  # a zero row is at cosine distance 1 from every row
        assert np.all(d[:30] <= 1.0 + 1e-12) or backend == "sklearn"
    r = cut_reliability(x, np.arange(32) % 3, k=5)  # a dead ReLU row does not raise
    assert np.all(np.isfinite(r))
    with pytest.raises(ValueError, match="zero_rows"):
        knn_graph(x, 3, metric="cosine", zero_rows="skip")


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_torch_knn_backend_matches_brute_force(metric):
    from geode.ensembles import cut_reliability

    rng = np.random.default_rng(19)
    x = rng.normal(size=(130, 9))
    i_b, d_b = knn_graph(x, 8, metric=metric)
    i_t, d_t = knn_graph(x, 8, metric=metric, backend="torch", chunk=37)  # chunking is invisible
    np.testing.assert_allclose(d_t, d_b, atol=1e-10)
    np.testing.assert_array_equal(i_t, i_b)  # continuous data: no ties
    y = rng.integers(0, 4, 130)
    np.testing.assert_allclose(cut_reliability(x, y, k=8, backend="torch"), cut_reliability(x, y, k=8), atol=1e-12)


def test_release_losses_closed_form_pins_every_gate():
    import torch

    from geode.ensembles import SafeCut

    g = torch.Generator().manual_seed(0)
    lp = [torch.log_softmax(torch.randn(6, 3, generator=g), 1) for _ in range(4)]
    logp_t, logp_v, t_prev, p_prev = lp[0], lp[1], lp[2].exp(), lp[3].exp()
    g_p2t = torch.rand(6, generator=g)
    g_t2p = 1 - g_p2t

    def kl(p, logq):  # KL(p || q) per row
        return (p * (p.log() - logq)).sum(1)

    sc = SafeCut(iic_weight=0.0, div_weight=0.0, temporal_weight=0.7)
    loss_t, loss_v = sc.losses(logp_t, logp_v, t_prev, p_prev, g_p2t, g_t2p)
    want_t = (g_p2t * kl(logp_v.exp(), logp_t)).mean() + 0.7 * (g_t2p * kl(t_prev, logp_t)).mean()
    want_v = (g_t2p * kl(logp_t.exp(), logp_v)).mean() + 0.7 * (g_p2t * kl(p_prev, logp_v)).mean()
    torch.testing.assert_close(loss_t, want_t)
    torch.testing.assert_close(loss_v, want_v)
    full = SafeCut(iic_weight=1.3, div_weight=0.5, temporal_weight=0.0)
    lt, lv = full.losses(logp_t, logp_v, t_prev, p_prev, g_p2t, g_t2p)
    from geode.ensembles import diversity_loss, iic_loss

    p_t, p_v = logp_t.exp(), logp_v.exp()
    torch.testing.assert_close(
        lt, (g_p2t * kl(p_v, logp_t)).mean() + 1.3 * iic_loss(p_t, p_v) + 0.5 * diversity_loss(p_t)
    )
    torch.testing.assert_close(
        lv, (g_t2p * kl(p_t, logp_v)).mean() + 1.3 * iic_loss(p_v, p_t) + 0.5 * diversity_loss(p_v)
    )
