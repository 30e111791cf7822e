"""The test beds of comparability recovery's claim check.

* :func:`radial_oracles`: the synthetic stress test: a latent :math:`q^\\star = \\operatorname{softmax}(g)`,
  :math:`g \\sim N(0, s^2 I)`, and oracles :math:`p_m = \\operatorname{softmax}(\\tau_m \\operatorname{clr}(q^\\star) +
  \\sigma \\varepsilon_m)` (radial distortion plus clr noise), optionally mixed with the uniform distribution
  (a non-radial tail-mass distortion) with oracle-specific weights;
* :func:`digits_oracles`: real black-box oracles (logistic regression, Gaussian naive Bayes, random forest, MLP)
  trained on one split of scikit-learn's bundled ``load_digits`` and queried on the rest;
* :func:`evaluate_fusers`: every fusion method of the comparison on a calibration / test split.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_array, check_int, check_real
from geode.ensembles.comparability_fusion.recovery import ComparabilityRecovery
from geode.ensembles.fusion import PerOracleTemperatureScaling, TemperatureScaling, log_pool, mean_fusion
from geode.ensembles.simplex import _clr, _softmax, accuracy, expected_calibration_error, kl_divergence, nll

__all__ = ["FUSERS", "digits_oracles", "evaluate_fusers", "radial_oracles"]

FUSERS = (
    "mean",
    "log pool",
    "mean + global TS",
    "log pool + global TS",
    "direct (tuned pool) + global TS",
    "CR closed form + mean + global TS",
    "CR closed form + log pool + global TS",
    "CR closed form (tuned pool) + global TS",
    "CR closed form (floored clr norm, rev. 1) + mean + global TS",
    "CR closed form (entropy) + mean + global TS",
    "CR alternating + mean + global TS",
    "random scales (control) (tuned pool) + global TS",
    "per-oracle TS (labels) + mean",
    "per-oracle TS (labels) + mean + global TS",
)
POOLS = ("mean", "log")
_POOL_NAME = {"mean": "mean", "log": "log pool"}


def radial_oracles(
    n: int,
    taus: Any,
    *,
    n_classes: int = 10,
    logit_scale: float = 1.5,
    noise: float = 0.3,
    tail: Any = None,
    seed: Any = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Synthetic oracles with matched radial distortions (plus clr noise and an optional tail distortion).

    Parameters
    ----------
    n : int
        Samples.
    taus : array_like, shape (M,)
        Radial scales :math:`\\tau_m > 0` (confidence sharpness).
    n_classes : int
        Classes C.
    logit_scale : float
        Standard deviation :math:`s` of the latent logits.
    noise : float
        Standard deviation :math:`\\sigma` of the isotropic noise added in clr coordinates (projected to sum zero).
    tail : array_like, shape (M,), optional
        Uniform mixing weights :math:`\\epsilon_m \\in [0, 1)`:
        :math:`p_m \\leftarrow (1 - \\epsilon_m) p_m + \\epsilon_m / C`.
    seed : int or Generator

    Returns
    -------
    q : numpy.ndarray, shape (n, C)
        The latent true distributions.
    P : numpy.ndarray, shape (M, n, C)
        The oracles' outputs.
    y : numpy.ndarray of int, shape (n,)
        Labels drawn from ``q``.
    """
    n = check_int("n", n, low=1)
    taus = check_array("taus", taus, ndim=1)
    if taus.size == 0 or taus.min() <= 0:
        raise ValueError("taus must be a non-empty array of positive scales")
    n_classes = check_int("n_classes", n_classes, low=2)
    logit_scale = check_real("logit_scale", logit_scale, low=0.0)
    noise = check_real("noise", noise, low=0.0)
    rng = as_generator(seed)
    q = _softmax(rng.normal(0.0, logit_scale, size=(n, n_classes)))
    eps_noise = rng.normal(0.0, 1.0, size=(taus.shape[0], n, n_classes))
    eps_noise -= eps_noise.mean(axis=-1, keepdims=True)
    P = _softmax(taus[:, None, None] * _clr(q)[None] + noise * eps_noise)
    if tail is not None:
        tail = check_array("tail", tail, shape=(taus.shape[0],))
        if tail.min() < 0 or tail.max() >= 1:
            raise ValueError("tail weights must lie in [0, 1)")
        P = (1.0 - tail[:, None, None]) * P + tail[:, None, None] / n_classes
    u = rng.random(n)
    y = np.minimum((q.cumsum(axis=1) < u[:, None]).sum(axis=1), n_classes - 1)
    return q, P, y


