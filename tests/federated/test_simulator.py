"""The in-process simulator, the torch clients and per-client accuracy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from geode.federated import (
    BatchedTorchClients,
    FedAvg,
    FedProx,
    QFedAvg,
    Simulator,
    TorchClient,
    disparity,
    label_mix_accuracy,
)

torch.set_num_threads(1)


class AddClient:
    """Adds its id to every weight; can be told to fail."""

    def __init__(self, i, mode="ok"):
        self.i, self.mode = i, mode

    def fit(self, p, config):
        if self.mode == "raise":
            raise RuntimeError("disk full")
        if self.mode == "nan":
            return [np.full_like(a, np.nan) for a in p], 1, {}
        if self.mode == "shape":
            return [np.zeros(7) for a in p], 1, {}
        return [a + self.i for a in p], self.i, {"train_loss": float(self.i)}

    def evaluate(self, p, config):
        return float(self.i), 1, {"accuracy": 1.0}


def test_round_aggregates_sampled_clients_with_the_strategy():
    sim = Simulator([AddClient(1), AddClient(3)], FedAvg(), [np.zeros(2)], clients_per_round=2, seed=0)
    rec = sim.fit_round()
    np.testing.assert_allclose(sim.parameters[0], [(1 * 1 + 3 * 3) / 4] * 2)
    assert rec.clients == [0, 1] and rec.failures == []
    assert rec.fit_metrics["train_loss"] == pytest.approx((1 * 1 + 3 * 3) / 4)


def test_failing_clients_are_reported_and_excluded():
    clients = [AddClient(1), AddClient(2, "raise"), AddClient(3, "nan"), AddClient(4, "shape")]
    sim = Simulator(clients, FedAvg(), [np.zeros(2)], clients_per_round=4, seed=0)
    rec = sim.fit_round()
    assert rec.clients == [0]
    reasons = dict(rec.failures)
    assert "disk full" in reasons[1] and "NaN" in reasons[2] and "shape" in reasons[3]
    np.testing.assert_allclose(sim.parameters[0], [1.0, 1.0])  # only client 0 counted


def test_a_round_where_every_client_fails_raises():
    sim = Simulator([AddClient(1, "raise"), AddClient(2, "nan")], FedAvg(), [np.zeros(1)], clients_per_round=2)
    with pytest.raises(RuntimeError, match="no client result to aggregate.*disk full"):
        sim.fit_round()


def test_sampling_and_runs_are_deterministic():
    clients = [AddClient(i) for i in range(1, 11)]

    def run(seed):
        sim = Simulator(clients, FedAvg(), [np.zeros(1)], clients_per_round=3, seed=seed)
        return [r.clients for r in sim.run(5).rounds], sim.parameters[0]

    a, b, c = run(0), run(0), run(1)
    assert a[0] == b[0] and a[0] != c[0]
    np.testing.assert_array_equal(a[1], b[1])


def test_config_carries_round_seed_and_strategy_entries():
    seen = []

    class Spy(AddClient):
        def fit(self, p, config):
            seen.append(dict(config))
            return super().fit(p, config)

    sim = Simulator(
        [Spy(1), Spy(2)],
        FedProx(0.3),
        [np.zeros(1)],
        clients_per_round=2,
        seed=5,
        fit_config=lambda r: {"lr": 0.1 / r},
    )
    sim.run(2)
    assert [c["server-round"] for c in seen] == [1, 1, 2, 2]
    assert all(c["proximal-mu"] == 0.3 for c in seen)
    assert seen[2]["lr"] == pytest.approx(0.05)
    assert len({c["seed"] for c in seen}) == 4


def test_evaluate_fn_and_history():
    sim = Simulator(
        [AddClient(1)], FedAvg(), [np.zeros(1)], clients_per_round=1, evaluate_fn=lambda r, p: {"w": float(p[0][0])}
    )
    hist = sim.run(4, eval_every=2)
    rounds, vals = hist.metric("w")
    assert rounds.tolist() == [0, 2, 4] and vals.tolist() == [0.0, 2.0, 4.0]
    assert [e[0] for e in sim.evaluate_clients()] == [1.0]


def test_simulator_bad_input():
    with pytest.raises(ValueError, match="clients must not be empty"):
        Simulator([], FedAvg(), [np.zeros(1)], clients_per_round=1)
    with pytest.raises(ValueError, match="clients_per_round must be >= 1"):
        Simulator([AddClient(1)], FedAvg(), [np.zeros(1)], clients_per_round=0)
    with pytest.raises(ValueError, match="clients_per_round must be <= 1"):
        Simulator([AddClient(1)], FedAvg(), [np.zeros(1)], clients_per_round=2)
    with pytest.raises(TypeError, match="strategy"):
        Simulator([AddClient(1)], "fedavg", [np.zeros(1)], clients_per_round=1)
    with pytest.raises(TypeError, match=r"clients\[0\]"):
        Simulator([object()], FedAvg(), [np.zeros(1)], clients_per_round=1)
    with pytest.raises(ValueError, match="initial_parameters"):
        Simulator([AddClient(1)], FedAvg(), [np.array([np.nan])], clients_per_round=1)


# ---------------------------------------------------------------- torch clients


def _data(seed=0, n=40, d=5, c=3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)).astype(np.float32), rng.integers(0, c, size=n)


def _mlp(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def _params(model):
    return [v.detach().numpy().copy() for v in model.state_dict().values()]


def test_torch_client_sgd_lowers_its_loss_and_reports_the_start_loss():
    x, y = _data()
    model = _mlp()
    client = TorchClient(model, x, y, lr=0.2, epochs=5, batch_size=8)
    p0 = _params(model)
    loss0, n, _ = client.evaluate(p0, {})
    new, n_fit, metrics = client.fit(p0, {"seed": 1})
    loss1, _, _ = client.evaluate(new, {})
    assert n == n_fit == 40 and loss1 < loss0
    assert metrics["train_loss"] == pytest.approx(loss0, rel=1e-6)


def test_proximal_term_keeps_the_client_closer_to_the_global_model():
    x, y = _data(1)
    model = _mlp()
    client = TorchClient(model, x, y, lr=0.2, epochs=3, batch_size=8)
    p0 = _params(model)

    def dist(cfg):
        new, _, _ = client.fit(p0, {"seed": 2, **cfg})
        return sum(float(np.sum((a - b) ** 2)) for a, b in zip(new, p0))

    assert dist({"proximal-mu": 5.0}) < dist({"proximal-mu": 0.0})


def test_batched_clients_match_sequential_clients():
    datasets = [_data(s, n=n) for s, n in ((0, 13), (1, 40), (2, 7), (3, 25))]
    model = _mlp(3)
    p0 = _params(model)
    pool = BatchedTorchClients(model, datasets, lr=0.1, epochs=2, batch_size=6, weight_decay=1e-3)
    cids = [3, 0, 2, 1]
    cfgs = [{"seed": 10 + c, "proximal-mu": 0.5, "lr": 0.05 * (1 + c)} for c in cids]
    got = pool.fit_many(cids, p0, cfgs)
    for c, cfg, (params, n, m) in zip(cids, cfgs, got):
        seq = TorchClient(model, *datasets[c], lr=0.1, epochs=2, batch_size=6, weight_decay=1e-3)
        want, n_want, m_want = seq.fit(p0, cfg)
        assert n == n_want
        assert m["train_loss"] == pytest.approx(m_want["train_loss"], rel=1e-5)
        for a, b in zip(params, want):
            np.testing.assert_allclose(a, b, atol=2e-6)


def test_batched_pool_runs_in_the_simulator_like_the_client_list():
    datasets = [_data(s, n=20) for s in range(5)]
    model = _mlp(4)
    p0 = _params(model)
    pool = BatchedTorchClients(model, datasets, lr=0.1, batch_size=5)
    seq = [TorchClient(model, x, y, lr=0.1, batch_size=5) for x, y in datasets]
    a = Simulator(pool, QFedAvg(0.1, q=1.0), p0, clients_per_round=3, seed=2).run(3).parameters
    b = Simulator(seq, QFedAvg(0.1, q=1.0), p0, clients_per_round=3, seed=2).run(3).parameters
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, atol=1e-5)


def test_torch_client_bad_input():
    x, y = _data()
    with pytest.raises(TypeError, match="torch.nn.Module"):
        TorchClient("net", x, y)
    with pytest.raises(ValueError, match="same number of rows"):
        TorchClient(_mlp(), x, y[:-1])
    with pytest.raises(ValueError, match="lr must be > 0"):
        TorchClient(_mlp(), x, y, lr=0)
    client = TorchClient(_mlp(), x, y)
    with pytest.raises(ValueError, match="shape"):
        client.fit([np.zeros((2, 2))] * 4, {})
    with pytest.raises(TypeError, match="Sequential"):
        BatchedTorchClients(torch.nn.Linear(5, 3), [(x, y)])
    with pytest.raises(TypeError, match="Dropout"):
        BatchedTorchClients(torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.Dropout(0.1)), [(x, y)])


# ---------------------------------------------------------------- per-client accuracy


def test_label_mix_accuracy_reweights_per_class_accuracy():
    y = np.array([0, 0, 1, 1, 2, 2])
    pred = np.array([0, 0, 1, 0, 0, 0])  # per-class accuracy 1, 0.5, 0
    mix = np.array([[1.0, 0, 0], [0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(label_mix_accuracy(y, pred, mix), [1.0, 0.25, 0.5])
    d = disparity([0.2, 0.8, 0.5])
    assert d["worst"] == 0.2 and d["mean"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="outside"):
        label_mix_accuracy(np.array([3]), np.array([3]), mix)
