"""Cauchy activations, the Cauchy loss and ResidualCAN (a Cauchy-activation MLP plus a dense node residual).

Cauchy activation (XNet; Li, Xia & Zhang 2024), with trainable :math:`\\lambda_1, \\lambda_2, d`:

.. math::

    \\varphi(x) = \\frac{\\lambda_1 x}{x^2 + d^2} + \\frac{\\lambda_2}{x^2 + d^2}, \\qquad
    \\varphi'(x) = \\frac{\\lambda_1 (d^2 - x^2) - 2 \\lambda_2 x}{(x^2 + d^2)^2}.

Cauchy loss with scale :math:`c`: :math:`\\rho_c(r) = \\tfrac{c^2}{2} \\log(1 + r^2/c^2)`, quadratic
(:math:`\\approx r^2/2`) for :math:`|r| \\ll c` and logarithmic beyond, so large residuals barely pull.

ResidualCAN (our reconstruction, see the package docstring):

.. math::

    u(x) = \\mathrm{MLP}_{\\varphi}(x) + \\sum_{m=1}^{M} \\operatorname{softmax}(\\beta)_m\\, a_m\\, C_m(x),
    \\qquad
    C_m(x) = \\frac{d_m \\lambda_{1,m}^\\top (x - \\mu_m) + d_m^2 \\lambda_{2,m}}{\\lVert x - \\mu_m\\rVert^2 + d_m^2},

with node centres :math:`\\mu_m` initialised on a dense grid over the domain, widths :math:`d_m` at the
grid spacing and amplitudes :math:`a_m = 0` (the residual starts switched off). The factors :math:`d_m`,
:math:`d_m^2` make every node's peak :math:`O(1)` whatever its width. The Gaussian-RBF ablation replaces
:math:`C_m` by :math:`G_m(x) = \\exp(-\\lVert x - \\mu_m\\rVert^2 / (2 d_m^2))`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from geode.core.validation import check_choice, check_int, check_positive, check_real, check_tensor
from geode.sciml.nets import MLP, check_ensemble, ensemble_input
from geode.sciml.pinn import check_loss_args

__all__ = ["CauchyActivation", "CauchyLoss", "ResidualCAN", "cauchy_kernel", "cauchy_mlp", "gaussian_kernel"]


class CauchyActivation(nn.Module):
    """The Cauchy activation :math:`\\varphi(x) = (\\lambda_1 x + \\lambda_2)/(x^2 + d^2)`, element-wise.

    Parameters
    ----------
    num_features : int, optional
        Learn one :math:`(\\lambda_1, \\lambda_2, d)` per feature (the last axis of the input); ``None`` shares
        one triple across features.
    lambda1, lambda2, d : float
        Initial values (1 in XNet); ``d`` must be non-zero.
    ensemble : int, optional
        Stack the parameters for an ensemble of ``E`` members (inputs (E, n, F)).

    Examples
    --------
    >>> act = CauchyActivation(3)
    >>> act(torch.zeros(2, 3)).tolist()  # lambda2 / d^2 = 1 at x = 0
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """

    def __init__(
        self,
        num_features: int | None = None,
        *,
        lambda1: float = 1.0,
        lambda2: float = 1.0,
        d: float = 1.0,
        ensemble: int | None = None,
    ) -> None:
        super().__init__()
        self.num_features = None if num_features is None else check_int("num_features", num_features, low=1)
        self.ensemble = check_ensemble(ensemble)
        check_real("lambda1", lambda1)
        check_real("lambda2", lambda2)
        if check_real("d", d) == 0.0:
            raise ValueError("d must be non-zero (the activation has a pole at x = 0 when d = 0)")
        ens = () if self.ensemble is None else (self.ensemble,)
        shape = (*ens, 1, self.num_features or 1)
        dt = torch.get_default_dtype()
        self.lambda1 = nn.Parameter(torch.full(shape, float(lambda1), dtype=dt))
        self.lambda2 = nn.Parameter(torch.full(shape, float(lambda2), dtype=dt))
        self.d = nn.Parameter(torch.full(shape, float(d), dtype=dt))

    def forward(self, x: Tensor) -> Tensor:
        """Elementwise on ``x`` (..., F); NaN and inf propagate as in torch's own activations (no per-step scan)."""
        if not isinstance(x, Tensor):
            raise TypeError(f"x must be a torch.Tensor; got {type(x).__name__}")
        if self.num_features is not None and (x.ndim == 0 or x.shape[-1] != self.num_features):
            raise ValueError(f"x must have {self.num_features} features in its last dimension; got {tuple(x.shape)}")
        l1, l2, d = self.lambda1, self.lambda2, self.d
        if self.ensemble is None:  # stored as (1, F); broadcast against any (..., F)
            l1, l2, d = l1.reshape(-1), l2.reshape(-1), d.reshape(-1)
        return (l1 * x + l2) / (x * x + d * d)

    def extra_repr(self) -> str:
        return f"num_features={self.num_features}, ensemble={self.ensemble}"


