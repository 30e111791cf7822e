"""Small coordinate networks for scientific ML, each optionally a stacked ensemble of independent members.

The field's baselines: a plain MLP (SiLU, tanh, ... or any activation module), SIREN (Sitzmann et al.
2020) and the random-Fourier-feature MLP (Tancik et al. 2020).

Every network takes ``ensemble=E`` to hold ``E`` independent members with stacked parameters: it then
maps inputs of shape (E, n, d_in) (or (n, d_in), shared by all members) to (E, n, d_out), member ``e``
using only its own parameters. Training ``E`` members is one vectorised loop whose loss is the sum of the
members' losses (:func:`geode.sciml.ensemble.fit_ensemble`); because members never interact and Adam is
element-wise, each follows exactly the trajectory it would follow alone. Small scientific benchmarks fit
hundreds of tiny models, and on a CPU a 1k-parameter network's step is all dispatch overhead, so this is
what makes them affordable. Without ``ensemble`` the networks accept any leading batch shape (..., d_in).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from geode.core.random import torch_generator
from geode.core.validation import check_int, check_positive, check_real

__all__ = [
    "MLP",
    "SIREN",
    "EnsembleLinear",
    "FourierFeatureMLP",
    "check_ensemble",
    "check_width",
    "ensemble_input",
]

_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "silu": nn.functional.silu,
    "tanh": torch.tanh,
    "relu": torch.relu,
    "gelu": nn.functional.gelu,
    "sin": torch.sin,
}


def check_width(width: Any) -> list[int]:
    """Validate a KAN/MLP width list ``[d_in, h_1, ..., d_out]``: at least two positive integers."""
    if isinstance(width, (str, bytes)) or not isinstance(width, Sequence):
        raise TypeError(f"width must be a list of layer sizes such as [2, 5, 1]; got {type(width).__name__}")
    if len(width) < 2:
        raise ValueError(f"width must list at least an input and an output size, e.g. [2, 1]; got {list(width)}")
    return [check_int(f"width[{i}]", w, low=1) for i, w in enumerate(width)]


def check_ensemble(ensemble: Any) -> int | None:
    """Validate an ensemble size: None (a single network) or an int >= 1."""
    return None if ensemble is None else check_int("ensemble", ensemble, low=1)


def ensemble_input(x: Tensor, ensemble: int | None, in_dim: int) -> Tensor:
    """Check ``x`` for a network with ``in_dim`` inputs; with an ensemble, return it as (E, n, in_dim).

    Only the type and shape are checked (no scan of the values: this runs in every training step), so NaN and
    inf propagate through the networks as through torch's own layers, and an empty batch gives an empty output.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a torch.Tensor of shape (..., {in_dim}); got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"x must be a floating-point tensor; got dtype {x.dtype}")
    if x.ndim == 0 or x.shape[-1] != in_dim:
        raise ValueError(f"x must have {in_dim} features in its last dimension; got shape {tuple(x.shape)}")
    if ensemble is None:
        return x
    if x.ndim == 2:
        return x.unsqueeze(0).expand(ensemble, *x.shape)
    if x.ndim != 3 or x.shape[0] != ensemble:
        raise ValueError(f"x must have shape (n, {in_dim}) or (E={ensemble}, n, {in_dim}); got {tuple(x.shape)}")
    return x


