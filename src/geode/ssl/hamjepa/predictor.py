r"""HamJEPA's cross-view predictors: a learned separable Hamiltonian integrated by leapfrog, and the MLP ablation.

A view embedding :math:`z = (q, p) \in \mathbb{R}^{2d}` is a point of phase space. The predictor integrates
Hamilton's equations of the separable Hamiltonian

.. math:: H(q, p) = \tfrac12 \|p\|^2 + V(q), \qquad
          V(q) = \tfrac12 c \|q\|^2 + s \, f_\phi(q),

(:math:`c` = ``base_coeff``, :math:`s` = ``residual_scale``, :math:`f_\phi` a GELU MLP) with ``steps``
velocity-Verlet (leapfrog) steps of size :math:`\delta t`:

.. math:: p_{1/2} = p - \tfrac{\delta t}{2} \nabla V(q), \quad q' = q + \delta t \, p_{1/2}, \quad
          p' = p_{1/2} - \tfrac{\delta t}{2} \nabla V(q').

Each of the three sub-steps is a shear, so the map :math:`\Phi_{\delta t}` is symplectic
(:math:`J^\top \Omega J = \Omega` for its Jacobian :math:`J`, :math:`\Omega = [[0, I], [-I, 0]]`), volume
preserving, and time reversible (:math:`\Phi_{-\delta t} \circ \Phi_{\delta t} = \mathrm{id}`); the tests check
all three with autograd. ``method="euler"`` (explicit Euler, not symplectic) is there for contrast only.

Defaults follow the authors' ``configs/cifar100_hjepa_mv.yaml`` (separable H, 2 steps, :math:`\delta t = 0.05`
fixed, :math:`c = 0.1`, :math:`s = 0.02`, a 2 x 256 GELU MLP, integration in float32).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from geode.core.validation import check_choice, check_int, check_real, check_tensor

__all__ = ["HamiltonianPredictor", "MLPPredictor", "SeparablePotential", "leapfrog"]


def _check_state(z: Any, state_dim: int) -> None:
    """A finite (batch, state_dim) tensor; an empty batch is allowed (it maps to an empty batch)."""
    if not isinstance(z, torch.Tensor):
        raise TypeError(f"z must be a torch tensor (batch, {state_dim}); got {type(z).__name__}")
    if z.ndim != 2:
        raise ValueError(f"z must be a 2-D tensor (batch, {state_dim}); got shape {getattr(z, 'shape', None)}")
    if z.shape[1] != state_dim:
        raise ValueError(f"z must have {state_dim} features (q then p); got {z.shape[1]}")
    if not bool(torch.isfinite(z).all()):
        raise ValueError("z must be finite (it holds NaN or inf)")


class SeparablePotential(nn.Module):
    r"""The potential V(q) of a separable Hamiltonian: a quadratic bowl plus a small learned MLP.

    :math:`V(q) = \tfrac12 c\|q\|^2 + s\,f_\phi(q)`.

    The quadratic base (``base_coeff`` :math:`c > 0`) blocks the trivial potential (:math:`\dot p = 0`); the
    residual MLP (``depth`` GELU layers of ``hidden`` units, scalar output) is scaled by ``residual_scale``.

    ``forward`` and ``grad`` take finite points ``q`` of shape (batch, dim); an empty batch gives an empty output
    (both are per-sample maps).
    """

    def __init__(
        self, dim: int, *, hidden: int = 256, depth: int = 2, base_coeff: float = 0.1, residual_scale: float = 0.02
    ) -> None:
        super().__init__()
        self.dim = check_int("dim", dim, low=1)
        check_int("hidden", hidden, low=1)
        check_int("depth", depth, low=1)
        self.base_coeff = check_real("base_coeff", base_coeff, low=0.0)
        self.residual_scale = check_real("residual_scale", residual_scale, low=0.0)
        layers: list[nn.Module] = []
        for i in range(depth):
            layers += [nn.Linear(dim if i == 0 else hidden, hidden), nn.GELU()]
        layers.append(nn.Linear(hidden, 1))
        self.residual = nn.Sequential(*layers)

    def _check_q(self, q: Any) -> None:
        check_tensor("q", q, shape=(None, self.dim), nonempty=False, floating=True)

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        """V(q) per sample: shape (batch,)."""
        self._check_q(q)
        return self._value(q)

    def _value(self, q: torch.Tensor) -> torch.Tensor:
        return 0.5 * self.base_coeff * q.square().sum(-1) + self.residual_scale * self.residual(q).squeeze(-1)

    def grad(self, q: torch.Tensor) -> torch.Tensor:
        """:math:`\\nabla V(q)` by autograd, differentiable when grad mode is on."""
        self._check_q(q)
        return self._grad(q)

    def _grad(self, q: torch.Tensor) -> torch.Tensor:
        create = torch.is_grad_enabled()
        with torch.enable_grad():
            qq = q if q.requires_grad else q.detach().requires_grad_(True)
            (g,) = torch.autograd.grad(self._value(qq).sum(), qq, create_graph=create)
        return g


def leapfrog(
    potential: SeparablePotential, q: torch.Tensor, p: torch.Tensor, dt: float, steps: int, method: str = "leapfrog"
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Leapfrog integration of q' = p, p' = −∇V(q) for ``steps`` steps of size ``dt`` (may be negative).

    ``method="leapfrog"`` is velocity Verlet (symplectic, reversible, second order); ``method="euler"`` is
    explicit Euler (:math:`q' = q + \delta t\,p,\ p' = p - \delta t\,\nabla V(q)`), neither symplectic nor
    reversible, kept as the contrast the tests and the energy-drift check use.

    ``q`` and ``p`` are finite (batch, dim) tensors of one shape (``dim`` = ``potential.dim``); an empty batch gives
    empty outputs.
    """
    if not isinstance(potential, SeparablePotential):
        raise TypeError(f"potential must be a SeparablePotential; got {type(potential).__name__}")
    check_choice("method", method, ("leapfrog", "euler"))
    steps = check_int("steps", steps, low=1)
    dt = check_real("dt", dt)
    potential._check_q(q)
    check_tensor("p", p, nonempty=False, floating=True)
    if p.shape != q.shape:
        raise ValueError(f"p must have the shape of q {tuple(q.shape)}; got {tuple(p.shape)}")
    grad = potential._grad  # the inputs are checked once here, not at every step
    for _ in range(steps):
        if method == "leapfrog":
            p = p - 0.5 * dt * grad(q)
            q = q + dt * p
            p = p - 0.5 * dt * grad(q)
        else:
            q, p = q + dt * p, p - dt * grad(q)
    return q, p


