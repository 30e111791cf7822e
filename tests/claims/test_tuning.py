"""Equal tuning: same budget, selection on validation, edges flagged and extended."""

from __future__ import annotations

import math

import pytest

from geode.claims import tune


def quadratic(best_lr):
    """A validation score peaked at lr = best_lr on a log scale (higher is better)."""

    def score(method, params):
        return -((math.log10(params["lr"]) - math.log10(best_lr[method])) ** 2)

    return score


def test_each_method_gets_its_own_best_value_and_the_same_budget():
    grid = {"lr": [1e-4, 1e-3, 1e-2, 1e-1]}
    res = tune(quadratic({"a": 1e-3, "b": 1e-2}), {"a": grid, "b": grid})
    assert res.params("a") == {"lr": 1e-3} and res.params("b") == {"lr": 1e-2}
    assert [t.trials for t in res.best.values()] == [4, 4]
    assert res.on_edge == []
    rows = res.table()
    assert [r["method"] for r in rows] == ["a", "b"] and rows[0]["selected"] == "lr=0.001"


def test_selection_on_the_edge_is_flagged():
    res = tune(quadratic({"a": 1.0}), {"a": {"lr": [1e-4, 1e-3, 1e-2]}})
    assert res.params("a") == {"lr": 1e-2}
    assert res.on_edge == ["a"] and "upper edge" in res.best["a"].edges[0]
    assert any("grid may be too small" in n for n in res.notes())


def test_extension_walks_past_the_edge_to_the_optimum():
    res = tune(quadratic({"a": 1.0}), {"a": {"lr": [1e-4, 1e-3, 1e-2]}}, extend=4)
    assert res.params("a")["lr"] == pytest.approx(1.0)
    assert res.best["a"].trials == 3 + 3  # 0.1, 1 (better), 10 (worse): stops, no longer on an edge
    assert res.on_edge == []


def test_limits_stop_an_extension_and_are_not_edges():
    def score(method, p):
        return p["momentum"]  # best as close to 1 as allowed

    res = tune(score, {"m": {"momentum": [0.0, 0.5, 0.9]}}, extend=5, limits={"momentum": (0.0, 0.99)})
    assert res.params("m")["momentum"] == pytest.approx(0.99)
    assert res.on_edge == []


def test_lower_is_better_and_diverged_runs_count_as_worst():
    def score(method, p):
        return math.nan if p["lr"] > 0.05 else abs(p["lr"] - 0.01)

    res = tune(score, {"a": {"lr": [0.001, 0.01, 0.1]}}, maximize=False)
    assert res.params("a") == {"lr": 0.01}


def test_a_budget_subsamples_larger_grids_deterministically_and_payloads_are_kept():
    calls = []

    def fit(method, p):
        calls.append((method, p["x"]))
        return float(p["x"]), f"model-{method}-{p['x']}"

    grids = {"big": {"x": list(range(10))}, "small": {"x": [1, 2, 3]}}
    a = tune(fit, grids, budget=3, seed=1)
    b = tune(fit, grids, budget=3, seed=1)
    assert a.params("big") == b.params("big")
    assert sum(m == "big" for m, _ in calls) == 6  # 3 trials per call
    assert a.payload("small") == "model-small-3" and a.score("small") == 3.0


def test_list_grids_and_bad_input():
    res = tune(lambda m, p: p["a"] * p["b"], {"m": [{"a": 1, "b": 3}, {"a": 3, "b": 1}]})
    assert res.params("m") == {"a": 1, "b": 3}  # a tie keeps the first configuration
    with pytest.raises(ValueError, match="non-empty"):
        tune(lambda m, p: 0.0, {})
    with pytest.raises(ValueError, match="non-empty list"):
        tune(lambda m, p: 0.0, {"m": {"lr": []}})
    with pytest.raises(TypeError, match="must return a number"):
        tune(lambda m, p: "good", {"m": {"lr": [1]}})


def test_a_two_value_axis_is_flagged_but_not_extended():
    res = tune(quadratic({"a": 1.0}), {"a": {"lr": [1e-3, 1e-2]}}, extend=3)
    assert res.params("a") == {"lr": 1e-2} and res.best["a"].trials == 2
    assert res.on_edge == ["a"] and "upper end of the two-value axis" in res.best["a"].edges[0]
    # at a hard bound it is not an edge
    res = tune(lambda m, p: p["q"], {"a": {"q": [0.5, 1.0]}}, limits={"q": (0.0, 1.0)})
    assert res.on_edge == []


def test_a_tie_with_an_interior_value_is_not_an_edge():
    from geode.claims import tune

    flat = tune(lambda m, p: 1.0, {"a": {"lr": [1e-3, 1e-2, 1e-1]}})
    assert flat.params("a") == {"lr": 1e-3} and flat.best["a"].edges == []
    noisy = tune(lambda m, p: 0.968 + 1e-9 * (p["lr"] == 1e-1), {"a": {"lr": [1e-3, 1e-2, 1e-1]}})
    assert noisy.params("a") == {"lr": 1e-1} and noisy.best["a"].edges == []  # float noise is a tie
    sloped = tune(lambda m, p: -p["lr"], {"a": {"lr": [1e-3, 1e-2, 1e-1]}})
    assert sloped.best["a"].edges and "lower edge" in sloped.best["a"].edges[0]
