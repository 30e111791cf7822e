r"""HoZO: Riemannian two-point zeroth-order steps on the positive orthant, with the seed trick.

At a point :math:`\Delta \in \mathbb{R}^n_{>0}` (the quantisation scales) with the complete metric of
:mod:`geode.optim.hozo.geometry`, step :math:`t` regenerates :math:`z \sim \mathcal{N}(0, I)` from its seed,
takes the tangent vector :math:`v = \Delta \odot z` (a standard Gaussian in the orthonormal frame) and

.. math::

    d = \frac{f(\exp_\Delta(\mu v)) - f(\exp_\Delta(-\mu v))}{2 \mu}, \qquad
    \hat g = d\, v, \qquad
    \Delta \leftarrow \exp_\Delta(-\eta\, \hat g) = \Delta \odot \exp(-\eta\, d\, z),

optionally with :math:`d \leftarrow \operatorname{clip}(d, -C, C)`. Since
:math:`\exp_\Delta(\pm\mu v) = \Delta \odot \exp(\pm\mu z)`, the perturbations and the update are in-place
multiplications: the scales stay strictly positive by construction (no projection), and the state is the
same :math:`O(1)` as MeZO's. In expectation :math:`\hat g` is the Riemannian gradient:
:math:`\mathbb{E}[d\, v] \to \Delta \odot \mathbb{E}[z z^\top] (\Delta \odot \nabla f) = \Delta^2 \odot \nabla f =
\operatorname{grad}_g f` as :math:`\mu \to 0`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from geode.optim.hozo.geometry import OrthantMetric, get_metric
from geode.optim.zo import ZerothOrderOptimizer

__all__ = ["HoZO"]


class HoZO(ZerothOrderOptimizer):
    """Hyper-Octant Zeroth-order Optimisation: Riemannian SPSA on the positive orthant.

    Parameters
    ----------
    params : iterable of Parameter or dicts
        Strictly positive parameters (e.g. the scales of :func:`geode.optim.quantize_model`).
    lr : float
        Learning rate :math:`\\eta \\ge 0` (in the metric's units: a relative step for ``"log"``).
    eps : float
        Perturbation :math:`\\mu > 0` along the geodesic (relative for ``"log"``: ``1e-3`` moves each
        scale by about 0.1%).
    metric : {"log", "euclidean"} or OrthantMetric
        ``"log"`` is HoZO's complete metric; ``"euclidean"`` makes this optimiser MeZO (for ablations).
    clip : float or None
        Directional derivative clipping :math:`C` (None: none).
    seed : int

    Raises
    ------
    ValueError
        If a parameter is not strictly positive (with the ``"log"`` metric), ``eps <= 0``, ``lr < 0``, or the
        closure returns a non-scalar or non-finite loss.
    RuntimeError
        If the closure calls ``backward()``: HoZO is zeroth-order, the closure must only return the loss.

    Notes
    -----
    Use it as any ``torch.optim`` optimiser that takes a closure (``LBFGS``), except that the closure only
    *evaluates* the loss: ``step`` calls it twice, at :math:`\\exp_\\Delta(\\pm\\mu v)`, under
    ``torch.no_grad()``, and restores the parameters before the update. No ``zero_grad()``, no ``backward()``;
    the optimiser state is :math:`O(1)` (the seed trick). LR schedulers and ``state_dict`` work as usual.

    Examples
    --------
    Fit positive scales :math:`\\Delta` of a fixed design so that :math:`X\\Delta \\approx y`:

    >>> import torch
    >>> from geode.optim import HoZO
    >>> X = torch.tensor([[1.0, 2.0], [3.0, 1.0], [0.5, 0.5]])
    >>> y = X @ torch.tensor([0.5, 2.0])
    >>> scales = torch.nn.Parameter(torch.ones(2))
    >>> opt = HoZO([scales], lr=0.05, eps=1e-3, seed=0)
    >>> def closure():                                  # returns the loss; no backward()
    ...     return ((X @ scales - y) ** 2).mean()
    >>> start = float(closure().detach())
    >>> for _ in range(300):
    ...     _ = opt.step(closure)
    >>> float(closure().detach()) < 0.01 * start, bool((scales > 0).all())
    (True, True)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        eps: float = 1e-3,
        *,
        metric: str | OrthantMetric = "log",
        clip: float | None = None,
        seed: int = 0,
    ) -> None:
        self.metric = get_metric(metric)
        self.positive = True
        super().__init__(params, lr=lr, eps=eps, clip=clip, seed=seed)
        if self.metric.complete:
            for p in self._params():
                if not torch.isfinite(p).all() or not bool((p > 0).all()):
                    raise ValueError(
                        "params must be strictly positive and finite for HoZO (the positive orthant); "
                        f"got a minimum of {float(p.detach().min())}"
                    )

    def _perturb(self, group: dict[str, Any], p: torch.Tensor, z: torch.Tensor, sign: float) -> None:
        self.metric.move_(p, z, sign * group["eps"], consume=True)  # p <- exp_p(sign * mu * frame(p, z))

    def _update(self, group: dict[str, Any], p: torch.Tensor, z: torch.Tensor, d: float) -> int:
        self.metric.move_(p, z, -group["lr"] * d, consume=True)  # p <- exp_p(-lr * d * frame(p, z))
        return int((p <= 0).sum())  # only float underflow can do this with the complete metric
