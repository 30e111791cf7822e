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

from geode.core.validation import check_choice, check_int, check_positive, check_real, check_tensor

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


def check_loss_args(y_true: Tensor, y_pred: Tensor) -> None:
    """Type and shape checks of a loss's ``(y_true, y_pred)``: tensors, ``y_true`` broadcasting onto ``y_pred``.

    No scan of the values (a loss runs in every training step): NaN and inf give a NaN/inf loss, as torch's own.
    """
    for name, t in (("y_true", y_true), ("y_pred", y_pred)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor; got {type(t).__name__}")
    try:
        shape = torch.broadcast_shapes(y_true.shape, y_pred.shape)
    except RuntimeError:
        shape = None
    if shape != y_pred.shape or y_pred.numel() == 0:
        raise ValueError(
            f"y_true must broadcast onto y_pred's shape {tuple(y_pred.shape)} (non-empty); got y_true "
            f"{tuple(y_true.shape)} and y_pred {tuple(y_pred.shape)}"
        )


class MSELoss(nn.Module):
    """Mean squared error :math:`\\operatorname{mean}((y_{pred} - y_{true})^2)`, signature ``(y_true, y_pred)``.

    NaN and inf propagate to the loss as in torch's own losses (no per-step scan; see :func:`check_loss_args`).
    """

    def forward(self, y_true: Tensor, y_pred: Tensor) -> Tensor:
        check_loss_args(y_true, y_pred)
        return ((y_pred - y_true) ** 2).mean()


class L1Loss(nn.Module):
    """Mean absolute error :math:`\\operatorname{mean}|y_{pred} - y_{true}|`, signature ``(y_true, y_pred)``.

    NaN and inf propagate to the loss as in torch's own losses (no per-step scan; see :func:`check_loss_args`).
    """

    def forward(self, y_true: Tensor, y_pred: Tensor) -> Tensor:
        check_loss_args(y_true, y_pred)
        return (y_pred - y_true).abs().mean()


class HuberLoss(nn.Module):
    """Huber loss :math:`\\rho_\\delta(r) = r^2/2` for :math:`|r| \\le \\delta`, else :math:`\\delta(|r| - \\delta/2)`.

    Parameters
    ----------
    delta : float
        Transition point :math:`\\delta > 0`.

    NaN and inf propagate to the loss as in torch's own losses (no per-step scan; see :func:`check_loss_args`).
    """

    def __init__(self, delta: float = 1.0) -> None:
        super().__init__()
        self.delta = check_positive("delta", delta)

    def forward(self, y_true: Tensor, y_pred: Tensor) -> Tensor:
        check_loss_args(y_true, y_pred)
        a = (y_pred - y_true).abs()
        return torch.where(a <= self.delta, 0.5 * a * a, self.delta * (a - 0.5 * self.delta)).mean()


# ------------------------------------------------------------------------------------------ derivatives


def derivatives(u: Tensor, x: Tensor, *, order: int = 2) -> tuple[Tensor, Tensor | None]:
    """Gradient and Laplacian of a scalar field ``u`` (..., 1) with respect to ``x`` (..., d) by autograd.

    ``x`` must require grad and ``u`` must be computed from it. Rows are independent (each output depends on
    its own input row only), so the gradient of :math:`\\sum u` is every row's gradient. Called in every
    training step, it checks types and shapes, not values: NaN propagates like torch's own layers.

    Returns
    -------
    grad : Tensor, shape (..., d)
        :math:`\\nabla u`.
    laplacian : Tensor, shape (..., 1), or None when ``order == 1``
        :math:`\\Delta u = \\sum_i \\partial_{ii} u`.
    """
    check_choice("order", order, (1, 2))
    for name, t in (("u", u), ("x", x)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor; got {type(t).__name__}")
    if x.ndim == 0:
        raise ValueError("x must have shape (..., d); got a scalar")
    if u.shape != (*x.shape[:-1], 1):
        raise ValueError(f"u must have shape x.shape[:-1] + (1,) = {(*x.shape[:-1], 1)}; got {tuple(u.shape)}")
    if not x.requires_grad:
        raise ValueError("x must require grad (x.requires_grad_()) before computing u from it")
    try:
        (grad,) = torch.autograd.grad(u.sum(), x, create_graph=True)
    except RuntimeError as exc:
        raise ValueError(f"u must be computed from x (x is not in u's autograd graph): {exc}") from None
    if order == 1:
        return grad, None
    lap = torch.zeros_like(u)
    for i in range(x.shape[-1]):  # one backward per input dimension (d <= 3 here)
        (gi,) = torch.autograd.grad(grad[..., i].sum(), x, create_graph=True)
        lap = lap + gi[..., i : i + 1]
    return grad, lap


def _relative_l2(pred: Tensor, exact: Tensor) -> Tensor:
    return ((pred - exact) ** 2).sum((-2, -1)).sqrt() / (exact**2).sum((-2, -1)).sqrt()


def relative_l2_error(pred: Tensor, exact: Tensor) -> Tensor:
    """:math:`\\lVert u - u^*\\rVert_2 / \\lVert u^*\\rVert_2` over the last two axes (points, outputs).

    Parameters
    ----------
    pred : torch.Tensor
        The prediction :math:`u`: ``(points,)`` for one scalar function on one grid, or ``(..., points, outputs)``;
        leading axes (e.g. ensemble members ``(E, points, outputs)``) broadcast against ``exact``'s.
    exact : torch.Tensor
        The reference :math:`u^*`, same rank convention: ``(points,)`` with a 1-D ``pred`` of the same length, else
        ``(..., points, outputs)`` with the same last two axes as ``pred``.

    Returns
    -------
    torch.Tensor
        One error per leading index: a 0-d tensor for a 1-D pair (treated as ``(points, 1)``) or a
        ``(points, outputs)`` pair, else the broadcast leading shape.

    Raises
    ------
    TypeError
        If either is not a floating-point tensor.
    ValueError
        If either is empty or holds NaN/inf, if the shapes do not match (one 1-D and one not, different
        ``(points, outputs)``, leading axes that do not broadcast), or if ``exact`` is identically zero (the
        relative error is undefined).

    Examples
    --------
    >>> relative_l2_error(torch.tensor([1.0, 1.0]), torch.tensor([2.0, 2.0]))
    tensor(0.5000)
    """
    check_tensor("pred", pred, floating=True)
    check_tensor("exact", exact, floating=True)
    if (pred.ndim == 1) != (exact.ndim == 1):
        raise ValueError(
            "pred and exact must both be 1-D (one function on one grid) or both (..., points, outputs); "
            f"got pred {tuple(pred.shape)} and exact {tuple(exact.shape)}"
        )
    if pred.ndim == 1:
        if pred.shape != exact.shape:
            raise ValueError(f"pred must have exact's shape {tuple(exact.shape)}; got {tuple(pred.shape)}")
        pred, exact = pred[:, None], exact[:, None]
    if pred.shape[-2:] != exact.shape[-2:]:
        raise ValueError(
            f"pred must have exact's (points, outputs) = {tuple(exact.shape[-2:])} as its last two axes; "
            f"got pred {tuple(pred.shape)}"
        )
    try:
        torch.broadcast_shapes(pred.shape, exact.shape)
    except RuntimeError:
        raise ValueError(
            f"pred's leading axes must broadcast against exact's; got pred {tuple(pred.shape)} and exact "
            f"{tuple(exact.shape)}"
        ) from None
    if not bool((exact != 0).flatten(-2).any(-1).all()):
        raise ValueError("exact must not be identically zero (the relative error is undefined)")
    return _relative_l2(pred, exact)


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
    boundary; solution :math:`u^* = \\sin(\\pi x)\\sin(\\pi y)`.

    ``domain`` is two finite ``(low, high)`` intervals with ``low < high``."""

    domain: tuple[tuple[float, float], ...] = ((-1.0, 1.0), (-1.0, 1.0))
    name: str = "Poisson 2-D"

    def __post_init__(self) -> None:
        d = self.domain
        if isinstance(d, (str, bytes)) or not hasattr(d, "__len__") or len(d) != 2:
            raise ValueError(f"domain must be two (low, high) intervals, one per dimension; got {d!r}")
        for i, iv in enumerate(d):
            if isinstance(iv, (str, bytes)) or not hasattr(iv, "__len__") or len(iv) != 2:
                raise ValueError(f"domain[{i}] must be a (low, high) interval; got {iv!r}")
            lo = check_real(f"domain[{i}][0]", iv[0])
            check_real(f"domain[{i}][1]", iv[1], low=lo, low_inclusive=False)

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
        Relative :math:`L^2` error on :meth:`Problem.test_points` (NaN when the problem has no closed form).
    loss_history : Tensor, shape (steps,) or (steps, E)
        Training loss per Adam step (per member).
    residual_rms : Tensor, shape () or (E,)
        Root-mean-square PDE residual at the collocation points after training.
    val_residual_rms : Tensor, shape () or (E,)
        The same at held-out points (the midpoints between collocation points in 1-D, a shifted grid in 2-D):
        a selection criterion that needs no solution.
    final_loss : Tensor, shape () or (E,)
        Training loss after the last stage (Adam or L-BFGS).
    seconds : float
        Wall time of the training stages (timing only; never part of a deterministic result).
    """

    rel_l2: Tensor
    loss_history: Tensor
    residual_rms: Tensor
    val_residual_rms: Tensor
    final_loss: Tensor
    seconds: float = 0.0


def _validation_points(base: Problem, n: int) -> Tensor:
    x = base.collocation(n)
    if base.dim == 1:
        lo, hi = base.domain[0]
        h = (hi - lo) / (n + 1)
        return (x + 0.5 * h).clamp(max=hi - 0.25 * h)
    steps = torch.tensor([(hi - lo) / (math.ceil(n ** (1.0 / base.dim)) + 1) for lo, hi in base.domain], dtype=x.dtype)
    return x + 0.5 * steps


def train_pinn(
    model: nn.Module,
    problem: Problem | StackedProblems,
    *,
    loss: Callable[[Tensor, Tensor], Tensor] | Sequence[Callable[[Tensor, Tensor], Tensor]] | None = None,
    n_collocation: int = 256,
    steps: int = 2000,
    lr: float | Tensor = 1e-3,
    boundary_weight: float = 1.0,
    n_test: int = 2001,
    boundary: tuple[Tensor, Tensor] | Callable[[Tensor], Tensor] | None = None,
    lbfgs_steps: int = 0,
) -> PINNResult:
    """Train a PINN with Adam (then optionally L-BFGS) on a fixed set of collocation points, full batch.

    The loss of member :math:`e` is :math:`\\rho_e(0, r_e(x_{col})) + w_b\\,\\rho_e(g, u_e(x_{bd}))` with the
    PDE residual :math:`r_e` and the Dirichlet data :math:`g` on the boundary points.

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
        Adam steps (0 skips Adam).
    lr : float or Tensor of shape (E,)
        Adam learning rate, or one per member (exact: the step is taken at rate 1 and each member's
        displacement scaled by its rate, since Adam's moments do not depend on the rate).
    boundary_weight : float
        :math:`w_b \\ge 0`.
    n_test : int
        Points of the error grid.
    boundary : (Tensor, Tensor) or callable, optional
        The Dirichlet data: ``(x_bd, g)`` with ``x_bd`` (m, d) and ``g`` (m, 1) or (E, m, 1), or a function
        ``g(x_bd)`` evaluated at :meth:`Problem.boundary`. Default: the problem's ``exact`` on its boundary
        points (so a problem without a closed form needs this argument).
    lbfgs_steps : int
        L-BFGS iterations after Adam (strong-Wolfe line search, history 50). For a stacked ensemble L-BFGS
        minimises the *sum* of the members' losses, so the members share the line search: for exactly
        independent members run it on single networks (the claim of ResidualCAN does).

    Returns
    -------
    PINNResult
    """
    import time

    steps = check_int("steps", steps, low=0)
    lbfgs_steps = check_int("lbfgs_steps", lbfgs_steps, low=0)
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
    per_member_lr = isinstance(lr, Tensor)
    if per_member_lr:
        lr_t = lr.detach().to(torch.float64).flatten()
        if lr_t.numel() != n_members or not bool((lr_t > 0).all()):
            raise ValueError(f"lr must be positive, a float or one per member ({n_members}); got {tuple(lr.shape)}")
    else:
        lr = check_positive("lr", lr)
    losses = list(loss) if isinstance(loss, Sequence) else [loss or MSELoss()] * n_members
    if len(losses) != n_members:
        raise ValueError(f"loss must be one callable or {n_members} (one per member); got {len(losses)}")
    base = problem.problems[0] if isinstance(problem, StackedProblems) else problem
    x_col = base.collocation(n_collocation)
    x_val = _validation_points(base, n_collocation)
    if boundary is None:
        x_bd = base.boundary()
        u_bd = problem.exact(x_bd)
    elif callable(boundary):
        x_bd = base.boundary()
        u_bd = torch.as_tensor(boundary(x_bd))
    else:
        if len(boundary) != 2:
            raise ValueError("boundary must be (x_bd, g), a callable g(x_bd) or None")
        x_bd, u_bd = (torch.as_tensor(t) for t in boundary)
    if x_bd.ndim != 2 or x_bd.shape[1] != base.dim:
        raise ValueError(f"boundary points must have shape (m, {base.dim}); got {tuple(x_bd.shape)}")
    if ensemble is not None and u_bd.ndim == 2:
        u_bd = u_bd.unsqueeze(0).expand(ensemble, *u_bd.shape)
    want = (x_bd.shape[0], 1) if ensemble is None else (ensemble, x_bd.shape[0], 1)
    if tuple(u_bd.shape) != want:
        raise ValueError(f"boundary values must have shape {want}; got {tuple(u_bd.shape)}")
    dt = next(model.parameters()).dtype
    x_col, x_val, x_bd, u_bd = x_col.to(dt), x_val.to(dt), x_bd.to(dt), u_bd.to(dt)
    if ensemble is not None:
        x_col = x_col.unsqueeze(0).expand(ensemble, *x_col.shape).clone()
        x_val = x_val.unsqueeze(0).expand(ensemble, *x_val.shape).clone()
    x_col.requires_grad_(True)
    x_val.requires_grad_(True)
    params = [p for p in model.parameters() if p.requires_grad]

    def member_losses() -> Tensor:
        u = model(x_col)
        grad, lap = derivatives(u, x_col)
        r = problem.residual(x_col, u, grad, lap)
        ub = model(x_bd)
        if ensemble is None:
            r, ub, ubt = r.unsqueeze(0), ub.unsqueeze(0), u_bd.unsqueeze(0)
        else:
            ubt = u_bd
        return torch.stack(
            [fn(torch.zeros_like(r[e]), r[e]) + boundary_weight * fn(ubt[e], ub[e]) for e, fn in enumerate(losses)]
        )

    t0 = time.perf_counter()
    opt = torch.optim.Adam(params, lr=1.0 if per_member_lr else lr)
    history = torch.empty(steps, n_members, dtype=dt)
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        per_member = member_losses()
        per_member.sum().backward()
        if per_member_lr:
            before = [p.detach().clone() for p in params]
            opt.step()
            with torch.no_grad():
                for p, b in zip(params, before):
                    p.copy_(b + lr_t.to(p.dtype).view(-1, *([1] * (p.ndim - 1))) * (p - b))
        else:
            opt.step()
        history[step] = per_member.detach()
    if lbfgs_steps:
        lbfgs = torch.optim.LBFGS(
            params,
            lr=1.0,
            max_iter=lbfgs_steps,
            history_size=50,
            line_search_fn="strong_wolfe",
            tolerance_grad=1e-12,
            tolerance_change=1e-15,
        )

        def closure() -> Tensor:
            lbfgs.zero_grad(set_to_none=True)
            total = member_losses().sum()
            total.backward()
            return total

        lbfgs.step(closure)
    seconds = time.perf_counter() - t0
    final = member_losses().detach()

    def rms(x: Tensor) -> Tensor:
        u = model(x)
        grad, lap = derivatives(u, x)
        return (problem.residual(x, u, grad, lap) ** 2).mean((-2, -1)).sqrt().detach()

    res_rms, val_rms = rms(x_col), rms(x_val)
    x_test = base.test_points(n_test).to(dt)
    try:
        target = problem.exact(x_test).to(dt)
    except NotImplementedError:
        err = torch.full((n_members,) if ensemble is not None else (), float("nan"), dtype=dt)
    else:
        with torch.no_grad():
            err = _relative_l2(model(x_test), target)
    if ensemble is None:
        history, final = history[:, 0], final[0]
    return PINNResult(
        rel_l2=err,
        loss_history=history,
        residual_rms=res_rms,
        val_residual_rms=val_rms,
        final_loss=final,
        seconds=seconds,
    )
