r"""SpecDrop: fixed, parameter-free category routing over K parallel branches, and its baselines.

A unit (a sample, a sequence) carries one coarse category tag :math:`c \in \{0, \dots, M-1\}`, known at
training and at inference. Category :math:`c` is assigned to branch :math:`\pi(c)` (round robin,
:math:`\pi(c) = c \bmod K`, or a given table). Branch :math:`k` gets the weight

.. math::

    a_k(c) = p_a \,[k = \pi(c)] + p_i \,[k \ne \pi(c)], \qquad
    y = \frac{1}{S} \sum_{k=1}^{K} a_k(c)\, f_k(x), \qquad S = p_a + (K - 1)\, p_i ,

with a category-independent denominator :math:`S` that keeps the merged output at single-branch scale
(the weights :math:`a_k(c)/S` sum to one for every :math:`c`). With :math:`p_i = p_a` the merge is the
plain mean of the branches, the multi-branch No-Routing baseline; with :math:`p_i = 0` it is hard
routing. There are no router parameters and no auxiliary loss.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from geode.core.validation import check_choice, check_int, check_real, check_tensor

__all__ = [
    "BranchMLP",
    "LearnedRouterMerge",
    "SpecDropMerge",
    "SpecDropNet",
    "branch_pruning_drops",
    "specialization_index",
]


def _check_x(x: Any, n_in: int) -> torch.Tensor:
    """``x`` must be a floating ``(B, n_in)`` tensor (no scan of its values: forwards run every step)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor of shape (B, {n_in}); got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"x must be a floating-point tensor; got dtype {x.dtype}")
    if x.ndim != 2 or x.shape[1] != n_in:
        raise ValueError(f"x must have shape (B, n_in) = (B, {n_in}); got {tuple(x.shape)}")
    return x


def _check_categories(category: Any, n_categories: int, batch: int) -> torch.Tensor:
    if not isinstance(category, torch.Tensor):
        category = torch.as_tensor(category)
    if category.dtype.is_floating_point or category.dtype == torch.bool:
        raise TypeError(f"category must hold integer tags; got dtype {category.dtype}")
    if category.ndim != 1 or category.shape[0] != batch:
        raise ValueError(
            f"category must have shape ({batch},) (one tag per unit, i.e. per row of x); got {tuple(category.shape)}"
        )
    if batch and (int(category.min()) < 0 or int(category.max()) >= n_categories):
        bad = sorted({int(v) for v in category.tolist() if not 0 <= int(v) < n_categories})
        raise ValueError(f"category holds unknown tags {bad[:5]}; known tags are 0..{n_categories - 1}")
    return category.long()