class CauchyLoss(nn.Module):
    """The Cauchy (Lorentzian) loss :math:`\\operatorname{mean} \\tfrac{c^2}{2}\\log(1 + (y_{pred} - y_{true})^2/c^2)`.

    Signature ``(y_true, y_pred)`` as DeepXDE expects of a loss callable.

    Parameters
    ----------
    c : float
        Scale :math:`c > 0`: residuals much smaller than ``c`` are penalised like :math:`r^2/2`.
    reduction : {"mean", "sum", "none"}
        How to reduce over elements.

    Examples
    --------
    >>> loss = CauchyLoss(1.0)
    >>> round(float(loss(torch.zeros(1), torch.tensor([1.0]))), 6)  # log(2) / 2
    0.346574
    """

    def __init__(self, c: float = 1.0, reduction: str = "mean") -> None:
        super().__init__()
        self.c = check_positive("c", c)
        self.reduction = check_choice("reduction", reduction, ("mean", "sum", "none"))

    def forward(self, y_true: Tensor, y_pred: Tensor) -> Tensor:
        check_loss_args(y_true, y_pred)
        r = y_pred - y_true
        rho = 0.5 * self.c**2 * torch.log1p((r / self.c) ** 2)
        if self.reduction == "mean":
            return rho.mean()
        return rho.sum() if self.reduction == "sum" else rho


def cauchy_kernel(x: Tensor, centers: Tensor, widths: Tensor, lambda1: Tensor, lambda2: Tensor) -> Tensor:
    """Width-normalised Cauchy node kernels :math:`C_m(x)`, shape (E, n, M).

    :math:`C_m(x) = (d_m \\lambda_{1,m}^\\top (x-\\mu_m) + d_m^2 \\lambda_{2,m}) / (\\lVert x-\\mu_m\\rVert^2+d_m^2)`.

    Parameters
    ----------
    x : Tensor, shape (E, n, d)
    centers : Tensor, shape (E, M, d)
    widths : Tensor, shape (E, M)
    lambda1 : Tensor, shape (E, M, d)
    lambda2 : Tensor, shape (E, M)

    Returns
    -------
    Tensor, shape (E, n, M)

    Raises
    ------
    TypeError, ValueError
        If an argument is not a finite, non-empty tensor of the shape above (``E`` may be 1 for ``x``).
    """
    _check_kernel_args(x, centers, widths, lambda1=lambda1, lambda2=lambda2)
    return _cauchy_kernel(x, centers, widths, lambda1, lambda2)


def _check_kernel_args(x: Tensor, centers: Tensor, widths: Tensor, **lambdas: Tensor) -> None:
    check_tensor("x", x, ndim=3)
    check_tensor("centers", centers, ndim=3)
    if centers.shape[-1] != x.shape[-1]:
        raise ValueError(f"centers must have x's dimension d = {x.shape[-1]}; got shape {tuple(centers.shape)}")
    check_tensor("widths", widths)
    if widths.ndim != 2 or tuple(widths.shape) != tuple(centers.shape[:2]):
        raise ValueError(
            f"widths must have shape (E, M) = {tuple(centers.shape[:2])}, matching centers "
            f"{tuple(centers.shape)}; got {tuple(widths.shape)}"
        )
    if x.shape[0] not in (1, centers.shape[0]):
        raise ValueError(f"x must have 1 or E = {centers.shape[0]} members; got shape {tuple(x.shape)}")
    if lambdas:
        check_tensor("lambda1", lambdas["lambda1"], shape=tuple(centers.shape))
        check_tensor("lambda2", lambdas["lambda2"], shape=tuple(centers.shape[:2]))


