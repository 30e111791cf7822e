r"""Solver-free OT sampling error, intrinsic dimension from its decay, and Richardson-debiased Wasserstein.

Paper: "Geometry-Aware Optimal Transport: Fast Intrinsic Dimension and Wasserstein Distance Estimation"
(Genans & Wintenberger; NeurIPS 2026, arXiv 2602.04335; seed file 000, abstract 10).

**The claim, in one sentence.** The semi-dual OT functional at the zero potential gives a tuning-free
estimate of the sampling error :math:`\mathrm{OT}_c(\rho, \hat\rho_n)` that needs no OT solver, its
multi-scale decay gives a fast intrinsic-dimension estimator, and Richardson extrapolation calibrated by that
intrinsic dimension strongly debiases Wasserstein estimates.

**The components** (POT-style functions on arrays, numpy and scipy KD-trees; POT for exact OT):

* :func:`sampling_error`: :math:`\widehat E_n = \frac1m\sum_i \min_j \|x_i - y_j\|^p`, the semi-dual
  :math:`H(0) \le \mathrm{OT}_c(\rho, \hat\rho_n)` by fresh draws, a held-out split or leave-one-out;
* :func:`intrinsic_dimension` and :class:`OTIntrinsicDimension`: :math:`\hat d = -p/\hat a`, :math:`\hat a` the
  log-log slope of :math:`\widehat E_s` over dyadic subsample sizes :math:`s`;
* :func:`richardson_wasserstein`: :math:`(2^\beta W_n - \overline W_{n/2})/(2^\beta - 1)`, :math:`\beta = p/\hat d`,
  with bagged half-samples (:func:`richardson_extrapolate` is the bare formula, :func:`wasserstein_pp` the
  plug-in);
* :func:`calibrate_sinkhorn_eps`: :math:`\varepsilon = \kappa\,\widehat E_n`;
* baselines :func:`twonn_dimension` (Facco et al. 2017) and :func:`mle_dimension` (Levina & Bickel 2004).

**What we inferred** (only the abstract and the TL;DR were available; no code was found):

* **The estimator is exactly** :math:`H(0)`, the quantisation error, with no fitted potential or
  correction: it is a lower bound of :math:`\mathrm{OT}_c(\rho, \hat\rho_n)` with the same
  :math:`n^{-p/d}` rate, and the tests check :math:`H(0) \le \mathrm{OT}` against POT's exact solver.
  Without fresh draws the default is leave-one-out nearest neighbours (unbiased for :math:`n - 1` atoms;
  issue 18 made it the default); ``method="fresh"`` without fresh draws holds out a random half (the
  estimate is then for :math:`\lceil n/2\rceil` atoms, +28% at d = 6).
* **Multi-scale decay.** Leave-one-out at every scale; at size :math:`s` the permuted sample is cut into
  :math:`\lfloor n/s\rfloor` disjoint groups so every point is used at every scale; default scales
  :math:`n, n/2, n/4, n/8` (not below 16 points); least-squares slope of :math:`\log\widehat E_s` against
  :math:`\log(s-1)`. A flat or rising decay returns :math:`\hat d = \infty`.
* **Richardson.** :math:`\beta = p/d_{\mathrm{int}}` (the notes' form; :math:`2/d` for :math:`W_2^2`);
  :math:`d_{\mathrm{int}}` defaults to the larger of the two samples' estimates; ``n_bags = 8`` halvings of
  both samples, independent across bags. With Sinkhorn (``reg``) the half-sample terms use
  :math:`\varepsilon_{n/2} = 2^\beta\varepsilon` ("diagonal" extrapolation, our reading of the TL;DR), and
  the plug-in is the transport cost of the entropic plan. The reported ``variance_inflation``
  :math:`1 + 1/(n_{\mathrm{bags}}(2^\beta-1)^2)` is our first-order derivation (linear term dominant).
* **Sinkhorn calibration.** :math:`\varepsilon = \kappa\,\widehat E_n^{\mathrm{loo}}`, :math:`\kappa = 1`:
  "ε matched to the intrinsic geometry" read as ε of the order of the sample's own discretisation error.
* **Baselines.** TwoNN by the paper's regression through the origin discarding the largest 10% of
  ratios; the MLE with :math:`k = 20` averaged over points by inverses (MacKay & Ghahramani). They live in
  this folder until a second paper needs them.
* **Claim protocol** (revision 2; see the claim's docstring). Uniform cubes (:math:`d = 2..12`), spheres
  :math:`S^d`, flat tori, a bent cube and the swiss roll, rotated into :math:`\mathbb R^{20}`; the accuracy of
  the predicted sampling error against an exact-OT sandwich (POT ``emd`` with 40 n fresh points, and the
  semi-dual at its potentials on other fresh points); ``load_digits`` is reported without ground truth (tiny
  jitter breaks duplicate images). Decay reference: exact OT (POT ``emd2``) between :math:`m` fresh points and
  the :math:`n` atoms. Richardson: uniform :math:`[0,1]^6` rotated into :math:`\mathbb R^{20}`, the target the
  image of an independent sample by an affine Brenier map (symmetric positive-definite linear part,
  eigenvalues 0.5..2), whose :math:`W_2^2` is known in closed form; the bias is the mean over repetitions.

**Quick-mode finding** (claim revision 2, seeds 0-2): *partial*, per seed reproduced / reproduced / partial.
The ID (median relative error 3.4%, 3.2%, 4.5%; TwoNN 3.2%, 1.8%, 3.6%; d = 12 read as 9.8-10.0) and the
accuracy of the predicted sampling error (median relative error 10%, 14%, 8% over d = 3..8, always an
under-estimate; d <= 2: 40-72%; d = 12: 4-8%; the two-sample control 25-30%) pass. The seed-averaged
Richardson bias is -0.10 of the plug-in bias (per seed -0.05, -0.02, -0.23; lower 95% bound -0.29): it
over-corrects, beyond the 1/5 bound on the lower side; with the true d = 6 it over-corrects more (-0.19 to
-0.41), so the ID estimate's downward bias (5.3) helps. The calibrated Sinkhorn epsilon does not improve
the plug-in cost here (absolute error 0.15-0.28 against 0.13-0.18 exact; epsilon / 10 matches the exact
plug-in, epsilon x 10 is 0.83-0.96). Revision 1 (seed 0): *reproduced*, 35x bias reduction on 20
repetitions.

Examples
--------
POT-style functions on your own point clouds (arrays of shape (n, D), optional weights ``a, b``):

>>> import numpy as np
>>> import ot
>>> from geode.probabilistic import intrinsic_dimension, richardson_wasserstein, sampling_error, wasserstein_pp
>>> rng = np.random.default_rng(0)
>>> X = rng.random((2000, 3)) @ rng.normal(size=(3, 6))  # a 3-D sample embedded in R^6
>>> round(intrinsic_dimension(X, seed=0))
3
>>> atoms, fresh = X[:100], X[100:600]
>>> h0 = sampling_error(atoms, X_fresh=fresh)  # no OT solver: nearest neighbours only
>>> exact = wasserstein_pp(fresh, atoms)  # exact OT(fresh, atoms), W_2^2
>>> bool(h0 <= exact < 3 * h0)  # a lower bound of the same order
True

Weights as POT takes them (``ot.emd2(a, b, M)``), uniform by default:

>>> Y = rng.normal(size=(30, 6))
>>> a, b = rng.dirichlet(np.ones(40)), np.full(30, 1 / 30)
>>> bool(np.isclose(wasserstein_pp(X[:40], Y, a, b), ot.emd2(a, b, ot.dist(X[:40], Y))))
True

Richardson debiasing: two samples of the same law (true :math:`W_2^2 = 0`):

>>> A, B = np.random.default_rng(1).random((2, 300, 4))
>>> est, info = richardson_wasserstein(A, B, d_int=4.0, seed=0, log=True)
>>> bool(abs(est) < 0.2 * info["plugin"])  # most of the plug-in's bias is gone
True
"""

from __future__ import annotations

from geode.probabilistic.ot_sampling_error.baselines import mle_dimension, twonn_dimension
from geode.probabilistic.ot_sampling_error.estimators import (
    OTIntrinsicDimension,
    calibrate_sinkhorn_eps,
    intrinsic_dimension,
    multiscale_errors,
    sampling_error,
)
from geode.probabilistic.ot_sampling_error.richardson import (
    richardson_extrapolate,
    richardson_wasserstein,
    wasserstein_pp,
)

__all__ = [
    "OTIntrinsicDimension",
    "calibrate_sinkhorn_eps",
    "intrinsic_dimension",
    "mle_dimension",
    "multiscale_errors",
    "richardson_extrapolate",
    "richardson_wasserstein",
    "sampling_error",
    "twonn_dimension",
    "wasserstein_pp",
]
