"""Decision-level fusion of soft outputs: the baselines comparability recovery is measured against.

``M`` black-box oracles give soft outputs ``P`` of shape ``(M, N, C)`` (see :mod:`geode.ensembles.simplex`).

* :func:`mean_fusion`, the linear opinion pool :math:`\\bar p = \\sum_m w_m p_m`;
* :func:`log_pool`, the logarithmic pool :math:`\\bar p \\propto \\prod_m p_m^{w_m}`;
* :func:`majority_vote`, the plurality of the oracles' arg-max labels (ties share the mass);
* :func:`direct_fusion`, any of the three by name: fusing the raw outputs as they come, which is what
  comparability recovery calls *direct* fusion;
* :class:`TemperatureScaling`, one global temperature fitted on labelled data (Guo et al. 2017), usable on
  a fused distribution; :class:`PerOracleTemperatureScaling`, one temperature per oracle before the linear
  pool: the label-supervised upper bound for recovering the oracles' scales.
* :func:`fit_inverse_temperature`: the convex one-dimensional fit both rest on.

Everything returns points of the simplex: rows sum to one, no negatives, no NaN, even for hard 0/1 inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.validation import check_array, check_choice, check_int, check_real
from geode.ensembles.simplex import DEFAULT_EPS, _clr, _softmax, as_oracle_stack, check_simplex

__all__ = [
    "PerOracleTemperatureScaling",
    "TemperatureScaling",
    "direct_fusion",
    "fit_inverse_temperature",
    "log_pool",
    "majority_vote",
    "mean_fusion",
]

FUSION_RULES = ("mean", "log", "vote")


def _weights(weights: Any, m: int) -> np.ndarray:
    if weights is None:
        return np.full(m, 1.0 / m)
    w = check_array("weights", weights, ndim=1)
    if w.shape[0] != m:
        raise ValueError(f"weights must have one entry per oracle ({m}); got {w.shape[0]}")
    if w.min() < 0 or w.sum() <= 0:
        raise ValueError("weights must be non-negative with a positive sum")
    return w / w.sum()


def mean_fusion(P: Any, weights: Any = None, *, normalize: bool = False) -> np.ndarray:
    """Linear opinion pool :math:`\\bar p_i = \\sum_m w_m\\, p_{m,i}` (default :math:`w_m = 1/M`).

    Parameters
    ----------
    P : array_like, shape (M, N, C), or a sequence of M arrays (N, C)
        Soft outputs of the oracles.
    weights : array_like, shape (M,), optional
        Non-negative oracle weights (renormalised to sum to one).
    normalize : bool
        Renormalise rows of ``P`` that do not sum to one instead of raising.

    Returns
    -------
    numpy.ndarray, shape (N, C)

    Examples
    --------
    >>> mean_fusion([[[1.0, 0.0]], [[0.5, 0.5]]]).tolist()
    [[0.75, 0.25]]
    """
    P = as_oracle_stack("P", P, normalize=normalize)
    w = _weights(weights, P.shape[0])
    out = np.einsum("m,mnc->nc", w, P)
    return out / out.sum(axis=1, keepdims=True)


def log_pool(P: Any, weights: Any = None, *, eps: float = DEFAULT_EPS, normalize: bool = False) -> np.ndarray:
    """Logarithmic opinion pool :math:`\\bar p_i \\propto \\prod_m \\max(p_{m,i}, \\varepsilon)^{w_m}`.

    Computed as :math:`\\operatorname{softmax}(\\sum_m w_m \\log \\max(p_{m,i}, \\varepsilon))`; the floor
    ``eps`` keeps one oracle's hard zero from vetoing a class outright.

    Returns
    -------
    numpy.ndarray, shape (N, C)
    """
    eps = check_real("eps", eps, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    P = as_oracle_stack("P", P, normalize=normalize)
    w = _weights(weights, P.shape[0])
    return _softmax(np.einsum("m,mnc->nc", w, _clr(P, eps)))


def majority_vote(P: Any, weights: Any = None, *, normalize: bool = False) -> np.ndarray:
    """Plurality vote of the oracles' arg-max labels as a distribution (tied classes share the mass).

    Returns
    -------
    numpy.ndarray, shape (N, C)
    """
    P = as_oracle_stack("P", P, normalize=normalize)
    w = _weights(weights, P.shape[0])
    m, n, c = P.shape
    votes = np.zeros((n, c))
    np.add.at(votes, (np.tile(np.arange(n), m), P.argmax(axis=2).reshape(-1)), np.repeat(w, n))
    top = np.isclose(votes, votes.max(axis=1, keepdims=True), rtol=0.0, atol=1e-12).astype(float)
    return top / top.sum(axis=1, keepdims=True)


def direct_fusion(P: Any, rule: str = "mean", weights: Any = None, *, normalize: bool = False) -> np.ndarray:
    """Fuse raw soft outputs as they come with ``rule`` in ``{"mean", "log", "vote"}``.

    This is the *direct* fusion of the comparability-recovery paper: it assumes the oracles' outputs are
    comparable once they share the label simplex.
    """
    check_choice("rule", rule, FUSION_RULES)
    fn = {"mean": mean_fusion, "log": log_pool, "vote": majority_vote}[rule]
    return fn(P, weights, normalize=normalize)


def _ce_derivatives(
    beta: np.ndarray, Z: np.ndarray, T: np.ndarray, B: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """First and second derivative in β of  mean_i [ -T_i·(β Z_i + b) + logsumexp(β Z_i + b) ], per leading index."""
    logits = beta[:, None, None] * Z + (0.0 if B is None else B[:, None, :])
    q = _softmax(logits)
    ez = np.sum(q * Z, axis=-1)  # E_q[z] per sample
    grad = np.mean(ez - np.sum(T * Z, axis=-1), axis=-1)
    hess = np.mean(np.sum(q * Z * Z, axis=-1) - ez * ez, axis=-1)  # Var_q[z] >= 0
    return grad, hess


def fit_inverse_temperature(
    logits: Any,
    targets: Any,
    *,
    bias: Any = None,
    low: float = 1e-3,
    high: float = 1e3,
    n_iter: int = 100,
) -> np.ndarray:
    """Fit the inverse temperature :math:`\\beta` minimising a mean cross-entropy, per leading index.

    For each ``m``,

    .. math::

        \\beta_m = \\arg\\min_{\\beta \\in [\\beta_{lo}, \\beta_{hi}]} \\frac1N \\sum_i
            \\Bigl[ -t_{m,i}^\\top (\\beta z_{m,i} + b_m) + \\log \\sum_c e^{\\beta z_{m,i,c} + b_{m,c}} \\Bigr].

    The objective is convex in :math:`\\beta` (a log-sum-exp of an affine map), with derivative
    :math:`\\frac1N \\sum_i (\\mathbb{E}_{\\operatorname{softmax}(\\beta z_{m,i} + b_m)}[z] - t_{m,i})^\\top z_{m,i}`,
    increasing in :math:`\\beta`; it is found by safeguarded Newton steps on :math:`\\log \\beta` inside a
    shrinking bisection bracket, vectorised over ``m``.
    With one-hot targets this is temperature scaling (:math:`T = 1/\\beta`); with soft targets it is the
    scale fit :math:`\\arg\\min_\\beta \\mathrm{KL}(t \\| \\operatorname{softmax}(\\beta z + b))`.

    Parameters
    ----------
    logits : array_like, shape (M, N, C) or (N, C)
        Scores :math:`z` (e.g. clr coordinates).
    targets : array_like
        Soft targets of the same shape as ``logits``, or integer labels of shape (M, N) / (N,).
    bias : array_like, shape (M, C) or (C,), optional
        Fixed offsets :math:`b_m`.
    low, high : float
        Search interval for :math:`\\beta` (the result is clipped to it when the minimum lies outside).
    n_iter : int
        Maximum safeguarded Newton steps (bisection whenever a Newton step leaves the bracket).

    Returns
    -------
    numpy.ndarray, shape (M,) or a 0-d array for 2-D input.
    """
    Z = check_array("logits", logits, ndim=(2, 3))
    if Z.size == 0:
        raise ValueError(f"logits must not be empty; got shape {Z.shape}")
    squeeze = Z.ndim == 2
    if squeeze:
        Z = Z[None]
    m, n, c = Z.shape
    tg = np.asarray(targets)
    if np.issubdtype(tg.dtype, np.integer):
        tg = tg[None] if tg.ndim == 1 else tg
        if tg.shape != (m, n):
            raise ValueError(
                f"integer targets must have shape {(m, n) if not squeeze else (n,)} to match logits of shape "
                f"{Z.shape[1:] if squeeze else Z.shape}; got {tg.shape}"
            )
        if tg.min() < 0 or tg.max() >= c:
            raise ValueError(f"targets must hold labels in [0, {c - 1}]")
        T = np.zeros((m, n, c))
        np.put_along_axis(T, tg[..., None], 1.0, axis=2)
    else:
        T = check_simplex("targets", tg[None] if squeeze else tg, ndim=3, atol=1e-4)
        if T.shape != Z.shape:
            raise ValueError(f"targets must have the shape of logits {Z.shape}; got {T.shape}")
    B = None
    if bias is not None:
        B = check_array("bias", bias, ndim=(1, 2))
        B = B[None] if B.ndim == 1 else B
        if B.shape != (m, c):
            raise ValueError(f"bias must have shape {(m, c)}; got {B.shape}")
    low = check_real("low", low, low=0.0, low_inclusive=False)
    high = check_real("high", high, low=low, low_inclusive=False)
    n_iter = check_int("n_iter", n_iter, low=1)
    # safeguarded Newton on log β inside a shrinking bracket [lo, hi] (bisection when Newton leaves it)
    lo, hi = np.full(m, np.log(low)), np.full(m, np.log(high))
    x = np.zeros(m) if low <= 1.0 <= high else 0.5 * (lo + hi)
    active = np.ones(m, dtype=bool)
    for _ in range(n_iter):
        beta = np.exp(x[active])
        grad, hess = _ce_derivatives(beta, Z[active], T[active], None if B is None else B[active])
        past = grad > 0  # past the minimum: the minimiser lies below x
        xa, la, ha = x[active], lo[active], hi[active]
        ha = np.where(past, xa, ha)
        la = np.where(past, la, xa)
        # Newton step in log β: d/dlogβ = β f', d²/dlogβ² = β f' + β² f''
        g1, g2 = beta * grad, beta * grad + beta * beta * hess
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(g2 > 0, g1 / g2, np.nan)
        newton = xa - step
        ok = np.isfinite(newton) & (newton >= la) & (newton <= ha)
        x_new = np.where(ok, newton, 0.5 * (la + ha))
        converged = (ok & (np.abs(step) < 1e-10)) | (ha - la < 1e-12) | (grad == 0)
        x_new = np.where(grad == 0, xa, x_new)
        idx = np.flatnonzero(active)
        x[idx], lo[idx], hi[idx] = x_new, la, ha
        active[idx[converged]] = False
        if not active.any():
            break
    beta = np.exp(np.clip(x, np.log(low), np.log(high)))
    return beta[0] if squeeze else beta


class TemperatureScaling:
    """One global temperature fitted on labelled data: :math:`p \\mapsto \\operatorname{softmax}(\\mathrm{clr}(p)/T)`.

    Because :math:`\\operatorname{clr}(p)` equals :math:`\\log p` up to a per-row constant, this is the usual
    temperature scaling of logits :math:`\\log p` (Guo et al., ICML 2017). :math:`T` minimises the NLL of the
    labels (:func:`fit_inverse_temperature`). Used on a fused distribution it is "fusion + global TS".

    Parameters
    ----------
    eps : float
        Floor inside the logarithm (hard 0/1 inputs stay finite).
    bounds : (float, float)
        Search interval for the inverse temperature :math:`1/T`.

    Attributes
    ----------
    temperature_ : float
        The fitted :math:`T`.
    """

    def __init__(self, *, eps: float = DEFAULT_EPS, bounds: tuple[float, float] = (1e-3, 1e3)) -> None:
        self.eps = check_real("eps", eps, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
            raise TypeError(f"bounds must be a pair (low, high) of inverse temperatures; got {bounds!r}")
        lo, hi = bounds
        self.bounds = (check_real("bounds[0]", lo, low=0.0, low_inclusive=False), check_real("bounds[1]", hi, low=lo))
        self.temperature_: float | None = None

    def fit(self, p: Any, y: Any, *, normalize: bool = False) -> TemperatureScaling:
        """Fit :math:`T` on probabilities ``p`` (N, C) and integer labels ``y`` (N,)."""
        p = check_simplex("p", p, ndim=2, normalize=normalize)
        y = check_array("y", y, ndim=1, dtype=None)
        if not np.issubdtype(y.dtype, np.integer) or y.shape[0] != p.shape[0]:
            raise ValueError(f"y must hold one integer label per row of p ({p.shape[0]}); got {y.shape} {y.dtype}")
        beta = fit_inverse_temperature(_clr(p, self.eps), y, low=self.bounds[0], high=self.bounds[1])
        self.temperature_ = float(1.0 / beta)
        return self

    def transform(self, p: Any, *, normalize: bool = False) -> np.ndarray:
        """Rescaled probabilities :math:`\\operatorname{softmax}(\\operatorname{clr}(p)/T)`, shape (N, C).

        A row-wise map: an empty batch (no rows) gives an empty output.
        """
        if self.temperature_ is None:
            raise RuntimeError("TemperatureScaling is not fitted: call fit(p, y) first")
        p = check_simplex("p", p, normalize=normalize)
        return _softmax(_clr(p, self.eps) / self.temperature_)


class PerOracleTemperatureScaling:
    """One temperature per oracle, fitted on labels, then the linear pool: the label-supervised upper bound.

    .. math::

        \\bar p_i = \\frac1M \\sum_m \\operatorname{softmax}\\bigl(\\operatorname{clr}(p_{m,i}) / T_m\\bigr),
        \\qquad T_m = \\arg\\min_T \\mathrm{NLL}_m(T).

    Attributes
    ----------
    temperatures_ : numpy.ndarray, shape (M,)
    """

    def __init__(self, *, eps: float = DEFAULT_EPS, bounds: tuple[float, float] = (1e-3, 1e3)) -> None:
        self._ts = TemperatureScaling(eps=eps, bounds=bounds)
        self.eps = self._ts.eps
        self.bounds = self._ts.bounds
        self.temperatures_: np.ndarray | None = None

    def fit(self, P: Any, y: Any, *, normalize: bool = False) -> PerOracleTemperatureScaling:
        """Fit one :math:`T_m` per oracle on soft outputs ``P`` (M, N, C) and labels ``y`` (N,)."""
        P = as_oracle_stack("P", P, normalize=normalize)
        y = check_array("y", y, ndim=1, dtype=None)
        if not np.issubdtype(y.dtype, np.integer) or y.shape[0] != P.shape[1]:
            raise ValueError(f"y must hold one integer label per sample ({P.shape[1]}); got {y.shape} {y.dtype}")
        labels = np.broadcast_to(y, P.shape[:2])
        beta = fit_inverse_temperature(_clr(P, self.eps), labels, low=self.bounds[0], high=self.bounds[1])
        self.temperatures_ = 1.0 / beta
        return self

    def transform(self, P: Any, *, normalize: bool = False) -> np.ndarray:
        """Each oracle rescaled by its own temperature, shape (M, N, C)."""
        if self.temperatures_ is None:
            raise RuntimeError("PerOracleTemperatureScaling is not fitted: call fit(P, y) first")
        P = as_oracle_stack("P", P, normalize=normalize)
        if P.shape[0] != self.temperatures_.shape[0]:
            raise ValueError(f"P must hold {self.temperatures_.shape[0]} oracles as in fit; got {P.shape[0]}")
        return _softmax(_clr(P, self.eps) / self.temperatures_[:, None, None])

    def fuse(self, P: Any, *, normalize: bool = False) -> np.ndarray:
        """Linear pool of the rescaled oracles, shape (N, C)."""
        return mean_fusion(self.transform(P, normalize=normalize))