class SpecDropMerge(nn.Module):
    r"""The SpecDrop merge weights :math:`a_k(c) / S` for a batch of category tags.

    Parameters
    ----------
    num_branches : int
        :math:`K \ge 1`.
    num_categories : int
        :math:`M \ge 1`, the number of known tags; any other tag is an error, in training and at inference.
    p_active : float
        :math:`p_a \in (0, 1]`, the weight of a unit's own branch.
    p_inactive : float
        :math:`p_i \in [0, p_a]`, the leakage to every other branch (the paper asks :math:`p_i > 0`;
        :math:`p_i = 0`, hard routing, is allowed as an ablation).
    category_to_branch : sequence of int, optional
        :math:`\pi`, one branch per category; default round robin :math:`c \bmod K` (the authors' default).
    warmup_steps : int
        Cosine warm-up of the weights from uniform :math:`(S/K, S/K)` to :math:`(p_a, p_i)` over this many
        calls of :meth:`step` (the authors' schedule; :math:`S` stays fixed throughout). ``0``: none.
    stochastic : bool
        If true, training keeps branch :math:`k` with probability :math:`a_k(c)` (Bernoulli) and divides
        by the same :math:`S`, a dropout-like reading; evaluation uses the expected weights. Default false:
        the authors' code mixes softly and deterministically.

    Notes
    -----
    ``forward(category)`` returns a ``(B, K)`` tensor of weights :math:`a_k(c)/S`, rows summing to one
    (in expectation in the stochastic mode).
    """

    def __init__(
        self,
        num_branches: int,
        num_categories: int,
        p_active: float = 0.7,
        p_inactive: float = 0.3,
        category_to_branch: Sequence[int] | None = None,
        warmup_steps: int = 0,
        stochastic: bool = False,
    ) -> None:
        super().__init__()
        self.num_branches = check_int("num_branches", num_branches, low=1)
        self.num_categories = check_int("num_categories", num_categories, low=1)
        self.p_active = check_real("p_active", p_active, low=0.0, high=1.0, low_inclusive=False)
        self.p_inactive = check_real("p_inactive", p_inactive, low=0.0, high=self.p_active)
        self.warmup_steps = check_int("warmup_steps", warmup_steps, low=0)
        self.stochastic = bool(stochastic)
        if category_to_branch is None:
            table = [c % self.num_branches for c in range(self.num_categories)]
        else:
            table = [int(b) for b in category_to_branch]
            if len(table) != self.num_categories:
                raise ValueError(
                    f"category_to_branch must have one branch per category ({self.num_categories}); got {len(table)}"
                )
            if any(not 0 <= b < self.num_branches for b in table):
                raise ValueError(f"category_to_branch entries must lie in 0..{self.num_branches - 1}; got {table}")
        assign = torch.zeros(self.num_categories, self.num_branches)
        assign[torch.arange(self.num_categories), torch.tensor(table)] = 1.0
        self.register_buffer("assignment", assign, persistent=False)
        self.denominator = self.p_active + (self.num_branches - 1) * self.p_inactive
        self.t = 0

    def step(self) -> None:
        """Advance the warm-up by one step (call once per optimiser step)."""
        self.t += 1

    def current_probs(self) -> tuple[float, float]:
        """:math:`(p_a(t), p_i(t))` on the cosine warm-up from :math:`S/K` (both) to :math:`(p_a, p_i)`."""
        if self.warmup_steps == 0 or self.t >= self.warmup_steps:
            return self.p_active, self.p_inactive
        alpha = 0.5 * (1.0 - math.cos(math.pi * self.t / self.warmup_steps))
        u = self.denominator / self.num_branches
        return u + (self.p_active - u) * alpha, u + (self.p_inactive - u) * alpha

    def probabilities(self, category: Any) -> torch.Tensor:
        """The unnormalised weights :math:`a_k(c)`, shape ``(B, K)``."""
        n = len(category) if not isinstance(category, torch.Tensor) else category.shape[0] if category.ndim else -1
        c = _check_categories(category, self.num_categories, n)
        pa, pi = self.current_probs()
        a = self.assignment.to(c.device)[c]
        return a * pa + (1.0 - a) * pi

    def forward(self, category: Any) -> torch.Tensor:
        a = self.probabilities(category)
        if self.stochastic and self.training:
            a = torch.bernoulli(a)
        return a / self.denominator

    def extra_repr(self) -> str:
        return (
            f"K={self.num_branches}, M={self.num_categories}, p_active={self.p_active}, "
            f"p_inactive={self.p_inactive}, S={self.denominator:g}, stochastic={self.stochastic}"
        )


