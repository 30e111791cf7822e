r"""HoZO: Hyper-Octant Zeroth-order Optimisation, Riemannian zeroth-order fine-tuning on the positive orthant.

Paper: "HoZO: zeroth-order optimisation on the positive orthant" (NeurIPS 2026 collection, slug ``hozo``).
Quantised zeroth-order fine-tuning (QZO) perturbs and updates only the positive quantisation scales
:math:`\Delta` of a 4-bit model; treating them as Euclidean variables lets perturbations and updates cross
:math:`\Delta = 0` (boundary violations, repaired by a biased projection) and destabilises training. HoZO
makes the scales a point of the positive orthant with a geodesically complete metric and moves them with
its closed-form exponential map, so they stay positive without projection.

**Claim (checked by** ``geode reproduce hozo`` **).** HoZO has zero boundary violations, stays stable over a
wider learning-rate range than QZO, and reaches the loss of the best zeroth-order baseline (the paper: it
beats them on six tasks and three model sizes, with 34x less memory than first-order fine-tuning).

**Method** (:class:`HoZO`, :mod:`geode.optim.hozo.geometry`). With :math:`z \sim \mathcal{N}(0, I)`
regenerated from the step's seed, :math:`v = \Delta \odot z`,

.. math::

    d = \frac{f(\Delta \odot e^{\mu z}) - f(\Delta \odot e^{-\mu z})}{2\mu}, \qquad
    \Delta \leftarrow \exp_\Delta(-\eta\, d\, v) = \Delta \odot e^{-\eta d z} ,

which is the two-point Riemannian estimator of Ma & Huang (arXiv 2601.08039) under the metric
:math:`g_\Delta(u, v) = \sum_i u_i v_i / \Delta_i^2`; :math:`\mathbb{E}[d\, v] = \Delta^2 \odot \nabla f =
\operatorname{grad}_g f` to first order in :math:`\mu`.

**Inferred (the paper is not public; its abstract and the predecessors QZO and Ma & Huang are).**

- *The metric.* The paper's "novel geodesically complete metric" is unknown; we use
  :math:`g_\Delta = \operatorname{diag}(\Delta^{-2})` (the log-chart metric, complete, closed-form
  :math:`\exp`), as the project's notes reconstruct it. ``metric`` is pluggable
  (:class:`OrthantMetric`); the Euclidean one turns HoZO into MeZO. Any complete metric must make the
  boundary infinitely far (:math:`\int_0 h = \infty`, so :math:`h(x) \gtrsim 1/x` near 0), so the log metric
  is the least degenerate near zero among power-law complete metrics.
- *The orthonormal frame* :math:`v = \Delta \odot z` (a standard Gaussian in the tangent space) and the
  perturbation along the geodesic :math:`\exp_\Delta(\pm\mu v)`.
- *Clipping.* QZO clips the directional derivative; the abstract does not say whether HoZO does. The
  verdict uses plain HoZO (``clip=None``, closest to the text); HoZO with QZO's clipping (``clip=C``) is
  run as the second reading and reported beside it.
- *The quantiser* (:mod:`geode.optim.quant`): symmetric RTN, no zero point, groups of 32 input columns in
  quick mode (64 for SmolLM2), every linear layer but an LM head quantised.
- *The claim check's set-up* (the issue fixes its outline): "scales initialised near zero (log-uniform
  1e-3..1)" is read as each RTN scale multiplied by a log-uniform factor in [1e-3, 1]; the other reading
  (absolute log-uniform scales in [1e-3, 1]) is run in the same seed and reported. Quick mode uses a ReLU
  MLP (32 -> 64 -> 64 -> 4) on bag-of-symbols features of the keyword classification task (the issue
  allows "a tiny LM (or MLP)"; a Hugging Face tiny LM step costs ~100 ms on these machines, too slow for
  ~60 zeroth-order runs of 600 steps), trained in float, quantised int4, its scales degraded, then
  fine-tuned (scales only) on fresh draws of the same task. The int4 codes are stored one per byte in quick
  mode (``pack=False``) because unpacking nibbles dominated the step time of so small a model; the benchmark
  and full mode pack them. ``eps = 1e-3`` for every zeroth-order method (MeZO's default; relative for
  HoZO). A run *diverges* when a loss is non-finite or its final validation loss exceeds 1.1x the loss at
  the start. The directional-derivative clipping thresholds are tuned over {1, 10} x the median
  :math:`|d|` each method sees at the start (QZO's :math:`C` is not public for this scale).

No authors' code is public (the issue names none); nothing was copied from QZO's or MeZO's releases. MeZO's
conventions (``eps = 1e-3``, perturb +1, -2, +1, regenerate ``z`` from the seed for the update) are
followed.

**What the check found at small scale (quick mode, 3 seeds): not reproduced.** HoZO never left the
orthant at its tuned learning rate (0 violations against ~8,000-10,000 for QZO and MeZO+clamp), but its
stable range was the narrowest (1 of the 4 sweep points in every seed, QZO 2-3) and its test loss 3-6x the
best zeroth-order baseline's, which, clamped and all, recovered the RTN model's loss. The reason is
geometric: under a complete metric a scale at 1e-3 of its target is ~7 log-units away and its Riemannian
gradient :math:`\Delta_i^2 \partial_i f` is tiny, so the learning rate that moves the small scales makes
the large ones explode multiplicatively. With the other reading of the initialisation (absolute
log-uniform scales) HoZO matched or beat the ZO baselines' loss (ratios 0.87, 0.99, 0.46) but still had no
wider stable range; with clipping (second reading) the verdict is the same. The optimiser state is 32 bytes
for HoZO, MeZO and QZO whatever the model (200 or 1.66M scales); one HoZO step on SmolLM2-135M int4 grows
the resident memory by ~142 MiB against ~1,326 MiB for a first-order Adam step on the same scales (9.3x).

Examples
--------
Fine-tune only the positive int4 scales of a quantised network, as a ``torch.optim`` optimiser with a
closure that returns the loss (no ``backward()``: HoZO is zeroth-order):

>>> import torch
>>> from geode.optim import HoZO, optimizer_state_bytes, quantize_model, scale_parameters
>>> _ = torch.manual_seed(0)
>>> x = torch.randn(64, 8)
>>> model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
>>> with torch.no_grad():
...     target = model(x)                       # the float model's outputs
>>> quantize_model(model, bits=4, group_size=8)  # int4 weights; the scales are the only parameters left
['0', '2']
>>> with torch.no_grad():
...     for s in scale_parameters(model):
...         _ = s.mul_(0.5)                     # degrade the scales
>>> opt = HoZO(scale_parameters(model), lr=3.0, eps=1e-3, seed=0)
>>> def closure():
...     return torch.nn.functional.mse_loss(model(x), target)
>>> start = float(closure().detach())
>>> for _ in range(100):
...     _ = opt.step(closure)
>>> float(closure().detach()) < 0.25 * start, all(bool((s > 0).all()) for s in scale_parameters(model))
(True, True)
>>> optimizer_state_bytes(opt), opt.violations  # O(1) state; never left the positive orthant
(32, {'perturb': 0, 'update': 0})
"""

from __future__ import annotations

from geode.optim.hozo.geometry import METRICS as METRICS
from geode.optim.hozo.geometry import EuclideanMetric, LogMetric, OrthantMetric, get_metric
from geode.optim.hozo.optimizer import HoZO

# METRICS (the name -> metric class table behind get_metric) is importable from this package but kept out of
# __all__: a constant, not API (the field re-exports __all__).
__all__ = ["EuclideanMetric", "HoZO", "LogMetric", "OrthantMetric", "get_metric"]
