"""Conformal abstention: the p-values, Holm, the guarantee over many splits, MAPIE agreement, the features."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from geode.uncertainty import (
    ConformalAbstention,
    GeometryCalibrator,
    geometry_features,
    hoeffding_bentkus_pvalue,
    minimum_calibration_size,
)


def _data(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    s = rng.uniform(size=n)
    return s, rng.uniform(size=n) < s  # P(correct | s) = s: P(correct | s >= t) = (1 + t) / 2


def test_pvalue_closed_forms():
    # r_hat = 0: both bounds equal (1 - alpha)^m
    assert hoeffding_bentkus_pvalue(np.array([0.0]), 20, 0.25)[0] == pytest.approx(0.75**20)
    # Bentkus term is the binomial cdf at ceil(m r)
    r, m, a = 0.1, 50, 0.25
    p = hoeffding_bentkus_pvalue(np.array([r]), m, a)[0]
    assert p <= binom.cdf(5, m, a) + 1e-15
    # above the level the p-value is 1 or close: no evidence
    assert hoeffding_bentkus_pvalue(np.array([0.4]), 100, 0.25)[0] > 0.5
    # nothing observed: p = 1
    assert hoeffding_bentkus_pvalue(np.array([0.0]), 0, 0.25)[0] == 1.0


def test_minimum_calibration_size_is_tight():
    n = minimum_calibration_size(0.75, 0.1, 100)
    assert 0.75**n <= 0.1 / 100 < 0.75 ** (n - 1)
    s = np.ones(n)
    ca = ConformalAbstention(0.75, 0.1).fit(s, np.ones(n, bool))  # all correct at n: certifiable
    assert ca.feasible_
    with pytest.raises(ValueError, match=f"at least n = {n}"):
        ConformalAbstention(0.75, 0.1).fit(s[:-1], np.ones(n - 1, bool))


def test_guarantee_holds_over_many_splits():
    """P(correct | answer) >= target in >= 1 - delta of the calibration draws (exchangeable data)."""
    rng = np.random.default_rng(0)
    target, delta = 0.8, 0.1
    ok, part = [], []
    for _ in range(300):
        s, c = _data(300, rng)
        ca = ConformalAbstention(target, delta, target_participation=0.3).fit(s, c)
        if not ca.feasible_:
            ok.append(True)
            continue
        t = ca.threshold_
        ok.append((1 + t) / 2 >= target)  # the true conditional correctness of the selected threshold
        part.append(1 - t >= 0.3)
    assert np.mean(ok) >= 1 - delta
    assert np.mean(part) >= 1 - delta
    # and it is not trivially conservative: the oracle threshold is 0.6; LTT lands near it
    assert 0.6 <= np.median([ConformalAbstention(target, delta).fit(*_data(5000, rng)).threshold_]) < 0.72


def test_fixed_sequence_and_bonferroni_are_no_less_conservative_than_holm():
    rng = np.random.default_rng(1)
    s, c = _data(2000, rng)
    holm = ConformalAbstention(0.75, 0.1).fit(s, c)
    bonf = ConformalAbstention(0.75, 0.1, fwer="bonferroni").fit(s, c)
    fst = ConformalAbstention(0.75, 0.1, fwer="fixed_sequence").fit(s, c)
    assert set(bonf.valid_thresholds_) <= set(holm.valid_thresholds_)
    assert fst.threshold_ <= holm.threshold_  # FST spends all of delta on each test
    assert np.all(holm.predict(s) == (s >= holm.threshold_)) and np.all(holm.abstain(s) == ~holm.predict(s))


def test_agrees_with_mapie_controller():
    mapie = pytest.importorskip("mapie.risk_control")
    rng = np.random.default_rng(2)
    for n in (200, 1000, 3000):
        s, c = _data(n, rng)
        # MAPIE's "predicted_positive_fraction" bounds participation from above; ours is a lower bound
        participation = mapie.BinaryRisk(
            risk_occurrence=lambda yt, yp: yp == 1,
            risk_condition=lambda yt, yp: np.repeat(True, len(yt)),
            higher_is_better=True,
        )
        ctl = mapie.BinaryClassificationController(
            predict_function=lambda x: np.column_stack([1 - x, x]),
            risk=[mapie.precision, participation],
            target_level=[0.75, 0.3],
            confidence_level=0.9,
        )
        ctl.calibrate(s, c.astype(int))
        ours = ConformalAbstention(0.75, 0.1, target_participation=0.3).fit(s, c)
        np.testing.assert_allclose(np.sort(ctl.valid_predict_params), ours.valid_thresholds_)
        # MAPIE takes ceil(m * r) in floating point (121.00000001 -> 122): its p-values are never smaller
        pm = np.asarray(ctl.p_values).ravel()
        finite = np.isfinite(pm)  # MAPIE: NaN where nothing is answered; ours: 1
        assert np.all(ours.p_values_[finite] <= pm[finite] + 1e-12)
        assert np.all(ours.p_values_[~finite] == 1.0)


def test_bad_inputs():
    s = np.linspace(0, 1, 100)
    c = s > 0.5
    with pytest.raises(ValueError, match="NaN"):
        ConformalAbstention().fit(np.r_[s[:-1], np.nan], c)
    with pytest.raises(ValueError, match="shape"):
        ConformalAbstention().fit(s, c[:-1])
    with pytest.raises(ValueError, match="target_correctness"):
        ConformalAbstention(1.2)
    with pytest.raises(ValueError, match="fwer"):
        ConformalAbstention(fwer="bh")
    with pytest.raises(RuntimeError, match="fit"):
        ConformalAbstention().predict(s)
    with pytest.raises(RuntimeError, match="certified"):
        ConformalAbstention(0.9, 0.1).fit(s, np.zeros(100, bool)).predict(s)


def _states(n: int, layers: int, d: int, rng: np.random.Generator) -> np.ndarray:
    return rng.normal(size=(n, layers, d))


def test_geometry_features_invariances():
    rng = np.random.default_rng(3)
    h = _states(50, 4, 8, rng)
    f = geometry_features(h)
    q, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    # rotation, norm growth, anisotropy and proximity are invariant to an orthogonal map of the state space
    np.testing.assert_allclose(geometry_features(h @ q), f, atol=1e-9)
    # a global scale changes nothing either
    np.testing.assert_allclose(geometry_features(3.0 * h), f, atol=1e-9)
    # a state that never turns has rotation 0 and norm growth log of its scaling
    flat = np.repeat(h[:, :1], 4, axis=1) * np.array([1, 2, 4, 8])[None, :, None]
    g = geometry_features(flat)
    np.testing.assert_allclose(g[:, 0], 0.0, atol=1e-6)
    np.testing.assert_allclose(g[:, 1], np.log(8.0), atol=1e-9)
    # proximity: a point that is its own neighbour would score 1; excluded, it does not
    near = geometry_features(h, h, k=1)[:, 3]
    loo = geometry_features(h, h, k=1, exclude_self=True)[:, 3]
    np.testing.assert_allclose(near, 1.0)
    assert np.all(loo < 1.0)


def test_calibrator_learns_a_signal_in_the_geometry():
    """Correctness depends on the layer rotation only (MSP is noise): the calibrator must find it."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(4)
    n = 800
    base = rng.normal(size=(n, 1, 16))
    turn = rng.uniform(0, 1, size=n)
    states = [base[:, 0]]
    for _ in range(3):
        nxt = states[-1] + turn[:, None] * rng.normal(size=(n, 16)) * 2
        states.append(nxt)
    h = np.stack(states, 1)
    y = rng.uniform(size=n) < 1 - turn
    msp = rng.uniform(0.3, 0.9, size=n)
    cal = GeometryCalibrator(1.0).fit(msp[:500], h[:500], y[:500])
    auroc = roc_auc_score(y[500:], cal.predict_confidence(msp[500:], h[500:]))
    plain = roc_auc_score(y[500:], msp[500:])
    assert auroc > 0.7 > plain + 0.1
    # without features it is a monotone recalibration of the confidence: the same ranking as MSP (or reversed)
    mono = GeometryCalibrator(1.0, features=()).fit(msp[:500], h[:500], y[:500])
    m_auc = roc_auc_score(y[500:], mono.predict_confidence(msp[500:], h[500:]))
    assert min(abs(m_auc - plain), abs(m_auc - (1 - plain))) < 1e-12
    with pytest.raises(ValueError, match="hidden"):
        cal.predict_confidence(msp[:5], h[:5, 0])