class LearnedRouterMerge(nn.Module):
    r"""Baseline: a learned softmax router :math:`g(x) = \mathrm{softmax}(W x + b)` over the K branches.

    Soft (dense) mixing of all branches; the load-balancing loss is Switch's :math:`K \sum_k f_k P_k` with
    the soft assignment :math:`f_k = P_k = \mathrm{mean}_b\, g_k(x_b)`, i.e. :math:`K \sum_k P_k^2`, equal to
    1 when the load is balanced; it is stored in :attr:`aux_loss` after each call.
    """

    def __init__(self, n_in: int, num_branches: int) -> None:
        super().__init__()
        self.num_branches = check_int("num_branches", num_branches, low=1)
        self.gate = nn.Linear(check_int("n_in", n_in, low=1), self.num_branches)
        self.aux_loss = torch.zeros(())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Router weights ``(B, K)`` for ``x`` ``(B, n_in)``; NaN and inf propagate as in torch's own layers and an
        empty batch gives an empty output."""
        _check_x(x, self.gate.in_features)
        g = torch.softmax(self.gate(x), dim=-1)
        p = g.mean(0)
        self.aux_loss = self.num_branches * (p * p).sum()
        return g


class BranchMLP(nn.Module):
    r"""K independent two-layer ReLU branches :math:`f_k(x) = W_{2,k}\,\mathrm{relu}(W_{1,k} x + b_{1,k}) + b_{2,k}`.

    Computed together with batched matrix products; ``forward(x)`` returns ``(B, K, n_out)``. With
    ``keep`` (a ``(K,)`` mask) a pruned branch outputs zero.
    """

    def __init__(self, n_in: int, hidden: int, n_out: int, num_branches: int) -> None:
        super().__init__()
        k = check_int("num_branches", num_branches, low=1)
        n_in = check_int("n_in", n_in, low=1)
        hidden = check_int("hidden", hidden, low=1)
        n_out = check_int("n_out", n_out, low=1)
        b1, b2 = 1.0 / math.sqrt(n_in), 1.0 / math.sqrt(hidden)  # torch's Linear default range, per branch
        self.w1 = nn.Parameter(torch.empty(k, n_in, hidden).uniform_(-b1, b1))
        self.b1 = nn.Parameter(torch.empty(k, 1, hidden).uniform_(-b1, b1))
        self.w2 = nn.Parameter(torch.empty(k, hidden, n_out).uniform_(-b2, b2))
        self.b2 = nn.Parameter(torch.empty(k, 1, n_out).uniform_(-b2, b2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Branch outputs ``(B, K, n_out)`` for ``x`` ``(B, n_in)``; NaN and inf propagate as in torch's own layers
        and an empty batch gives an empty output."""
        _check_x(x, self.w1.shape[1])
        h = torch.relu(torch.matmul(x.unsqueeze(0), self.w1) + self.b1)  # (K, B, H)
        return (torch.matmul(h, self.w2) + self.b2).transpose(0, 1)  # (B, K, n_out)


class SpecDropNet(nn.Module):
    r"""A K-branch network merged by SpecDrop, by No-Routing or by a learned router.

    Parameters
    ----------
    n_in, hidden, n_out : int
        Input size, hidden width of each branch, output size (logits).
    num_branches : int
        :math:`K`.
    num_categories : int
        :math:`M` (only used by ``routing="specdrop"``).
    routing : {"specdrop", "none", "learned"}
        ``"specdrop"``: the fixed merge :class:`SpecDropMerge`; ``"none"``: the mean of the branches
        (No-Routing; equals SpecDrop with :math:`p_i = p_a`); ``"learned"``: :class:`LearnedRouterMerge`.
    p_active, p_inactive, category_to_branch, warmup_steps, stochastic
        Passed to :class:`SpecDropMerge`.

    ``forward(x, category=None, keep=None)`` returns ``(B, n_out)`` logits; ``category`` is required for
    SpecDrop; ``keep`` (``(K,)`` of 0/1) prunes branches without changing the denominator. NaN and inf in ``x``
    propagate as in torch's own layers (no per-step scan of the input).
    """

    def __init__(
        self,
        n_in: int,
        hidden: int,
        n_out: int,
        num_branches: int,
        num_categories: int = 1,
        routing: str = "specdrop",
        p_active: float = 0.7,
        p_inactive: float = 0.3,
        category_to_branch: Sequence[int] | None = None,
        warmup_steps: int = 0,
        stochastic: bool = False,
    ) -> None:
        super().__init__()
        self.routing = check_choice("routing", routing, ("specdrop", "none", "learned"))
        self.branches = BranchMLP(n_in, hidden, n_out, num_branches)
        self.num_branches = num_branches
        self.merge: nn.Module | None = None
        if routing == "specdrop":
            self.merge = SpecDropMerge(
                num_branches, num_categories, p_active, p_inactive, category_to_branch, warmup_steps, stochastic
            )
        elif routing == "learned":
            self.merge = LearnedRouterMerge(n_in, num_branches)

    def weights(self, x: torch.Tensor, category: Any = None) -> torch.Tensor:
        """The ``(B, K)`` merge weights for this batch."""
        if self.routing == "specdrop":
            if category is None:
                raise ValueError("category is required for SpecDrop routing (one tag per unit)")
            category = _check_categories(category, self.merge.num_categories, x.shape[0])  # type: ignore[union-attr]
            return self.merge(category)  # type: ignore[misc]
        if self.routing == "learned":
            return self.merge(x)  # type: ignore[misc]
        return x.new_full((x.shape[0], self.num_branches), 1.0 / self.num_branches)

    def aux_loss(self) -> torch.Tensor:
        """The router's load-balancing loss of the last call (zero for fixed routing)."""
        return self.merge.aux_loss if self.routing == "learned" else torch.zeros(())  # type: ignore[union-attr]

    def forward(self, x: torch.Tensor, category: Any = None, keep: torch.Tensor | None = None) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor of shape (B, n_in); got {type(x).__name__}")
        if x.ndim != 2:
            raise ValueError(f"x must have shape (B, n_in); got {tuple(x.shape)}")
        w = self.weights(x, category)
        if keep is not None:
            if not isinstance(keep, torch.Tensor):
                raise TypeError(
                    f"keep must be a torch.Tensor of shape ({self.num_branches},); got {type(keep).__name__}"
                )
            if keep.shape != (self.num_branches,):
                raise ValueError(
                    f"keep must have shape ({self.num_branches},) (one 0/1 per branch); got {tuple(keep.shape)}"
                )
            if keep.dtype.is_floating_point and not bool(keep.isfinite().all()):
                raise ValueError("keep must contain only finite values (0/1 per branch; found NaN or inf)")
            w = w * keep.to(w)
        return (w.unsqueeze(-1) * self.branches(x)).sum(1)


