"""Tests of the AI-Feynman table: completeness, every row finite on its range, known values, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from geode.data import feynman


def test_the_table_has_the_100_equations_once_each():
    eqs = feynman.equations()
    assert len(eqs) == 100
    assert len(set(feynman.ids())) == 100
    assert sorted(e.number for e in eqs) == list(range(1, 101))
    assert eqs[0].id == "I.6.20a" and eqs[-1].id == "III.21.20"
    # I.18.12 is reachable by its own id (pykan's copy labels it a second "I.18.4")
    assert feynman.get("I.18.12").formula == "r*F*sin(theta)"
    assert feynman.get("I.18.4").formula == "(m1*r1+m2*r2)/(m1+m2)"


def test_every_row_evaluates_finite_on_its_range_and_the_ranges_are_valid():
    for eq in feynman.equations():
        assert all(lo < hi for lo, hi in eq.ranges), eq.id
        X, y = eq.sample(300, seed=eq.number)
        assert X.shape == (300, eq.n_vars) and y.shape == (300,)
        lo = np.array([r[0] for r in eq.ranges])
        hi = np.array([r[1] for r in eq.ranges])
        assert np.all((X >= lo) & (X <= hi)), eq.id
        assert np.all(np.isfinite(y)), eq.id
        assert np.std(y) > 0, eq.id  # every equation depends on its inputs


@pytest.mark.parametrize(
    ("eq_id", "point", "value"),
    [
        ("I.6.20a", {"theta": 0.0}, 1 / math.sqrt(2 * math.pi)),
        ("I.6.20", {"sigma": 2.0, "theta": 2.0}, math.exp(-0.5) / (math.sqrt(2 * math.pi) * 2.0)),
        ("I.8.14", {"x1": 1.0, "x2": 4.0, "y1": 1.0, "y2": 5.0}, 5.0),
        ("I.10.7", {"m_0": 1.0, "v": 0.6, "c": 1.0}, 1.25),
        ("I.12.1", {"mu": 2.0, "Nn": 3.0}, 6.0),
        ("I.13.4", {"m": 2.0, "v": 1.0, "u": 2.0, "w": 3.0}, 14.0),
        ("I.26.2", {"n": 0.5, "theta2": math.pi / 2}, math.pi / 6),
        ("I.39.11", {"gamma": 2.0, "pr": 3.0, "V": 4.0}, 12.0),  # gamma is a variable, not the Gamma function
        ("I.44.4", {"n": 2.0, "kb": 3.0, "T": 4.0, "V1": 1.0, "V2": math.e}, 24.0),  # ln is the natural log
        ("II.11.28", {"n": 1.0, "alpha": 1.0}, 2.5),
        ("II.13.17", {"epsilon": 1.0, "c": 1.0, "I": 2.0 * math.pi, "r": 1.0}, 1.0),  # I is a current, not sqrt(-1)
        ("III.4.32", {"h": 2 * math.pi, "omega": math.log(2.0), "kb": 1.0, "T": 1.0}, 1.0),
        ("III.17.37", {"beta": 2.0, "alpha": 0.5, "theta": 0.0}, 3.0),  # beta is a variable too
        ("I.30.3", {"Int_0": 3.0, "theta": 1.3, "n": 1.0}, 3.0),
    ],
)
def test_known_values(eq_id, point, value):
    eq = feynman.get(eq_id)
    X = np.array([[point[v] for v in eq.variables]])
    assert eq.evaluate(X)[0] == pytest.approx(value, rel=1e-12)


def test_variables_ranges_and_aliases_follow_the_ai_feynman_table():
    eq = feynman.get("I.6.20")
    assert eq.variables == ("sigma", "theta") and eq.ranges == ((1.0, 3.0), (1.0, 3.0))
    assert eq.output == "f" and eq.number == 2
    assert feynman.get("I.6.2a") is feynman.get("I.6.20a") is feynman.get(1)
    assert feynman.get("I.15.1") is feynman.get("I.15.10")
    assert feynman.get("I.9.18").n_vars == 9
    assert feynman.get("I.15.3x").ranges[2] == (3.0, 20.0)
    assert {str(s) for s in feynman.get("II.13.17").expr.free_symbols} == {"epsilon", "c", "I", "r"}


def test_sampling_is_deterministic_and_accepts_widened_ranges():
    eq = feynman.get("I.10.7")
    X1, y1 = eq.sample(50, seed=3)
    X2, y2 = eq.sample(50, seed=3)
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2)
    assert not np.array_equal(X1, eq.sample(50, seed=4)[0])
    wide = eq.widened_ranges(0.1)
    assert wide[0] == pytest.approx((0.6, 5.4))
    Xw, yw = eq.sample(2000, seed=0, ranges=wide)
    assert Xw[:, 0].min() < 1.0 and Xw[:, 0].max() > 5.0 and np.all(np.isfinite(yw))
    assert eq.widened_ranges(0.0) == eq.ranges


def test_filter_by_number_of_variables():
    small = feynman.equations(n_vars=(1, 2))
    assert {e.n_vars for e in small} == {1, 2} and len(small) == 16
    assert [e.id for e in feynman.equations(n_vars=1)] == ["I.6.20a"]


def test_bad_input_fails_with_clear_errors():
    with pytest.raises(ValueError, match="unknown Feynman equation id"):
        feynman.get("I.99.99")
    with pytest.raises(ValueError, match="numbers run from 1 to 100"):
        feynman.get(101)
    with pytest.raises(TypeError, match="key"):
        feynman.get(2.5)
    eq = feynman.get("I.12.1")
    with pytest.raises(ValueError, match=r"ranges\[0\] must have low < high"):
        eq.sample(10, 0, ranges=[(2.0, 2.0), (1.0, 5.0)])
    with pytest.raises(ValueError, match=r"ranges\[1\] must have low < high"):
        eq.sample(10, 0, ranges=[(1.0, 2.0), (5.0, 1.0)])
    with pytest.raises(ValueError, match="one \\(low, high\\) pair per variable"):
        eq.sample(10, 0, ranges=[(1.0, 2.0)])
    with pytest.raises(ValueError, match="n must be >= 1"):
        eq.sample(0, 0)
    with pytest.raises(ValueError, match="X must have 2 columns"):
        eq.evaluate(np.ones((3, 3)))
    with pytest.raises(ValueError, match="fraction"):
        eq.widened_ranges(-0.1)
