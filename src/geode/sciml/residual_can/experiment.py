"""The ResidualCAN benchmark: PINNs on the stationary Allen-Cahn epsilon-suite and a Poisson check.

Every architecture is trained once as a stacked ensemble whose members are the (problem, loss) pairs it is
run on (:func:`geode.sciml.pinn.train_pinn`), which is exactly equivalent to one training per pair: the
members share nothing but the collocation points. All architectures see the same collocation points, the
same optimiser (Adam, full batch) and the same number of steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from geode.core.validation import check_int, check_positive
from geode.sciml.nets import MLP, SIREN, FourierFeatureMLP
from geode.sciml.pinn import AllenCahn1D, HuberLoss, L1Loss, MSELoss, Poisson1D, Problem, StackedProblems, train_pinn
from geode.sciml.residual_can.cauchy import CauchyLoss, ResidualCAN, cauchy_mlp

__all__ = ["ARCHITECTURES", "PINNSuite", "make_architecture", "run_pinn_suite"]

ARCHITECTURES: tuple[str, ...] = (
    "SiLU-MLP",
    "CauchyAct-MLP",
    "ResidualCAN",
    "ResidualCAN-RBF",
    "SIREN",
    "Fourier-MLP",
)
"""The architectures of the suite: the SiLU baseline, the Cauchy-activation main path alone (no residual),
ResidualCAN, its Gaussian-RBF-node ablation, SIREN and the random-Fourier-feature MLP."""


def make_architecture(
    name: str, *, ensemble: int | None = None, seed: int = 0, omega0: float = 10.0, sigma: float = 1.0
) -> nn.Module:
    """One architecture of the suite for 1-D problems on :math:`[-1, 1]` (1-3k parameters each).

    - ``SiLU-MLP``: ``[1, 32, 32, 1]``, SiLU (1153 parameters);
    - ``CauchyAct-MLP``: ``[1, 64, 1]`` with per-neuron Cauchy activations (385);
    - ``ResidualCAN``: Cauchy main path ``[1, 32, 1]`` plus 64 Cauchy nodes (577);
    - ``ResidualCAN-RBF``: the same with Gaussian nodes (449);
    - ``SIREN``: ``[1, 32, 32, 1]``, :math:`\\omega_0` = ``omega0`` (1153);
    - ``Fourier-MLP``: 16 random Fourier features (:math:`\\sigma` = ``sigma``) into a SiLU ``[32, 32, 32, 1]`` (2145).
    """
    if name == "SiLU-MLP":
        return MLP([1, 32, 32, 1], "silu", ensemble=ensemble, seed=seed)
    if name == "CauchyAct-MLP":
        return cauchy_mlp([1, 64, 1], ensemble=ensemble, seed=seed)
    if name == "ResidualCAN":
        return ResidualCAN(1, 1, 32, 1, 64, [(-1.0, 1.0)], node="cauchy", ensemble=ensemble, seed=seed)
    if name == "ResidualCAN-RBF":
        return ResidualCAN(1, 1, 32, 1, 64, [(-1.0, 1.0)], node="gaussian", ensemble=ensemble, seed=seed)
    if name == "SIREN":
        return SIREN([1, 32, 32, 1], omega0, ensemble=ensemble, seed=seed)
    if name == "Fourier-MLP":
        return FourierFeatureMLP(1, [32, 32], 1, n_features=16, sigma=sigma, ensemble=ensemble, seed=seed)
    raise ValueError(f"name must be one of {', '.join(ARCHITECTURES)}; got {name!r}")


_LOSSES: dict[str, Callable[[float], nn.Module]] = {
    "MSE": lambda c: MSELoss(),
    "L1": lambda c: L1Loss(),
    "Huber": lambda c: HuberLoss(c),
    "Cauchy": lambda c: CauchyLoss(c),
}


@dataclass
class PINNSuite:
    """What :func:`run_pinn_suite` measured.

    Attributes
    ----------
    rows : list of dict
        One per (architecture, problem, loss): ``rel_l2``, ``residual_rms``, ``params``, ``final_loss``.
    models : dict
        The trained stacked ensembles by architecture, with their member list ``(problem, loss name)``.
    histories : dict
        Loss history (steps, E) by architecture.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    models: dict[str, tuple[nn.Module, list[tuple[Problem, str]]]] = field(default_factory=dict)
    histories: dict[str, torch.Tensor] = field(default_factory=dict)


