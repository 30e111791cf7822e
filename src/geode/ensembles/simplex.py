"""Probability-simplex helpers shared by the field's fusion and mutual-correction methods.

Soft outputs of ``M`` oracles on ``N`` samples over ``C`` classes are stacked as an array ``P`` of shape
``(M, N, C)``; every row ``P[m, i]`` is a point of the simplex
:math:`\\Delta^{C-1} = \\{p \\in \\mathbb{R}^C : p_c \\ge 0, \\sum_c p_c = 1\\}`.

* :func:`check_simplex` / :func:`as_oracle_stack`: validation (negative entries and rows that do not sum to
  one are errors, unless ``normalize=True`` is asked for), and stacking of per-oracle arrays with a clear
  error on mismatched shapes;
* :func:`clr` and :func:`softmax`: Aitchison's centred log-ratio map and its inverse,
  :math:`\\operatorname{clr}(p) = \\log p - \\tfrac1C \\sum_c \\log p_c` and
  :math:`\\operatorname{softmax}(\\operatorname{clr}(p)) = p`;
* :func:`kl_divergence`, :func:`nll`, :func:`accuracy`: the reliability measures the field's claims report,
  with :func:`expected_calibration_error` re-exported from :mod:`geode.core.calibration` (one convention for
  the whole package).

Hard 0/1 inputs are allowed everywhere: logarithms use a floor ``eps`` (``log max(p, eps)``), so nothing
returns NaN or an infinity.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from geode.core.calibration import expected_calibration_error
from geode.core.validation import check_array, check_int, check_real

__all__ = [
    "DEFAULT_EPS",
    "accuracy",
    "as_oracle_stack",
    "check_simplex",
    "clr",
    "expected_calibration_error",
    "kl_divergence",
    "nll",
    "softmax",
]

DEFAULT_EPS = 1e-6
"""Floor of probabilities inside logarithms: ``log max(p, eps)`` (hard 0/1 inputs stay finite)."""


def check_simplex(
    name: str,
    p: Any,
    *,
    ndim: int | tuple[int, ...] | None = None,
    atol: float = 1e-6,
    normalize: bool = False,
) -> np.ndarray:
    """Return ``p`` as a float64 array whose last axis lies on the probability simplex, else raise.

    Parameters
    ----------
    name : str
        The argument's name, used in error messages.
    p : array_like, shape (..., C)
        Probability vectors along the last axis, ``C >= 2``.
    ndim : int or tuple of int, optional
        Accepted number(s) of dimensions.
    atol : float
        Tolerance on :math:`|\\sum_c p_c - 1|`.
    normalize : bool
        If True, rows are divided by their sums instead of being rejected for not summing to one
        (negative entries and all-zero rows are still errors).

    Returns
    -------
    numpy.ndarray
        A float64 copy (rows exactly renormalised when ``normalize=True``). An empty batch (no rows) is
        returned as it is: callers that need rows check the size.

    Raises
    ------
    ValueError
        Negative entries, NaN/inf, fewer than two classes, or rows not summing to one.
    """
    arr = check_array(name, p, ndim=ndim)
    if arr.ndim == 0 or arr.shape[-1] < 2:
        raise ValueError(f"{name} must have at least 2 classes on its last axis; got shape {arr.shape}")
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name} must be non-negative (probabilities); found min {arr.min():.3g}")
    check_real("atol", atol, low=0.0)
    sums = arr.sum(axis=-1, keepdims=True)
    if normalize:
        if np.any(sums <= 0):
            raise ValueError(f"{name} has an all-zero row that cannot be normalised")
        return arr / sums
    if arr.size and np.max(np.abs(sums - 1.0)) > atol:
        worst = float(np.max(np.abs(sums - 1.0)))
        raise ValueError(
            f"{name} rows must sum to one (within atol={atol:g}); worst deviation {worst:.3g}. "
            "Pass normalize=True to renormalise them."
        )
    return np.array(arr, dtype=float, copy=True)


def as_oracle_stack(name: str, P: Any, *, atol: float = 1e-6, normalize: bool = False) -> np.ndarray:
    """Stack the soft outputs of ``M`` oracles into one array of shape ``(M, N, C)`` and validate it.

    Parameters
    ----------
    name : str
        The argument's name, used in error messages.
    P : array_like of shape (M, N, C), or a sequence of M arrays of shape (N, C)
        Soft outputs: oracle ``m``'s distribution on sample ``i`` is ``P[m, i]``.
    atol, normalize
        As in :func:`check_simplex`.

    Returns
    -------
    numpy.ndarray, shape (M, N, C)
    """
    if isinstance(P, Sequence) and not isinstance(P, (str, bytes)) and len(P) > 0:
        shapes = [np.shape(p) for p in P]
        if any(len(s) != 2 for s in shapes):
            raise ValueError(f"{name}: every oracle's output must have shape (n_samples, n_classes); got {shapes}")
        if len(set(shapes)) > 1:
            raise ValueError(
                f"{name}: oracles' outputs must share one shape (n_samples, n_classes); got mismatched {shapes}"
            )
    arr = check_simplex(name, P, ndim=3, atol=atol, normalize=normalize)
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} must hold at least one oracle and one sample; got shape {arr.shape}")
    return arr


def clr(p: Any, *, eps: float = DEFAULT_EPS) -> np.ndarray:
    """Centred log-ratio coordinates of probability vectors (last axis).

    .. math::

        \\operatorname{clr}(p)_c = \\log \\max(p_c, \\varepsilon)
            - \\frac{1}{C} \\sum_{c'=1}^{C} \\log \\max(p_{c'}, \\varepsilon).

    The result sums to zero along the last axis; :func:`softmax` inverts it for rows with no entry below
    ``eps``. ``p`` must be finite with at least two classes on its last axis (entries below ``eps``, zeros
    included, are floored); ``eps`` must be in (0, 1). An empty batch (no rows) gives an empty output.
    """
    check_real("eps", eps, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    arr = check_array("p", p)
    if arr.ndim == 0 or arr.shape[-1] < 2:
        raise ValueError(f"p must have at least 2 classes on its last axis; got shape {arr.shape}")
    return _clr(arr, eps)


def _clr(p: Any, eps: float = DEFAULT_EPS) -> np.ndarray:
    """:func:`clr` without validation (for callers that validated their inputs once)."""
    logp = np.log(np.maximum(np.asarray(p, dtype=float), eps))
    return logp - logp.mean(axis=-1, keepdims=True)


def softmax(z: Any, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax :math:`e^{z_c - \\max z} / \\sum_{c'} e^{z_{c'} - \\max z}` along ``axis``.

    ``z`` must be finite (a NaN or an infinite score has no softmax: ``ValueError`` naming ``z``). Any shape is
    accepted: an empty batch gives an empty output and an axis of size one gives ones.

    Examples
    --------
    >>> softmax(np.array([0.0, np.log(3.0)])).round(3).tolist()
    [0.25, 0.75]
    """
    arr = check_array("z", z)
    if arr.ndim == 0:
        raise ValueError("z must have at least one dimension; got a scalar")
    axis = check_int("axis", axis, low=-arr.ndim, high=arr.ndim - 1)
    return _softmax(arr, axis)


