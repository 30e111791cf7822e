"""Scientific machine learning: KANs, coordinate networks and PINNs, and the field's shared tools.

The paper folders live below (``geode.sciml.gckan``, ``geode.sciml.residual_can``,
``geode.sciml.inr_error``) and their main classes are re-exported here; what several of them can reuse
sits here too: the vectorised B-spline KAN with pykan's vocabulary (:mod:`geode.sciml.kan`),
coordinate networks (MLP, SIREN, Fourier features; :mod:`geode.sciml.nets`), stacked-ensemble training
(:mod:`geode.sciml.ensemble`) and the PINN trainer with its test problems and losses
(:mod:`geode.sciml.pinn`). The Feynman equations are in :mod:`geode.data.feynman`.
"""

from __future__ import annotations

from geode.sciml.ensemble import fit_ensemble, member_state, stack_members
from geode.sciml.gckan import GCKAN, GCKANLayer, duality_map
from geode.sciml.inr_error import (
    BilinearGrid,
    CPFactorisation,
    ErrorPredictor,
    FourierFeatures,
    GlobalPrediction,
    HashGrid,
    TruncatedSVD,
    UndersampledFourier,
    fit_family,
    shepp_logan,
)
from geode.sciml.kan import KAN, KANLayer, bspline_basis, create_dataset, fit, uniform_grid
from geode.sciml.nets import MLP, SIREN, EnsembleLinear, FourierFeatureMLP, check_width
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
from geode.sciml.residual_can import CauchyActivation, CauchyLoss, ResidualCAN, cauchy_kernel

__all__ = [
    "GCKAN",
    "KAN",
    "MLP",
    "SIREN",
    "AllenCahn1D",
    "BilinearGrid",
    "Burgers1D",
    "CPFactorisation",
    "CauchyActivation",
    "CauchyLoss",
    "EnsembleLinear",
    "ErrorPredictor",
    "FourierFeatureMLP",
    "FourierFeatures",
    "GCKANLayer",
    "GlobalPrediction",
    "HashGrid",
    "HuberLoss",
    "KANLayer",
    "L1Loss",
    "MSELoss",
    "PINNResult",
    "Poisson1D",
    "Poisson2D",
    "Problem",
    "ResidualCAN",
    "StackedProblems",
    "TruncatedSVD",
    "UndersampledFourier",
    "bspline_basis",
    "cauchy_kernel",
    "check_width",
    "create_dataset",
    "derivatives",
    "duality_map",
    "fit",
    "fit_ensemble",
    "fit_family",
    "member_state",
    "relative_l2_error",
    "shepp_logan",
    "stack_members",
    "train_pinn",
    "uniform_grid",
]
