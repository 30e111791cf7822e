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
from geode.ensembles.simplex import accuracy, clr, expected_calibration_error, kl_divergence, nll, softmax

__all__ = ["FUSERS", "digits_oracles", "evaluate_fusers", "radial_oracles"]

FUSERS = (
    "log pool",
    "mean",
    "mean + global TS",
    "CR closed form + mean",
    "CR closed form + mean + global TS",
    "CR closed form (entropy) + mean + global TS",
    "CR alternating + mean + global TS",
    "per-oracle TS (labels) + mean",
)


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
    q = softmax(rng.normal(0.0, logit_scale, size=(n, n_classes)))
    eps_noise = rng.normal(0.0, 1.0, size=(taus.shape[0], n, n_classes))
    eps_noise -= eps_noise.mean(axis=-1, keepdims=True)
    P = softmax(taus[:, None, None] * clr(q)[None] + noise * eps_noise)
    if tail is not None:
        tail = check_array("tail", tail, shape=(taus.shape[0],))
        if tail.min() < 0 or tail.max() >= 1:
            raise ValueError("tail weights must lie in [0, 1)")
        P = (1.0 - tail[:, None, None]) * P + tail[:, None, None] / n_classes
    u = rng.random(n)
    y = np.minimum((q.cumsum(axis=1) < u[:, None]).sum(axis=1), n_classes - 1)
    return q, P, y


def digits_oracles(
    seed: int, *, n_trees: int = 100, mlp_iter: int = 300, fractions: tuple[float, float] = (0.5, 0.25)
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Four scikit-learn classifiers trained on a random split of ``load_digits`` and queried on the rest.

    Returns
    -------
    P_cal, P_test : numpy.ndarray, shapes (4, n_cal, 10) and (4, n_test, 10)
    y_cal, y_test : numpy.ndarray of int
    names : list of str
    """
    from sklearn.datasets import load_digits
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
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


def evaluate_fusers(
    P_cal: np.ndarray, y_cal: np.ndarray, P_test: np.ndarray, y_test: np.ndarray, q_test: np.ndarray | None = None
) -> dict[str, dict[str, float]]:
    """Fit every fuser on the calibration split (labels only where the method is supervised) and score it on
    the test split: NLL, accuracy, ECE and, when the true distributions ``q_test`` are known, mean
    :math:`\\mathrm{KL}(q^\\star \\| \\bar p)`.

    Comparability recovery is fitted on the calibration outputs without labels; "global TS" is one
    temperature fitted on the calibration labels after fusion.
    """

    def gts(fuse_cal: np.ndarray, fuse_test: np.ndarray) -> np.ndarray:
        return TemperatureScaling().fit(fuse_cal, y_cal).transform(fuse_test)

    fused: dict[str, np.ndarray] = {}
    fused["log pool"] = log_pool(P_test)
    fused["mean"] = mean_fusion(P_test)
    fused["mean + global TS"] = gts(mean_fusion(P_cal), fused["mean"])
    cr = ComparabilityRecovery("closed_form").fit(P_cal)
    fused["CR closed form + mean"] = cr.fuse(P_test)
    fused["CR closed form + mean + global TS"] = gts(cr.fuse(P_cal), fused["CR closed form + mean"])
    cr_e = ComparabilityRecovery("closed_form", descriptor="entropy").fit(P_cal)
    fused["CR closed form (entropy) + mean + global TS"] = gts(cr_e.fuse(P_cal), cr_e.fuse(P_test))
    cr_a = ComparabilityRecovery("alternating").fit(P_cal)
    fused["CR alternating + mean + global TS"] = gts(cr_a.fuse(P_cal), cr_a.fuse(P_test))
    fused["per-oracle TS (labels) + mean"] = PerOracleTemperatureScaling().fit(P_cal, y_cal).fuse(P_test)
    out: dict[str, dict[str, float]] = {}
    for name, f in fused.items():
        rec = {"nll": nll(f, y_test), "acc": accuracy(f, y_test), "ece": expected_calibration_error(f, y_test)}
        if q_test is not None:
            rec["kl"] = float(kl_divergence(q_test, f).mean())
        out[name] = rec
    out["_scales"] = {f"a{m}": float(a) for m, a in enumerate(cr.scales_)}
    out["_scales_alternating"] = {f"a{m}": float(a) for m, a in enumerate(cr_a.scales_)}
    return out
