"""Scientific machine learning: KANs, coordinate networks and PINNs, and the field's shared tools.

The paper folders live below (``geode.sciml.gckan``, ``geode.sciml.residual_can``,
``geode.sciml.inr_error``, ``geode.sciml.pde_pretrain``: pre-training mesh surrogates on 3D geometries) and
their main classes are re-exported here; what several of them can reuse
sits here too: the vectorised B-spline KAN with pykan's vocabulary (:mod:`geode.sciml.kan`),
coordinate networks (MLP, SIREN, Fourier features; :mod:`geode.sciml.nets`), stacked-ensemble training
(:mod:`geode.sciml.ensemble`) and the PINN trainer with its test problems and losses
(:mod:`geode.sciml.pinn`). The Feynman equations are in :mod:`geode.data.feynman`.
"""

from __future__ import annotations

from geode.sciml import gckan as _gckan
from geode.sciml import inr_error as _inr_error
from geode.sciml import pde_pretrain as _pde_pretrain
from geode.sciml import residual_can as _residual_can
from geode.sciml.ensemble import fit_ensemble, member_state, stack_members
from geode.sciml.gckan import *  # noqa: F403
from geode.sciml.inr_error import *  # noqa: F403
from geode.sciml.kan import KAN, KANLayer, bspline_basis, create_dataset, fit, uniform_grid
from geode.sciml.nets import MLP, SIREN, EnsembleLinear, FourierFeatureMLP, check_width
from geode.sciml.pde_pretrain import *  # noqa: F403
from geode.sciml.pinn import (
    AllenCahn1D,
    Burgers1D,
    HuberLoss,
    L1Loss,
    MSELoss,
    PINNResult,
    Poisson1D,
    Poisson2D,
    Problem,
    StackedProblems,
    derivatives,
    relative_l2_error,
    train_pinn,
)
from geode.sciml.residual_can import *  # noqa: F403

__all__ = [
    "KAN",
    "MLP",
    "SIREN",
    "AllenCahn1D",
    "Burgers1D",
    "EnsembleLinear",
    "FourierFeatureMLP",
    "HuberLoss",
    "KANLayer",
    "L1Loss",
    "MSELoss",
    "PINNResult",
    "Poisson1D",
    "Poisson2D",
    "Problem",
    "StackedProblems",
    "bspline_basis",
    "check_width",
    "create_dataset",
    "derivatives",
    "fit",
    "fit_ensemble",
    "member_state",
    "relative_l2_error",
    "stack_members",
    "train_pinn",
    "uniform_grid",
]
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_gckan.__all__, *_inr_error.__all__, *_pde_pretrain.__all__, *_residual_can.__all__]
