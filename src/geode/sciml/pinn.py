"""Physics-informed neural networks (PINNs) for small 1-D/2-D boundary-value problems, DeepXDE-style.

A PINN :math:`u_\\theta` solves :math:`\\mathcal{N}[u](x) = 0` in :math:`\\Omega` with :math:`u = g` on
:math:`\\partial\\Omega` by minimising

.. math::

    \\mathcal{L}(\\theta) = \\frac{1}{N_r}\\sum_{n} \\rho\\big(\\mathcal{N}[u_\\theta](x_n)\\big)
    + w_b \\frac{1}{N_b}\\sum_{b} \\rho\\big(u_\\theta(x_b) - g(x_b)\\big)

over collocation points :math:`x_n` and boundary points :math:`x_b`, with :math:`\\rho(r) = r^2` (MSE) or a
robust loss (L1, Huber, Cauchy). Derivatives come from autograd. The problems here have closed-form
solutions, so the relative :math:`L^2` error :math:`\\lVert u_\\theta - u^*\\rVert_2 / \\lVert u^*\\rVert_2` on a
fine grid measures the result.

Losses take DeepXDE's signature ``loss(y_true, y_pred)``. :class:`StackedProblems` and stacked-ensemble
networks (``ensemble=E``, :mod:`geode.sciml.nets`) train ``E`` independent PINNs, on different problems or
with different losses, in one loop: derivatives of the summed outputs with respect to the stacked inputs are
each member's own derivatives, because members never interact.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from geode.core.validation import check_choice, check_int, check_positive, check_real

__all__ = [
    "AllenCahn1D",
    "Burgers1D",
    "HuberLoss",
    "L1Loss",
    "MSELoss",
    "PINNResult",
    "Poisson1D",
    "Poisson2D",
    "Problem",
    "StackedProblems",
    "derivatives",
    "relative_l2_error",
    "train_pinn",
]

# ----------------------------------------------------------------------------------------------- losses


class MSELoss(nn.Module):
    """Mean squared error :math:`\\operatorname{mean}((y_{pred} - y_{true})^2)`, signature ``(y_true, y_pred)``."""

    def forward(self, y_true: Tensor, y_pred: Tensor) -> Tensor:
        return ((y_pred - y_true) ** 2).mean()


class L1Loss(nn.Module):
    """Mean absolute error :math:`\\operatorname{mean}|y_{pred} - y_{true}|`, signature ``(y_true, y_pred)``."""

    def forward(self, y_true: Tensor, y_pred: Tensor) -> Tensor:
        return (y_pred - y_true).abs().mean()


class HuberLoss(nn.Module):
    """Huber loss :math:`\\rho_\\delta(r) = r^2/2` for :math:`|r| \\le \\delta`, else :math:`\\delta(|r| - \\delta/2)`.

    Parameters
    ----------
    delta : float
        Transition point :math:`\\delta > 0`.
    """

    def __init__(self, delta: float = 1.0) -> None:
        super().__init__()
        self.delta = check_positive("delta", delta)

    def forward(self, y_true: Tensor, y_pred: Tensor) -> Tensor:
        a = (y_pred - y_true).abs()
        return torch.where(a <= self.delta, 0.5 * a * a, self.delta * (a - 0.5 * self.delta)).mean()


# ------------------------------------------------------------------------------------------ derivatives


def derivatives(u: Tensor, x: Tensor, *, order: int = 2) -> tuple[Tensor, Tensor | None]:
    """Gradient and Laplacian of a scalar field ``u`` (..., 1) with respect to ``x`` (..., d) by autograd.

    ``x`` must require grad and ``u`` must be computed from it. Rows are independent (each output depends on
    its own input row only), so the gradient of :math:`\\sum u` is every row's gradient.

    Returns
    -------
    grad : Tensor, shape (..., d)
        :math:`\\nabla u`.
    laplacian : Tensor, shape (..., 1), or None when ``order == 1``
        :math:`\\Delta u = \\sum_i \\partial_{ii} u`.
    """
    check_choice("order", order, (1, 2))
    if not x.requires_grad:
        raise ValueError("x must require grad (x.requires_grad_()) before computing u from it")
    (grad,) = torch.autograd.grad(u.sum(), x, create_graph=True)
    if order == 1:
        return grad, None
    lap = torch.zeros_like(u)
    for i in range(x.shape[-1]):  # one backward per input dimension (d <= 3 here)
        (gi,) = torch.autograd.grad(grad[..., i].sum(), x, create_graph=True)
        lap = lap + gi[..., i : i + 1]
    return grad, lap


def relative_l2_error(pred: Tensor, exact: Tensor) -> Tensor:
    """:math:`\\lVert u - u^*\\rVert_2 / \\lVert u^*\\rVert_2` over the last two axes (points, outputs)."""
    return ((pred - exact) ** 2).sum((-2, -1)).sqrt() / (exact**2).sum((-2, -1)).sqrt()


# ----------------------------------------------------------------------------------------------- problems


class Problem:
    """A boundary-value problem with a closed-form solution.

    Subclasses define ``domain`` (one ``(low, high)`` per dimension), :meth:`residual` from the solution and
    its derivatives, and :meth:`exact`. :meth:`pde` is the DeepXDE-style ``pde(x, u)``.
    """

    domain: tuple[tuple[float, float], ...] = ((-1.0, 1.0),)
    name: str = "problem"

    @property
    def dim(self) -> int:
        return len(self.domain)

    def residual(self, x: Tensor, u: Tensor, grad: Tensor, lap: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def exact(self, x: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def pde(self, x: Tensor, u: Tensor) -> Tensor:
        """Residual :math:`\\mathcal{N}[u](x)` with derivatives of ``u`` (computed from ``x``) by autograd."""
        grad, lap = derivatives(u, x)
        return self.residual(x, u, grad, lap)

    def collocation(self, n: int) -> Tensor:
        """``n`` interior points: equispaced in 1-D; in 2-D an ``m x m`` grid, :math:`m = \\lceil\\sqrt n\\rceil`."""
        n = check_int("n", n, low=1)
        axes = []
        m = n if self.dim == 1 else math.ceil(n ** (1.0 / self.dim))
        for lo, hi in self.domain:
            axes.append(torch.linspace(lo, hi, m + 2, dtype=torch.get_default_dtype())[1:-1])
        return torch.cartesian_prod(*axes).reshape(-1, self.dim) if self.dim > 1 else axes[0].unsqueeze(-1)

    def boundary(self, n_per_side: int = 32) -> Tensor:
        """Boundary points: the two ends in 1-D; ``n_per_side`` equispaced points per edge in 2-D."""
        dt = torch.get_default_dtype()
        if self.dim == 1:
            return torch.tensor([[self.domain[0][0]], [self.domain[0][1]]], dtype=dt)
        (a, b), (c, d) = self.domain
        t = torch.linspace(0.0, 1.0, n_per_side + 1, dtype=dt)[:-1]
        edges = [
            torch.stack([a + (b - a) * t, torch.full_like(t, c)], -1),
            torch.stack([torch.full_like(t, b), c + (d - c) * t], -1),
            torch.stack([b - (b - a) * t, torch.full_like(t, d)], -1),
            torch.stack([torch.full_like(t, a), d - (d - c) * t], -1),
        ]
        return torch.cat(edges)

    def test_points(self, n: int = 2001) -> Tensor:
        """An equispaced grid including the boundary (``n`` points in 1-D, about ``n`` in 2-D)."""
        m = n if self.dim == 1 else math.ceil(math.sqrt(n))
        axes = [torch.linspace(lo, hi, m, dtype=torch.get_default_dtype()) for lo, hi in self.domain]
        return torch.cartesian_prod(*axes).reshape(-1, self.dim) if self.dim > 1 else axes[0].unsqueeze(-1)


@dataclass(frozen=True)
class AllenCahn1D(Problem):
    """Stationary Allen-Cahn: :math:`\\varepsilon^2 u'' + u - u^3 = 0` on :math:`[-1, 1]`,
    :math:`u(\\pm 1) = \\pm\\tanh(1/(\\sqrt2\\varepsilon))`; solution :math:`u^* = \\tanh(x/(\\sqrt2\\varepsilon))`.

    The interface has width :math:`\\sim\\varepsilon`; a PINN can be trapped at the spurious roots
    :math:`u \\equiv 0, \\pm 1` of :math:`u - u^3` away from the boundary.
    """

    eps: float = 1.0

    def __post_init__(self) -> None:
        check_positive("eps", self.eps)

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"Allen-Cahn eps={self.eps:g}"

    def residual(self, x: Tensor, u: Tensor, grad: Tensor, lap: Tensor) -> Tensor:
        return self.eps**2 * lap + u - u**3

    def exact(self, x: Tensor) -> Tensor:
        return torch.tanh(x / (math.sqrt(2.0) * self.eps))


@dataclass(frozen=True)
class Poisson1D(Problem):
    """1-D Poisson: :math:`-u'' = f` on :math:`[-1, 1]`, :math:`u(\\pm1) = 0`, with the two-scale solution
    :math:`u^* = \\sin(\\pi x) + a \\sin(k\\pi x)` (``k`` an integer), so
    :math:`f = \\pi^2 \\sin(\\pi x) + a k^2\\pi^2 \\sin(k\\pi x)`."""

    amplitude: float = 0.2
    k: int = 5

    def __post_init__(self) -> None:
        check_real("amplitude", self.amplitude)
        check_int("k", self.k, low=1)

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"Poisson k={self.k}"

    def residual(self, x: Tensor, u: Tensor, grad: Tensor, lap: Tensor) -> Tensor:
        f = math.pi**2 * torch.sin(math.pi * x) + self.amplitude * (self.k * math.pi) ** 2 * torch.sin(
            self.k * math.pi * x
        )
        return lap + f

    def exact(self, x: Tensor) -> Tensor:
        return torch.sin(math.pi * x) + self.amplitude * torch.sin(self.k * math.pi * x)


@dataclass(frozen=True)
class Burgers1D(Problem):
    """Steady viscous Burgers: :math:`\\nu u'' - u u' = 0` on :math:`[-1, 1]`,
    :math:`u(\\pm1) = \\mp\\tanh(1/(2\\nu))`; solution :math:`u^* = -\\tanh(x/(2\\nu))`, a viscous shock of width
    :math:`\\sim\\nu`."""

    nu: float = 0.1

    def __post_init__(self) -> None:
        check_positive("nu", self.nu)

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"Burgers nu={self.nu:g}"

    def residual(self, x: Tensor, u: Tensor, grad: Tensor, lap: Tensor) -> Tensor:
        return self.nu * lap - u * grad

    def exact(self, x: Tensor) -> Tensor:
        return -torch.tanh(x / (2.0 * self.nu))


@dataclass(frozen=True)
class Poisson2D(Problem):
    """2-D Poisson: :math:`-\\Delta u = 2\\pi^2 \\sin(\\pi x)\\sin(\\pi y)` on :math:`[-1,1]^2`, :math:`u = 0` on the
    boundary; solution :math:`u^* = \\sin(\\pi x)\\sin(\\pi y)`."""

    domain: tuple[tuple[float, float], ...] = ((-1.0, 1.0), (-1.0, 1.0))
    name: str = "Poisson 2-D"

    def residual(self, x: Tensor, u: Tensor, grad: Tensor, lap: Tensor) -> Tensor:
        return lap + 2.0 * math.pi**2 * self.exact(x)

    def exact(self, x: Tensor) -> Tensor:
        return (torch.sin(math.pi * x[..., :1]) * torch.sin(math.pi * x[..., 1:2])).reshape(*x.shape[:-1], 1)


class StackedProblems:
    """Problems for the members of a stacked-ensemble PINN, one per member, sharing a domain.

    Member ``e`` solves ``problems[e]``. Derivatives are computed once for the whole stack; each member's
    residual is then its own problem's formula on its slice.
    """

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        if not self.problems:
            raise ValueError("problems must hold at least one problem")
        for i, p in enumerate(self.problems):
            if not isinstance(p, Problem):
                raise TypeError(f"problems[{i}] must be a Problem; got {type(p).__name__}")
            if p.domain != self.problems[0].domain:
                raise ValueError(f"problems[{i}] has domain {p.domain}; every member needs {self.problems[0].domain}")
        self.domain = self.problems[0].domain

    def __len__(self) -> int:
        return len(self.problems)

    def residual(self, x: Tensor, u: Tensor, grad: Tensor, lap: Tensor) -> Tensor:
        return torch.stack([p.residual(x[e], u[e], grad[e], lap[e]) for e, p in enumerate(self.problems)])

    def exact(self, x: Tensor) -> Tensor:
        """Exact solutions, shape (E, n, 1), for shared points ``x`` (n, d) or per-member (E, n, d)."""
        if x.ndim == 2:
            return torch.stack([p.exact(x) for p in self.problems])
        return torch.stack([p.exact(x[e]) for e, p in enumerate(self.problems)])


# ------------------------------------------------------------------------------------------------- training


@dataclass
class PINNResult:
    """Outcome of :func:`train_pinn`.

    Attributes
    ----------
    rel_l2 : Tensor, shape () or (E,)
        Relative :math:`L^2` error on :meth:`Problem.test_points`.
    loss_history : Tensor, shape (steps,) or (steps, E)
        Training loss per step (per member).
    residual_rms : Tensor, shape () or (E,)
        Root-mean-square PDE residual at the collocation points after training.
    """

    rel_l2: Tensor
    loss_history: Tensor
    residual_rms: Tensor


def train_pinn(
    model: nn.Module,
    problem: Problem | StackedProblems,
    *,
    loss: Callable[[Tensor, Tensor], Tensor] | Sequence[Callable[[Tensor, Tensor], Tensor]] | None = None,
    n_collocation: int = 256,
    steps: int = 2000,
    lr: float = 1e-3,
    boundary_weight: float = 1.0,
    n_test: int = 2001,
) -> PINNResult:
    """Train a PINN with Adam on a fixed set of collocation points, full batch.

    Parameters
    ----------
    model : nn.Module
        Maps (n, d) to (n, 1); a stacked ensemble (``ensemble=E``) maps (n, d) to (E, n, 1).
    problem : Problem or StackedProblems
        The problem (a :class:`StackedProblems` of length E for an ensemble; a single problem is shared).
    loss : callable or sequence of callables, optional
        :math:`\\rho` as ``loss(y_true, y_pred)`` (default :class:`MSELoss`), or one per member.
    n_collocation : int
        Interior collocation points (:meth:`Problem.collocation`).
    steps : int
        Adam steps.
    lr : float
        Learning rate.
    boundary_weight : float
        :math:`w_b \\ge 0`.
    n_test : int
        Points of the error grid.

    Returns
    -------
    PINNResult
    """
    steps = check_int("steps", steps, low=1)
    lr = check_positive("lr", lr)
    boundary_weight = check_real("boundary_weight", boundary_weight, low=0.0)
    n_collocation = check_int("n_collocation", n_collocation, low=1)
    ensemble = getattr(model, "ensemble", None)
    if ensemble is not None and isinstance(problem, Problem):
        problem = StackedProblems([problem] * ensemble)
    if ensemble is None and isinstance(problem, StackedProblems):
        raise ValueError("a StackedProblems needs a stacked-ensemble model (ensemble=E)")
    n_members = 1 if ensemble is None else ensemble
    if isinstance(problem, StackedProblems) and len(problem) != n_members:
        raise ValueError(f"problem stacks {len(problem)} problems for an ensemble of {n_members}")
    losses = list(loss) if isinstance(loss, Sequence) else [loss or MSELoss()] * n_members
    if len(losses) != n_members:
        raise ValueError(f"loss must be one callable or {n_members} (one per member); got {len(losses)}")
    base = problem.problems[0] if isinstance(problem, StackedProblems) else problem
    x_col = base.collocation(n_collocation)
    x_bd = base.boundary()
    u_bd = problem.exact(x_bd)
    dt = next(model.parameters()).dtype
    x_col, x_bd, u_bd = x_col.to(dt), x_bd.to(dt), u_bd.to(dt)
    if ensemble is not None:
        x_col = x_col.unsqueeze(0).expand(ensemble, *x_col.shape).clone()
    x_col.requires_grad_(True)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    history = torch.empty(steps, n_members, dtype=dt)
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        u = model(x_col)
        grad, lap = derivatives(u, x_col)
        r = problem.residual(x_col, u, grad, lap)
        ub = model(x_bd)
        if ensemble is None:
            r, ub, ubt = r.unsqueeze(0), ub.unsqueeze(0), u_bd.unsqueeze(0)
        else:
            ubt = u_bd
        per_member = torch.stack(
            [fn(torch.zeros_like(r[e]), r[e]) + boundary_weight * fn(ubt[e], ub[e]) for e, fn in enumerate(losses)]
        )
        per_member.sum().backward()
        opt.step()
        history[step] = per_member.detach()
    u = model(x_col)
    grad, lap = derivatives(u, x_col)
    res_rms = (problem.residual(x_col, u, grad, lap) ** 2).mean((-2, -1)).sqrt().detach()
    x_test = base.test_points(n_test).to(dt)
    with torch.no_grad():
        err = relative_l2_error(model(x_test), problem.exact(x_test).to(dt))
    if ensemble is None:
        history = history[:, 0]
    return PINNResult(rel_l2=err, loss_history=history, residual_rms=res_rms)
