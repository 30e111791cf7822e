r"""inr-error: ground-truth-free error prediction for compressive signal parameterisations.

Paper: "Ground-truth-free error prediction for compressive signal parameterisations" (NeurIPS 2026; released
as "Bounding Global and Local Compression Error of Signal Parameterizations", code
``voilalab/global_error_bound``, which we read for the calibrated predictor and wrote our own).

Claim, in one sentence: when a parameterisation family (interpolated grids, Fourier feature networks, hash
tables, tensor factorisations) compresses with nested, contracting, near-optimal members, the error at any
compression level is bounded by a scaled difference between predictions at different levels,

.. math::

    \frac{d_n}{1 + \rho} \le e(n) = \|f - f_n\| \le \frac{d_n}{1 - \rho}, \qquad d_n = \|f_n - f_{2n}\|,

and predictors built on it track global error curves and local error maps without the ground truth.

The components:

* :func:`fit_family` with :class:`BilinearGrid`, :class:`FourierFeatures`, :class:`TruncatedSVD`,
  :class:`HashGrid` and :class:`CPFactorisation`: the predictions :math:`f_{n_0}, \ldots, f_{n_{L-1}}` of a
  compression ladder, fitted directly or through a linear operator (:class:`UndersampledFourier`);
* :class:`ErrorPredictor` (``rule="orthogonal" | "worst_case"``): ``fit(predictions).predict_global()`` gives
  the predicted error of every level and the bound's bracket (:class:`GlobalPrediction`), ``heatmap(level)``
  a local error map; :func:`estimate_rho` the contraction factor (:func:`raw_rho` unclipped; a
  :class:`NotContractingWarning` when it reaches its cap); ``rule="difference"`` is the raw-difference baseline;
* :class:`ScaledDifferencePredictor`: the release's predictor, a per-family constant times the mean adjacent
  difference (plus an optimisation gap measured from restarts), :math:`\hat e_k = c\,U_k/(d^\star - d_k)`,
  with the release's calibration of :math:`c` (the smallest constant covering every level; it needs ground
  truth, so the claim calibrates on some signals and tests on others) and its heatmap :math:`c|f_k - f_{L-1}|`;
* test signals :func:`piecewise_chirp`, :func:`sample_image`, :func:`shepp_logan` (our own rasterisation of
  :data:`SHEPP_LOGAN_ELLIPSES`).

What we inferred for :class:`ErrorPredictor` (our variant; the release uses the calibrated predictor above):

* **Assumptions.** (P1) nested members, (P2) contraction :math:`e(2n) \le \rho\, e(n)`, (P3) near-optimal fits;
  the bound is the triangle inequality under P2.
* **Worst-case rule.** The telescoped bound :math:`\hat e_k = \sum_{j \ge k} d_j + \hat\rho d_{L-2}/(1-\hat\rho)`
  (equal to :math:`d_k/(1-\hat\rho)` for geometric differences); it is also the upper end of the bracket.
* **Orthogonal rule** (the signal-specific predictor): for nested least-squares projections Pythagoras gives
  :math:`e_k^2 = \sum_{j \ge k} d_j^2 + e_{L-1}^2`; the unobserved tail is
  :math:`e_{L-1} = \hat\rho d_{L-2} / \sqrt{1 - \hat\rho^2}` (:math:`d_k/\sqrt{1-\hat\rho^2}` for geometric
  differences). Exact for nested orthogonal projections with exactly geometric tails.
* **Contraction estimate.** :math:`\hat\rho` = exp of the least-squares slope of :math:`\log d_k` against
  :math:`k`, clipped to ``[0, 0.95]``.
* **Heatmaps.** The same rule applied per sample to :math:`|f_j(x) - f_{j+1}(x)|`; no smoothing.
* **Families.** Grids: hat functions on :math:`n` uniform cells of :math:`[0,1]^d`, least squares (separable in
  2-D and through Cartesian MRI). Fourier features: Gaussian frequencies (:math:`\sigma` = 10 cycles per unit in
  2-D) sorted by norm so that levels are nested prefixes, closed-form linear head. Hash grid: 8 resolutions,
  2 features per entry, linear head, Adam (lr 1e-2, 300 steps), level = table size. CP: ALS on the image cut
  into 8 x 8 patches (a 3-way tensor), warm-started from the previous rank. SVD and CP fit directly only.
* **MRI.** Unitary 2-D DFT, 4x variable-density Cartesian mask (8 % centre lines always kept, the rest drawn
  with probability :math:`\propto (1 + |k_y|/8)^{-2}`), complex Gaussian noise :math:`\sigma = 0.01`; the fit
  minimises :math:`\|A g - y\|^2` over real images; errors are measured in image space.
* **Shepp-Logan.** The standard ten-ellipse table, Toft's modified intensities by default.

Examples
--------
Predict the error of every level of a truncated-SVD ladder without the image, then check it against the truth:

>>> import numpy as np
>>> from geode.sciml import ErrorPredictor, fit_family, shepp_logan
>>> image = shepp_logan(64)                               # the signal to compress (64 x 64)
>>> levels = [2, 4, 8, 16, 32]                            # truncated-SVD ranks, coarse to fine (nested)
>>> ladder = fit_family("svd", image, levels)             # f_n for every level, shape (5, 64, 64)
>>> pred = ErrorPredictor().fit(ladder).predict_global()  # from the ladder alone: no ground truth
>>> np.round(pred.error, 1).tolist()
[10.5, 8.7, 6.0, 1.9, 1.2]
>>> true = np.linalg.norm((ladder - image).reshape(5, -1), axis=1)   # what it predicts (needs the image)
>>> np.round(true, 1).tolist()
[10.4, 8.6, 5.9, 1.5, 0.1]
>>> bool(np.all((pred.lower <= true) & (true <= pred.upper)))       # inside the bound's bracket
True
>>> ErrorPredictor().fit(ladder, levels).heatmap(8).shape           # a local error map at rank 8
(64, 64)
"""

from __future__ import annotations

from geode.sciml.inr_error.families import (
    FAMILIES,
    BilinearGrid,
    CPFactorisation,
    FourierFeatures,
    HashGrid,
    TruncatedSVD,
    check_levels,
    fit_family,
)
from geode.sciml.inr_error.predictor import (
    ErrorPredictor,
    GlobalPrediction,
    NotContractingWarning,
    ScaledDifferencePredictor,
    estimate_rho,
    raw_rho,
)
from geode.sciml.inr_error.signals import (
    SHEPP_LOGAN_ELLIPSES,
    UndersampledFourier,
    piecewise_chirp,
    sample_image,
    shepp_logan,
)

__all__ = [
    "FAMILIES",
    "SHEPP_LOGAN_ELLIPSES",
    "BilinearGrid",
    "CPFactorisation",
    "ErrorPredictor",
    "FourierFeatures",
    "GlobalPrediction",
    "HashGrid",
    "NotContractingWarning",
    "ScaledDifferencePredictor",
    "TruncatedSVD",
    "UndersampledFourier",
    "check_levels",
    "estimate_rho",
    "fit_family",
    "piecewise_chirp",
    "raw_rho",
    "sample_image",
    "shepp_logan",
]
