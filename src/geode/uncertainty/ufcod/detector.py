r"""The UFCOD few-shot detector: facility-location references and a soft-min kNN score.

Deployment on a new task needs only ~100 unlabeled in-distribution feature vectors. From a pool of ID
features the detector picks ``n_references`` by greedy facility location (k-median: each step adds the
point that most reduces :math:`\sum_j \min_{r \in R} \|z_j - z_r\|` on standardised features, starting
from a random point), standardises with the references' mean and scale, and scores a query :math:`z` by
the negated soft-min distance to its ``k`` nearest references,

.. math::

    s(z) = T \log \sum_{j \in \mathrm{kNN}(z)} e^{-d_j / T}
    \quad (\text{higher: more in-distribution}),

z-scored against the references' own scores (each reference is its own nearest neighbour, as in the
authors' code, so the z-score's location is conservative; it does not change any AUROC).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_choice, check_int, check_real

__all__ = ["EnergyOODDetector", "facility_location"]


def _features(name: str, x: Any) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array (n, d) of numbers; got {type(x).__name__}") from exc
    if a.ndim != 2 or a.shape[0] == 0:
        raise ValueError(f"{name} must have shape (n >= 1, d); got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return a


def facility_location(features: Any, n: int, *, seed: int | np.random.Generator | None = 0) -> np.ndarray:
    r"""Indices of ``n`` points chosen greedily to minimise the sum of distances to the nearest chosen one.

    Features are standardised first. Vectorised: one step costs :math:`O(N^2)` with the pairwise distance
    matrix (the authors' loop is :math:`O(N^2)` per *candidate*).
    """
    z = _features("features", features)
    n = check_int("n", n, low=1)
    N = len(z)
    if n >= N:
        return np.arange(N)
    z = (z - z.mean(0)) / (z.std(0) + 1e-8)
    rng = as_generator(seed)
    sq = (z**2).sum(1)
    dist = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * z @ z.T, 0.0))
    first = int(rng.integers(N))
    chosen = [first]
    min_d = dist[first].copy()
    taken = np.zeros(N, dtype=bool)
    taken[first] = True
    for _ in range(n - 1):
        gain = np.maximum(min_d[None, :] - dist, 0.0).sum(1)  # gain[c] = sum_j (min_d_j - min(min_d_j, d_cj))
        gain[taken] = -np.inf
        c = int(np.argmax(gain))
        chosen.append(c)
        taken[c] = True
        min_d = np.minimum(min_d, dist[c])
    return np.array(chosen)


class EnergyOODDetector:
    r"""Few-shot OOD detector on diffusion-path features (UFCOD; the authors' defaults T = 0.5, k = 10).

    Parameters
    ----------
    T : float
        Temperature of the soft-min (lower: closer to the nearest reference alone).
    k : int
        Neighbours among the references.
    n_references : int or None
        References chosen from the ID pool given to :meth:`fit` (``None``: all of it, "full reference").
    selection : {"facility_location", "random"}
        How the references are chosen.
    seed : int
        Seed of the first facility (or of the random choice).
    """

    def __init__(
        self,
        T: float = 0.5,
        k: int = 10,
        *,
        n_references: int | None = 100,
        selection: str = "facility_location",
        seed: int = 0,
    ) -> None:
        self.T = check_real("T", T, low=0.0, low_inclusive=False)
        self.k = check_int("k", k, low=1)
        self.n_references = None if n_references is None else check_int("n_references", n_references, low=1)
        self.selection = check_choice("selection", selection, ("facility_location", "random"))
        self.seed = seed

    def fit(self, features: Any) -> EnergyOODDetector:
        """Choose the references among unlabeled ID features ``(N, d)`` and calibrate the score."""
        z = _features("features", features)
        n = len(z) if self.n_references is None else min(self.n_references, len(z))
        if n == len(z):
            idx = np.arange(len(z))
        elif self.selection == "facility_location":
            idx = facility_location(z, n, seed=self.seed)
        else:
            idx = as_generator(self.seed).choice(len(z), n, replace=False)
        self.reference_index_ = idx
        ref = z[idx]
        self.mean_, self.scale_ = ref.mean(0), ref.std(0) + 1e-8
        self.references_ = (ref - self.mean_) / self.scale_
        raw = self._raw(self.references_)
        self.calibration_mean_, self.calibration_std_ = raw.mean(), raw.std() + 1e-8
        return self

    def _raw(self, zs: np.ndarray) -> np.ndarray:
        d2 = (zs**2).sum(1)[:, None] + (self.references_**2).sum(1)[None, :] - 2 * zs @ self.references_.T
        d = np.sqrt(np.maximum(d2, 0.0))
        kk = min(self.k, d.shape[1])
        near = np.partition(d, kk - 1, axis=1)[:, :kk]
        # T log sum exp(-d / T), stabilised by the nearest distance
        m = near.min(1, keepdims=True)
        return -m[:, 0] + self.T * np.log(np.exp(-(near - m) / self.T).sum(1))

    def score_samples(self, features: Any, *, calibrate: bool = True) -> np.ndarray:
        """Scores of ``(n, d)`` features; higher means more in-distribution."""
        if not hasattr(self, "references_"):
            raise RuntimeError("call fit(id_features) first")
        z = _features("features", features)
        if z.shape[1] != self.references_.shape[1]:
            raise ValueError(f"features must have {self.references_.shape[1]} columns; got {z.shape[1]}")
        s = self._raw((z - self.mean_) / self.scale_)
        return (s - self.calibration_mean_) / self.calibration_std_ if calibrate else s

    def predict(self, features: Any, threshold: float = 0.0) -> np.ndarray:
        """1 for in-distribution (calibrated score >= ``threshold``), 0 for OOD."""
        threshold = check_real("threshold", threshold)
        return (self.score_samples(features) >= threshold).astype(int)
