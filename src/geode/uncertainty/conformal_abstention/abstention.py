r"""Conformal abstention: Learn-Then-Test calibration of an answer/abstain threshold on a confidence.

A model answers a query when its confidence :math:`s(x) \ge \lambda` and abstains otherwise. On ``n``
exchangeable calibration pairs :math:`(s_i, c_i)` (confidence, correct) we test, for every threshold
:math:`\lambda_j` of a grid, the null hypotheses

.. math::

    H^{\mathrm{cc}}_j:\; P(c = 1 \mid s \ge \lambda_j) < \tau_c , \qquad
    H^{\mathrm{p}}_j:\; P(s \ge \lambda_j) < \tau_p ,

with the binary Hoeffding-Bentkus p-values of Learn-Then-Test (Angelopoulos et al., 2021): for a risk
:math:`r = 1 - \text{(performance)}` with empirical value :math:`\hat r` on :math:`m` effective samples
(the answered ones for correctness, all ``n`` for participation) and level :math:`\alpha = 1 - \tau`,

.. math::

    p = \min\Bigl(\exp\{-m\, h_1(\min(\hat r, \alpha), \alpha)\},\;
    F_{\mathrm{Bin}(m, \alpha)}(\lceil m \hat r \rceil)\Bigr), \qquad
    h_1(a, b) = a \log\tfrac{a}{b} + (1-a)\log\tfrac{1-a}{1-b} .

The p-value of :math:`\lambda_j` is the larger of its two p-values; a family-wise error procedure at level
:math:`\delta` (Bonferroni-Holm by default, or fixed-sequence testing from the most conservative threshold
down) rejects a set :math:`\Lambda` of thresholds. Every :math:`\lambda \in \Lambda` then satisfies, with
probability at least :math:`1 - \delta` over the calibration set, both guarantees

.. math::

    P(\text{correct} \mid \text{answer}) \ge \tau_c , \qquad P(\text{answer}) \ge \tau_p ,

and we use the smallest such :math:`\lambda` (the largest participation). The correctness p-value is
conditional on the answered set: given which points are answered, their correctness labels are
exchangeable draws from the conditional law, so the binomial tail applies with :math:`m` answered points.

This is the calibration core of MAPIE's ``BinaryClassificationController`` with the risks
``precision`` and a participation risk (a ``BinaryRisk`` with ``higher_is_better=True``; MAPIE's own
``predicted_positive_fraction`` bounds participation from above). The tests check that both certify the
same thresholds; MAPIE takes :math:`\lceil m \hat r\rceil` in floating point, which can round an exact
count up by one, so its p-values are sometimes slightly larger. The class follows the MAPIE / crepes convention:
``fit`` on calibration data, then ``predict`` (answer) or ``abstain`` with the guarantee.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import binom

from geode.core.validation import check_array, check_choice, check_int, check_real

__all__ = ["ConformalAbstention", "hoeffding_bentkus_pvalue", "minimum_calibration_size", "threshold_grid"]


def _h1(a: np.ndarray, b: float) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    out = np.zeros_like(a)
    pos = a > 0
    out[pos] = a[pos] * np.log(a[pos] / b)
    out += (1 - a) * np.log((1 - a) / (1 - b))
    return out


def hoeffding_bentkus_pvalue(risk: Any, n_eff: Any, alpha: float) -> np.ndarray:
    r"""Binary Hoeffding-Bentkus p-value of :math:`H_0: r > \alpha` for a 0/1 loss (Learn-Then-Test).

    Parameters
    ----------
    risk : array
        Empirical risks :math:`\hat r \in [0, 1]`.
    n_eff : array or int
        Effective sample sizes :math:`m` (a size of 0 gives p = 1: nothing was observed).
    alpha : float
        Risk level in (0, 1).

    Returns
    -------
    ndarray
        :math:`\min(e^{-m h_1(\min(\hat r,\alpha),\alpha)}, F_{\mathrm{Bin}(m,\alpha)}(\lceil m\hat r\rceil))`.
    """
    alpha = check_real("alpha", alpha, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    r = check_array("risk", risk, finite=False)
    if r.size == 0:
        raise ValueError(f"risk must not be empty; got shape {r.shape}")
    if np.any(~np.isfinite(r)) or np.any((r < 0) | (r > 1)):
        raise ValueError("risk must lie in [0, 1]")
    m = check_array("n_eff", n_eff)
    if np.any(m < 0):
        raise ValueError("n_eff must be >= 0")
    try:
        m = np.broadcast_to(m, r.shape)
    except ValueError as exc:
        raise ValueError(f"n_eff must have the shape of risk {r.shape} (or broadcast to it); got {m.shape}") from exc
    hoeffding = np.exp(-m * _h1(np.minimum(r, alpha), alpha))
    # ceil(m r) with a guard against 0.7499999 * 4 rounding up
    k = np.ceil(np.round(m * r, 9))
    bentkus = binom.cdf(k, m, alpha)
    p = np.minimum(hoeffding, bentkus)
    return np.where(m > 0, p, 1.0)


def minimum_calibration_size(
    target_correctness: float, delta: float, n_thresholds: int, target_participation: float = 0.0, fwer: str = "holm"
) -> int:
    r"""Smallest calibration size at which some threshold can be certified at all.

    In the best case every calibration point is answered and correct (:math:`\hat r = 0` for both risks);
    the p-value is then :math:`\tau^n` for a target :math:`\tau`, and the first rejection of Holm needs
    :math:`\tau^n \le \delta / N` (:math:`\delta` for fixed-sequence testing), so
    :math:`n \ge \log(\delta/N) / \log \tau` for :math:`\tau = \max(\tau_c, \tau_p)`.
    """
    target_correctness = check_real("target_correctness", target_correctness, low=0.0, high=1.0, high_inclusive=False)
    target_participation = check_real(
        "target_participation", target_participation, low=0.0, high=1.0, high_inclusive=False
    )
    delta = check_real("delta", delta, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    n_thresholds = check_int("n_thresholds", n_thresholds, low=1)
    fwer = check_choice("fwer", fwer, ("holm", "bonferroni", "fixed_sequence"))
    tau = max(float(target_correctness), float(target_participation))
    level = delta if fwer == "fixed_sequence" else delta / n_thresholds
    if tau <= 0:
        return 1
    return max(1, math.ceil(math.log(level) / math.log(tau) - 1e-12))


def threshold_grid(n: int = 100, *, scores: Any = None, tail: float = 1e-6) -> np.ndarray:
    r"""A grid of confidence thresholds fixed before calibration, for confidences that crowd near 1.

    The default grid of :class:`ConformalAbstention` (MAPIE's :math:`0, 0.01, \dots, 0.99`) has one threshold
    above 0.98; an over-confident network puts much of its mass there, and nothing may be certified. Two grids
    that fix that and keep the guarantee:

    - ``threshold_grid(n)``: :math:`0` and :math:`1 - 10^{-k}` for :math:`n - 1` values of :math:`k` evenly
      spaced in :math:`[0, -\log_{10}\mathrm{tail}]`: log-spaced towards 1, down to ``1 - tail``; it uses no data.
    - ``threshold_grid(n, scores=s)``: the :math:`n` quantiles at levels :math:`0, \frac1{n-1}, \dots, 1` of
      the confidences ``s`` of *other* data than the calibration set (an unlabelled held-out split, or the
      training set). A grid read off the calibration confidences themselves is chosen after seeing the data
      it is certified on, which Learn-Then-Test does not cover.

    Parameters
    ----------
    n : int, default 100
        Number of thresholds (>= 2); duplicates are dropped.
    scores : array_like, shape (m,), optional
        Confidences of data independent of the calibration set.
    tail : float, default 1e-6
        The log grid's smallest gap to 1, in (0, 1).

    Returns
    -------
    ndarray
        Increasing thresholds, to pass as ``ConformalAbstention(thresholds=...)``.

    Examples
    --------
    >>> threshold_grid(4, tail=1e-3)
    array([0.   , 0.9  , 0.99 , 0.999])
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be >= 2 (an int); got {n!r}")
    if scores is not None:
        return np.unique(np.quantile(_as_scores("scores", scores), np.linspace(0.0, 1.0, n)))
    tail = check_real("tail", tail, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    return np.unique(np.r_[0.0, 1.0 - np.logspace(0.0, math.log10(tail), n)[1:]])


def _as_scores(name: str, x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of numbers; got {type(x).__name__}") from exc
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (n,); got shape {a.shape}")
    if np.isnan(a).any():
        raise ValueError(f"{name} contains NaN at positions {np.flatnonzero(np.isnan(a))[:5].tolist()}")
    if np.isinf(a).any():
        raise ValueError(f"{name} must be finite")
    return a


class ConformalAbstention:
    r"""Answer when the confidence clears a threshold certified by Learn-Then-Test; abstain otherwise.

    Parameters
    ----------
    target_correctness : float
        :math:`\tau_c`: the guaranteed conditional correctness :math:`P(\text{correct} \mid \text{answer})`
        (the paper: 0.75).
    delta : float
        :math:`\delta`: the guarantees hold with probability :math:`\ge 1 - \delta` over the calibration set.
    target_participation : float
        :math:`\tau_p`: the guaranteed participation :math:`P(\text{answer})` (0 = no participation guarantee).
    thresholds : array, optional
        The grid :math:`\{\lambda_j\}` of confidence thresholds, fixed before seeing the calibration data
        (a grid chosen from the calibration data would void the guarantee). Default: MAPIE's grid
        :math:`\{0, 0.01, \dots, 0.99\}` for confidences in [0, 1]; pass an array for other scales, and
        :func:`threshold_grid` (log-spaced towards 1, or quantiles of held-out confidences) when the confidences
        crowd near 1, where the default grid may certify nothing.
    fwer : {"holm", "bonferroni", "fixed_sequence"}
        The family-wise error procedure. ``fixed_sequence`` tests from the largest threshold down and stops
        at the first non-rejection (valid when correctness grows with the threshold).

    Attributes
    ----------
    threshold_ : float or None
        The selected :math:`\lambda` (``None`` if no threshold could be certified).
    valid_thresholds_ : ndarray
        Every certified threshold.
    p_values_ : ndarray
        The p-value of each threshold of the grid (max of the two risks).
    feasible_ : bool
        Whether a threshold was certified.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=2000); c = rng.uniform(size=2000) < s
    >>> ca = ConformalAbstention(0.75, delta=0.1).fit(s, c)
    >>> 0.4 < ca.threshold_ < 0.8
    True

    The same calibration with MAPIE (``mapie>=1.0``, the ``uq`` extra): its ``BinaryClassificationController``
    with the risk ``precision`` and a participation risk (``P(answer) >= tau_p``; MAPIE's own
    ``predicted_positive_fraction`` bounds participation from above instead), the confidence as the
    positive-class probability, ``target_level`` the two targets and ``confidence_level = 1 - delta``. It
    certifies the same thresholds, a subset where its floating-point ``ceil`` rounds an exact count up:

    >>> from mapie.risk_control import BinaryClassificationController, BinaryRisk, precision
    >>> participation = BinaryRisk(
    ...     risk_occurrence=lambda y_true, y_pred: y_pred == 1,
    ...     risk_condition=lambda y_true, y_pred: np.repeat(True, len(y_true)),
    ...     higher_is_better=True,
    ... )
    >>> ctl = BinaryClassificationController(
    ...     predict_function=lambda conf: np.column_stack([1 - conf, conf]),
    ...     risk=[precision, participation],
    ...     target_level=[0.75, 0.3],
    ...     confidence_level=0.9,
    ...     best_predict_param_choice=participation,  # the largest participation: the smallest threshold
    ... )
    >>> _ = ctl.calibrate(s, c.astype(int))
    >>> ours = ConformalAbstention(0.75, delta=0.1, target_participation=0.3).fit(s, c)
    >>> bool(np.array_equal(np.sort(ctl.valid_predict_params), ours.valid_thresholds_))
    True
    >>> float(ctl.best_predict_param) == ours.threshold_
    True
    """

    def __init__(
        self,
        target_correctness: float = 0.75,
        delta: float = 0.1,
        *,
        target_participation: float = 0.0,
        thresholds: Any = None,
        fwer: str = "holm",
    ) -> None:
        self.target_correctness = check_real(
            "target_correctness", target_correctness, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
        )
        self.delta = check_real("delta", delta, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        self.target_participation = check_real(
            "target_participation", target_participation, low=0.0, high=1.0, high_inclusive=False
        )
        self.fwer = check_choice("fwer", fwer, ("holm", "bonferroni", "fixed_sequence"))
        if thresholds is None:
            grid = np.linspace(0.0, 0.99, 100)  # MAPIE's default, bit for bit
        elif isinstance(thresholds, (int, np.integer)) and not isinstance(thresholds, bool):
            raise TypeError("thresholds must be an array of confidence thresholds (or None for 0, 0.01, ..., 0.99)")
        else:
            grid = _as_scores("thresholds", thresholds)
            if grid.size == 0:
                raise ValueError("thresholds must not be empty")
        self.thresholds = np.unique(grid)
        self.threshold_: float | None = None
        self.valid_thresholds_ = np.array([])
        self.p_values_ = np.array([])
        self.feasible_ = False

    @property
    def min_calibration_size(self) -> int:
        """The smallest ``n`` at which a threshold can be certified (see :func:`minimum_calibration_size`)."""
        return minimum_calibration_size(
            self.target_correctness, self.delta, len(self.thresholds), self.target_participation, self.fwer
        )

    def risks(self, confidence: Any, correct: Any) -> dict[str, np.ndarray]:
        """Empirical risks and effective sizes of every threshold on ``(confidence, correct)``."""
        s = _as_scores("confidence", confidence)
        c = np.asarray(correct.detach().cpu().numpy() if hasattr(correct, "detach") else correct)
        if c.shape != s.shape:
            raise ValueError(f"correct must have the shape of confidence {s.shape}; got {c.shape}")
        if c.dtype != bool:
            if not np.all(np.isin(c, (0, 1))):
                raise ValueError("correct must hold 0/1 or booleans")
            c = c.astype(bool)
        answered = s[None, :] >= self.thresholds[:, None]  # (grid, n)
        n_ans = answered.sum(1)
        n_ok = (answered & c[None, :]).sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            cc = np.where(n_ans > 0, n_ok / np.maximum(n_ans, 1), 0.0)
        return {
            "n_answered": n_ans,
            "correctness": cc,
            "participation": n_ans / len(s),
            "risk_correctness": np.where(n_ans > 0, 1.0 - cc, 1.0),
            "risk_participation": 1.0 - n_ans / len(s),
        }

    def fit(self, confidence: Any, correct: Any) -> ConformalAbstention:
        """Calibrate on ``n`` exchangeable pairs of confidence and correctness (0/1)."""
        s = _as_scores("confidence", confidence)
        if s.size == 0:
            raise ValueError("confidence must not be empty (no calibration point)")
        n_min = self.min_calibration_size
        if len(s) < n_min:
            raise ValueError(
                f"the calibration set has {len(s)} points; the requested guarantee (correctness "
                f"{self.target_correctness}, participation {self.target_participation}, delta {self.delta}, "
                f"{len(self.thresholds)} thresholds, {self.fwer}) needs at least n = {n_min}"
            )
        r = self.risks(s, correct)
        p_cc = hoeffding_bentkus_pvalue(r["risk_correctness"], r["n_answered"], 1.0 - self.target_correctness)
        p = p_cc
        if self.target_participation > 0:
            p_pa = hoeffding_bentkus_pvalue(r["risk_participation"], len(s), 1.0 - self.target_participation)
            p = np.maximum(p_cc, p_pa)
        self.p_values_ = p
        rejected = _fwer(p, self.delta, self.fwer)
        self.valid_thresholds_ = self.thresholds[rejected]
        self.feasible_ = bool(rejected.any())
        self.threshold_ = float(self.valid_thresholds_.min()) if self.feasible_ else None
        self.calibration_ = {k: v[rejected] for k, v in r.items()}
        self._top_share = float(np.mean(s >= self.thresholds.max()))  # for the infeasible message
        return self

    def _check_fitted(self) -> float:
        if not self.p_values_.size:
            raise RuntimeError("call fit(confidence, correct) before predict/abstain")
        if self.threshold_ is None:
            level = self.delta if self.fwer == "fixed_sequence" else self.delta / len(self.thresholds)
            raise RuntimeError(
                "no threshold could be certified on the calibration set (feasible_ is False): the guarantee asked "
                f"for (correctness {self.target_correctness}, participation {self.target_participation}, delta "
                f"{self.delta}) is out of reach of these confidences on this grid of {len(self.thresholds)} "
                f"thresholds. The smallest p-value is {self.p_values_.min():.3g} (the first rejection needs "
                f"<= {level:.3g}); {self._top_share:.1%} of the calibration confidences are >= "
                f"{self.thresholds.max():g}, the grid's largest threshold. If the confidences crowd near 1 (an "
                "over-confident network), pass a grid fixed before calibration: thresholds=threshold_grid() "
                "(log-spaced towards 1) or thresholds=threshold_grid(scores=<confidences of held-out data>); "
                "else ask for less or calibrate on more points. Until then abstaining on every query is the only "
                "safe rule"
            )
        return self.threshold_

    def predict(self, confidence: Any) -> np.ndarray:
        """Boolean mask of the queries answered (confidence >= the certified threshold); an empty batch of
        queries gives an empty mask."""
        t = self._check_fitted()
        return _as_scores("confidence", confidence) >= t

    def abstain(self, confidence: Any) -> np.ndarray:
        """Boolean mask of the queries abstained on (the complement of :meth:`predict`)."""
        return ~self.predict(confidence)


def _fwer(p: np.ndarray, delta: float, method: str) -> np.ndarray:
    """Rejections of a family-wise error procedure at level ``delta`` (boolean mask over ``p``)."""
    m = len(p)
    out = np.zeros(m, dtype=bool)
    if method == "bonferroni":
        return p <= delta / m
    if method == "fixed_sequence":  # from the largest threshold (most conservative) down
        for j in range(m - 1, -1, -1):
            if p[j] <= delta:
                out[j] = True
            else:
                break
        return out
    # Holm: reject the smallest remaining p-value while it is <= delta / (number remaining)
    order = np.argsort(p, kind="stable")
    for k, j in enumerate(order):
        if p[j] <= delta / (m - k):
            out[j] = True
        else:
            break
    return out
