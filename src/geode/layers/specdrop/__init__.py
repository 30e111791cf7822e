"""SpecDrop: fixed parameter-free category routing.

Paper: "SpecDrop: fixed parameter-free category routing" (NeurIPS 2026; anonymous; code ``Beryex/SpecDrop``).

Claim, in one sentence: when every training and inference unit carries one coarse category tag, a fixed,
parameter-free routing (branch :math:`\\pi(c)` weighted :math:`p_a`, the others a leakage :math:`p_i`, merged
through the fixed denominator :math:`S = p_a + (K-1) p_i`) specialises the branches and beats dense, No-Routing
and learned routers at matched parameters; when units span several categories it matches No-Routing.

What is here:

- :class:`SpecDropMerge` ``(num_branches, num_categories, p_active, p_inactive, category_to_branch=None,
  warmup_steps=0, stochastic=False)``: the merge weights :math:`a_k(c)/S`; unknown tags raise.
- :class:`SpecDropNet`: K two-layer branches (:class:`BranchMLP`) merged by SpecDrop, No-Routing (the mean)
  or a learned softmax router with load balancing (:class:`LearnedRouterMerge`).
- :func:`branch_pruning_drops` and :func:`specialization_index`: the per-branch pruning analysis.

Following the authors' code (read, not copied): the mixing is soft and deterministic (``SoftSpecDrop``, used
for the paper's results), the assignment is round robin :math:`c \\bmod K`, the denominator is
:math:`S = p_a + (K-1)p_i` and stays fixed during a cosine warm-up that starts from uniform weights
:math:`S/K`. What we inferred or chose:

- **Stochastic mode.** A Bernoulli reading (keep branch k with probability :math:`a_k(c)`, divide by S) is
  offered as ``stochastic=True``; the claim uses the soft mode.
- **Warm-up unit.** Steps (calls of :meth:`SpecDropMerge.step`), not epochs.
- **Branch pruning.** A pruned branch's weight is set to zero and the denominator kept, so the pruned merge is
  what the remaining branches contribute; specialisation = mean own-branch drop minus mean other-branch drop.
- **Learned router.** A soft softmax gate over all branches with Switch's balancing loss in its soft form
  :math:`K \\sum_k \\bar g_k^2`; the paper's routers (Soft MoE, Mod-Squad, DEMix, LoRAMoE) are not reproduced.

Quick-mode finding (claim revision 3, 3 seeds, synthetic 4 superclasses x 5 classes, K = 4 branches of width
16): **not reproduced** (per seed partial / reproduced / partial). SpecDrop beats dense, No-Routing and the
learned router in every seed, by +2.4 / +0.1 / +2.0 points over the best of them (95% bound -0.6 points: not
significant over 3 seeds; a dense MLP given the tag as input comes within 0.3-1.5 points), with clear
specialisation (pruning index 0.52-0.76 vs No-Routing's <= 0.04); with multi-category units (tags of
4-sample units) it loses 0.6-2.2 points to No-Routing at the largest allowed leakage p_i = 0.5 (2.7-4.2 at
p_i <= 0.3, revision 1). Revisions 1 and 2 also said not reproduced. Details and
controls in :mod:`geode.layers.specdrop.claim`.

Benchmark (one Adam step, K = 4 x 256, batch 1024, CPU, two runs on a shared machine):
0.89x [IQR 0.76-0.97] the speed of the dense MLP of matched parameters, 1.03x [0.96-1.30] No-Routing,
1.12x the learned router, memory 1.04x / 0.99x / 1.01x; an earlier run under heavier load gave 0.67x
[0.58-0.94] against No-Routing (noise: the merge is one gather of fixed weights).

Examples
--------
>>> import torch
>>> from geode.layers import SpecDropMerge, SpecDropNet, branch_pruning_drops, specialization_index
>>> merge = SpecDropMerge(num_branches=4, num_categories=4, p_active=0.7, p_inactive=0.1)
>>> merge(torch.tensor([0, 2]))                    # a_k(c) / S with S = p_a + (K - 1) p_i = 1.0
tensor([[0.7000, 0.1000, 0.1000, 0.1000],
        [0.1000, 0.1000, 0.7000, 0.1000]])
>>> _ = torch.manual_seed(0)
>>> net = SpecDropNet(n_in=10, hidden=16, n_out=3, num_branches=4, num_categories=4, p_inactive=0.1)
>>> x, tag, y = torch.randn(64, 10), torch.randint(0, 4, (64,)), torch.randint(0, 3, (64,))
>>> opt = torch.optim.Adam(net.parameters(), lr=1e-2)
>>> for _ in range(20):
...     opt.zero_grad()
...     loss = torch.nn.functional.cross_entropy(net(x, tag), y)
...     loss.backward()
...     opt.step()
>>> drops = branch_pruning_drops(net, x, y, tag, num_categories=4)         # accuracy lost per (branch, category)
>>> drops.shape
torch.Size([4, 4])
>>> specialization_index(drops, [0, 1, 2, 3]) > 0                          # each branch carries its own category
True
"""

from __future__ import annotations

from geode.layers.specdrop.module import (
    BranchMLP,
    LearnedRouterMerge,
    SpecDropMerge,
    SpecDropNet,
    branch_pruning_drops,
    specialization_index,
)

__all__ = [
    "BranchMLP",
    "LearnedRouterMerge",
    "SpecDropMerge",
    "SpecDropNet",
    "branch_pruning_drops",
    "specialization_index",
]