def digits_oracles(
    seed: int,
    *,
    n_trees: int = 100,
    mlp_iter: int = 300,
    fractions: tuple[float, float] = (0.5, 0.25),
    dataset: str = "digits",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Four scikit-learn classifiers trained on a random split of a bundled data set, queried on the rest.

    ``dataset``: ``"digits"`` (``load_digits``, 1,797 images, 10 classes) or ``"breast_cancer"``
    (``load_breast_cancer``, 569 tumours, 2 classes), both shipped with scikit-learn (no download).

    Returns
    -------
    P_cal, P_test : numpy.ndarray, shapes (4, n_cal, 10) and (4, n_test, 10)
    y_cal, y_test : numpy.ndarray of int
    names : list of str
    """
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    loaders = {"digits": load_digits, "breast_cancer": load_breast_cancer}
    if dataset not in loaders:
        raise ValueError(f"dataset must be one of {sorted(loaders)}; got {dataset!r}")
    X, y = loaders[dataset](return_X_y=True)
    rng = as_generator(seed)
    perm = rng.permutation(y.shape[0])
    n_tr = int(fractions[0] * y.shape[0])
    n_ca = int(fractions[1] * y.shape[0])
    tr, ca, te = perm[:n_tr], perm[n_tr : n_tr + n_ca], perm[n_tr + n_ca :]
    scaler = StandardScaler().fit(X[tr])
    Xs = scaler.transform(X)
    rs = int(rng.integers(0, 2**31 - 1))
    models = {
        "logistic regression": LogisticRegression(max_iter=1000),
        "Gaussian naive Bayes": GaussianNB(),
        "random forest": RandomForestClassifier(n_estimators=n_trees, random_state=rs, n_jobs=1),
        "MLP": MLPClassifier(hidden_layer_sizes=(64,), max_iter=mlp_iter, random_state=rs),
    }
    outs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for model in models.values():
            model.fit(Xs[tr], y[tr])
            outs.append(model.predict_proba(Xs))
    P = np.stack(outs)
    P = P / P.sum(axis=2, keepdims=True)
    return P[:, ca], P[:, te], y[ca], y[te], list(models)


def _random_scales(M: int, seed: int) -> np.ndarray:
    """Negative control: log-normal rectifier scales (sd 1 in log), projected onto the gauge like the method's."""
    from geode.ensembles.comparability_fusion.recovery import project_log_scales

    return np.exp(project_log_scales(as_generator(seed).normal(0.0, 1.0, size=M), np.log(1e-2), np.log(1e2)))


def evaluate_fusers(
    P_cal: np.ndarray,
    y_cal: np.ndarray,
    P_test: np.ndarray,
    y_test: np.ndarray,
    q_test: np.ndarray | None = None,
    *,
    val_fraction: float = 0.3,
    seed: int = 0,
) -> dict[str, Any]:
    """Fit every fuser on the calibration split (labels only where the method is supervised) and score it on
    the test split: NLL, accuracy, ECE and, when the true distributions ``q_test`` are known, mean
    :math:`\\mathrm{KL}(q^\\star \\| \\bar p)`.

    Every fusion rule gets one global temperature fitted on the calibration labels after pooling ("global
    TS"), the label-supervised per-oracle TS included. Comparability recovery is fitted on the calibration
    outputs without labels. The pooling rule (mean or log) of the direct baseline, of comparability
    recovery and of the random-scales control is selected with :func:`geode.claims.tune` (same budget)
    by the NLL on the last ``val_fraction`` of the calibration split, fitting on the rest; the selected
    rule is then refitted on the whole calibration split. Returns the records by fuser name, plus
    ``"_scales"`` (the closed form's), ``"_scales_alternating"`` and ``"_tuning"`` (the TuneResult).
    """
    from geode.claims import tune

    M = P_cal.shape[0]
    ctrl_scales = _random_scales(M, seed)

    def rectifier(method: str) -> Any:
        if method == "direct":
            return lambda P: P
        if method == "cr":
            cr = ComparabilityRecovery("closed_form")
            return cr
        return lambda P: _softmax(ctrl_scales[:, None, None] * _clr(P))

    def pipeline(method: str, pool: str, Pc: np.ndarray, yc: np.ndarray) -> Any:
        rect = rectifier(method)
        if isinstance(rect, ComparabilityRecovery):
            rect.fit(Pc)
            rect = rect.transform
        fuse = mean_fusion if pool == "mean" else log_pool
        ts = TemperatureScaling().fit(fuse(rect(Pc)), yc)
        return lambda P: ts.transform(fuse(rect(P)))

    n_val = max(2, int(round(val_fraction * P_cal.shape[1])))
    Pf, yf, Pv, yv = P_cal[:, :-n_val], y_cal[:-n_val], P_cal[:, -n_val:], y_cal[-n_val:]

    def score(method: str, params: dict[str, Any]) -> float:
        return nll(pipeline(method, params["pool"], Pf, yf)(Pv), yv)

    grids = {m: {"pool": list(POOLS)} for m in ("direct", "cr", "random")}
    res = tune(score, grids, maximize=False)

    def gts(fuse_cal: np.ndarray, fuse_test: np.ndarray) -> np.ndarray:
        return TemperatureScaling().fit(fuse_cal, y_cal).transform(fuse_test)

    fused: dict[str, np.ndarray] = {}
    fused["mean"] = mean_fusion(P_test)
    fused["log pool"] = log_pool(P_test)
    fused["mean + global TS"] = pipeline("direct", "mean", P_cal, y_cal)(P_test)
    fused["log pool + global TS"] = pipeline("direct", "log", P_cal, y_cal)(P_test)
    fused["direct (tuned pool) + global TS"] = pipeline("direct", res.params("direct")["pool"], P_cal, y_cal)(P_test)
    fused["CR closed form + mean + global TS"] = pipeline("cr", "mean", P_cal, y_cal)(P_test)
    fused["CR closed form + log pool + global TS"] = pipeline("cr", "log", P_cal, y_cal)(P_test)
    fused["CR closed form (tuned pool) + global TS"] = pipeline("cr", res.params("cr")["pool"], P_cal, y_cal)(P_test)
    cr_f = ComparabilityRecovery("closed_form", descriptor="clr_norm_floored").fit(P_cal)
    fused["CR closed form (floored clr norm, rev. 1) + mean + global TS"] = gts(cr_f.fuse(P_cal), cr_f.fuse(P_test))
    cr_e = ComparabilityRecovery("closed_form", descriptor="entropy").fit(P_cal)
    fused["CR closed form (entropy) + mean + global TS"] = gts(cr_e.fuse(P_cal), cr_e.fuse(P_test))
    cr_a = ComparabilityRecovery("alternating").fit(P_cal)
    fused["CR alternating + mean + global TS"] = gts(cr_a.fuse(P_cal), cr_a.fuse(P_test))
    fused["random scales (control) (tuned pool) + global TS"] = pipeline(
        "random", res.params("random")["pool"], P_cal, y_cal
    )(P_test)
    sup = PerOracleTemperatureScaling().fit(P_cal, y_cal)
    fused["per-oracle TS (labels) + mean"] = sup.fuse(P_test)
    fused["per-oracle TS (labels) + mean + global TS"] = gts(sup.fuse(P_cal), sup.fuse(P_test))
    out: dict[str, Any] = {}
    for name, f in fused.items():
        rec = {"nll": nll(f, y_test), "acc": accuracy(f, y_test), "ece": expected_calibration_error(f, y_test)}
        if q_test is not None:
            rec["kl"] = float(kl_divergence(q_test, f).mean())
        out[name] = rec
    cr = ComparabilityRecovery("closed_form").fit(P_cal)
    out["_scales"] = {f"a{m}": float(a) for m, a in enumerate(cr.scales_)}
    out["_scales_alternating"] = {f"a{m}": float(a) for m, a in enumerate(cr_a.scales_)}
    out["_tuning"] = res
    return out