class HamiltonianPredictor(nn.Module):
    r"""HamJEPA's predictor: a learned separable-Hamiltonian flow from one view's state to the other's.

    :math:`\hat z_b = \Phi_{\pm\delta t}(z_a)`, symplectic and reversible.

    Parameters
    ----------
    state_dim : int
        :math:`2d`; the first ``d`` features of a state are ``q``, the last ``d`` are ``p``.
    hidden, depth : int
        Width and depth of the potential's residual MLP (256, 2).
    base_coeff, residual_scale : float
        :math:`c` and :math:`s` of :class:`SeparablePotential` (0.1, 0.02).
    steps : int
        Leapfrog steps (2).
    dt : float
        Fixed step size (0.05). The authors reject a learnable step because it collapses to 0.
    method : {"leapfrog", "euler"}
        The integrator; "euler" only as a non-symplectic contrast.

    ``forward`` and ``hamiltonian`` take finite states ``z`` of shape (batch, state_dim); an empty batch gives an
    empty output (both are per-sample maps).

    Examples
    --------
    >>> import torch
    >>> f = HamiltonianPredictor(8, hidden=16)
    >>> z = torch.randn(4, 8)
    >>> torch.allclose(f(f(z), direction=-1), z, atol=1e-5)
    True
    """

    def __init__(
        self,
        state_dim: int,
        *,
        hidden: int = 256,
        depth: int = 2,
        base_coeff: float = 0.1,
        residual_scale: float = 0.02,
        steps: int = 2,
        dt: float = 0.05,
        method: str = "leapfrog",
    ) -> None:
        super().__init__()
        check_int("state_dim", state_dim, low=2)
        if state_dim % 2:
            raise ValueError(f"state_dim must be even (q and p halves); got {state_dim}")
        self.state_dim = state_dim
        self.d = state_dim // 2
        self.steps = check_int("steps", steps, low=1)
        self.dt = check_real("dt", dt, low=0.0, low_inclusive=False)
        self.method = check_choice("method", method, ("leapfrog", "euler"))
        self.potential = SeparablePotential(
            self.d, hidden=hidden, depth=depth, base_coeff=base_coeff, residual_scale=residual_scale
        )

    def hamiltonian(self, z: torch.Tensor) -> torch.Tensor:
        """:math:`H(q, p)` per sample, shape (batch,)."""
        _check_state(z, self.state_dim)
        q, p = z[:, : self.d], z[:, self.d :]
        return 0.5 * p.square().sum(-1) + self.potential(q)

    def forward(self, z: torch.Tensor, direction: int = 1) -> torch.Tensor:
        """Flow ``z`` (batch, 2d) forward (``direction=1``) or backward (``-1``) in time; float32 integration."""
        _check_state(z, self.state_dim)
        if direction not in (1, -1):
            raise ValueError(f"direction must be 1 or -1; got {direction!r}")
        dtype = z.dtype
        zw = z.float() if dtype in (torch.float16, torch.bfloat16) else z
        q, p = leapfrog(self.potential, zw[:, : self.d], zw[:, self.d :], direction * self.dt, self.steps, self.method)
        return torch.cat([q, p], 1).to(dtype)