def _softmax(z: Any, axis: int = -1) -> np.ndarray:
    """:func:`softmax` without validation (for callers whose scores are finite by construction)."""
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def kl_divergence(p: Any, q: Any, *, eps: float = DEFAULT_EPS) -> np.ndarray:
    """Row-wise :math:`\\mathrm{KL}(p \\| q) = \\sum_c p_c(\\log \\max(p_c, \\epsilon) - \\log \\max(q_c, \\epsilon))`.

    Terms with :math:`p_c = 0` contribute zero. Returns an array of shape ``p.shape[:-1]``.
    """
    eps = check_real("eps", eps, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    p = check_simplex("p", p, atol=1e-4)
    q = check_simplex("q", q, atol=1e-4)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape; got {p.shape} and {q.shape}")
    diff = np.log(np.maximum(p, eps)) - np.log(np.maximum(q, eps))
    return np.sum(np.where(p > 0, p * diff, 0.0), axis=-1)


def _labels(y: Any, n: int, n_classes: int) -> np.ndarray:
    y = check_array("y", y, ndim=1, dtype=None)
    if not np.issubdtype(y.dtype, np.integer):
        raise TypeError(f"y must hold integer class labels; got dtype {y.dtype}")
    if y.shape[0] != n:
        raise ValueError(f"y must have one label per row of p ({n}); got {y.shape[0]}")
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(f"y must hold labels in [0, {n_classes - 1}]; got range [{y.min()}, {y.max()}]")
    return y.astype(np.int64)


def nll(p: Any, y: Any, *, eps: float = DEFAULT_EPS) -> float:
    """Mean negative log-likelihood :math:`-\\frac1N \\sum_i \\log \\max(p_{i, y_i}, \\varepsilon)`."""
    eps = check_real("eps", eps, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    p = check_simplex("p", p, ndim=2, atol=1e-4)
    y = _labels(y, p.shape[0], p.shape[1])
    return float(-np.mean(np.log(np.maximum(p[np.arange(p.shape[0]), y], eps))))


def accuracy(p: Any, y: Any) -> float:
    """Fraction of rows whose arg-max is the label."""
    p = check_simplex("p", p, ndim=2, atol=1e-4)
    y = _labels(y, p.shape[0], p.shape[1])
    return float(np.mean(p.argmax(axis=1) == y))
