r"""Toy system of the ADA claim: a 2-D double well whose simulator has the wrong tilt and transverse stiffness.

:math:`U(x) = h (x_1^2-1)^2 + c\,x_1 + \tfrac{k}{2} x_2^2`, Boltzmann density :math:`e^{-U}` (unit temperature).
:math:`x_1` and :math:`x_2` are independent under it, so it is sampled exactly (inverse CDF on a fine grid for
:math:`x_1`, Gaussian :math:`x_2`) and its mode weight :math:`P(x_1<0)` is a 1-D quadrature. The simulator is the
symmetric well (``tilt=0``, ``k=1``); the hidden truth is tilted (``tilt=0.4``, ``k=2``). Observables:
:math:`o_1 = x_1` (bimodal) and :math:`o_2 = \|x - x_A\|` with :math:`x_A = (-1, 0)` (correlated with :math:`o_1`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from geode.core.validation import check_real

__all__ = ["DoubleWell", "toy_observables"]


@dataclass(frozen=True)
class DoubleWell:
    """Double-well Boltzmann distribution, sampled exactly."""

    height: float = 2.0
    tilt: float = 0.0
    stiffness: float = 1.0

    def __post_init__(self) -> None:
        check_real("height", self.height)
        check_real("tilt", self.tilt)
        check_real("stiffness", self.stiffness, low=0.0, low_inclusive=False)

    def _grid(self) -> tuple[np.ndarray, np.ndarray]:
        x = np.linspace(-3.5, 3.5, 20001)
        u = self.height * (x**2 - 1) ** 2 + self.tilt * x
        p = np.exp(-(u - u.min()))
        return x, p / p.sum()

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        if n < 1:
            raise ValueError(f"n must be >= 1; got {n}")
        x, p = self._grid()
        cdf = np.cumsum(p)
        x1 = np.interp(rng.uniform(0, 1, n) * cdf[-1], cdf, x)
        x2 = rng.standard_normal(n) / np.sqrt(self.stiffness)
        return np.stack([x1, x2], 1)

    def left_weight(self) -> float:
        """P(x_1 < 0)."""
        x, p = self._grid()
        return float(p[x < 0].sum())


def toy_observables() -> dict:
    """The claim's two observables, differentiable torch maps (n, 2) -> (n,): ``x1`` and ``dist_A`` = |x - (-1, 0)|."""
    a = torch.tensor([-1.0, 0.0], dtype=torch.float64)
    return {"x1": lambda x: x[:, 0], "dist_A": lambda x: torch.linalg.norm(x - a, dim=-1)}