class MLPPredictor(nn.Module):
    r"""The ablation of HamJEPA's predictor: an unconstrained residual MLP.

    :math:`\hat z_b = z_a + g_\theta([z_a, \pm 1])`.

    It sees the same state and the same direction flag as :class:`HamiltonianPredictor` and has the same
    width and depth, but no symplectic (or any Hamiltonian) structure. The authors' ablation script was not
    found; the residual form and the direction input are our choice (so that the bidirectional loss applies
    unchanged and the map starts near the identity, as the leapfrog map with small :math:`\delta t` does).

    ``forward`` takes finite states ``z`` of shape (batch, state_dim); an empty batch gives an empty output.
    """

    def __init__(self, state_dim: int, *, hidden: int = 256, depth: int = 2, init_scale: float = 0.05) -> None:
        super().__init__()
        check_int("state_dim", state_dim, low=2)
        if state_dim % 2:
            raise ValueError(f"state_dim must be even (q and p halves); got {state_dim}")
        check_int("hidden", hidden, low=1)
        check_int("depth", depth, low=1)
        self.state_dim = state_dim
        self.d = state_dim // 2
        layers: list[nn.Module] = []
        for i in range(depth):
            layers += [nn.Linear(state_dim + 1 if i == 0 else hidden, hidden), nn.GELU()]
        out = nn.Linear(hidden, state_dim)
        with torch.no_grad():
            out.weight.mul_(check_real("init_scale", init_scale, low=0.0))
            out.bias.zero_()
        self.net = nn.Sequential(*layers, out)

    def forward(self, z: torch.Tensor, direction: int = 1) -> torch.Tensor:
        """Map ``z`` (batch, 2d) to its prediction of the other view."""
        _check_state(z, self.state_dim)
        if direction not in (1, -1):
            raise ValueError(f"direction must be 1 or -1; got {direction!r}")
        flag = torch.full((z.shape[0], 1), float(direction), dtype=z.dtype, device=z.device)
        return z + self.net(torch.cat([z, flag], 1))
