r"""Ground-truth-free error prediction from the differences between compression levels.

Let :math:`f_0, \ldots, f_{L-1}` be the predictions of a ladder of compression levels (coarse to fine), the
unknown signal :math:`f`, the errors :math:`e_k = \|f - f_k\|` and the observable differences
:math:`d_k = \|f_k - f_{k+1}\|`, :math:`k < L-1`.

**The bound.** If the ladder contracts, :math:`e_{k+1} \le \rho\, e_k` with :math:`\rho < 1` (P2), the
triangle inequality gives :math:`e_k \le d_k + e_{k+1} \le d_k + \rho e_k` and
:math:`d_k \le e_k + e_{k+1} \le (1 + \rho) e_k`, hence

.. math::

    \frac{d_k}{1 + \rho} \;\le\; e_k \;\le\; \frac{d_k}{1 - \rho}.

Telescoping (:math:`f - f_k = \sum_{j \ge k} (f_{j+1} - f_j) + (f - f_{L-1})`) sharpens the upper end to
:math:`e_k \le \sum_{j=k}^{L-2} d_j + e_{L-1}` with :math:`e_{L-1} \le \rho\, d_{L-2} / (1 - \rho)`.

**The worst-case rule** (increments add coherently) predicts that upper end,

.. math::

    \hat e_k = \sum_{j=k}^{L-2} d_j + \tau_{\mathrm{wc}}, \qquad
    \tau_{\mathrm{wc}} = \frac{\hat\rho\, d_{L-2}}{1 - \hat\rho},

which equals :math:`d_k / (1 - \hat\rho)` when the differences decay geometrically.

**The orthogonal rule** (nested least-squares / :math:`L^2` projections, :math:`\mathcal M_k \subset
\mathcal M_{k+1}`): :math:`f - f_{k+1} \perp f_{k+1} - f_k`, so Pythagoras gives the exact identity
:math:`e_k^2 = \sum_{j \ge k} d_j^2 + e_{L-1}^2`, and with :math:`e_L = \rho e_{L-1}` beyond the ladder
:math:`e_{L-1} = \rho\, d_{L-2} / \sqrt{1 - \rho^2}`:

.. math::

    \hat e_k = \Big(\sum_{j=k}^{L-2} d_j^2 + \tau_\perp^2\Big)^{1/2}, \qquad
    \tau_\perp = \frac{\hat\rho\, d_{L-2}}{\sqrt{1 - \hat\rho^2}},

which equals :math:`d_k / \sqrt{1 - \hat\rho^2}` for geometric decay and is **exact** (:math:`\hat e_k = e_k`)
for nested orthogonal projections whose errors contract by exactly :math:`\hat\rho` beyond the finest level.

**Contraction estimate** (inferred): under P2 with a constant ratio the differences decay as
:math:`d_k = d_0 \rho^k` (for nested projections :math:`d_k = e_k \sqrt{1 - \rho^2}`), so :math:`\hat\rho`
is :math:`\exp` of the least-squares slope of :math:`\log d_k` against :math:`k` (the latest ratio
:math:`d_{L-2}/d_{L-3}` when there are two differences), clipped to :math:`[0, \rho_{\max}]`, or a
user-given :math:`\rho`; :math:`\hat\rho = 0` when the finest difference is zero (the ladder has converged).

**Local heatmaps** apply the same rule pointwise to :math:`\delta_j(x) = f_j(x) - f_{j+1}(x)`:
:math:`h_k(x) = (\sum_{j \ge k} \delta_j(x)^2 + (\tau_\perp/d_{L-2})^2\, \delta_{L-2}(x)^2)^{1/2}`
(orthogonal; :math:`\|h_k\| = \hat e_k`) or
:math:`h_k(x) = \sum_{j \ge k} |\delta_j(x)| + (\tau_{\mathrm{wc}}/d_{L-2})\, |\delta_{L-2}(x)|` (worst case).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from geode.core import check_array, check_choice, check_int, check_real
from geode.sciml.inr_error.families import check_levels

__all__ = [
    "ErrorPredictor",
    "GlobalPrediction",
    "NotContractingWarning",
    "ScaledDifferencePredictor",
    "estimate_rho",
    "raw_rho",
]


class NotContractingWarning(UserWarning):
    """The ladder's differences do not decay: the contraction estimate sits at its cap.

    Every prediction is then dominated by the capped tail term (e.g. CP ladders whose errors fall additively, or
    an inverse problem whose ladder converges to something other than the signal).
    """


def raw_rho(differences: Any) -> float:
    """The unclipped contraction estimate: :math:`\\exp` of the slope of :math:`\\log d_k` against :math:`k`.

    A least-squares slope over the positive differences (may be >= 1 for a ladder that is not contracting); 0 if
    the finest difference is zero or fewer than two differences are positive.

    Examples
    --------
    >>> round(raw_rho([1.0, 2.0, 4.0]), 12)
    2.0
    """
    d = check_array("differences", differences, ndim=1)
    if d.size < 2:
        raise ValueError(f"differences must have at least two entries to estimate rho; got {d.size}")
    if np.any(d < 0):
        raise ValueError("differences must be >= 0")
    if d[-1] == 0:
        return 0.0
    k = np.flatnonzero(d > 0)
    if k.size < 2:
        return 0.0
    return float(np.exp(np.polyfit(k.astype(float), np.log(d[k]), 1)[0]))


def estimate_rho(differences: Any, *, rho_max: float = 0.95) -> float:
    """Contraction factor :math:`\\hat\\rho` from the differences :math:`d_0, \\ldots, d_{L-2}` of a ladder.

    :math:`\\exp` of the least-squares slope of :math:`\\log d_k` on :math:`k` over the positive differences,
    clipped to ``[0, rho_max]``; 0 if the finest difference is zero. Needs at least two differences.

    Examples
    --------
    >>> round(estimate_rho([8.0, 4.0, 2.0, 1.0]), 12)
    0.5
    """
    rho_max = check_real("rho_max", rho_max, low=0.0, high=1.0, high_inclusive=False)
    return float(np.clip(raw_rho(differences), 0.0, rho_max))


@dataclass(frozen=True)
class GlobalPrediction:
    """Predicted global errors of a ladder, with the bracket of the bound.

    Attributes
    ----------
    levels : ndarray, shape (L,)
    error : ndarray, shape (L,)
        The rule's prediction :math:`\\hat e_k`.
    lower, upper : ndarray, shape (L,)
        :math:`d_k / (1 + \\hat\\rho)` (0 at the finest level, which has no finer neighbour) and the
        worst-case telescoped bound :math:`\\sum_{j \\ge k} d_j + \\hat\\rho d_{L-2} / (1 - \\hat\\rho)`.
    differences : ndarray, shape (L - 1,)
        :math:`d_k = \\|f_k - f_{k+1}\\|`.
    rho : float
        The contraction :math:`\\hat\\rho` used.
    rule : str
    """

    levels: np.ndarray
    error: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    differences: np.ndarray
    rho: float
    rule: str


class ErrorPredictor:
    """Predict the error of every level of a compression ladder from the ladder alone (no ground truth).

    Parameters
    ----------
    rule : {"orthogonal", "worst_case", "difference"}
        How increments combine (see the module docstring); ``"difference"`` is the naive baseline
        :math:`\\hat e_k = d_k` (the finest level gets :math:`d_{L-2}`), with no contraction model, which a
        useful rule must beat.
    warn : bool
        Warn (:class:`NotContractingWarning`) when :math:`\\hat\\rho` is estimated and the unclipped estimate
        reaches the cap (the ladder is not contracting; ``rho_clipped_`` records it either way).
    rho : float, optional
        The contraction factor :math:`\\rho \\in [0, 1)`; estimated from the ladder when omitted (that
        needs at least three levels).
    rho_max : float
        Upper clip of the estimated :math:`\\hat\\rho` (default 0.95), which keeps the tail finite when the
        ladder has not yet started to contract.

    Examples
    --------
    >>> f = [np.zeros(4), np.full(4, 0.5), np.full(4, 0.75), np.full(4, 0.875)]
    >>> p = ErrorPredictor("worst_case").fit(f).predict_global()
    >>> np.round(p.error, 3).tolist()  # differences 1.0, 0.5, 0.25 (norm over 4 samples); rho 0.5
    [2.0, 1.0, 0.5, 0.25]
    """

    RULES = ("orthogonal", "worst_case", "difference")

    def __init__(
        self, rule: str = "orthogonal", *, rho: float | None = None, rho_max: float = 0.95, warn: bool = True
    ) -> None:
        self.rule = check_choice("rule", rule, self.RULES)
        self.warn = bool(warn)
        self.rho = None if rho is None else check_real("rho", rho, low=0.0, high=1.0, high_inclusive=False)
        self.rho_max = check_real("rho_max", rho_max, low=0.0, high=1.0, high_inclusive=False)
        self._preds: np.ndarray | None = None

    def fit(self, predictions: Any, levels: Sequence[int] | None = None) -> ErrorPredictor:
        """Store the ladder's predictions, shape (L, *signal_shape) with L >= 2 (coarse to fine).

        ``levels`` (strictly increasing) names the levels for :meth:`heatmap`; default ``0, ..., L-1``.
        """
        preds = check_array("predictions", predictions, dtype=None)
        if preds.ndim < 2 or preds.shape[0] < 2:
            raise ValueError(
                f"predictions must stack at least two levels along axis 0, shape (L >= 2, *signal); got {preds.shape}"
            )
        preds = preds.astype(complex if np.iscomplexobj(preds) else float)
        if not np.all(np.isfinite(preds)):
            raise ValueError("predictions must contain only finite values (found NaN or inf)")
        lv = np.arange(preds.shape[0]) if levels is None else check_levels(levels)
        if lv.size != preds.shape[0]:
            raise ValueError(f"levels has {lv.size} entries but predictions has {preds.shape[0]} levels")
        if self.rho is None and preds.shape[0] < 3:
            raise ValueError("estimating rho needs at least three levels (two differences); pass rho= for two")
        self._preds, self.levels = preds, lv
        delta = np.diff(preds, axis=0).reshape(preds.shape[0] - 1, -1)  # f_{k+1} - f_k
        self.differences = np.linalg.norm(delta, axis=1)
        if self.rho is not None:
            self.raw_rho_, self.rho_, self.rho_clipped_ = float("nan"), self.rho, False
        else:
            self.raw_rho_ = raw_rho(self.differences)
            self.rho_ = float(np.clip(self.raw_rho_, 0.0, self.rho_max))
            self.rho_clipped_ = bool(self.raw_rho_ >= self.rho_max)
            if self.rho_clipped_ and self.warn:
                import warnings

                warnings.warn(
                    f"the ladder is not contracting: the differences' decay estimate {self.raw_rho_:.3g} reaches the "
                    f"cap rho_max={self.rho_max:g}, so every prediction is dominated by the capped tail term; add "
                    "finer levels or pass rho=",
                    NotContractingWarning,
                    stacklevel=2,
                )
        return self

    def _check_fitted(self) -> np.ndarray:
        if self._preds is None:
            raise RuntimeError("call fit(predictions) before predicting")
        return self._preds

    def _tail_factor(self, rule: str) -> float:
        r = self.rho_
        return r / np.sqrt(1.0 - r * r) if rule == "orthogonal" else r / (1.0 - r)

    def _combine(self, d: np.ndarray, rule: str) -> np.ndarray:
        """Predicted errors of every level from differences d (L-1, ...) under ``rule`` (pointwise in ...)."""
        if rule == "difference":
            return np.concatenate([np.abs(d), np.abs(d[-1:])], axis=0)
        tail = self._tail_factor(rule) * np.abs(d[-1])
        if rule == "orthogonal":
            sq = np.concatenate([np.cumsum((d**2)[::-1], axis=0)[::-1], np.zeros_like(d[:1])], axis=0)
            return np.sqrt(sq + tail**2)
        s = np.concatenate([np.cumsum(np.abs(d)[::-1], axis=0)[::-1], np.zeros_like(d[:1])], axis=0)
        return s + tail

    def predict_global(self) -> GlobalPrediction:
        """Predicted global error :math:`\\hat e_k` of every level, and the bound's bracket."""
        self._check_fitted()
        d = self.differences
        lower = np.concatenate([d / (1.0 + self.rho_), [0.0]])
        return GlobalPrediction(
            levels=self.levels.copy(),
            error=self._combine(d, self.rule),
            lower=lower,
            upper=self._combine(d, "worst_case"),
            differences=d.copy(),
            rho=float(self.rho_),
            rule=self.rule,
        )

    def heatmap(self, level: int) -> np.ndarray:
        """Local error map :math:`h_k(x)` at compression ``level`` (a value of ``levels``); the signal's shape."""
        preds = self._check_fitted()
        where = np.flatnonzero(self.levels == level)
        if where.size != 1:
            raise ValueError(f"level must be one of {self.levels.tolist()}; got {level!r}")
        k = int(where[0])
        delta = np.abs(np.diff(preds, axis=0))
        return self._combine(delta, self.rule)[k]


