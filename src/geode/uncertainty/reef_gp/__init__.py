r"""REEF-GP: post-hoc uncertainty for a frozen neural operator from a GP on its own embeddings.

Paper: "Geometry-Aware Post-Hoc Uncertainty Quantification in Operator Learning" (arXiv 2606.17513;
slug ``reef-gp``; only the abstract is public, no code). REEF-GP fits a Gaussian process to the residuals
of a frozen operator on held-out data, with the kernel on the operator's internal embeddings (spectrally
normalised projection), heteroscedastic geometry-aware noise and subset-of-data training; it quantifies
uncertainty and leaves the operator's mean unchanged.

**Claim (checked by** ``geode reproduce reef-gp`` **).** Calibrated uncertainty competitive with a deep
ensemble (NLL within 10%) at a fraction of its cost (<= 1/3), 90% coverage in [0.85, 0.95] in
distribution, and a smaller coverage drop than the ensemble's under geometry shift.

**Components.** :class:`REEFGP` (``fit`` on calibration clouds, ``predict -> (mean, std)``; any
``torch.nn.Module`` operator, the embedding read by a forward hook on ``feature_layer``),
:func:`matern52`, :func:`geometry_descriptors`; the experiment's pieces: :class:`PointCloudOperator`
(per-point encoder, pooled geometry code, per-point decoder), :func:`train_operator`,
:class:`DeepEnsemble`, :class:`MCDropout`, and the Poisson generator :func:`poisson_dataset` /
:func:`solve_poisson` (P1 finite elements with scikit-fem, the ``uq`` extra).

**Inferred (the paper's text is not public).**

- The embedding: the decoder's last hidden layer concatenated with the point's coordinates; projection
  dimension ``q`` and subset size tuned on validation NLL; Matérn-5/2 ARD kernel (the notes' choice).
- The noise: :math:`\sigma^2(x) = \operatorname{softplus}(\mathrm{MLP}(g))` on three geometry descriptors
  (boundary-distance proxy, log local spacing, local slope of the prediction); the paper names
  "heteroscedastic geometry-aware noise" only.
- Training: Adam on the exact marginal likelihood of a fresh random subset per step; prediction conditions
  on one random subset of the calibration points (no averaging over subsets).
- Residuals and NLL in units of the training solutions' std; the data: -Δu = f on random star-shaped
  domains (radial Fourier perturbations), geometry shift = larger perturbations.

**Quick-mode finding (3 seeds): not reproduced, seeds unstable (not reproduced, partial, not reproduced).**
The cost holds (REEF-GP = operator + GP fit + prediction at 0.27-0.28x the ensemble's CPU time; the fit is
~1 s against ~5.5 s per operator) and the mean is left unchanged (max change 0). The rest does not:
test NLL -0.31 / -0.86 / +0.13 against the scaled ensemble's -0.65 / -0.27 / -0.41 (relative gaps +0.52,
-2.24, +1.32: the relative gap is ill-conditioned where the ensemble's NLL is near 0, and both the
conformal band and the raw-input GP pass it, so it does not discriminate); 90% coverage in distribution
0.83 / 0.93 / 0.78 (the ensemble's 0.93 / 0.93 / 0.92); coverage drop under shift 0.22 / 0.23 / 0.22
against the ensemble's 0.17 / 0.11 / 0.14. The strongest baseline on every seed is the GP on the raw
inputs (the ablation without the operator's embedding: NLL -1.18 / -0.97 / -1.03), and CRPS ranks
REEF-GP ahead of the ensemble on every seed (0.052 vs 0.062, 0.066 vs 0.084, 0.058 vs 0.067).
Spearman(|error|, std) 0.54-0.56. The tuned projection sat on the lower edge (q = 2) in two seeds.

Examples
--------
Post-hoc error bars for a frozen operator (any ``torch.nn.Module`` mapping point clouds ``(S, n, d_in)`` to
``(S, n)``; its embedding is read by a forward hook on ``feature_layer``), calibrated on held-out clouds:

>>> import numpy as np
>>> import torch
>>> from geode.uncertainty import REEFGP, PointCloudOperator, train_operator
>>> rng = np.random.default_rng(0)
>>> pts = rng.uniform(-1, 1, size=(8, 50, 2))  # 8 clouds of 50 points
>>> sdf = 1 - np.hypot(pts[..., 0], pts[..., 1]) / np.sqrt(2)  # distance-to-boundary proxy
>>> f = rng.normal(size=(8, 50))  # a source value per point
>>> x = np.concatenate([pts, sdf[..., None], f[..., None]], -1).astype(np.float32)  # (S, n, d_in = 4)
>>> u = np.sin(2 * pts[..., 0]) * pts[..., 1] + 0.05 * rng.normal(size=(8, 50))  # the solutions
>>> op = PointCloudOperator(d_in=4, width=16, seed=0)
>>> _ = train_operator(op, x[:4], u[:4], steps=30, batch=4)  # or your own trained operator
>>> gp = REEFGP(op, "decoder.embedding", q=4, subset_size=100, steps=10).fit(x[4:6], u[4:6])
>>> mean, std = gp.predict(x[6:])
>>> with torch.no_grad():
...     unchanged = np.array_equal(mean, op(torch.as_tensor(x[6:])).double().numpy())
>>> mean.shape, bool((std > 0).all()), unchanged  # the operator's own mean, with a std per point
((2, 50), True, True)
"""

from __future__ import annotations

from geode.uncertainty.reef_gp.data import PoissonSample, poisson_dataset, solve_poisson
from geode.uncertainty.reef_gp.gp import REEFGP, geometry_descriptors, matern52
from geode.uncertainty.reef_gp.operator import DeepEnsemble, MCDropout, PointCloudOperator, train_operator

__all__ = [
    "REEFGP",
    "DeepEnsemble",
    "MCDropout",
    "PointCloudOperator",
    "PoissonSample",
    "geometry_descriptors",
    "matern52",
    "poisson_dataset",
    "solve_poisson",
    "train_operator",
]
