"""Training stacked ensembles of small independent networks in one vectorised loop.

Scientific-ML benchmarks fit hundreds of tiny models (one per equation, sample size, noise level, seed
and cross-validation fold). One at a time, an Adam step of a 100-parameter network is all Python and
dispatch overhead. Every network of :mod:`geode.sciml` therefore accepts ``ensemble=E``: its parameters
get a leading member axis and it maps (E, n, d_in) to (E, n, d_out), member ``e`` using only its own
parameters. :func:`fit_ensemble` trains all members at once by minimising the sum of their losses

.. math::

    \\sum_{e=1}^{E} \\mathcal{L}_e(\\theta_e), \\qquad
    \\mathcal{L}_e(\\theta_e)
    = \\frac{\\sum_n w_{en} \\lVert f_{\\theta_e}(x_{en}) - y_{en} \\rVert^2}{\\sum_n w_{en}}.

The gradient of the sum with respect to :math:`\\theta_e` is :math:`\\nabla \\mathcal{L}_e` and Adam's
update is element-wise, so this is *exactly* independent training: every member follows the trajectory it
would follow alone (up to floating-point summation order). Zero weights let members of one ensemble use
different subsets of a shared, padded data array (training-set sizes, cross-validation folds).
:func:`member_state` and :func:`stack_members` move parameters between an ensemble and single networks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from geode.core.validation import check_int, check_positive, check_tensor

__all__ = ["fit_ensemble", "member_state", "stack_members"]


def _ensemble_size(model: nn.Module) -> int:
    size = getattr(model, "ensemble", None)
    if size is None:
        raise ValueError(f"model must be built with ensemble=E (a stacked ensemble); {type(model).__name__} is not")
    return int(size)


def fit_ensemble(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    *,
    weight: Tensor | None = None,
    steps: int = 600,
    lr: float | Tensor = 1e-2,
    lr_final: float | Tensor | None = None,
    grid_update_steps: Sequence[int] = (),
    penalty: Callable[[Tensor], Tensor] | None = None,
    l1: float | Tensor | None = None,
    clip: float | None = None,
) -> Tensor:
    """Train the ``E`` members of a stacked ensemble independently, in one loop (Adam, full batch).

    Parameters
    ----------
    model : nn.Module
        A network built with ``ensemble=E`` (e.g. ``GCKAN(..., ensemble=E)``, ``KAN``, ``MLP``); trained in place.
    x : Tensor, shape (E, n, d_in) or (n, d_in)
        Inputs per member, or shared by all.
    y : Tensor, shape (E, n, d_out)
        Targets per member.
    weight : Tensor, shape (E, n), optional
        Non-negative sample weights (0 drops a sample); every member needs a positive total. All ones by default.
    steps : int
        Adam steps.
    lr : float or Tensor of shape (E,)
        Adam learning rate, one for all members or one per member. Per-member rates are exact: Adam's update
        is :math:`\\eta\\,\\hat m / (\\sqrt{\\hat v} + \\epsilon)` with moments that do not depend on
        :math:`\\eta`, so the step is taken at rate 1 and each member's displacement is scaled by its rate.
    lr_final : float or Tensor of shape (E,), optional
        If given, the learning rate follows a cosine from ``lr`` at the first step to ``lr_final`` at the last.
    grid_update_steps : sequence of int
        Steps before which ``model.update_grid(x, weight)`` is called (B-spline KANs: every member's grids
        are re-fitted to its own weighted inputs).
    penalty : callable, optional
        ``penalty(x) -> Tensor (E,)``: a per-member regulariser added to each member's loss (an L1 term with
        its weight per member, say). Not part of the returned history.
    l1 : float or Tensor of shape (E,), optional
        Weight(s) of the model's own L1 term from ``model.forward_with_regularization(x) -> (y, reg (E,))``
        (KANs: mean absolute edge activation; MLPs: absolute weights), computed in the same pass as the
        output; ``penalty`` is the general (slower) hook.
    clip : float, optional
        Clip each member's gradient to this Euclidean norm (over all its parameters) before the step, as
        ``torch.nn.utils.clip_grad_norm_`` does for a single network.

    Returns
    -------
    Tensor, shape (steps, E)
        Every member's training loss at every step.
    """
    n_models = _ensemble_size(model)
    steps = check_int("steps", steps, low=1)
    per_member_lr = isinstance(lr, Tensor)
    if per_member_lr or isinstance(lr_final, Tensor):
        lr_t = torch.as_tensor(lr, dtype=torch.float64).flatten().expand(n_models).clone()
        lr_f = lr_t if lr_final is None else torch.as_tensor(lr_final, dtype=torch.float64).flatten().expand(n_models)
        if lr_t.numel() != n_models or not bool((lr_t > 0).all()) or not bool((lr_f > 0).all()):
            raise ValueError(f"lr and lr_final must be positive, scalars or one per member (E={n_models})")
        per_member_lr = True
    else:
        lr = check_positive("lr", lr)
        lr_final = lr if lr_final is None else check_positive("lr_final", lr_final)
    if clip is not None:
        clip = check_positive("clip", clip)
    if l1 is not None and not hasattr(model, "forward_with_regularization"):
        raise ValueError(f"l1 needs a model with forward_with_regularization(x); {type(model).__name__} has none")
    check_tensor("x", x, ndim=(2, 3), floating=True)
    check_tensor("y", y, floating=True)
    if y.ndim != 3 or y.shape[0] != n_models:
        raise ValueError(f"y must have shape (E={n_models}, n, d_out); got {tuple(y.shape)}")
    if not (x.ndim == 3 and x.shape[:2] == y.shape[:2]) and not (x.ndim == 2 and x.shape[0] == y.shape[1]):
        raise ValueError(
            f"x must have shape (E, n, d_in) or (n, d_in) matching y {tuple(y.shape)}; got {tuple(x.shape)}"
        )
    if weight is None:
        weight = torch.ones(y.shape[:2], dtype=y.dtype)
    if weight.shape != y.shape[:2]:
        raise ValueError(f"weight must have shape {tuple(y.shape[:2])}; got {tuple(weight.shape)}")
    if bool((weight < 0).any()) or bool((weight.sum(1) <= 0).any()):
        raise ValueError("weight must be non-negative with a positive total for every member")
    updates = {check_int("grid_update_steps", s, low=0) for s in grid_update_steps}
    if updates and not hasattr(model, "update_grid"):
        raise ValueError(
            f"grid_update_steps needs a model with update_grid(x, weight); {type(model).__name__} has none"
        )
    total = weight.sum(1)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=1.0 if per_member_lr else lr)
    history = torch.empty(steps, n_models, dtype=y.dtype)
    for step in range(steps):
        if step in updates:
            model.update_grid(x, weight)
        cos = 0.5 * (1.0 + math.cos(math.pi * step / max(steps - 1, 1)))
        if not per_member_lr and lr_final != lr:
            for group in opt.param_groups:
                group["lr"] = lr_final + (lr - lr_final) * cos
        opt.zero_grad(set_to_none=True)
        if l1 is not None:
            out, reg = model.forward_with_regularization(x)
        else:
            out, reg = model(x), None
        per_member = (weight * ((out - y) ** 2).sum(-1)).sum(-1) / total
        loss = per_member.sum()
        if reg is not None:
            loss = loss + (l1 * reg).sum()
        if penalty is not None:
            extra = penalty(x)
            if extra.shape != (n_models,):
                raise ValueError(f"penalty(x) must return shape ({n_models},); got {tuple(extra.shape)}")
            loss = loss + extra.sum()
        loss.backward()
        if clip is not None:
            sq = sum(p.grad.detach().pow(2).reshape(n_models, -1).sum(1) for p in params if p.grad is not None)
            factor = (clip / (sq.sqrt() + 1e-12)).clamp(max=1.0)
            for p in params:
                if p.grad is not None:
                    p.grad.mul_(factor.to(p.grad.dtype).view(-1, *([1] * (p.grad.ndim - 1))))
        if per_member_lr:
            rate = lr_f + (lr_t - lr_f) * cos
            before = [p.detach().clone() for p in params]
            opt.step()
            with torch.no_grad():
                for p, b in zip(params, before):
                    p.copy_(b + rate.to(p.dtype).view(-1, *([1] * (p.ndim - 1))) * (p - b))
        else:
            opt.step()
        history[step] = per_member.detach()
    return history


def member_state(model: nn.Module, index: int) -> dict[str, Tensor]:
    """The state dict of member ``index`` of a stacked ensemble, loadable into the same network built without
    ``ensemble`` (every stacked tensor has the single network's shape with a leading member axis)."""
    n_models = _ensemble_size(model)
    index = check_int("index", index, low=0, high=n_models - 1)
    return {k: v[index].clone() for k, v in model.state_dict().items()}


@torch.no_grad()
def stack_members(model: nn.Module, members: Sequence[nn.Module]) -> None:
    """Load single networks ``members`` (same architecture, built without ``ensemble``) into the stacked
    ensemble ``model``, member ``e`` from ``members[e]``."""
    n_models = _ensemble_size(model)
    if len(members) != n_models:
        raise ValueError(f"members must hold E = {n_models} networks; got {len(members)}")
    state = model.state_dict()
    for e, m in enumerate(members):
        single = m.state_dict()
        if set(single) != set(state):
            raise ValueError(f"members[{e}] does not have the ensemble's architecture")
        for k, v in single.items():
            if state[k][e].shape != v.shape:
                raise ValueError(f"members[{e}].{k} has shape {tuple(v.shape)}; expected {tuple(state[k][e].shape)}")
            state[k][e].copy_(v)
