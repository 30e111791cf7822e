"""geode.uncertainty's public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import geode.uncertainty as unc


def _x(n, d, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _problem(s=3, n=12, seed=0):
    rng = np.random.default_rng(seed)
    pts = rng.uniform(-1, 1, size=(s, n, 2))
    sdf = 1 - np.hypot(pts[..., 0], pts[..., 1]) / np.sqrt(2)
    f = rng.normal(size=(s, n))
    x = np.concatenate([pts, sdf[..., None], f[..., None]], -1)
    u = np.sin(2 * pts[..., 0]) * pts[..., 1]
    return x, u


def _op():
    return unc.PointCloudOperator(width=4, seed=0)


def _conf(n=40, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.5, 1.0, n)
    return c, (rng.uniform(size=n) < c).astype(int)


def _hidden(n=12, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 3, 4))


def _calib():
    c, y = _conf(12)
    return unc.GeometryCalibrator(k=3).fit(c, _hidden(), y)


def _unet():
    return unc.TinyUNet(width=8, seed=0)


def _images(n=2):
    return np.random.default_rng(0).uniform(-1, 1, size=(n, 1, 8, 8))


# main methods, as wrappers whose parameters carry the method's own argument names
def _ca_fit(confidence, correct):
    return unc.ConformalAbstention(0.5, 0.2, thresholds=np.array([0.0, 0.5, 0.9])).fit(confidence, correct)


def _ca_predict(confidence):
    c, y = _conf(200)
    return unc.ConformalAbstention(0.5, 0.2, thresholds=np.array([0.0, 0.5, 0.9])).fit(c, y).predict(confidence)


def _ca_risks(confidence, correct):
    return unc.ConformalAbstention(0.5, 0.2).risks(confidence, correct)


def _gc_fit(confidence, hidden, correct):
    return unc.GeometryCalibrator(k=3).fit(confidence, hidden, correct)


def _gc_predict(confidence, hidden):
    return _calib().predict_confidence(confidence, hidden)


def _reef_fit(x, u):
    return unc.REEFGP(_op(), q=2, subset_size=8, n_condition=8, steps=1).fit(x, u)


def _reef_predict(x):
    x0, u0 = _problem()
    return unc.REEFGP(_op(), q=2, subset_size=8, n_condition=8, steps=1).fit(x0, u0).predict(x)


def _ens_predict(x):
    return unc.DeepEnsemble([_op()]).predict(x)


def _mcd_predict(x):
    return unc.MCDropout(unc.PointCloudOperator(width=4, dropout=0.2), passes=2).predict(x)


def _pco_forward(x):
    return _op()(x)


def _det_fit(features):
    return unc.EnergyOODDetector(k=2, n_references=4).fit(features)


def _det_score(features):
    return unc.EnergyOODDetector(k=2, n_references=4).fit(_x(10, 3)).score_samples(features)


def _det_predict(features, threshold=0.0):
    return unc.EnergyOODDetector(k=2, n_references=4).fit(_x(10, 3)).predict(features, threshold)


def _unet_forward(x, t):
    return _unet()(x, t)


METHODS = {
    "ConformalAbstention.fit": _ca_fit,
    "ConformalAbstention.predict": _ca_predict,
    "ConformalAbstention.risks": _ca_risks,
    "GeometryCalibrator.fit": _gc_fit,
    "GeometryCalibrator.predict_confidence": _gc_predict,
    "REEFGP.fit": _reef_fit,
    "REEFGP.predict": _reef_predict,
    "DeepEnsemble.predict": _ens_predict,
    "MCDropout.predict": _mcd_predict,
    "PointCloudOperator.forward": _pco_forward,
    "EnergyOODDetector.fit": _det_fit,
    "EnergyOODDetector.score_samples": _det_score,
    "EnergyOODDetector.predict": _det_predict,
    "TinyUNet.forward": _unet_forward,
}

_T64 = torch.float64

CALLS = {  # -> (args, kwargs), built fresh each time
    # conformal-abstention
    "ConformalAbstention": lambda: ((0.75, 0.1), {"target_participation": 0.1, "thresholds": np.array([0.0, 0.5])}),
    "ConformalAbstention.fit": lambda: (_conf(), {}),
    "ConformalAbstention.predict": lambda: ((_conf()[0],), {}),
    "ConformalAbstention.risks": lambda: (_conf(), {}),
    "GeometryCalibrator": lambda: ((1.0,), {"k": 3}),
    "GeometryCalibrator.fit": lambda: ((_conf(12)[0], _hidden(), _conf(12)[1]), {}),
    "GeometryCalibrator.predict_confidence": lambda: ((_conf(5)[0], _hidden(5, seed=1)), {}),
    "geometry_features": lambda: ((_hidden(),), {"reference": _hidden(8, seed=1), "k": 3}),
    "hoeffding_bentkus_pvalue": lambda: ((np.array([0.1, 0.3]), np.array([20.0, 30.0]), 0.2), {}),
    "minimum_calibration_size": lambda: ((0.9, 0.1, 10), {"target_participation": 0.5}),
    "threshold_grid": lambda: ((5,), {"tail": 1e-3}),
    # reef-gp
    "REEFGP": lambda: ((_op(),), {"q": 2, "lr": 0.03}),
    "REEFGP.fit": lambda: (_problem(), {}),
    "REEFGP.predict": lambda: ((_problem(seed=1)[0],), {}),
    "DeepEnsemble": lambda: (([_op()],), {}),
    "DeepEnsemble.predict": lambda: ((_problem()[0],), {}),
    "MCDropout": lambda: ((_op(),), {"passes": 2}),
    "MCDropout.predict": lambda: ((_problem()[0],), {}),
    "PointCloudOperator": lambda: ((), {"width": 4, "dropout": 0.1}),
    "PointCloudOperator.forward": lambda: ((torch.as_tensor(_problem()[0], dtype=torch.float32),), {}),
    "geometry_descriptors": lambda: ((_problem()[0][..., :2], _problem()[0][..., 2], _problem()[1]), {}),
    "matern52": lambda: (
        (
            torch.as_tensor(_x(4, 2), dtype=_T64),
            torch.as_tensor(_x(3, 2, seed=1), dtype=_T64),
            torch.tensor([1.0, 2.0], dtype=_T64),
            1.5,
        ),
        {},
    ),
    "poisson_dataset": lambda: ((1,), {"eps": 0.15, "refine": 1}),
    "solve_poisson": lambda: _disk(),
    "train_operator": lambda: ((_op(), *_problem()), {"steps": 1, "batch": 2, "lr": 1e-3}),
    # ufcod
    "EnergyOODDetector": lambda: ((0.5, 2), {"n_references": 4}),
    "EnergyOODDetector.fit": lambda: ((_x(10, 3),), {}),
    "EnergyOODDetector.score_samples": lambda: ((_x(5, 3, seed=1),), {}),
    "EnergyOODDetector.predict": lambda: ((_x(5, 3, seed=1),), {"threshold": 0.0}),
    "TinyUNet": lambda: ((), {"width": 8}),
    "TinyUNet.forward": lambda: ((torch.as_tensor(_images(), dtype=torch.float32), torch.tensor([0, 3])), {}),
    "cosine_alpha_bar": lambda: ((10,), {"s": 0.008}),
    "facility_location": lambda: ((_x(10, 3), 3), {}),
    "train_ddpm": lambda: ((_unet(), _images()), {"n_steps": 10, "iters": 1, "batch_size": 2, "lr": 1e-3}),
    "trajectory_features": lambda: ((_unet(), _images()), {"n_steps": 10, "n_ddim": 2}),
}


def _disk():
    from skfem import MeshTri

    m = MeshTri.init_circle(1)
    return (m.p, m.t, np.full(m.p.shape[1], 4.0)), {}


NOT_CALLED = {
    "GEOMETRY_FEATURES": "a constant (tuple of names)",
    "PoissonSample": "a plain record (dataclass) that poisson_dataset fills with the solver's outputs",
    "lm_answer_states": "needs a Hugging Face causal LM and its tokenizer (lists of strings, no array to corrupt)",
}
_PROPAGATES = "documented: a per-step forward checks shapes only; NaN/inf propagates like torch's own layers"
OK: dict[str, dict[tuple[str, str], str]] = {
    "ConformalAbstention.predict": {("confidence", "empty"): "documented: no query gives an empty mask"},
    "PointCloudOperator.forward": {
        ("x", "nan"): _PROPAGATES,
        ("x", "inf"): _PROPAGATES,
        ("x", "empty"): "documented: an empty batch gives an empty output",
    },
    "TinyUNet.forward": {("x", "nan"): _PROPAGATES, ("x", "inf"): _PROPAGATES},
    "matern52": {
        ("a", "nan"): "documented: the kernel runs at every GP step; NaN in a row of a gives NaN in that row",
        ("a", "inf"): "documented: the points are not scanned (hot path); inf propagates like NaN",
        ("b", "nan"): "documented: the kernel runs at every GP step; NaN in a row of b gives NaN in that column",
        ("b", "inf"): "documented: the points are not scanned (hot path); inf propagates like NaN",
        ("a", "empty"): "documented: an empty a gives an empty (0, m) matrix",
        ("b", "empty"): "documented: an empty b gives an empty (n, 0) matrix",
    },
}


PACKAGE = unc


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []


# ----------------------------------------------------------------------------- the audit's repros (issue 51, F10)
def _m52(a=None, b=None, lengthscale=None):
    a = torch.as_tensor(_x(4, 2), dtype=_T64) if a is None else a
    b = torch.as_tensor(_x(3, 2, seed=1), dtype=_T64) if b is None else b
    ls = torch.tensor([1.0, 2.0], dtype=_T64) if lengthscale is None else lengthscale
    return unc.matern52(a, b, ls, torch.tensor(1.5, dtype=_T64))


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_audit_matern52_lengthscale_must_be_positive(bad):
    # lengthscale 0 gave all NaN, -1 gave finite values
    with pytest.raises(ValueError, match="lengthscale must be positive"):
        _m52(lengthscale=torch.tensor([bad, 1.0], dtype=_T64))
    with pytest.raises(ValueError, match="lengthscale"):
        unc.matern52(torch.zeros(2, 1), torch.zeros(2, 1), bad, 1.0)


def test_audit_matern52_points_of_unequal_dimension_name_b():
    # 2-D against 3-D points gave torch's "mat1 and mat2 shapes cannot be multiplied"
    with pytest.raises(ValueError, match=r"b must have shape \(m, 2\)"):
        _m52(b=torch.zeros(3, 3, dtype=_T64))
    with pytest.raises(ValueError, match="lengthscale must be a scalar or have shape"):
        _m52(lengthscale=torch.ones(3, dtype=_T64))


def test_audit_matern52_nan_points_propagate_as_documented():
    # NaN in, NaN out: documented (no scan on the GP's hot path), and only in the row of the NaN point
    a = torch.as_tensor(_x(4, 2), dtype=_T64)
    a[1, 0] = float("nan")
    k = _m52(a=a)
    assert torch.isnan(k[1]).all() and torch.isfinite(k[[0, 2, 3]]).all()
    assert "NaN" in unc.matern52.__doc__


def test_audit_matern52_valid_call_is_unchanged():
    a = torch.tensor([[0.0], [1.0], [3.0]], dtype=_T64)
    k = unc.matern52(a, a, torch.tensor([2.0], dtype=_T64), torch.tensor(1.5, dtype=_T64))
    r = 0.5 * np.sqrt(5)
    assert float(k[0, 1]) == pytest.approx(1.5 * (1 + r + r**2 / 3) * np.exp(-r), rel=1e-12)


def test_audit_minimum_calibration_size_delta_zero_names_delta():
    # delta=0 gave "math domain error"
    with pytest.raises(ValueError, match="delta must be > 0"):
        unc.minimum_calibration_size(0.9, 0.0, 10)


def test_audit_minimum_calibration_size_nan_target_names_it():
    # a NaN target gave "cannot convert float NaN to integer"
    with pytest.raises(ValueError, match="target_correctness must be finite"):
        unc.minimum_calibration_size(float("nan"), 0.1, 10)
    with pytest.raises(ValueError, match="target_participation must be finite"):
        unc.minimum_calibration_size(0.9, 0.1, 10, target_participation=float("nan"))
    assert unc.minimum_calibration_size(0.9, 0.1, 10) == 44  # a valid call is unchanged
