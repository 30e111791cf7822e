"""Neural quantum state tomography with max-sliced W1 (docstring completed with the claim)."""

from __future__ import annotations

from geode.probabilistic.neural_qst.qst import (
    MaxSlicedW1Loss,
    MeasurementModel,
    NeuralWavefunction,
    QSTResult,
    fit_cholesky,
    fit_neural,
    imle,
)
from geode.probabilistic.neural_qst.sliced import (
    max_sliced_w1,
    sliced_w1_per_direction,
    uniform_directions,
    wasserstein_1d_w1,
)
from geode.probabilistic.neural_qst.states import (
    HomodyneData,
    QuadratureGrid,
    fidelity,
    hermite_functions,
    simulate_homodyne,
    two_mode_cat,
)

__all__ = [
    "HomodyneData",
    "MaxSlicedW1Loss",
    "MeasurementModel",
    "NeuralWavefunction",
    "QSTResult",
    "QuadratureGrid",
    "fidelity",
    "fit_cholesky",
    "fit_neural",
    "hermite_functions",
    "imle",
    "max_sliced_w1",
    "simulate_homodyne",
    "sliced_w1_per_direction",
    "two_mode_cat",
    "uniform_directions",
    "wasserstein_1d_w1",
]