class EdgeL1(nn.Module):
    """Mixin for a stack of KAN-style layers in ``self.layers``, each with ``activations(x)`` of shape
    (..., n, d_out, d_in): pykan's L1 term (mean absolute edge activation, summed over edges and layers; no
    entropy term), alone or with the forward pass that computes it."""

    layers: nn.ModuleList

    def forward_with_regularization(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """The output and :meth:`regularization` per member (shape (E,) or ()) from one pass over the layers."""
        reg: Tensor = x.new_zeros(())
        for layer in self.layers:
            a = layer.activations(x)
            reg = reg + a.abs().mean(-3).sum((-2, -1))
            x = a.sum(-2)
        return x, reg

    def regularization(self, x: Tensor, *, per_member: bool = False) -> Tensor:
        """The L1 term; with ``per_member`` one value per stacked member, shape (E,)."""
        reg: Tensor = x.new_zeros(())
        for layer in self.layers:
            a = layer.activations(x).abs().mean(-3)
            reg = reg + (a.sum((-2, -1)) if per_member else a.sum())
            x = layer(x)
        return reg


class EnsembleLinear(nn.Module):
    """An affine map :math:`x W + b` for one network or a stacked ensemble of ``E`` networks.

    ``weight`` has shape (in, out) or (E, in, out) and ``bias`` (1, out) or (E, 1, out); the matrix product
    broadcasts, so (n, in) -> (n, out) and (E, n, in) -> (E, n, out). Initialisation: uniform on
    :math:`\\pm` ``bound`` (default :math:`1/\\sqrt{in}`, torch's ``nn.Linear``), bias likewise; ``bound`` and
    ``bias_bound`` must be finite and >= 0. The forward checks the input's type and width, not its values: NaN
    propagates like torch's own layers.
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        *,
        ensemble: int | None = None,
        bound: float | None = None,
        bias_bound: float | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.in_dim = check_int("in_dim", in_dim, low=1)
        self.out_dim = check_int("out_dim", out_dim, low=1)
        self.ensemble = check_ensemble(ensemble)
        if bound is not None:
            check_real("bound", bound, low=0.0)
        if bias_bound is not None:
            check_real("bias_bound", bias_bound, low=0.0)
        ens = () if self.ensemble is None else (self.ensemble,)
        w_bound = 1.0 / math.sqrt(in_dim) if bound is None else bound
        b_bound = 1.0 / math.sqrt(in_dim) if bias_bound is None else bias_bound
        dt = torch.get_default_dtype()
        self.weight = nn.Parameter(
            (2 * torch.rand(*ens, in_dim, out_dim, generator=generator, dtype=dt) - 1) * w_bound
        )
        self.bias = nn.Parameter((2 * torch.rand(*ens, 1, out_dim, generator=generator, dtype=dt) - 1) * b_bound)

    def forward(self, x: Tensor) -> Tensor:
        """``x @ W + b`` for ``x`` (..., in_dim) or (E, n, in_dim); NaN and inf propagate as in ``nn.Linear``."""
        if not isinstance(x, Tensor):
            raise TypeError(f"x must be a torch.Tensor of shape (..., {self.in_dim}); got {type(x).__name__}")
        if x.ndim == 0 or x.shape[-1] != self.in_dim:
            raise ValueError(f"x must have {self.in_dim} features in its last dimension; got shape {tuple(x.shape)}")
        return x @ self.weight + self.bias

    def extra_repr(self) -> str:
        return f"in_dim={self.in_dim}, out_dim={self.out_dim}, ensemble={self.ensemble}"


ActivationFactory = Callable[[int, "int | None"], nn.Module]


class _Elementwise(nn.Module):
    def __init__(self, fn: Callable[[Tensor], Tensor], name: str) -> None:
        super().__init__()
        self.fn = fn
        self.name = name

    def forward(self, x: Tensor) -> Tensor:
        return self.fn(x)

    def extra_repr(self) -> str:
        return self.name


def _activation_factory(activation: str | ActivationFactory) -> ActivationFactory:
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {', '.join(_ACTIVATIONS)} or a factory; got {activation!r}")
        fn = _ACTIVATIONS[activation]
        return lambda width, ensemble: _Elementwise(fn, activation)
    if not callable(activation):
        raise TypeError(f"activation must be a name or a factory (width, ensemble) -> nn.Module; got {activation!r}")
    return activation


class MLP(nn.Module):
    """A multilayer perceptron ``MLP(width=[d_in, h_1, ..., d_out])``: affine maps and activations.

    Parameters
    ----------
    width : list of int
        Layer sizes, at least ``[d_in, d_out]``.
    activation : str or callable
        ``"silu"``, ``"tanh"``, ``"relu"``, ``"gelu"``, ``"sin"``, or a factory
        ``(num_features, ensemble) -> nn.Module`` for trainable activations (e.g. a Cauchy activation).
    ensemble : int, optional
        Number of stacked independent members (see the module docstring).
    seed : int
        Initialisation seed (torch's ``nn.Linear`` initialisation).

    Examples
    --------
    >>> net = MLP([2, 16, 16, 1], "silu", seed=0)
    >>> net(torch.zeros(5, 2)).shape
    torch.Size([5, 1])
    >>> MLP([2, 16, 1], ensemble=3)(torch.zeros(5, 2)).shape  # three members, shared inputs
    torch.Size([3, 5, 1])
    """

    def __init__(
        self,
        width: Sequence[int],
        activation: str | ActivationFactory = "silu",
        *,
        ensemble: int | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.width = check_width(width)
        self.ensemble = check_ensemble(ensemble)
        factory = _activation_factory(activation)
        g = torch_generator(check_int("seed", seed, low=0))
        self.linears = nn.ModuleList(
            EnsembleLinear(a, b, ensemble=self.ensemble, generator=g) for a, b in zip(self.width[:-1], self.width[1:])
        )
        self.activations = nn.ModuleList(factory(w, self.ensemble) for w in self.width[1:-1])

    def forward_with_regularization(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """The output and the L1 norm of the weight matrices (biases excluded), per member (E,) or ()."""
        reg = sum(lin.weight.abs().flatten(1 if self.ensemble is not None else 0).sum(-1) for lin in self.linears)
        return self(x), reg

    def forward(self, x: Tensor) -> Tensor:
        x = ensemble_input(x, self.ensemble, self.width[0])
        for i, lin in enumerate(self.linears):
            x = lin(x)
            if i < len(self.activations):
                x = self.activations[i](x)
        return x


class SIREN(nn.Module):
    """A sinusoidal representation network: :math:`h_{l+1} = \\sin(\\omega_0 (W_l h_l + b_l))`, linear output.

    Sitzmann et al. (2020): first layer weights uniform on :math:`\\pm 1/d_{in}`, hidden weights uniform on
    :math:`\\pm \\sqrt{6/n}/\\omega_0`, so that pre-activations stay unit-scale at any depth.

    Parameters
    ----------
    width : list of int
        Layer sizes, at least ``[d_in, d_out]``.
    omega0 : float
        Frequency factor :math:`\\omega_0 > 0` (30 in the paper; smaller values suit smooth PDE solutions).
    ensemble : int, optional
        Number of stacked members.
    seed : int
        Initialisation seed.
    """

    def __init__(self, width: Sequence[int], omega0: float = 30.0, *, ensemble: int | None = None, seed: int = 0):
        super().__init__()
        self.width = check_width(width)
        self.omega0 = check_positive("omega0", omega0)
        self.ensemble = check_ensemble(ensemble)
        g = torch_generator(check_int("seed", seed, low=0))
        layers = []
        for i, (a, b) in enumerate(zip(self.width[:-1], self.width[1:])):
            bound = 1.0 / a if i == 0 else math.sqrt(6.0 / a) / self.omega0
            layers.append(EnsembleLinear(a, b, ensemble=self.ensemble, bound=bound, generator=g))
        self.linears = nn.ModuleList(layers)

    def forward(self, x: Tensor) -> Tensor:
        x = ensemble_input(x, self.ensemble, self.width[0])
        for lin in self.linears[:-1]:
            x = torch.sin(self.omega0 * lin(x))
        return self.linears[-1](x)


class FourierFeatureMLP(nn.Module):
    """An MLP on random Fourier features :math:`\\gamma(x) = [\\cos(2\\pi B x), \\sin(2\\pi B x)]`.

    Tancik et al. (2020): :math:`B \\in \\mathbb{R}^{m \\times d}` has entries :math:`\\mathcal{N}(0, \\sigma^2)`
    and is fixed (a buffer); the MLP ``[2m, *hidden, d_out]`` is trained.

    Parameters
    ----------
    in_dim : int
        Input dimension.
    hidden : list of int
        Hidden layer sizes of the MLP (at least one).
    out_dim : int
        Output dimension.
    n_features : int
        Number :math:`m` of frequencies.
    sigma : float
        Frequency scale :math:`\\sigma > 0`.
    activation : str or callable
        Activation of the MLP.
    ensemble : int, optional
        Number of stacked members (each draws its own :math:`B`).
    seed : int
        Seed of :math:`B` and of the MLP.

    The forward checks the input's type and width, not its values: NaN propagates like torch's own layers.
    """

    def __init__(
        self,
        in_dim: int,
        hidden: Sequence[int],
        out_dim: int = 1,
        *,
        n_features: int = 16,
        sigma: float = 1.0,
        activation: str | ActivationFactory = "silu",
        ensemble: int | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.in_dim = check_int("in_dim", in_dim, low=1)
        if isinstance(hidden, (str, bytes)) or not hasattr(hidden, "__len__") or len(hidden) == 0:
            raise ValueError(f"hidden must list at least one hidden width; got {hidden!r}")
        self.n_features = check_int("n_features", n_features, low=1)
        self.sigma = check_positive("sigma", sigma)
        self.ensemble = check_ensemble(ensemble)
        seed = check_int("seed", seed, low=0)
        ens = () if self.ensemble is None else (self.ensemble,)
        g = torch_generator(seed + 7919)
        dt = torch.get_default_dtype()
        self.register_buffer("B", self.sigma * torch.randn(*ens, in_dim, n_features, generator=g, dtype=dt))
        self.mlp = MLP([2 * n_features, *hidden, out_dim], activation, ensemble=self.ensemble, seed=seed)

    def features(self, x: Tensor) -> Tensor:
        """:math:`\\gamma(x)`, shape (..., 2m)."""
        z = 2.0 * math.pi * (ensemble_input(x, self.ensemble, self.in_dim) @ self.B)
        return torch.cat([torch.cos(z), torch.sin(z)], dim=-1)

    def forward(self, x: Tensor) -> Tensor:
        return self.mlp(self.features(x))