def run_pinn_suite(
    eps_values: Sequence[float] = (1.0, 0.1),
    *,
    architectures: Sequence[str] = ARCHITECTURES,
    factorial: Sequence[str] = ("SiLU-MLP", "ResidualCAN"),
    factorial_losses: Sequence[str] = ("Cauchy",),
    poisson: bool = True,
    steps: int = 2000,
    lr: float = 1e-3,
    n_collocation: int = 256,
    cauchy_c: float = 1.0,
    n_test: int = 2001,
    seed: int = 0,
) -> PINNSuite:
    """Train every architecture on the Allen-Cahn suite (MSE), the loss factorial and the Poisson check.

    Parameters
    ----------
    eps_values : sequence of float
        Allen-Cahn :math:`\\varepsilon` values.
    architectures : sequence of str
        Names from :data:`ARCHITECTURES`.
    factorial : sequence of str
        Architectures also trained with each loss of ``factorial_losses`` on the Allen-Cahn suite.
    factorial_losses : sequence of str
        Robust losses among ``"L1"``, ``"Huber"``, ``"Cauchy"`` (MSE is always run).
    poisson : bool
        Add the 1-D Poisson check (MSE) for every architecture.
    steps, lr : int, float
        Adam steps and learning rate.
    n_collocation : int
        Equispaced interior collocation points (plus the two boundary points).
    cauchy_c : float
        Scale ``c`` of the Cauchy loss (and ``delta`` of the Huber loss).
    n_test : int
        Points of the error grid.
    seed : int
        Initialisation seed.
    """
    eps_values = [check_positive("eps_values", e) for e in eps_values]
    steps = check_int("steps", steps, low=1)
    for name in (*architectures, *factorial):
        make_architecture(name)  # validates the name
    for loss_name in factorial_losses:
        if loss_name not in _LOSSES or loss_name == "MSE":
            raise ValueError(f"factorial_losses must be among L1, Huber, Cauchy; got {loss_name!r}")
    suite = PINNSuite()
    dt = torch.float64
    for a_idx, arch in enumerate(architectures):
        members: list[tuple[Problem, str]] = [(AllenCahn1D(e), "MSE") for e in eps_values]
        if arch in factorial:
            members += [(AllenCahn1D(e), loss) for loss in factorial_losses for e in eps_values]
        if poisson:
            members.append((Poisson1D(), "MSE"))
        previous = torch.get_default_dtype()
        torch.set_default_dtype(dt)
        try:
            model = make_architecture(arch, ensemble=len(members), seed=seed * 100 + a_idx)
        finally:
            torch.set_default_dtype(previous)
        params = sum(p.numel() for p in model.parameters() if p.requires_grad) // len(members)
        losses = [_LOSSES[loss](cauchy_c) for _, loss in members]
        result = train_pinn(
            model,
            StackedProblems([p for p, _ in members]),
            loss=losses,
            n_collocation=n_collocation,
            steps=steps,
            lr=lr,
            n_test=n_test,
        )
        suite.models[arch] = (model, members)
        suite.histories[arch] = result.loss_history
        for e, (problem, loss) in enumerate(members):
            suite.rows.append(
                {
                    "architecture": arch,
                    "problem": problem.name,
                    "loss": loss,
                    "params": params,
                    "rel_l2": float(result.rel_l2[e]),
                    "residual_rms": float(result.residual_rms[e]),
                    "final_loss": float(result.loss_history[-1, e]),
                }
            )
    return suite