def _cauchy_kernel(x: Tensor, centers: Tensor, widths: Tensor, lambda1: Tensor, lambda2: Tensor) -> Tensor:
    d2 = (widths * widths).unsqueeze(1)
    if x.shape[-1] == 1:  # 1-D fast path: no reductions over a singleton axis (fewer ops in double backward)
        diff = x - centers[..., 0].unsqueeze(1)  # (E, n, M)
        num = widths.unsqueeze(1) * diff * lambda1[..., 0].unsqueeze(1) + d2 * lambda2.unsqueeze(1)
        return num / (diff * diff + d2)
    diff = x.unsqueeze(2) - centers.unsqueeze(1)  # (E, n, M, d)
    num = widths.unsqueeze(1) * (diff * lambda1.unsqueeze(1)).sum(-1) + d2 * lambda2.unsqueeze(1)
    return num / ((diff * diff).sum(-1) + d2)


def gaussian_kernel(x: Tensor, centers: Tensor, widths: Tensor) -> Tensor:
    """Gaussian RBF node kernels :math:`G_m(x) = \\exp(-\\lVert x-\\mu_m\\rVert^2/(2 d_m^2))`, shape (E, n, M).

    ``x`` (E, n, d), ``centers`` (E, M, d), ``widths`` (E, M): finite, non-empty tensors (``E`` may be 1 for ``x``),
    else a ``TypeError``/``ValueError`` naming the argument.
    """
    _check_kernel_args(x, centers, widths)
    return _gaussian_kernel(x, centers, widths)


def _gaussian_kernel(x: Tensor, centers: Tensor, widths: Tensor) -> Tensor:
    if x.shape[-1] == 1:
        diff = x - centers[..., 0].unsqueeze(1)  # (E, n, M)
        return torch.exp(-0.5 * diff * diff / (widths * widths).unsqueeze(1))
    diff = x.unsqueeze(2) - centers.unsqueeze(1)
    return torch.exp(-0.5 * (diff * diff).sum(-1) / (widths * widths).unsqueeze(1))


def cauchy_mlp(width: Sequence[int], *, ensemble: int | None = None, seed: int = 0, **activation_kwargs: Any) -> MLP:
    """An MLP whose hidden activations are per-feature :class:`CauchyActivation` modules ("CauchyAct-MLP")."""
    return MLP(
        width,
        lambda w, ens: CauchyActivation(w, ensemble=ens, **activation_kwargs),
        ensemble=ensemble,
        seed=seed,
    )


def _node_grid(domain: Sequence[tuple[float, float]], n_nodes: int) -> tuple[Tensor, float]:
    """A product grid of ``m^d`` points, :math:`m = \\lceil n^{1/d} \\rceil`, strictly inside the domain
    (cell centres), and its smallest spacing."""
    dim = len(domain)
    m = n_nodes if dim == 1 else math.ceil(n_nodes ** (1.0 / dim) - 1e-9)
    dt = torch.get_default_dtype()
    axes, spacing = [], math.inf
    for lo, hi in domain:
        h = (hi - lo) / m
        axes.append(lo + h * (torch.arange(m, dtype=dt) + 0.5))
        spacing = min(spacing, h)
    grid = torch.cartesian_prod(*axes).reshape(-1, dim) if dim > 1 else axes[0].unsqueeze(-1)
    return grid, spacing


