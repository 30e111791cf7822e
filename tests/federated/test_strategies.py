"""Aggregation rules on hand-made client updates (no simulation): FedAvg, FedAvgM, QFedAvg, FedProx."""

from __future__ import annotations

import numpy as np
import pytest

from geode.federated import (
    FedAvg,
    FedAvgM,
    FedProx,
    QFedAvg,
    check_client_updates,
    client_update_problem,
)


def _clients(rng, k=4, shapes=((3, 2), (2,))):
    return [[rng.normal(size=s) for s in shapes] for _ in range(k)]


# ---------------------------------------------------------------- FedAvg


def test_fedavg_equals_the_example_weighted_mean():
    rng = np.random.default_rng(0)
    glob = [np.zeros((3, 2)), np.zeros(2)]
    clients = _clients(rng)
    n = [10, 1, 5, 4]
    out = FedAvg().aggregate(glob, clients, n)
    for j in range(2):
        want = sum(nk * c[j] for nk, c in zip(n, clients)) / sum(n)
        np.testing.assert_allclose(out[j], want, rtol=1e-12)


def test_fedavg_hand_computed_example():
    out = FedAvg().aggregate([np.zeros(2)], [[np.array([1.0, 2.0])], [np.array([5.0, -2.0])]], [3, 1])
    np.testing.assert_allclose(out[0], [2.0, 1.0])


def test_fedavg_keeps_dtype_and_shape():
    glob = [np.zeros((2, 2), np.float32)]
    out = FedAvg().aggregate(glob, [[np.ones((2, 2), np.float32)]] * 2, [1, 1])
    assert out[0].dtype == np.float32 and out[0].shape == (2, 2)


def test_fedavg_of_identical_clients_is_that_client():
    rng = np.random.default_rng(1)
    c = _clients(rng, k=1)[0]
    out = FedAvg().aggregate([np.zeros_like(a) for a in c], [c, c, c], [1, 7, 2])
    for a, b in zip(out, c):
        np.testing.assert_allclose(a, b)


def test_zero_weight_client_is_ignored():
    out = FedAvg().aggregate([np.zeros(1)], [[np.ones(1)], [np.full(1, 100.0)]], [5, 0])
    np.testing.assert_allclose(out[0], [1.0])


# ---------------------------------------------------------------- FedAvgM


def test_fedavgm_without_momentum_at_lr_one_is_fedavg():
    rng = np.random.default_rng(2)
    glob = [rng.normal(size=(3, 2)), rng.normal(size=2)]
    clients, n = _clients(rng), [1, 2, 3, 4]
    # beta = 0 gives v_t = Δ_t, so one server step of size 1 lands on the FedAvg mean
    a = FedAvgM(server_learning_rate=1.0, server_momentum=0.0).aggregate(glob, clients, n)
    b = FedAvg().aggregate(glob, clients, n)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, atol=1e-12)


def test_fedavgm_accumulates_momentum_across_rounds():
    s = FedAvgM(server_learning_rate=1.0, server_momentum=0.5)
    g0 = [np.zeros(1)]
    g1 = s.aggregate(g0, [[np.ones(1)]], [1])  # Δ1 = -1, v1 = -1 -> θ1 = 1
    np.testing.assert_allclose(g1[0], [1.0])
    g2 = s.aggregate(g1, [[np.full(1, 2.0)]], [1])  # Δ2 = -1, v2 = 0.5*(-1) - 1 = -1.5 -> θ2 = 2.5
    np.testing.assert_allclose(g2[0], [2.5])
    s.reset()
    np.testing.assert_allclose(s.aggregate(g0, [[np.ones(1)]], [1])[0], [1.0])


# ---------------------------------------------------------------- QFedAvg


def test_qfedavg_with_q0_is_the_unweighted_mean_of_clients():
    rng = np.random.default_rng(3)
    glob = [rng.normal(size=(3, 2)), rng.normal(size=2)]
    clients = _clients(rng)
    metrics = [{"train_loss": v} for v in (0.3, 1.2, 2.0, 0.1)]
    out = QFedAvg(client_learning_rate=0.1, q=0.0).aggregate(glob, clients, [1, 50, 2, 3], metrics)
    for j in range(2):
        np.testing.assert_allclose(out[j], np.mean([c[j] for c in clients], axis=0), atol=1e-9)


