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

Examples
--------
Three fine-tunings of one linear layer: the data-free stage makes their task vectors' dominant directions
mutually orthogonal (no interference) while each keeps its singular values, then merges:

>>> import torch
>>> from geode.ensembles import MDA, align_task_vectors
>>> _ = torch.manual_seed(0)
>>> base = torch.nn.Linear(8, 6)
>>> tuned = []
>>> for _ in range(3):
...     m = torch.nn.Linear(8, 6)
...     _ = m.load_state_dict(base.state_dict())
...     with torch.no_grad():
...         _ = m.weight.add_(0.1 * torch.randn(6, 8))
...     tuned.append(m)
>>> taus = [m.weight.detach() - base.weight.detach() for m in tuned]
>>> aligned = align_task_vectors(taus)                      # rank min(6, 8) / 3 = 2 per task
>>> max(float((aligned[i].T @ aligned[j]).abs().max()) for i in range(3) for j in range(3) if i != j) < 1e-6
True
>>> s = [torch.linalg.svdvals(t)[:2] for t in taus]       # the kept singular values are unchanged
>>> all(torch.allclose(torch.linalg.svdvals(a)[:2], v, atol=1e-5) for a, v in zip(aligned, s))
True
>>> merged = MDA(lam=0.5).merge(base, tuned)               # a copy of base; data=, heads= add stage 2
>>> merged(torch.randn(4, 8)).shape
torch.Size([4, 6])
"""

from __future__ import annotations

from geode.ensembles.mda.mda import MDA, align_task_vectors, mda_tensor, polar

__all__ = ["MDA", "align_task_vectors", "mda_tensor", "polar"]
