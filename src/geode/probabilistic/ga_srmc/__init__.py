r"""GA-SRMC: geometry-aware score-repellent Monte Carlo (NeurIPS 2026; seed file 000, abstract 7).

**The method.** Score-Repellent Monte Carlo (SRMC; Hu et al., ICML 2026) tilts the target by
:math:`\exp(-\alpha\,\theta_n^\top s(x))`, with :math:`s = \nabla\log\pi` and :math:`\theta_n` the running
average of past scores, so the chain is pushed away from where it has been. GA-SRMC replaces the
Euclidean alignment by :math:`\theta_n^\top M s(x)` for a symmetric positive-definite :math:`M` with
:math:`\operatorname{tr} M = d`; the trace-normalised inverse Fisher information
:math:`M_{\mathrm{opt}} = d S^{-1}/\operatorname{tr} S^{-1}`, :math:`S = \mathbb{E}_\pi[s s^\top]`, minimises
the worst-direction covariance bound of the stochastic-approximation CLT. One online estimate
:math:`\widehat S_n` serves both the FisherMALA proposal and the repulsion, at no extra score evaluation.
Use :class:`GASRMC` (``metric="fisher"`` the method, ``"identity"`` exactly SRMC, or a fixed matrix).

**The claim.** GA-SRMC lowers the mean squared error of SRMC's posterior-mean estimates, by 4.4x on an
anisotropic Gaussian with condition number :math:`\kappa = 100`, by 18-32% on well-conditioned logistic
posteriors and by up to 48% under FisherMALA, with an advantage that grows with :math:`\kappa`.

**What we inferred** (the paper itself was not available; the SRMC paper and its official code were):

- SRMC as in the official code: :math:`\theta_0 = 0`; :math:`\theta` moves towards the score of the
  *accepted* state with :math:`\gamma_n = \gamma_0 (n+1)^{-0.6}`, :math:`\gamma_0 = 1`; the tilted score by
  the shifted approximation :math:`s(x - \alpha M\theta)` (exact for Gaussians); MH correction with the
  exact tilted density. Step sizes in blackjax's convention (:math:`y = x + \tau g + \sqrt{2\tau}\xi`).
- The online estimate :math:`\widehat S_n = (\lambda I + \sum_{i\le n} s(X_i)s(X_i)^\top)/(n+1)`, per chain,
  from the scores at the visited states, :math:`\lambda = 1`; :math:`M_n = d\widehat S_n^{-1}/\operatorname{tr}
  \widehat S_n^{-1}`, starting at :math:`I`. It is refreshed every d steps with a rank-d update (amortised
  :math:`O(d^2)` per step, level-3 BLAS), not by a Sherman-Morrison update at every step: the paper's
  "no additional cost" is checked by the benchmark.
- FisherMALA (Titsias, 2023) in our form: the proposal preconditioned by :math:`A_n = M_n`, the same
  trace-normalised inverse of the *same* :math:`\widehat S_n` (Titsias uses Rao-Blackwellised score
  differences), with the step size adapted by Robbins-Monro to acceptance 0.574 at rate :math:`(n+1)^{-0.6}`.
- Stability (issue 18): the Fisher estimate keeps :math:`A = M = I` for its first ``10 d`` scores and
  winsorises each later score at Mahalanobis norm :math:`5\sqrt d` (:mod:`geode.probabilistic.fisher`);
  :math:`\alpha` ramps up linearly over 100 steps (MALA base) or 1000 steps (FisherMALA base, whose step
  size adapts meanwhile). Without them GA-FisherMALA diverged in 20 of 20 chains on
  :math:`\mathcal N(0, I_{10})` at :math:`\alpha = 5`, and 73-80% of the claim's FisherMALA configurations.
- The claim check's protocol (the paper's was not available; revision 2, issue 18): each kernel tunes its
  own :math:`\alpha` on validation chains over a log grid 0.01..10 (median replicate MSE), the MSE is then
  measured on 50 fresh replicates (median); chains start from target draws (exact for Gaussians; from a
  long reference run for logistic posteriors); 30% burn-in; MALA's step size is tuned once per target by a
  pilot to acceptance 0.7 and shared by every MALA-based method; Gaussians have variances log-spaced over
  :math:`[1, \kappa]` in d = 10, rotated by a fixed Haar rotation. Revision 1's shared-grid ratio (geometric
  mean over :math:`\alpha \in \{0.5, 1, 2, 3, 5\}` of the per-:math:`\alpha` ratios) is still reported.
- Logistic posteriors: the official synthetic set (n = 200, d = 10, seed 42, prior N(0, I)),
  ``load_breast_cancer`` (standardised, intercept, d = 31) and, as the stand-in for MNIST (d = 785),
  digits 3 vs 8 from ``load_digits`` (pixels / 16, intercept, d = 65); prior N(0, I). The thresholds'
  "both logistic posteriors" are the synthetic set and breast cancer (the paper's well-conditioned
  posteriors); digits is reported, not thresholded.
- Left out: the HMC and discrete kernels, the MNIST d = 785 posterior (only its cost is benchmarked),
  torch acceleration.

**Quick-mode finding** (claim revision 2, seeds 0-2): *inconclusive*, the divergence floor failed (FisherMALA-
base kernels at a large selected :math:`\alpha`: 10%, 6% and 2% of the test chains of SR-/GA-FisherMALA; the
MALA-base kernels never diverged). Without the floor it would be *not reproduced*, and unstable: the tuned
median-MSE ratio SRMC/GA-SRMC at :math:`\kappa = 100` was 1.16, 1.12 and 4.20 (GA's selected
:math:`\alpha` 5, 10, 40; the oracle metric 1.30, 1.21, 4.97; the identity-metric control 0.83, 1.01,
1.55), 2.2/2.1/1.7 at :math:`\kappa = 10`, 1.0 at :math:`\kappa = 1.3` (so it does not rise with
:math:`\kappa` in 2 of 3 seeds); the logistic posteriors pass (synthetic 2.3-3.9x, breast cancer
10-16x; digits 0.58-0.69x, reported). GA's gain needs a large :math:`\alpha` (the mechanism: one large
:math:`\alpha` fits every direction under :math:`M \propto S^{-1}`), which 12 validation replicates
select only sometimes; several selections sit on the extended grid's edge (40). Revision 1 (shared
grid, seed 0): *not reproduced*, 1.06x at :math:`\kappa = 100`.

Examples
--------
A kernel in blackjax's idiom (``init``/``step``, many chains at once) on your own target, given by its log
density and score:

>>> import numpy as np
>>> from geode.probabilistic import SRMC, GASRMC, sample
>>> prec = np.diag([1.0, 0.01])  # a Gaussian with condition number 100
>>> log_prob = lambda x: -0.5 * np.einsum("...i,ij,...j->...", x, prec, x)
>>> grad_log_prob = lambda x: -x @ prec
>>> kernel = GASRMC(log_prob, grad_log_prob, step_size=0.5, alpha=1.0)  # metric="fisher": the method
>>> state = kernel.init(np.zeros((4, 2)))  # 4 chains in R^2
>>> rng = np.random.default_rng(0)
>>> for _ in range(100):
...     state, info = kernel.step(rng, state)
>>> state.position.shape, info.acceptance_rate.shape
((4, 2), (4,))
>>> res = sample(kernel, np.zeros((4, 2)), 500, seed=0)  # or let sample() drive it
>>> res.mean.shape, bool(0.5 < res.acceptance_rate <= 1)
((4, 2), True)

With the identity metric it is SRMC, draw for draw:

>>> ga = sample(GASRMC(log_prob, grad_log_prob, 0.5, 1.0, metric="identity"), np.zeros((4, 2)), 50, seed=1)
>>> sr = sample(SRMC(log_prob, grad_log_prob, 0.5, 1.0), np.zeros((4, 2)), 50, seed=1)
>>> np.array_equal(ga.samples, sr.samples)
True
"""

from __future__ import annotations

from geode.probabilistic.ga_srmc.kernel import GASRMC, normalise_metric

__all__ = ["GASRMC", "normalise_metric"]
