"""Negative weight drift and activation sparsity (Shvetsov et al., "Bug or Feature²").

Standard losses with positively biased activations (ReLU, GELU, SiLU) give positive pre-activations a
non-negative expected gradient at initialisation, so the weights downstream of those activations drift
negative early in training; with ReLU this raises activation sparsity, and accuracy falls off a cliff
beyond ~70% sparsity. This package holds the measurements (:func:`weight_drift`,
:func:`expected_preactivation_gradient`, :class:`SparsityMonitor`), the activation zoo
(:class:`QuantileReLU`, :class:`ReLU2`, :class:`ClippedReLU2`, :class:`GELU2`, :class:`ClippedGELU2`) and
the claim check (``geode reproduce weight-drift``).
"""

from __future__ import annotations

from geode.analysis.weight_drift.drift import (
    ACTIVATIONS,
    GELU2,
    ClippedGELU2,
    ClippedReLU2,
    QuantileReLU,
    ReLU2,
    SparsityMonitor,
    expected_preactivation_gradient,
    make_activation,
    weight_drift,
)

__all__ = [
    "ACTIVATIONS",
    "GELU2",
    "ClippedGELU2",
    "ClippedReLU2",
    "QuantileReLU",
    "ReLU2",
    "SparsityMonitor",
    "expected_preactivation_gradient",
    "make_activation",
    "weight_drift",
]
