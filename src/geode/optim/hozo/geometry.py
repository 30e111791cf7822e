r"""Riemannian geometry of the positive orthant :math:`\mathbb{R}^n_{>0}`: metrics with closed-form exponential maps.

HoZO's metric (reconstructed; the paper's exact "novel" metric is not public) is

.. math::

    g_x(u, v) = \sum_i \frac{u_i v_i}{x_i^2},

the product of :math:`n` copies of the hyperbolic half-line. The chart :math:`y = \log x` is an isometry
onto Euclidean :math:`\mathbb{R}^n`, so the metric is geodesically complete (every geodesic lives for all
time and never reaches the boundary :math:`x_i = 0`) and

.. math::

    \exp_x(v) = x \odot \exp(v \oslash x), \qquad
    \log_x(y) = x \odot \log(y \oslash x), \qquad
    \operatorname{grad}_g f(x) = x \odot x \odot \nabla f(x), \qquad
    d(x, y) = \lVert \log y - \log x \rVert_2 .

Its geodesic equation, from the Christoffel symbols :math:`\Gamma^i_{ii} = -1/x_i` (all others zero), is

.. math::

    \ddot x_i = \dot x_i^2 / x_i ,

which :math:`x(t) = \exp_{x_0}(t v)` solves (``tests/optim/test_hozo.py`` checks it against an ODE
integrator). :math:`e_i(x) = x_i\, \mathbf{e}_i` is an orthonormal frame at :math:`x`, so a standard
Gaussian in the tangent space is :math:`v = x \odot z` with :math:`z \sim \mathcal{N}(0, I)`.

The Euclidean metric :math:`g_x(u, v) = u^\top v` (geodesically *incomplete* on the orthant: straight
lines leave it) is kept for comparison: with it HoZO is MeZO.
"""

from __future__ import annotations

from typing import Any

import torch

from geode.core.validation import check_choice

__all__ = ["METRICS", "EuclideanMetric", "LogMetric", "OrthantMetric", "get_metric"]


def _positive(name: str, x: torch.Tensor) -> None:
    if not torch.isfinite(x).all() or not (x > 0).all():
        raise ValueError(f"{name} must be finite and strictly positive (a point of the positive orthant)")


class OrthantMetric:
    """A Riemannian metric on the positive orthant with closed-form exponential map and orthonormal frame."""

    name = ""
    complete = False

    def inner(self, x: torch.Tensor, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """:math:`g_x(u, v)`, summed over all entries."""
        raise NotImplementedError

    def exp(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """The exponential map :math:`\\exp_x(v)`."""
        raise NotImplementedError

    def log(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The inverse of :meth:`exp`: the tangent vector at ``x`` whose geodesic reaches ``y`` at time 1."""
        raise NotImplementedError

    def frame(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """Coordinates ``z`` in the orthonormal frame at ``x`` as a tangent vector (``z`` standard normal -> v)."""
        raise NotImplementedError

    def riemannian_grad(self, x: torch.Tensor, egrad: torch.Tensor) -> torch.Tensor:
        """:math:`\\operatorname{grad}_g f = G(x)^{-1} \\nabla f` from the Euclidean gradient."""
        raise NotImplementedError

    def christoffel_acceleration(self, x: torch.Tensor, xdot: torch.Tensor) -> torch.Tensor:
        """:math:`\\ddot x` of a geodesic through ``x`` with velocity ``xdot`` (the geodesic ODE's right side)."""
        raise NotImplementedError

    # in-place moves used by the optimiser (no temporary beyond one parameter-sized tensor)
    def move_(self, x: torch.Tensor, z: torch.Tensor, t: float, *, consume: bool = False) -> torch.Tensor:
        """``x <- exp_x(t * frame(x, z))`` in place; with ``consume=True`` ``z`` may be overwritten (no temporary)."""
        raise NotImplementedError


class LogMetric(OrthantMetric):
    """:math:`g_x(u, v) = \\sum_i u_i v_i / x_i^2`: complete, :math:`\\exp_x(v) = x \\odot \\exp(v / x)`."""

    name = "log"
    complete = True

    def inner(self, x: torch.Tensor, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return (u * v / (x * x)).sum()

    def exp(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return x * torch.exp(v / x)

    def log(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        _positive("y", y)
        return x * torch.log(y / x)

    def frame(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return x * z

    def riemannian_grad(self, x: torch.Tensor, egrad: torch.Tensor) -> torch.Tensor:
        return x * x * egrad

    def christoffel_acceleration(self, x: torch.Tensor, xdot: torch.Tensor) -> torch.Tensor:
        return xdot * xdot / x

    def distance(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Geodesic distance :math:`\\lVert \\log y - \\log x \\rVert_2` between two points of the orthant."""
        for name, t in (("x", x), ("y", y)):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{name} must be a torch tensor; got {type(t).__name__}")
            if t.numel() == 0:
                raise ValueError(f"{name} must not be empty")
            _positive(name, t)
        if x.shape != y.shape:
            raise ValueError(f"x and y must have the same shape; got {tuple(x.shape)} and {tuple(y.shape)}")
        return torch.linalg.vector_norm(torch.log(y) - torch.log(x))

    def move_(self, x: torch.Tensor, z: torch.Tensor, t: float, *, consume: bool = False) -> torch.Tensor:
        # exp_x(t * x ⊙ z) = x ⊙ exp(t z)
        return x.mul_(z.mul_(t).exp_() if consume else torch.exp(z * t))


class EuclideanMetric(OrthantMetric):
    """:math:`g_x(u, v) = u^\\top v`: incomplete on the orthant, :math:`\\exp_x(v) = x + v` (leaves it)."""

    name = "euclidean"
    complete = False

    def inner(self, x: torch.Tensor, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return (u * v).sum()

    def exp(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return x + v

    def log(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return y - x

    def frame(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return z

    def riemannian_grad(self, x: torch.Tensor, egrad: torch.Tensor) -> torch.Tensor:
        return egrad

    def christoffel_acceleration(self, x: torch.Tensor, xdot: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)

    def move_(self, x: torch.Tensor, z: torch.Tensor, t: float, *, consume: bool = False) -> torch.Tensor:
        return x.add_(z, alpha=t)


METRICS: dict[str, type[OrthantMetric]] = {"log": LogMetric, "euclidean": EuclideanMetric}
"""The metrics by name."""


def get_metric(metric: Any) -> OrthantMetric:
    """A metric instance from its name (``"log"``, ``"euclidean"``) or an :class:`OrthantMetric` instance."""
    if isinstance(metric, OrthantMetric):
        return metric
    check_choice("metric", metric, tuple(METRICS))
    return METRICS[metric]()
