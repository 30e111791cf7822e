"""RISE: regularisers zero at the pre-trained geometry and positive away from it; RISE(0, 0) is FedAvg."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from geode.federated import FedAvg, Simulator, TorchClient
from geode.federated.rise import (
    RISE,
    BLSCLoss,
    FedDecorr,
    GeometryClient,
    MRGALoss,
    aggregate_geometry,
    client_feature_stats,
    feddecorr_loss,
    proto_kd_loss,
)


def _feats(seed: int = 0, n: int = 400, d: int = 6) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    centres = rng.normal(size=(4, d)) * 3
    return centres[y] + rng.normal(size=(n, d)) * np.linspace(2, 0.5, d), y


def test_aggregate_geometry_equals_pooled_statistics():
    z, y = _feats()
    stats = [client_feature_stats(z[:150], y[:150], 4), client_feature_stats(z[150:], y[150:], 4)]
    g = aggregate_geometry(stats, rank=3)
    for c in range(4):
        np.testing.assert_allclose(g.prototypes[c], z[y == c].mean(0), atol=1e-10)
    lam = np.sort(np.linalg.eigvalsh(np.cov(z.T, bias=True)))[::-1][:3]
    np.testing.assert_allclose(g.profile, lam / lam.sum(), atol=1e-10)
    np.testing.assert_allclose(g.basis.T @ g.basis, np.eye(3), atol=1e-10)


def test_blsc_zero_at_pretrained_geometry_positive_when_collapsed():
    z, y = _feats()
    g = aggregate_geometry([client_feature_stats(z, y, 4)], rank=4)
    loss = BLSCLoss(g.basis, g.profile)
    zt = torch.as_tensor(z, dtype=torch.float32)
    assert float(loss(zt)) < 1e-5  # the pre-trained features themselves
    rot = torch.as_tensor(np.linalg.qr(np.random.default_rng(1).normal(size=(6, 6)))[0], dtype=torch.float32)
    # collapse: all energy on the first principal direction -> sum_j max(0, e_j - e0_j) = 1 - e0_1
    b1 = torch.as_tensor(g.basis[:, :1], dtype=torch.float32)
    collapsed = (zt @ b1) @ b1.T
    assert float(loss(collapsed)) == pytest.approx(1 - g.profile[0], abs=1e-4)
    # an isotropic batch spreads energy more evenly than the profile: only the tail entries can exceed e0
    assert float(loss(collapsed)) > float(loss(zt @ rot)) or float(loss(zt @ rot)) >= 0
    assert float(loss(zt[:1])) == 0.0


def test_mrga_zero_at_pretrained_prototypes_and_positive_when_permuted():
    z, y = _feats()
    g = aggregate_geometry([client_feature_stats(z, y, 4)], rank=2)
    m = MRGALoss(g.prototypes, tau=0.1)
    zt, yt = torch.as_tensor(z, dtype=torch.float32), torch.as_tensor(y)
    assert float(m(zt, yt)) < 1e-6  # batch prototypes = global prototypes
    perm = torch.as_tensor([1, 2, 3, 0])
    assert float(m(zt, perm[yt])) > 1e-2  # classes swapped: the topology differs
    assert float(m(zt[yt == 0], yt[yt == 0])) == 0.0  # one class: nothing to align
    with pytest.raises(ValueError, match="labels"):
        m(zt, yt[:-1])


def test_baseline_losses_closed_forms():
    z = torch.randn(50, 5, generator=torch.Generator().manual_seed(0))
    d = torch.cat([z[:, :1]] * 5, dim=1)  # fully correlated: corr = ones -> ||.||^2/d^2 = 1
    assert float(feddecorr_loss(d)) == pytest.approx(1.0, abs=1e-4)
    assert float(feddecorr_loss(z)) < 0.4
    protos = torch.zeros(3, 5)
    y = torch.zeros(50, dtype=torch.int64)
    assert float(proto_kd_loss(z, y, protos)) == pytest.approx(float(z.pow(2).sum(1).mean()), rel=1e-6)


def _setup(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(120, 8)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + 2 * (x[:, 1] > 0).astype(np.int64)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.ReLU(), torch.nn.Linear(6, 4))
    with torch.no_grad():
        z = model[:-1](torch.as_tensor(x)).numpy()
    geom = aggregate_geometry([client_feature_stats(z, y, 4)], rank=3)
    init = [v.detach().numpy().copy() for v in model.state_dict().values()]
    return x, y, model, geom, init


def test_rise_with_zero_weights_is_fedavg_exactly():
    x, y, model, geom, init = _setup()
    parts = [(x[:60], y[:60]), (x[60:], y[60:])]
    plain = [TorchClient(model, a, b, lr=0.1, batch_size=16) for a, b in parts]
    geo = [GeometryClient(model, a, b, geometry=geom, lr=0.1, batch_size=16) for a, b in parts]
    h0 = Simulator(plain, FedAvg(), init, clients_per_round=2, seed=3).run(3)
    h1 = Simulator(geo, RISE(0.0, 0.0), init, clients_per_round=2, seed=3).run(3)
    for a, b in zip(h0.parameters, h1.parameters):
        np.testing.assert_array_equal(a, b)
    h2 = Simulator(geo, RISE(1.0, 1.0), init, clients_per_round=2, seed=3).run(3)
    assert max(np.abs(a - b).max() for a, b in zip(h0.parameters, h2.parameters)) > 1e-6


def test_each_regulariser_lowers_its_own_loss_in_training():
    x, y, model, geom, init = _setup(1)
    c = GeometryClient(model, x, y, geometry=geom, lr=0.2, batch_size=32, epochs=20)
    p_plain, _, _ = c.fit(init, {"seed": 0})
    xt, yt = torch.as_tensor(x), torch.as_tensor(y)

    def loss_after(p, fn):
        c._load(p)
        with torch.no_grad():
            return float(fn(model[:-1](xt)))

    for key, fn in (
        ("feddecorr-beta", feddecorr_loss),
        ("rise-mrga", lambda z: c.mrga(z, yt)),
        ("proto-kd", lambda z: proto_kd_loss(z, yt, c.prototypes)),
    ):
        p_reg, _, _ = c.fit(init, {"seed": 0, key: 5.0})
        assert loss_after(p_reg, fn) < loss_after(p_plain, fn), key


def test_configure_fit_and_bad_input():
    assert RISE(0.3, 0.0).configure_fit(2) == {"rise-blsc": 0.3, "rise-mrga": 0.0}
    assert FedDecorr(0.1).configure_fit(1) == {"feddecorr-beta": 0.1}
    with pytest.raises(ValueError, match="lambda_blsc"):
        RISE(-1.0, 1.0)
    with pytest.raises(ValueError, match="stats"):
        aggregate_geometry([], rank=2)
    x, y, model, geom, _ = _setup()
    with pytest.raises(ValueError, match="feature dim"):
        bad = aggregate_geometry([client_feature_stats(np.ones((4, 3)) * np.arange(4)[:, None], np.arange(4), 4)], 1)
        GeometryClient(model, x, y, geometry=bad)
    with pytest.raises(ValueError, match="profile"):
        BLSCLoss(np.eye(3)[:, :2], np.array([0.7, 0.7]))
    with pytest.raises(ValueError, match="orthonormal"):
        BLSCLoss(np.ones((3, 2)), np.array([0.5, 0.5]))


def test_bad_config_names_the_key():
    x, y, model, geom, init = _setup()
    c = GeometryClient(model, x, y, geometry=geom)
    with pytest.raises(ValueError, match="rise-blsc"):
        c.fit(init, {"rise-blsc": -1.0})
    with pytest.raises(ValueError, match="batch-size"):
        c.fit(init, {"rise-blsc": 1.0, "batch-size": 0})


# -- issue 43: RISE.prepare_geometry replaces the four manual steps; a client that ignores RISE is loud --------


def _clients_data(seed: int = 0):
    x, y, model, _, _ = _setup(seed)
    return model, [(x[:60], y[:60]), (x[60:], y[60:])]


def test_prepare_geometry_equals_the_four_manual_steps():
    model, data = _clients_data()
    fed = RISE.prepare_geometry(model, data, rank=3, lr=0.1, batch_size=16)
    with torch.no_grad():
        stats = [client_feature_stats(model[:-1](torch.as_tensor(x)).numpy(), y, 4) for x, y in data]
    manual = aggregate_geometry(stats, rank=3)
    for name in ("prototypes", "basis", "profile"):
        np.testing.assert_allclose(getattr(fed.geometry, name), getattr(manual, name), atol=1e-6)
    assert len(fed.clients) == 2 and all(isinstance(c, GeometryClient) for c in fed.clients)
    assert fed.clients[0].model is not model  # the user's model is never overwritten by the clients
    init = [v.detach().numpy() for v in model.state_dict().values()]
    for a, b in zip(fed.initial_parameters, init):
        np.testing.assert_array_equal(a, b)
    # the same run as the hand-assembled one
    geo = [GeometryClient(model, x, y, geometry=manual, lr=0.1, batch_size=16) for x, y in data]
    h0 = Simulator(geo, RISE(1.0, 1.0), init, clients_per_round=2, seed=3).run(2)
    h1 = Simulator(fed.clients, RISE(1.0, 1.0), fed.initial_parameters, clients_per_round=2, seed=3).run(2)
    for a, b in zip(h0.parameters, h1.parameters):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_prepare_geometry_validates_its_inputs():
    model, data = _clients_data()
    with pytest.raises(TypeError, match="nn.Sequential"):
        RISE.prepare_geometry(torch.nn.Linear(8, 4), data)
    with pytest.raises(ValueError, match="client_data"):
        RISE.prepare_geometry(model, [])
    with pytest.raises(ValueError, match=r"client_data\[1\]"):
        RISE.prepare_geometry(model, [data[0], (data[1][0],)])


def test_rise_warns_when_clients_ignore_its_settings():
    model, data = _clients_data()
    init = [v.detach().numpy().copy() for v in model.state_dict().values()]
    plain = [TorchClient(model, x, y, lr=0.1, batch_size=16) for x, y in data]
    with pytest.warns(UserWarning, match="ignore RISE's settings"):
        Simulator(plain, RISE(1.0, 1.0), init, clients_per_round=2, seed=0).run(2)
    fed = RISE.prepare_geometry(model, data, rank=3, lr=0.1, batch_size=16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Simulator(fed.clients, RISE(1.0, 1.0), fed.initial_parameters, clients_per_round=2, seed=0).run(2)
        Simulator(plain, RISE(0.0, 0.0), init, clients_per_round=2, seed=0).run(1)  # RISE(0, 0) is FedAvg