@torch.no_grad()
def branch_pruning_drops(
    model: SpecDropNet,
    x: torch.Tensor,
    y: torch.Tensor,
    category: torch.Tensor,
    num_categories: int,
    tags: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""Per-branch pruning sensitivity: ``drops[k, c]`` = accuracy on category ``c`` lost when branch ``k`` is
    removed (its weight set to zero, the denominator unchanged).

    Returns a ``(K, M)`` tensor. ``category`` is the units' *true* category (it groups the accuracy); the
    model is fed ``tags`` (default: ``category``), which differ for a model trained with misaligned tags.
    """
    if not isinstance(model, SpecDropNet):
        raise TypeError(f"model must be a SpecDropNet; got {type(model).__name__}")
    x = check_tensor("x", x, ndim=2, floating=True)
    if not isinstance(y, torch.Tensor) or y.shape != (x.shape[0],):
        got = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
        raise ValueError(f"y must be a tensor of shape ({x.shape[0]},) (one label per row of x); got {got}")
    num_categories = check_int("num_categories", num_categories, low=1)
    model.eval()
    k = model.num_branches
    c = _check_categories(category, num_categories, x.shape[0])
    ones = torch.ones(k)
    t = c if tags is None else tags
    base = model(x, t).argmax(-1) == y
    drops = torch.zeros(k, num_categories)
    for j in range(k):
        keep = ones.clone()
        keep[j] = 0.0
        pruned = model(x, t, keep=keep).argmax(-1) == y
        for m in range(num_categories):
            sel = c == m
            if sel.any():
                drops[j, m] = base[sel].float().mean() - pruned[sel].float().mean()
    return drops


def specialization_index(drops: torch.Tensor, category_to_branch: Sequence[int]) -> float:
    r"""Mean pruning drop of a category's own branch minus the mean drop of the other branches.

    :math:`\frac{1}{M}\sum_c d_{\pi(c), c} - \frac{1}{M (K-1)} \sum_c \sum_{k \ne \pi(c)} d_{k, c}`; zero for
    branches that are interchangeable, large when each branch carries its categories. Needs :math:`K \ge 2`.
    """
    drops = check_tensor("drops", drops, ndim=2)
    k, m = drops.shape
    if k < 2:
        raise ValueError(f"drops must have at least two branches (rows); got shape {tuple(drops.shape)}")
    if len(category_to_branch) != m:
        raise ValueError(f"category_to_branch must have {m} entries; got {len(category_to_branch)}")
    own = torch.zeros(k, m, dtype=torch.bool)
    own[torch.tensor(list(category_to_branch)), torch.arange(m)] = True
    return float(drops[own].mean() - drops[~own].mean())