def _farthest_pair(restarts: np.ndarray) -> tuple[np.ndarray, float]:
    """The difference vector of the two restarts farthest apart, and its norm (0 for a single restart)."""
    flat = restarts.reshape(restarts.shape[0], -1)
    best, vec = 0.0, np.zeros(flat.shape[1], dtype=flat.dtype)
    for i in range(flat.shape[0]):
        for j in range(i + 1, flat.shape[0]):
            dist = float(np.linalg.norm(flat[i] - flat[j]))
            if dist > best:
                best, vec = dist, flat[i] - flat[j]
    return vec, best


class ScaledDifferencePredictor:
    r"""The authors' calibrated predictor: a per-family constant times the mean adjacent difference.

    The reading of the authors' release (``voilalab/global_error_bound``; our own code). On a ladder of
    levels :math:`d_0 < \cdots < d_{L-1}` (parameter counts, roughly linearly spaced) with an effective full
    size :math:`d^\star`, a block of :math:`b` adjacent steps and, for non-convex fits, the optimisation gap
    :math:`\eta_k` measured from random restarts (the difference vector of the two restarts farthest apart,
    :math:`\bar\eta_k = \|\eta_k\|`), the theoretical bound of level :math:`k` is

    .. math::

        U_k = (d^\star - d_k)\,\frac1b \sum_{j<b} \|f_{k+j} - f_{k+j+1}\|
              + (d^\star - d_k)\,\frac1b \sum_{j<b} \|\eta_{k+j} - \eta_{k+j+1}\| + \bar\eta_k ,

    for the levels :math:`k \le L-1-b` with :math:`d_k < d^\star`, and the predicted error is
    :math:`\hat e_k = c\, U_k / (d^\star - d_k)`. Without restarts (closed-form, deterministic fits) the gap
    is 0 and :math:`\hat e_k = c \cdot` (mean adjacent difference): a **calibrated raw difference**. The
    constant :math:`c` is per architecture; the authors fitted it with the ground truth as the smallest
    :math:`c` for which the prediction lies above every true error (:meth:`calibrate`), and publish
    Grid 4.5, FFN 1.4, Instant-NGP 0.9, GA-Planes 4.2 (:attr:`PUBLISHED`).

    Parameters
    ----------
    d_star : int, optional
        The effective full size :math:`d^\star`; default the finest level.
    block : int
        :math:`b`, the number of adjacent differences averaged (the release uses 1 for grids and
        Instant-NGP, 10 for FFN and GA-Planes).

    Examples
    --------
    >>> f = [np.zeros(4), np.full(4, 0.5), np.full(4, 0.75), np.full(4, 0.875)]
    >>> p = ScaledDifferencePredictor().fit(f, [1, 2, 3, 4])
    >>> p.predict(2.0).round(3).tolist()  # 2 x the differences 1.0, 0.5, 0.25
    [2.0, 1.0, 0.5]
    """

    PUBLISHED = {"grid": 4.5, "ffn": 1.4, "instant-ngp": 0.9, "ga-planes": 4.2}

    def __init__(self, *, d_star: int | None = None, block: int = 1) -> None:
        self.d_star = None if d_star is None else check_int("d_star", d_star, low=1)
        self.block = check_int("block", block, low=1)
        self._fitted = False

    def fit(
        self, predictions: Any, levels: Sequence[int], *, restarts: Sequence[Any] | None = None
    ) -> ScaledDifferencePredictor:
        """Store the ladder (best restart per level, coarse to fine) and compute :math:`U_k`.

        ``restarts``, optional, gives per level an array ``(R, *signal)`` of R >= 2 restarts' predictions,
        from which :math:`\\eta_k` is measured; omitted, the gap is 0.
        """
        preds = check_array("predictions", predictions, dtype=None)
        if preds.ndim < 2 or preds.shape[0] < 2:
            raise ValueError(f"predictions must stack at least two levels along axis 0; got shape {preds.shape}")
        preds = preds.astype(float)
        if not np.all(np.isfinite(preds)):
            raise ValueError("predictions must contain only finite values (found NaN or inf)")
        lv = check_levels(levels)
        if lv.size != preds.shape[0]:
            raise ValueError(f"levels has {lv.size} entries but predictions has {preds.shape[0]} levels")
        d_star = int(lv[-1]) if self.d_star is None else self.d_star
        b = self.block
        if lv.size <= b:
            raise ValueError(f"block={b} needs more than {b} levels; got {lv.size}")
        flat = preds.reshape(preds.shape[0], -1)
        if restarts is None:
            eta = np.zeros_like(flat)
            eta_norm = np.zeros(lv.size)
        else:
            if len(restarts) != lv.size:
                raise ValueError(f"restarts must give one array per level ({lv.size}); got {len(restarts)}")
            pairs = [_farthest_pair(check_array("restarts", r, dtype=float)) for r in restarts]
            eta = np.stack([p[0] for p in pairs])
            eta_norm = np.array([p[1] for p in pairs])
        diff = np.linalg.norm(np.diff(flat, axis=0), axis=1)
        diff_eta = np.linalg.norm(np.diff(eta, axis=0), axis=1)
        keep = [k for k in range(lv.size - b) if lv[k] < d_star]
        if not keep:
            raise ValueError(f"no level below d_star={d_star} leaves a block of {b} finer levels")
        k = np.asarray(keep)
        gap = d_star - lv[k].astype(float)
        mean_d = np.array([diff[i : i + b].mean() for i in k])
        mean_eta = np.array([diff_eta[i : i + b].mean() for i in k])
        self.levels_ = lv[k]
        self.index_ = k
        self.mean_difference_ = mean_d
        self.eta_ = eta_norm[k]
        self.bound_ = gap * mean_d + gap * mean_eta + eta_norm[k]  # U_k
        self._scale = self.bound_ / gap  # U_k / (d* - d_k)
        self._preds = preds
        self._fitted = True
        return self

    def _check(self) -> None:
        if not self._fitted:
            raise RuntimeError("call fit(predictions, levels) before predicting")

    def predict(self, c: float) -> np.ndarray:
        """:math:`\\hat e_k = c\\, U_k / (d^\\star - d_k)` at the levels :attr:`levels_`."""
        self._check()
        c = check_real("c", c, low=0.0, low_inclusive=False)
        return c * self._scale

    def calibrate(self, true_errors: Any) -> float:
        """The authors' constant: the smallest :math:`c` with :math:`c\\,U_k/(d^\\star - d_k) \\ge e_k` at every
        level of :attr:`levels_` (``true_errors`` given at those levels); needs the ground truth."""
        self._check()
        e = check_array("true_errors", true_errors, ndim=1)
        if e.size != self.levels_.size:
            raise ValueError(
                f"true_errors must have one entry per level of levels_ ({self.levels_.size}); got {e.size}"
            )
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(self._scale > 0, e / self._scale, np.inf)
        return float(np.max(ratio))

    def heatmap(self, level: int, c: float = 1.0) -> np.ndarray:
        """The release's local map :math:`c\\,|f_k(x) - f_{L-1}(x)|`: the small model against the largest."""
        self._check()
        c = check_real("c", c, low=0.0, low_inclusive=False)
        lv = self.levels_
        where = np.flatnonzero(lv == level)
        if where.size != 1:
            raise ValueError(f"level must be one of {lv.tolist()}; got {level!r}")
        return c * np.abs(self._preds[self.index_[where[0]]] - self._preds[-1])
