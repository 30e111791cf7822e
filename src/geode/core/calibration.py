"""Calibration measures shared by the adapters, ensembles and uncertainty papers.

One expected calibration error for the whole package, with one binning convention, so that numbers of
different papers can be compared.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.validation import check_int

__all__ = ["check_probabilities", "expected_calibration_error", "negative_log_likelihood"]


def check_probabilities(probs: Any, labels: Any, *, atol: float = 1e-4) -> tuple[np.ndarray, np.ndarray]:
    """``(p, y)`` as float64 ``(n, K)`` probabilities and int64 ``(n,)`` labels, else a clear error.

    Accepts numpy arrays, lists and torch tensors (detached, moved to the CPU). Rows must be finite,
    non-negative and sum to one within ``atol``; labels must be integers in ``[0, K)``.
    """
    if hasattr(probs, "detach"):
        probs = probs.detach().cpu().numpy()
    if hasattr(labels, "detach"):
        labels = labels.detach().cpu().numpy()
    try:
        p = np.asarray(probs, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"probs must be an array of probabilities; got {type(probs).__name__}") from None
    if p.ndim != 2 or p.shape[1] < 2 or p.shape[0] == 0:
        raise ValueError(f"probs must have shape (n, K) with n >= 1 and K >= 2; got {p.shape}")
    if not np.all(np.isfinite(p)) or (p.size and p.min() < 0) or not np.allclose(p.sum(1), 1.0, atol=atol):
        raise ValueError("probs must be finite, non-negative and sum to one per row")
    y = np.asarray(labels)
    if y.shape != (p.shape[0],) or not (np.issubdtype(y.dtype, np.integer) or y.dtype == bool):
        raise ValueError(f"labels must be integers of shape ({p.shape[0]},); got {y.dtype} {y.shape}")
    if y.size and (y.min() < 0 or y.max() >= p.shape[1]):
        raise ValueError(f"labels must lie in [0, {p.shape[1]}); got range [{y.min()}, {y.max()}]")
    return p, y.astype(np.int64)


def expected_calibration_error(probs: Any, labels: Any, n_bins: int = 15) -> float:
    r"""Top-label expected calibration error with ``n_bins`` equal-width confidence bins.

    .. math::

        \mathrm{ECE} = \sum_{b=1}^{M} \frac{|B_b|}{n} \,\bigl|\operatorname{acc}(B_b) - \operatorname{conf}(B_b)\bigr|,
        \qquad B_b = \{i : \max_k p_{ik} \in ((b-1)/M,\; b/M]\},

    the convention of Guo et al. (2017) and of most libraries: bins are closed on the right, so a
    confidence of exactly ``b/M`` falls in bin ``b`` (and 1.0 in the last one).

    Parameters
    ----------
    probs : array or tensor, shape (n, K)
        Predictive probabilities.
    labels : array or tensor, shape (n,)
        Integer labels in ``[0, K)``.
    n_bins : int
        Number of bins ``M`` (default 15).

    Examples
    --------
    >>> round(expected_calibration_error([[0.9, 0.1], [0.6, 0.4]], [0, 1], n_bins=10), 12)
    0.35
    """
    n_bins = check_int("n_bins", n_bins, low=1)
    p, y = check_probabilities(probs, labels)
    if not len(y):
        return 0.0
    conf = p.max(1)
    correct = (p.argmax(1) == y).astype(np.float64)
    idx = np.clip(np.ceil(conf * n_bins).astype(int) - 1, 0, n_bins - 1)
    gap = np.abs(np.bincount(idx, correct - conf, n_bins))
    return float(gap.sum() / len(y))


def negative_log_likelihood(probs: Any, labels: Any, eps: float = 1e-12) -> float:
    r"""Mean :math:`-\log \max(p_{i y_i}, \varepsilon)` of predictive probabilities."""
    p, y = check_probabilities(probs, labels)
    return float(-np.log(np.maximum(p[np.arange(len(y)), y], eps)).mean())
