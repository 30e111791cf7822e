"""CRAFT: the closed-form conflict-free projection, its layer groups, the strategy and the claim registration."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from geode.federated import FedAvg, Simulator
from geode.federated.craft import CRAFT, craft_direction, module_groups

torch.set_num_threads(1)


def _updates(rng, k, d):
    return rng.normal(size=(k, d))


# ---------------------------------------------------------------- the closed form on hand-made updates


def test_result_has_nonnegative_inner_product_with_every_client_update():
    rng = np.random.default_rng(0)
    g = _updates(rng, 6, 40)
    g[1] = -g[0] + 0.3 * rng.normal(size=40)  # a strongly conflicting pair
    w = rng.integers(1, 50, size=6)
    ref = rng.normal(size=40)
    x, info = craft_direction(g, w, ref, log=True)
    assert np.all(g @ x >= 0)
    np.testing.assert_allclose((g / np.linalg.norm(g, axis=1, keepdims=True)) @ x, w / w.sum(), atol=1e-10)
    assert info["feasible"] and info["rank"] == 6
    # FedAvg's direction conflicts with at least one client here; CRAFT's does not
    fedavg = (w / w.sum()) @ g
    assert np.any(g @ fedavg < 0)


def test_reduces_to_the_reference_when_there_is_no_conflict():
    # unit rows u_i = cos(a_i) ĝ + sin(a_i) q_i with cos(a_i) = w_i: the reference already meets U ĝ = w,
    # so the projection returns it unchanged (whatever the scale of the updates and of the reference)
    rng = np.random.default_rng(1)
    q, _ = np.linalg.qr(rng.normal(size=(10, 10)))
    ghat = q[:, 0]
    w = np.array([0.5, 0.3, 0.2])
    rows = np.stack([c * ghat + np.sqrt(1 - c**2) * q[:, i + 1] for i, c in enumerate(w)])
    x = craft_direction(rows * np.array([[2.0], [0.5], [7.0]]), w * 9.0, ghat * 4.2)
    np.testing.assert_allclose(x, ghat, atol=1e-12)


def test_agreeing_clients_give_the_fedavg_direction():
    # no conflict at all: every client moves the same way (different step sizes); CRAFT keeps that direction
    rng = np.random.default_rng(2)
    u = rng.normal(size=8)
    g = np.outer([0.1, 2.0, 5.0], u)
    w = np.array([3.0, 1.0, 1.0])
    x = craft_direction(g, w)
    fedavg = (w / w.sum()) @ g
    cos = x @ fedavg / (np.linalg.norm(x) * np.linalg.norm(fedavg))
    assert cos == pytest.approx(1.0, abs=1e-12)


def test_first_round_with_orthogonal_clients_is_the_weighted_mean_of_unit_updates():
    g = np.array([[3.0, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 2.0]])
    w = np.array([1.0, 2.0, 1.0])
    x = craft_direction(g, w)
    np.testing.assert_allclose(x, [0.25, 0.5, 0.25])


def test_solution_is_the_closest_feasible_point_to_the_reference():
    # KKT: x - ĝ lies in the row space of U, and U x = w
    rng = np.random.default_rng(3)
    g, w, ref = _updates(rng, 5, 30), rng.uniform(1, 3, 5), rng.normal(size=30)
    x = craft_direction(g, w, ref)
    u = g / np.linalg.norm(g, axis=1, keepdims=True)
    ghat = ref / np.linalg.norm(ref)
    coef, *_ = np.linalg.lstsq(u.T, x - ghat, rcond=None)
    np.testing.assert_allclose(u.T @ coef, x - ghat, atol=1e-10)
    # any other feasible point is farther from ĝ
    null = np.linalg.svd(u)[2][5:]
    other = x + null.T @ rng.normal(size=25)
    assert np.linalg.norm(other - ghat) > np.linalg.norm(x - ghat)


def test_matches_numpy_pinv_and_is_invariant_to_update_scale():
    rng = np.random.default_rng(4)
    g, w, ref = _updates(rng, 7, 20), rng.uniform(0.1, 1, 7), rng.normal(size=20)
    u = g / np.linalg.norm(g, axis=1, keepdims=True)
    ghat = ref / np.linalg.norm(ref)
    want = ghat + np.linalg.pinv(u) @ (w / w.sum() - u @ ghat)
    np.testing.assert_allclose(craft_direction(g, w, ref), want, atol=1e-10)
    np.testing.assert_allclose(craft_direction(g * rng.uniform(0.01, 100, (7, 1)), w * 3, ref * 5), want, atol=1e-10)


def test_zero_updates_are_dropped_and_a_single_client_passes_through():
    g = np.array([[0.0, 0.0], [2.0, 0.0]])
    x, info = craft_direction(g, [5.0, 1.0], log=True)
    np.testing.assert_allclose(x, [1.0, 0.0])
    assert info["kept"].tolist() == [False, True]
    np.testing.assert_allclose(craft_direction(np.zeros((3, 4)), [1, 1, 1]), np.zeros(4))


def test_overdetermined_group_falls_back_to_least_squares():
    # 3 clients, 1 coordinate (a bias alone): the constraints cannot all hold
    g = np.array([[1.0], [-1.0], [2.0]])
    x, info = craft_direction(g, [1, 1, 1], log=True)
    assert not info["feasible"] and info["rank"] == 1
    assert np.all(np.isfinite(x))


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 6), extra=st.integers(1, 20), seed=st.integers(0, 10_000), with_ref=st.booleans())
def test_conflict_free_for_random_full_rank_updates(k, extra, seed, with_ref):
    rng = np.random.default_rng(seed)
    d = k + extra
    g = rng.normal(size=(k, d))
    w = rng.uniform(0.1, 10, size=k)
    x = craft_direction(g, w, rng.normal(size=d) if with_ref else None)
    assert np.all(g @ x > 0)


def test_bad_input_to_the_closed_form():
    with pytest.raises(ValueError, match="updates must have 2"):
        craft_direction(np.ones(3), [1.0])
    with pytest.raises(ValueError, match="weights must have shape"):
        craft_direction(np.ones((2, 3)), [1.0])
    with pytest.raises(ValueError, match="weights must be >= 0"):
        craft_direction(np.ones((2, 3)), [1.0, -1.0])
    with pytest.raises(ValueError, match="reference must have shape"):
        craft_direction(np.ones((2, 3)), [1.0, 1.0], np.ones(4))
    with pytest.raises(ValueError, match="updates must contain only finite"):
        craft_direction(np.array([[np.nan, 1.0]]), [1.0])


# ---------------------------------------------------------------- the strategy


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))


def test_module_groups_put_weight_and_bias_together():
    model = _mlp()
    assert module_groups(model) == [[0, 1], [2, 3]]
    assert module_groups(list(model.state_dict().keys())) == [[0, 1], [2, 3]]
    conv = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.GroupNorm(1, 2), torch.nn.Linear(2, 2))
    assert module_groups(conv) == [[0, 1, 2, 3], [4, 5]]  # the norm joins the conv before it
    bn = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    keys = list(bn.state_dict().keys())
    groups = module_groups(bn)
    assert groups[0] == [0, 1, 2, 3] and sorted(i for g in groups for i in g) == list(range(len(keys)))
    assert all(len(g) == 1 for g in groups[1:])  # running statistics: one group each


def test_strategy_steps_by_server_lr_along_the_groupwise_direction():
    rng = np.random.default_rng(5)
    glob = [rng.normal(size=(3, 4)), rng.normal(size=3)]
    clients = [[a - rng.normal(size=a.shape) for a in glob] for _ in range(2)]
    n = [2, 5]
    s = CRAFT(server_lr=0.7, groups=[[0, 1]])
    out = s.aggregate(glob, clients, n)
    g = np.stack([np.concatenate([(ga - ca).ravel() for ga, ca in zip(glob, c)]) for c in clients])
    x = craft_direction(g, n)
    flat = np.concatenate([a.ravel() for a in glob]) - 0.7 * x
    np.testing.assert_allclose(np.concatenate([a.ravel() for a in out]), flat, atol=1e-12)
    # layer-wise: each group's update is conflict-free on its own
    s2 = CRAFT(0.5, groups=[[0], [1]])
    s2.aggregate(glob, clients, n)
    assert all(np.all(a > 0) for a in s2.last_alignment)


def test_reference_persists_and_reset_clears_it():
    rng = np.random.default_rng(6)
    glob = [rng.normal(size=5)]
    round1 = [[glob[0] - rng.normal(size=5)] for _ in range(2)]
    round2 = [[glob[0] - rng.normal(size=5)] for _ in range(2)]
    s = CRAFT(0.1)
    s.aggregate(glob, round1, [1, 1])
    with_ref = s.aggregate(glob, round2, [1, 1])
    fresh = CRAFT(0.1).aggregate(glob, round2, [1, 1])
    assert not np.allclose(with_ref[0], fresh[0])  # the first round's direction is remembered
    s.reset()
    np.testing.assert_allclose(s.aggregate(glob, round2, [1, 1])[0], fresh[0])


def test_step_norm_is_about_server_lr_whatever_the_update_scale():
    rng = np.random.default_rng(7)
    glob = [np.zeros(50)]
    for scale in (1e-4, 1.0, 1e4):
        s = CRAFT(0.3)
        out = s.aggregate(glob, [[scale * rng.normal(size=50)] for _ in range(5)], [1] * 5)
        step = np.linalg.norm(out[0])
        assert 0.3 * 0.2 < step < 0.3 * 1.5


def test_strategy_bad_input():
    glob = [np.zeros(3), np.zeros(2)]
    with pytest.raises(ValueError, match="partition"):
        CRAFT(0.1, groups=[[0]]).aggregate(glob, [[np.ones(3), np.ones(2)]], [1])
    with pytest.raises(ValueError, match="groups\\[0\\] is empty"):
        CRAFT(0.1, groups=[[], [0, 1]]).aggregate(glob, [[np.ones(3), np.ones(2)]], [1])
    with pytest.raises(ValueError, match="server_lr"):
        CRAFT(0.0)
    with pytest.raises(ValueError, match="empty"):
        CRAFT(0.1).aggregate(glob, [], [])
    with pytest.raises(ValueError, match="NaN"):
        CRAFT(0.1).aggregate(glob, [[np.full(3, np.nan), np.ones(2)]], [1])


def test_craft_in_the_simulator_with_a_failing_client():
    class Client:
        def __init__(self, target, broken=False):
            self.target, self.broken = np.asarray(target, float), broken

        def fit(self, p, config):
            if self.broken:
                return [np.full_like(p[0], np.nan)], 1, {}
            return [p[0] + 0.5 * (self.target - p[0])], 10, {}

        def evaluate(self, p, config):
            return float(np.sum((p[0] - self.target) ** 2)), 1, {}

    clients = [Client([1.0, 0.0]), Client([0.0, 1.0]), Client([1.0, 1.0], broken=True)]
    sim = Simulator(clients, CRAFT(0.2), [np.zeros(2)], clients_per_round=3, seed=0)
    hist = sim.run(30)
    assert all(f[1] == 2 and "NaN" in f[2] for f in hist.failures) and len(hist.failures) == 30
    assert np.all(np.isfinite(hist.parameters[0])) and hist.parameters[0].sum() > 0.5
    fedavg = Simulator(clients, FedAvg(), [np.zeros(2)], clients_per_round=3, seed=0).run(30)
    np.testing.assert_allclose(fedavg.parameters[0], [0.5, 0.5], atol=1e-6)


def test_agreeing_clients_give_one_kth_of_the_unit_direction():
    # K identical directions (any sizes, any weights): u.x = w_i is inconsistent, the least-squares solution
    # is u * mean(w) = u / K, so the step is eta_s / K, not FedAvg's step and not eta_s
    rng = np.random.default_rng(11)
    u = rng.normal(size=30)
    u /= np.linalg.norm(u)
    for k in (1, 2, 5, 20):
        g = np.outer(rng.uniform(0.01, 100, size=k), u)
        x = craft_direction(g, rng.integers(1, 100, size=k))
        np.testing.assert_allclose(x, u / k, atol=1e-12)
        out = CRAFT(0.4).aggregate([np.zeros(30)], [[-row] for row in g], [1] * k)
        assert np.linalg.norm(out[0]) == pytest.approx(0.4 / k, rel=1e-12)


@pytest.mark.parametrize("theta_deg", [10.0, 90.0, 170.0, 179.9])
def test_two_clients_at_an_angle_give_the_closed_form_norm(theta_deg):
    # u1, u2 at angle theta, equal weights: x = (u1 + u2) / (2 (1 + cos theta)), |x| = 1 / (2 cos(theta / 2))
    th = np.deg2rad(theta_deg)
    g = np.array([[1.0, 0.0, 0.0], [np.cos(th), np.sin(th), 0.0]]) * np.array([[3.0], [0.2]])
    x = craft_direction(g, [5, 5])
    assert np.linalg.norm(x) == pytest.approx(1 / (2 * np.cos(th / 2)), rel=1e-9)
    if theta_deg == 179.9:
        assert np.linalg.norm(x) > 500  # unbounded near opposition (573 at 179.9 degrees)


def test_max_step_norm_caps_long_steps_only_and_keeps_the_direction():
    th = np.deg2rad(179.9)
    clients = [[np.array([-1.0, 0.0, 0.0])], [np.array([-np.cos(th), -np.sin(th), 0.0])]]  # g_i = 0 - theta_i
    glob = [np.zeros(3)]
    free = CRAFT(0.1)
    step_free = free.aggregate(glob, clients, [1, 1])[0]
    capped = CRAFT(0.1, max_step_norm=1.0)
    step_cap = capped.aggregate(glob, clients, [1, 1])[0]
    assert np.linalg.norm(step_free) == pytest.approx(0.1 * 573, rel=0.01)
    assert np.linalg.norm(step_cap) == pytest.approx(0.1, rel=1e-12)
    np.testing.assert_allclose(step_cap / np.linalg.norm(step_cap), step_free / np.linalg.norm(step_free), atol=1e-12)
    assert capped.last_direction_norms == pytest.approx(free.last_direction_norms)
    # the reference is the uncapped direction in both: the next round is the same up to the step length
    np.testing.assert_allclose(capped._reference[0], free._reference[0])
    # a short step is left alone
    short = [[np.array([-1.0, 0.0, 0.0])], [np.array([0.0, -1.0, 0.0])]]
    np.testing.assert_array_equal(
        CRAFT(0.1, max_step_norm=1.0).aggregate(glob, short, [1, 1])[0], CRAFT(0.1).aggregate(glob, short, [1, 1])[0]
    )
    with pytest.raises(ValueError, match="max_step_norm"):
        CRAFT(0.1, max_step_norm=0.0)


def test_claim_is_registered_with_the_issues_thresholds():
    from geode.claims import load_claim

    c = load_claim("craft")
    th = {t.name: (t.metric, t.op, t.value, t.agg) for t in (*c.thresholds, *c.floors)}
    assert th["worst_up_5pt"] == ("worst_gain_vs_named_points", ">=", 5.0, "bound95")
    assert th["mean_within_1pt"] == ("mean_gap_vs_named_points", ">=", -1.0, "bound95")
    assert th["worst_above_strongest"][:3] == ("worst_gain_vs_best_points", ">=", 0.0)
    assert c.reproduced == "worst_up_5pt and mean_within_1pt" and c.partial == "worst_up_5pt"
    assert {f.name for f in c.floors} == {"fedavg_learns"} and c.revision == 2
    assert "CRAFT" in c.doc


def test_tuning_grids_are_equal_in_size_and_fedavg_has_a_server_step():
    from geode.federated.craft.experiment import FLSetup, _strategy, grids
    from geode.federated.strategies import FedAvgM

    g = grids(FLSetup())
    sizes = {m: len(next(iter(v.values()))) for m, v in g.items()}
    assert set(sizes) == {"FedAvg", "CRAFT", "FedAvgM", "QFedAvg", "FedProx"} and len(set(sizes.values())) == 1
    assert max(g["FedAvgM"]["momentum"]) == 0.99 and max(g["FedAvg"]["server_lr"]) >= 8
    s = _strategy(FLSetup(), [[0]], "FedAvg", 4.0)
    assert isinstance(s, FedAvgM) and s.server_learning_rate == 4.0 and s.server_momentum == 0.0
    # FedAvg with server lr eta moves eta times as far as plain FedAvg
    glob, clients = [np.zeros(3)], [[np.array([1.0, 2.0, 3.0])], [np.array([3.0, 2.0, 1.0])]]
    np.testing.assert_allclose(
        s.aggregate(glob, clients, [1, 1])[0], 4.0 * FedAvg().aggregate(glob, clients, [1, 1])[0]
    )