def test_qfedavg_matches_the_q_ffl_formula():
    glob = [np.array([1.0, -1.0])]
    clients = [[np.array([0.5, -1.0])], [np.array([1.0, 0.0])]]
    losses, q, lr = [2.0, 0.5], 1.0, 0.1
    lip = 1 / lr
    dws = [lip * (glob[0] - c[0]) for c in clients]
    delta = sum(f**q * dw for f, dw in zip(losses, dws))
    h = sum(q * f ** (q - 1) * dw @ dw + lip * f**q for f, dw in zip(losses, dws))
    out = QFedAvg(lr, q).aggregate(glob, clients, [1, 1], [{"train_loss": v} for v in losses])
    np.testing.assert_allclose(out[0], glob[0] - delta / h, rtol=1e-9)


def test_qfedavg_upweights_the_high_loss_client():
    glob = [np.zeros(1)]
    clients = [[np.array([1.0])], [np.array([-1.0])]]
    out = QFedAvg(0.1, q=2.0).aggregate(glob, clients, [1, 1], [{"train_loss": 3.0}, {"train_loss": 0.5}])
    assert out[0][0] > 0  # moves toward client 0, whose loss is higher


def test_qfedavg_needs_losses():
    glob = [np.zeros(1)]
    with pytest.raises(ValueError, match="train_loss"):
        QFedAvg(0.1).aggregate(glob, [[np.ones(1)]], [1])
    with pytest.raises(ValueError, match="train_loss"):
        QFedAvg(0.1).aggregate(glob, [[np.ones(1)]], [1], [{"train_loss": float("nan")}])


# ---------------------------------------------------------------- FedProx


def test_fedprox_aggregates_as_fedavg_and_sends_mu():
    rng = np.random.default_rng(4)
    glob = [np.zeros((3, 2)), np.zeros(2)]
    clients, n = _clients(rng), [3, 1, 1, 2]
    for a, b in zip(FedProx(0.5).aggregate(glob, clients, n), FedAvg().aggregate(glob, clients, n)):
        np.testing.assert_array_equal(a, b)
    assert FedProx(0.5).configure_fit(3) == {"proximal-mu": 0.5}
    assert FedAvg().configure_fit(1) == {}


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("strategy", [FedAvg(), FedAvgM(), FedProx(0.1)])
def test_bad_rounds_raise_clear_errors(strategy):
    glob = [np.zeros((2, 2)), np.zeros(2)]
    good = [np.ones((2, 2)), np.ones(2)]
    with pytest.raises(ValueError, match="empty"):
        strategy.aggregate(glob, [], [])
    with pytest.raises(ValueError, match=r"client_params\[1\].*shape"):
        strategy.aggregate(glob, [good, [np.ones((3, 2)), np.ones(2)]], [1, 1])
    with pytest.raises(ValueError, match=r"client_params\[0\].*arrays"):
        strategy.aggregate(glob, [[np.ones((2, 2))]], [1])
    with pytest.raises(ValueError, match=r"client_params\[1\].*NaN"):
        strategy.aggregate(glob, [good, [np.full((2, 2), np.nan), np.ones(2)]], [1, 1])
    with pytest.raises(ValueError, match="num_examples has 1"):
        strategy.aggregate(glob, [good, good], [1])
    with pytest.raises(ValueError, match="non-negative"):
        strategy.aggregate(glob, [good], [-2])
    with pytest.raises(ValueError, match="sum to a positive"):
        strategy.aggregate(glob, [good], [0])
    with pytest.raises(ValueError, match="list of numpy arrays"):
        strategy.aggregate(glob, [np.ones(3)], [1])


def test_bad_hyperparameters():
    with pytest.raises(ValueError, match="proximal_mu"):
        FedProx(-1.0)
    with pytest.raises(ValueError, match="server_momentum"):
        FedAvgM(1.0, 1.0)
    with pytest.raises(ValueError, match="server_learning_rate"):
        FedAvgM(0.0, 0.5)
    with pytest.raises(ValueError, match="client_learning_rate"):
        QFedAvg(0.0)
    with pytest.raises(ValueError, match="q must be"):
        QFedAvg(0.1, q=-1)


def test_client_update_problem_names_the_problem():
    glob = [np.zeros(2)]
    assert client_update_problem(glob, [np.ones(2)], 3) is None
    assert "shape" in client_update_problem(glob, [np.ones(3)], 3)
    assert "NaN" in client_update_problem(glob, [np.array([np.inf, 0.0])], 3)
    assert "non-negative" in client_update_problem(glob, [np.ones(2)], 1.5)
    assert "non-numeric" in client_update_problem(glob, [np.array(["a", "b"])], 1)
    g, c, n = check_client_updates(glob, [[np.ones(2)]], [4])
    assert n.dtype == np.float64 and n[0] == 4
