"""MDA: model merging with directional alignment (paper ``mda``, arXiv 2512.00391, "From Coefficients to
Directions: Rethinking Model Merging with Directional Alignment").

Claim, in one sentence: independently fine-tuned models have misaligned dominant directions in parameter
and feature space; aligning them (simplex-ETF / Procrustes geometry) before merging preserves structure and
improves merged performance, more so as the number of heterogeneous tasks grows.

The components:

* :func:`align_task_vectors`, :func:`mda_tensor`: the data-free parameter-space stage, per tensor (mergekit
  convention);
* :class:`MDA` with ``merge(base, finetuned_models, data=None, heads=None)``: both stages;
* the baselines live at field level, :mod:`geode.ensembles.merging` (averaging, task arithmetic, TIES,
  layer-wise AdaMerging);
* :mod:`geode.ensembles.mda.experiment`: the claim's test bed (digits, K heterogeneous tasks).

No code was released; every concrete choice below is **inferred** from the abstract and a third-party
summary (``shared/papers/mda.md``):

1. the parameter-space "ETF arrangement" of task directions is read as mutually orthogonal task subspaces
   (the equiangular frame with zero mutual coherence, reachable for K r <= min(m, n)), reached by the
   Procrustes (polar) projection of the stacked top-r singular vectors; rank r = min(m, n)/K by default;
2. the feature-space ETF targets are the centred rows of each task's fixed head (self-duality of Neural
   Collapse: class means align with classifier rows), the pseudo-label is the head's argmax;
3. rotations are Cayley-parametrised, so orthogonality is exact and the paper's ||R^T R - I||^2 term becomes
   gamma ||R - I||^2 (otherwise entropy minimisation can rotate features to confident wrong classes);
4. the objective is optimised with full-batch Adam over the unlabeled data of every task, jointly for the
   layer-wise coefficients (AdaMerging's parametrisation) and the rotations;
5. biases and other 1-D tensors are not aligned (task arithmetic), as mergekit methods usually do.

Quick-mode verdict: see :mod:`geode.ensembles.mda.claim`.
"""

from __future__ import annotations

from geode.ensembles.mda.mda import MDA, align_task_vectors, mda_tensor, polar

__all__ = ["MDA", "align_task_vectors", "mda_tensor", "polar"]
