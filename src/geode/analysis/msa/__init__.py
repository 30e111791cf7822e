"""MSA: metric similarity analysis, comparing the intrinsic (Riemannian) geometry of neural manifolds.

Paper: Cayco Gajic and Pellegrino, "Geometry-aware similarity metrics for neural representations on
Riemannian and statistical manifolds" (arXiv 2603.28764, NeurIPS 2026). No public code.

Claim, in one sentence: because CCA, RSA and CKA compare the *extrinsic* geometry of representations
in state space they can miss differences in *intrinsic* geometry, which MSA (a comparison of the
pullback metrics of two networks on the data manifold, invariant to rotation, scale and change of
coordinates) detects, and MSA disentangles networks trained in the rich and lazy regimes.

The method: :func:`msa_from_metrics` compares two fields of metric tensors :math:`G_A(z_i), G_B(z_i)`
(pullback metrics :math:`J^T J`, from :func:`geode.analysis.pullback_metric`) through their spectral
ratios (generalised eigenvalues), normalised by their global geometric mean, with the affine-invariant
SPD distance averaged over the points; :func:`msa_distance` does the same from paired samples
(:func:`geode.analysis.metric_from_samples`, or local charts of ``X`` when no coordinates are given).

Details we inferred (only the abstract and a summary were available; the equations are reconstructed):

- Metric: :math:`G = J^T J + \\varepsilon \\bar g I` with a *relative* ridge (ε = 1e-6 times the mean of
  tr G / d over the points), so that the scale invariance stays exact; the notes' εI is absolute.
- "Spectral ratio": the generalised eigenvalues of :math:`(G_B, G_A)` at each point; scale normalisation
  by their global geometric mean (a per-point normalisation and a log-Euclidean distance are options,
  ``normalize="pointwise"``, ``distance="logeuclid"``).
- Distance: :math:`d = (\\frac1n \\sum_i \\sum_k \\log^2(\\lambda_{ik}/\\bar\\lambda))^{1/2}`, similarity
  :math:`e^{-d}`; ``msa_distance`` returns the distance (0 = same intrinsic geometry).
- From samples: Jacobians by least squares over the k nearest neighbours in ``Z`` (k = max(2d + 2, 8));
  without ``Z`` both maps are regressed on local PCA charts of ``X`` (dimension estimated by local PCA at
  90 % variance), so ``msa_distance(X, Y)`` is then not exactly symmetric.
- Claim check: the manifold :math:`x = Q(z_1, z_2, \\sin 2z_1, \\cos 2z_2, z_1 z_2, \\sin(z_1 + z_2))` in
  R^20 with z uniform on [-1, 1]^2; tanh MLPs of width 512 with an NTK-scaled readout,
  :math:`f = \\alpha(g - g_0)` with α = 0.1 (rich) and 100 (lazy), full-batch Adam (lr 1e-3, 1000 steps,
  500 training points), target sin(3 z1) cos(2 z2); 5 networks per regime differing in their
  initialisation; representations are hidden layers at 400 shared points. Adam's scale-free steps make
  the regimes differ through the size of the change y/α each must make (we check the first-layer
  movement: large for rich, ~1 % for lazy).
- Baseline distances: 1 - linear CKA, 1 - Spearman correlation of Euclidean RDMs, the Procrustes angle.
  Separation: mean between-regime over mean within-regime distance, and leave-one-out 1-NN accuracy.
- Property tests: a random two-layer tanh MLP (width 128) on the same manifold; a shared
  reparametrisation :math:`\\varphi` with an exact inverse; the one-sided warp z + 0.3 sin 3z of the notes.
  "MSA moves" is read as :math:`1 - e^{-d} \\ge 0.5`, "MSA ≈ 0" as at most 0.01 (our bounds).
- CPU-scale RNN vs SSM working-memory comparison (:func:`~geode.analysis.msa.experiment.rnn_ssm_study`):
  tanh RNNs against diagonal linear SSMs (LRU-style) that recall a 2-D stimulus after a noisy delay.
- Singular metrics (dead ReLU units, saturated tanh): :class:`SingularMetricWarning`, and
  ``rank="exclude"`` to average over the non-singular points only.
- Left out: the diffusion (Fisher metric) experiment of the paper.
- Quick-mode finding (claim revision 2, 3 seeds): **partial**. MSA responds to a one-sided warp about 3x
  more than CKA, RSA or Procrustes relative to each one's noise floor. It does not order networks along the
  rich-lazy continuum better than they do (Mantel 0.51-0.60 against 0.51-0.68). In the RNN/SSM
  comparison it separates the architectures (1-NN 83-100 %) where CKA does not (17-50 %).

Names: the sample-based distance is :func:`msa_distance`. It was called ``msa`` until issue 43, which shadowed this
package (``import geode.analysis.msa`` gave the function); ``geode.analysis.msa`` is now this package.

Examples
--------
A random tanh network reads a 2-D manifold: rotating, rescaling and shifting its representation leaves MSA at 0,
and a warp of its input moves MSA while linear CKA hardly notices it (the paper's point):

>>> import numpy as np, torch
>>> from geode.analysis import linear_cka, msa_distance, msa_from_metrics, pullback_metric
>>> _ = torch.manual_seed(0)
>>> net = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.Tanh(), torch.nn.Linear(32, 16)).double()
>>> z = torch.rand(300, 2, dtype=torch.float64) * 2 - 1             # points of the shared manifold
>>> warp = lambda u: u + 0.3 * torch.sin(3 * u)                      # a one-sided reparametrisation
>>> with torch.no_grad():
...     x, xw = net(z).numpy(), net(warp(z)).numpy()
>>> q = np.linalg.qr(np.random.default_rng(0).normal(size=(16, 16)))[0]
>>> round(msa_distance(x, 3.0 * x @ q + 1.0, z.numpy()), 6)        # rotation, scale, shift: no change
0.0
>>> d_warp = msa_from_metrics(pullback_metric(net, z), pullback_metric(lambda u: net(warp(u)), z))
>>> bool(d_warp > 0.5), bool(1 - linear_cka(x, xw) < 0.1)           # MSA moves, 1 - CKA stays small
(True, True)
"""

from __future__ import annotations

from geode.analysis.msa.metric import (
    SingularMetricWarning,
    estimate_intrinsic_dim,
    local_chart_metrics,
    msa_distance,
    msa_from_metrics,
    spectral_ratios,
)

__all__ = [
    "SingularMetricWarning",
    "estimate_intrinsic_dim",
    "local_chart_metrics",
    "msa_distance",
    "msa_from_metrics",
    "spectral_ratios",
]