class ResidualCAN(nn.Module):
    """ResidualCAN: a Cauchy-activation MLP plus a softmax-weighted residual of dense local basis nodes.

    :math:`u(x) = \\mathrm{MLP}_{\\varphi}(x) + \\sum_m \\operatorname{softmax}(\\beta)_m a_m K_m(x)` with
    :math:`K_m` the Cauchy kernel :func:`cauchy_kernel` (or the Gaussian :func:`gaussian_kernel` for the
    RBF ablation); see the module docstring.

    Parameters
    ----------
    in_dim, out_dim : int
        Input and output sizes.
    width, depth : int
        Hidden width and number of hidden layers of the main path (Cauchy activations).
    n_nodes : int
        Number of residual nodes :math:`M` (in :math:`d > 1` dimensions rounded up to :math:`m^d`); 0 drops the
        residual (the main path alone).
    domain : sequence of (low, high)
        One interval per input dimension; nodes start on a grid of cell centres over it.
    node : {"cauchy", "gaussian"}
        Node kernel.
    ensemble : int, optional
        Number of stacked independent members; inputs (E, n, in_dim) or (n, in_dim).
    seed : int
        Initialisation seed of the main path.

    Examples
    --------
    >>> net = ResidualCAN(1, 1, width=32, depth=1, n_nodes=64, domain=[(-1.0, 1.0)])
    >>> net(torch.zeros(5, 1)).shape
    torch.Size([5, 1])
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int = 1,
        width: int = 32,
        depth: int = 1,
        n_nodes: int = 64,
        domain: Sequence[tuple[float, float]] | None = None,
        *,
        node: str = "cauchy",
        ensemble: int | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.in_dim = check_int("in_dim", in_dim, low=1)
        self.out_dim = check_int("out_dim", out_dim, low=1)
        width = check_int("width", width, low=1)
        depth = check_int("depth", depth, low=1)
        n_nodes = check_int("n_nodes", n_nodes, low=0)
        self.node = check_choice("node", node, ("cauchy", "gaussian"))
        self.ensemble = check_ensemble(ensemble)
        domain = [(-1.0, 1.0)] * in_dim if domain is None else [tuple(r) for r in domain]
        if len(domain) != in_dim:
            raise ValueError(f"domain must hold one (low, high) pair per input ({in_dim}); got {len(domain)}")
        for i, (lo, hi) in enumerate(domain):
            if not check_real(f"domain[{i}] low", lo) < check_real(f"domain[{i}] high", hi):
                raise ValueError(f"domain[{i}] must have low < high; got ({lo}, {hi})")
        self.domain = tuple((float(lo), float(hi)) for lo, hi in domain)
        self.main = cauchy_mlp([in_dim, *[width] * depth, out_dim], ensemble=self.ensemble, seed=seed)
        self.n_nodes = 0
        if n_nodes > 0:
            grid, spacing = _node_grid(self.domain, n_nodes)
            self.n_nodes = grid.shape[0]
            ens = () if self.ensemble is None else (self.ensemble,)
            dt = torch.get_default_dtype()
            m = self.n_nodes
            self.centers = nn.Parameter(grid.expand(*ens, m, in_dim).clone().to(dt))  # mu_m
            self.widths = nn.Parameter(torch.full((*ens, m), spacing, dtype=dt))  # d_m
            self.amplitudes = nn.Parameter(torch.zeros(*ens, m, out_dim, dtype=dt))  # a_m
            self.logits = nn.Parameter(torch.zeros(*ens, m, dtype=dt))  # beta
            if self.node == "cauchy":
                self.lambda1 = nn.Parameter(torch.ones(*ens, m, in_dim, dtype=dt))
                self.lambda2 = nn.Parameter(torch.ones(*ens, m, dtype=dt))

    def residual(self, x: Tensor) -> Tensor:
        """The node residual :math:`\\sum_m \\operatorname{softmax}(\\beta)_m a_m K_m(x)`, shape (..., out_dim)."""
        x = ensemble_input(x, self.ensemble, self.in_dim)
        if self.n_nodes == 0:
            return torch.zeros(*x.shape[:-1], self.out_dim, dtype=x.dtype)
        lead = tuple(x.shape[:-1])
        single = self.ensemble is None
        xs = x.reshape(1, -1, self.in_dim) if single else x

        def stacked(t: Tensor) -> Tensor:
            return t.unsqueeze(0) if single else t

        if self.node == "cauchy":
            k = _cauchy_kernel(
                xs, stacked(self.centers), stacked(self.widths), stacked(self.lambda1), stacked(self.lambda2)
            )
        else:
            k = _gaussian_kernel(xs, stacked(self.centers), stacked(self.widths))
        w = torch.softmax(stacked(self.logits), dim=-1)
        out = torch.einsum("enm,em,emo->eno", k, w, stacked(self.amplitudes))
        return out.reshape(*lead, self.out_dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.main(x) + self.residual(x)

    def extra_repr(self) -> str:
        return f"n_nodes={self.n_nodes}, node={self.node!r}, ensemble={self.ensemble}"
