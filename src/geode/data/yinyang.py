"""The Yin-Yang classification data set (Kriener, Göltz & Petrovici 2021), generated offline.

A 2-D, three-class problem built for small spiking networks: points in a disc of radius ``r_big``
shaped like the yin-yang symbol, with two small dots. A shallow (linear) classifier reaches about
64 % and a 4-120-3 ANN about 98.7 %, so it separates networks that use their hidden layer from those
that do not. Written from the published description (no code copied); numpy only, so importing it
stays cheap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_int, check_positive

__all__ = ["YINYANG_CLASS_NAMES", "YinYangDataset", "yinyang_class"]

YINYANG_CLASS_NAMES: tuple[str, str, str] = ("yang", "yin", "dot")
"""Names of labels 0, 1, 2 as the class formula defines them (label 1 is the *yin* criterion).

The reference code's ``class_names`` list reads ``['yin', 'yang', 'dot']`` although its label is
``int(is_yin)``; geode keeps the reference's numeric labels and names them by the formula."""


def yinyang_class(x: Any, y: Any, *, r_small: float = 0.1, r_big: float = 0.5) -> np.ndarray:
    """Label of points ``(x, y)`` by the Yin-Yang formula: 0 (yang), 1 (yin) or 2 (dot).

    With :math:`d_r` and :math:`d_l` the distances to the dot centres :math:`(1.5 r_b, r_b)` and
    :math:`(0.5 r_b, r_b)`:

    - dot (2) if :math:`d_r < r_s` or :math:`d_l < r_s`;
    - else yin (1) if :math:`d_r \\le r_s`, or :math:`r_s < d_l \\le r_b/2`, or
      (:math:`y > r_b` and :math:`d_r > r_b/2`);
    - else yang (0).

    Points outside the disc of radius ``r_big`` centred at ``(r_big, r_big)`` are not rejected here.

    Examples
    --------
    >>> yinyang_class([0.5, 0.5, 0.25], [0.9, 0.1, 0.5]).tolist()
    [1, 0, 2]
    """
    r_small = check_positive("r_small", r_small)
    r_big = check_positive("r_big", r_big)
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    d_r = np.hypot(x - 1.5 * r_big, y - r_big)
    d_l = np.hypot(x - 0.5 * r_big, y - r_big)
    is_dot = (d_r < r_small) | (d_l < r_small)
    is_yin = (d_r <= r_small) | ((d_l > r_small) & (d_l <= 0.5 * r_big)) | ((y > r_big) & (d_r > 0.5 * r_big))
    return np.where(is_dot, 2, is_yin.astype(np.int64)).astype(np.int64)


class YinYangDataset:
    """The Yin-Yang data set: ``size`` labelled points, features ``(x, y, 1-x, 1-y)``.

    Sampling (Kriener et al. 2021): for every sample, first draw its class uniformly from {0, 1, 2},
    then draw points uniformly in the square :math:`[0, 2 r_b]^2` until one lies in the disc of radius
    :math:`r_b` around :math:`(r_b, r_b)` and has that class (:func:`yinyang_class`). The classes are
    therefore balanced in expectation, not by area. Sampling is vectorised by rejection in batches.

    Parameters
    ----------
    size : int
        Number of samples (>= 1). The reference splits are 5000 / 1000 / 1000 (seeds 42 / 41 / 40).
    seed : int or numpy.random.Generator
        Randomness; the same seed gives the same data set.
    r_small : float
        Radius of the two dots (0 < r_small < r_big / 2).
    r_big : float
        Radius of the whole symbol.

    Attributes
    ----------
    X : numpy.ndarray of float32, shape (size, 4)
        Features :math:`(x, y, 2r_b - x, 2r_b - y)`, i.e. :math:`(x, y, 1-x, 1-y)` for the default
        ``r_big = 0.5``; the mirrored coordinates let a network with positive weights and
        time-to-first-spike coding see both "large" and "small" values early.
    y : numpy.ndarray of int64, shape (size,)
        Labels 0 (yang), 1 (yin), 2 (dot); see :data:`YINYANG_CLASS_NAMES`.

    The object is a map-style data set (``len`` and integer indexing return ``(features, label)``),
    so it works directly with ``torch.utils.data.DataLoader``; :meth:`tensors` gives the whole set as
    torch tensors.

    Examples
    --------
    >>> ds = YinYangDataset(100, seed=42)
    >>> ds.X.shape, ds.y.shape, len(ds)
    ((100, 4), (100,), 100)
    """

    class_names: tuple[str, str, str] = YINYANG_CLASS_NAMES

    def __init__(self, size: int, seed: int | np.random.Generator = 42, r_small: float = 0.1, r_big: float = 0.5):
        self.size = check_int("size", size, low=1)
        self.r_small = check_positive("r_small", r_small)
        self.r_big = check_positive("r_big", r_big)
        if self.r_small >= 0.5 * self.r_big:
            raise ValueError(f"r_small must be < r_big / 2 = {0.5 * self.r_big}; got {self.r_small}")
        rng = as_generator(seed)
        goal = rng.integers(0, 3, size=self.size)
        xy = np.empty((self.size, 2))
        for c in range(3):
            where = np.flatnonzero(goal == c)
            need, got = where.size, []
            while need > 0:
                batch = max(64, 4 * need)
                pts = rng.uniform(0.0, 2.0 * self.r_big, size=(batch, 2))
                inside = np.hypot(pts[:, 0] - self.r_big, pts[:, 1] - self.r_big) <= self.r_big
                pts = pts[inside]
                pts = pts[yinyang_class(pts[:, 0], pts[:, 1], r_small=self.r_small, r_big=self.r_big) == c]
                got.append(pts[:need])
                need -= len(got[-1])
            if where.size:
                xy[where] = np.concatenate(got)
        x, yy = xy[:, 0], xy[:, 1]
        m = 2.0 * self.r_big
        self.X = np.stack([x, yy, m - x, m - yy], axis=1).astype(np.float32)
        self.y = goal.astype(np.int64)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> tuple[np.ndarray, int]:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"index must be an int; got {type(index).__name__}")
        if not -self.size <= index < self.size:
            raise IndexError(f"index {index} out of range for a data set of size {self.size}")
        return self.X[index], int(self.y[index])

    def tensors(self) -> tuple[Any, Any]:
        """The whole data set as ``(X, y)`` torch tensors (float32 and int64)."""
        import torch

        return torch.from_numpy(self.X.copy()), torch.from_numpy(self.y.copy())

    def __repr__(self) -> str:
        counts = np.bincount(self.y, minlength=3).tolist()
        return f"YinYangDataset(size={self.size}, r_small={self.r_small}, r_big={self.r_big}, class_counts={counts})"