# --------------------------------------------------------------------------------------------------
# issue 43: an over-confident network, the grid, the MAPIE-equivalent code
# --------------------------------------------------------------------------------------------------


def _overconfident(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """60% of the confidences above 0.99 (an over-confident network's MSP); only those within 1e-4 of 1 are
    correct 99.5% of the time, the rest of the top 70%, so no threshold of 0, 0.01, ..., 0.99 reaches 95%."""
    top = rng.uniform(size=n) < 0.6
    gap = 10 ** rng.uniform(-6, -2, n)
    s = np.where(top, 1 - gap, rng.uniform(0.3, 0.99, n))
    c = rng.uniform(size=n) < np.where(top, np.where(gap < 1e-4, 0.995, 0.7), 0.6)
    return s, c


def test_infeasible_message_names_thresholds_and_the_grid_helper():
    from geode.uncertainty import threshold_grid

    rng = np.random.default_rng(11)
    s, c = _overconfident(1000, rng)
    ca = ConformalAbstention(0.95, delta=0.1).fit(s, c)
    assert not ca.feasible_
    with pytest.raises(RuntimeError, match=r"thresholds=") as err:
        ca.predict(s)
    msg = str(err.value)
    assert "threshold_grid" in msg and "0.99" in msg and "%" in msg  # how much of the data sits above the grid
    # a grid fixed before calibration, log-spaced towards 1, certifies a threshold on the same data
    grid = threshold_grid()
    assert grid[0] == 0.0 and grid.max() < 1 and np.all(np.diff(grid) > 0) and len(grid) == 100
    assert np.sum(grid > 0.99) > 20
    ok = ConformalAbstention(0.95, delta=0.1, thresholds=grid).fit(s, c)
    assert ok.feasible_ and ok.threshold_ > 0.999


def test_threshold_grid_from_held_out_scores():
    from geode.uncertainty import threshold_grid

    held_out = np.random.default_rng(12).uniform(size=1000)
    g = threshold_grid(50, scores=held_out)
    np.testing.assert_allclose(g, np.quantile(held_out, np.linspace(0, 1, 50)))
    g = threshold_grid(7, tail=1e-3)
    np.testing.assert_allclose(g, [0.0, *(1 - np.logspace(0, -3, 7)[1:])])
    with pytest.raises(ValueError, match="n must be >= 2"):
        threshold_grid(1)
    with pytest.raises(ValueError, match="tail"):
        threshold_grid(tail=1.5)


def test_docstring_shows_the_mapie_equivalent_call_and_it_runs():
    import doctest

    pytest.importorskip("mapie.risk_control")
    doc = ConformalAbstention.__doc__
    assert "BinaryClassificationController" in doc and "BinaryRisk" in doc
    runner = doctest.DocTestRunner(verbose=False)
    globs = {"np": np, "ConformalAbstention": ConformalAbstention}
    for t in doctest.DocTestFinder(recurse=False).find(ConformalAbstention, "ConformalAbstention", globs=globs):
        runner.run(t)
    assert runner.failures == 0 and runner.tries >= 8
