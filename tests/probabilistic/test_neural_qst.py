"""Neural QST: max-sliced W1 against POT and closed forms, the measurement model, fidelity, baselines."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from geode.probabilistic.neural_qst import (
    MaxSlicedW1Loss,
    MeasurementModel,
    QuadratureGrid,
    fidelity,
    fit_neural,
    hermite_functions,
    imle,
    max_sliced_w1,
    simulate_homodyne,
    sliced_w1_per_direction,
    two_mode_cat,
    uniform_directions,
    wasserstein_1d_w1,
)

ot = pytest.importorskip("ot")


def test_w1_1d_closed_forms():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(50)
    assert wasserstein_1d_w1(x, x + 0.7) == pytest.approx(0.7)  # a translation moves every atom by 0.7
    # two Diracs with weights: W1 = mass that must move times the distance
    assert wasserstein_1d_w1(np.array([0.0, 1.0]), np.array([0.0, 1.0]), [0.3, 0.7], [0.6, 0.4]) == pytest.approx(0.3)
    a, b = rng.random(30), rng.random(40)
    y = rng.standard_normal(40) * 2
    from scipy.stats import wasserstein_distance

    ref = wasserstein_distance(x[:30], y, a / a.sum(), b / b.sum())
    assert wasserstein_1d_w1(x[:30], y, a / a.sum(), b / b.sum()) == pytest.approx(ref, rel=1e-10)


def test_max_sliced_matches_pot_and_emd_per_direction():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 2))
    Y = rng.standard_normal((25, 2)) @ np.array([[2.0, 0.3], [0.0, 0.5]]) + 0.4
    a = rng.random(40)
    a /= a.sum()
    P = uniform_directions(12)
    ours = max_sliced_w1(X, Y, a=a, projections=P)
    pot = ot.max_sliced_wasserstein_distance(X, Y, a, np.full(25, 1 / 25), projections=P, p=1)
    assert ours == pytest.approx(float(pot), rel=1e-10)
    per = sliced_w1_per_direction(X, Y, a=a, projections=P)
    for p in range(0, 12, 5):
        u, v = X @ P[:, p], Y @ P[:, p]
        exact = ot.emd2(a, np.full(25, 1 / 25), np.abs(u[:, None] - v[None, :]))
        assert per[p] == pytest.approx(exact, rel=1e-8)


def test_max_sliced_brute_force_direction_search_and_bounds():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((30, 2)) * np.array([3.0, 0.3])
    Y = rng.standard_normal((30, 2)) * np.array([0.3, 3.0])
    fine = max_sliced_w1(X, Y, n_projections=720)
    # brute force: exact 1-D OT (POT emd2) over 180 angles
    brute = max(
        ot.emd2(np.full(30, 1 / 30), np.full(30, 1 / 30), np.abs((X @ u)[:, None] - (Y @ u)[None, :]))
        for u in uniform_directions(180).T
    )
    assert brute <= fine + 1e-9 and fine - brute < 0.02 * brute
    full = ot.emd2(np.full(30, 1 / 30), np.full(30, 1 / 30), ot.dist(X, Y, metric="euclidean"))
    assert fine <= full + 1e-9  # projections are 1-Lipschitz


def test_torch_value_and_gradient_match_numpy_and_finite_differences():
    rng = np.random.default_rng(3)
    X, Y = rng.standard_normal((20, 2)), rng.standard_normal((15, 2)) + 1.0
    w = rng.random(20)
    w /= w.sum()
    wt = torch.tensor(w, requires_grad=True)
    val = max_sliced_w1(torch.as_tensor(X), Y, a=wt, n_projections=8)
    assert float(val.detach()) == pytest.approx(max_sliced_w1(X, Y, a=w, n_projections=8), rel=1e-12)
    val.backward()
    d = np.zeros(20)
    d[3], d[7] = 1e-6, -1e-6  # stays on the simplex
    fd = (max_sliced_w1(X, Y, a=w + d, n_projections=8) - max_sliced_w1(X, Y, a=w - d, n_projections=8)) / 2
    assert float(wt.grad @ torch.as_tensor(d)) == pytest.approx(fd, rel=1e-5, abs=1e-12)


def test_precomputed_loss_equals_max_sliced_per_setting():
    g = QuadratureGrid(8, 3.0)
    rng = np.random.default_rng(4)
    samples = rng.standard_normal((2, 30, 2))
    probs = rng.random((2, 64))
    probs /= probs.sum(1, keepdims=True)
    loss = MaxSlicedW1Loss(g, samples, n_directions=6)
    ours = float(loss(torch.as_tensor(probs)))
    ref = np.mean([max_sliced_w1(g.points(), samples[k], a=probs[k], n_projections=6) for k in range(2)])
    assert ours == pytest.approx(ref, rel=1e-10)


def test_hermite_functions_are_orthonormal_and_cat_is_normalised():
    x = np.linspace(-12, 12, 4001)
    h = hermite_functions(8, x)
    gram = h @ h.T * (x[1] - x[0])
    np.testing.assert_allclose(gram, np.eye(8), atol=1e-8)
    psi = two_mode_cat(1.2, 12)
    assert np.linalg.norm(psi) == pytest.approx(1.0)
    assert fidelity(psi, psi) == pytest.approx(1.0)
    assert fidelity(psi, np.outer(psi, psi.conj())) == pytest.approx(1.0)
    assert fidelity(psi, two_mode_cat(1.2, 12, parity=-1)) == pytest.approx(0.0, abs=1e-12)  # opposite parity


def test_vacuum_homodyne_variance_and_model_probabilities():
    g = QuadratureGrid(24, 5.0, eta=0.8, sigma_e=0.1)
    vac = np.zeros(16, dtype=complex)
    vac[0] = 1.0
    ph = np.array([[0.0, 0.0], [1.0, 2.0]])
    data = simulate_homodyne(vac, ph, 20000, g, seed=0)
    # loss keeps vacuum variance 1/2; electronic noise adds sigma_e^2
    assert data.samples.var(axis=1).mean() == pytest.approx(0.5 + 0.01, rel=0.03)
    m = MeasurementModel(g, 4, ph)
    p = m.probs_pure(torch.as_tensor(vac)).numpy()
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-3)
    rho = torch.as_tensor(np.outer(vac, vac.conj()))
    np.testing.assert_allclose(m.probs_rho(rho).numpy(), p, atol=1e-12)
    emp = data.counts / data.counts.sum(1, keepdims=True)
    assert np.abs(emp - p).sum(1).max() < 0.08  # simulator and model agree (total variation)


def test_bad_inputs_raise_clear_errors():
    g = QuadratureGrid(8, 3.0)
    with pytest.raises(ValueError, match="normalised"):
        simulate_homodyne(np.ones(4), np.zeros((1, 2)), 10, g)
    with pytest.raises(ValueError, match="shots"):
        simulate_homodyne(two_mode_cat(1.0, 2), np.zeros((1, 2)), -5, g)
    with pytest.raises(ValueError, match="phases"):
        simulate_homodyne(two_mode_cat(1.0, 2), np.zeros(3), 10, g)
    with pytest.raises(ValueError, match="sigma_e"):
        QuadratureGrid(8, 3.0, sigma_e=-0.1)
    with pytest.raises(ValueError, match="eta"):
        QuadratureGrid(8, 3.0, eta=0.0)
    with pytest.raises(ValueError, match="X_t"):
        max_sliced_w1(np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="sum to 1"):
        max_sliced_w1(np.zeros((3, 2)), np.zeros((3, 2)), a=np.ones(3))
    with pytest.raises(ValueError, match="samples"):
        MaxSlicedW1Loss(g, np.zeros((3, 2)))


def test_imle_and_network_recover_a_state_from_plentiful_data():
    N = 3
    psi = two_mode_cat(0.8, N)
    th = np.linspace(0, np.pi, 3, endpoint=False)
    ph = np.array([(a, b) for a in th for b in th])
    g = QuadratureGrid(16, 4.0, eta=0.9, sigma_e=0.05)
    tr, va = simulate_homodyne(psi, ph, 2000, g, seed=0), simulate_homodyne(psi, ph, 2000, g, seed=1)
    m = MeasurementModel(g, N, ph)
    r = imle(m, tr, va, iterations=60, dilution=np.inf, psi_true=psi)
    assert r.fidelities[0] == pytest.approx(1 / N**2) and r.fidelities[-1] > 0.9
    nn_ = fit_neural(m, tr, va, steps=150, lr=3e-3, psi_true=psi, n_directions=8)
    assert nn_.fidelities[-1] > 0.9 and nn_.train_loss_end < 0.5 * nn_.train_loss_start


def test_the_networks_weights_come_from_the_seed_not_the_global_rng():
    """Revision 2: two networks of one seed are equal whatever drew from the global RNG before (it was not so)."""
    import torch

    from geode.probabilistic import NeuralWavefunction

    torch.manual_seed(1)
    a = NeuralWavefunction(4, width=8, depth=1, seed=3)
    torch.randn(100)  # another draw from the global RNG in between
    b = NeuralWavefunction(4, width=8, depth=1, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values(), strict=True))
    c = NeuralWavefunction(4, width=8, depth=1, seed=4)
    assert not torch.equal(a.net[0].weight, c.net[0].weight)
