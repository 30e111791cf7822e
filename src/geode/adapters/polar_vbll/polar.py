r"""PoLAR: the polar-decomposed low-rank adapter :math:`\Delta W = s\, X \Theta Y^\top`, and its landing optimiser.

:math:`X \in \mathrm{St}(m, r)` and :math:`Y \in \mathrm{St}(n, r)` have orthonormal columns (direction
matrices); :math:`\Theta \in \mathbb{R}^{r \times r}` is free (scale matrix); :math:`s = \alpha / r`. At
initialisation :math:`X, Y` are random orthonormal and :math:`\Theta = 0`, so the wrapped layer starts as
the base layer. :math:`X` and :math:`Y` are kept (near) the Stiefel manifold without retractions by the
**landing field** of Ablin & Peyré (2022), as PoLAR uses it:

.. math::

    \Lambda(X) = \big(\nabla_X \mathcal{L}\, X^\top - X\, \nabla_X \mathcal{L}^\top\big) X
                 + \lambda\, X (X^\top X - I_r),

a skew-symmetric (relative-gradient) part that moves along the manifold plus the gradient of the
penalty :math:`\tfrac{\lambda}{4}\lVert X^\top X - I \rVert_F^2` that pulls back onto it. It is computed in
:math:`O(m r^2)` as :math:`\nabla (X^\top X) - X (\nabla^\top X) + \lambda X (X^\top X - I)`. PoLAR (Lion et al.,
2025) replaces the gradients of :math:`X, Y` by :math:`\Lambda` before the optimiser's step (AdamW), which is
what :class:`LandingAdamW` does; an optional retraction (sign-fixed QR or polar factor) after the step
puts :math:`X, Y` exactly back on the manifold. :math:`\Delta W` exports to LoRA's format as
:math:`B = X \Theta`, :math:`A = Y^\top`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn

from geode.adapters.lora import AdapterLinear, adapter_modules, check_rank
from geode.core.linalg import polar, sign_fixed_qr
from geode.core.validation import check_choice, check_positive, check_real

__all__ = [
    "LandingAdamW",
    "PoLARLinear",
    "landing_field",
    "orthogonality_error",
    "polar_adapters",
    "polar_parameter_groups",
    "retract_",
    "stiefel_parameters",
]


def landing_field(x: torch.Tensor, grad: torch.Tensor, landing_lambda: float = 1.0) -> torch.Tensor:
    r"""The landing field :math:`(\nabla X^\top - X \nabla^\top) X + \lambda X (X^\top X - I)` of a tall ``x``.

    Parameters
    ----------
    x : torch.Tensor, shape (p, r) with p >= r
        A (near-)orthonormal frame.
    grad : torch.Tensor, shape (p, r)
        The Euclidean gradient :math:`\nabla_X \mathcal{L}`.
    landing_lambda : float
        Weight :math:`\lambda \ge 0` of the attraction to the manifold.

    Returns
    -------
    torch.Tensor, shape (p, r)
        On the manifold (:math:`X^\top X = I`) the field is the Riemannian gradient of the canonical
        metric, which is orthogonal to the normal space, and :math:`\langle \Lambda, \nabla \rangle \ge 0`.
    """
    if x.ndim != 2 or grad.shape != x.shape:
        raise ValueError(f"x and grad must be matrices of the same shape; got {tuple(x.shape)}, {tuple(grad.shape)}")
    if x.shape[0] < x.shape[1]:
        raise ValueError(f"x must be tall (p >= r); got shape {tuple(x.shape)}")
    lam = check_real("landing_lambda", landing_lambda, low=0.0)
    xtx = x.T @ x
    eye = torch.eye(x.shape[1], dtype=x.dtype, device=x.device)
    return grad @ xtx - x @ (grad.T @ x) + lam * (x @ (xtx - eye))


def orthogonality_error(x: torch.Tensor) -> float:
    r""":math:`\lVert X^\top X - I \rVert_F` of a tall frame ``x`` (0 on the Stiefel manifold)."""
    eye = torch.eye(x.shape[-1], dtype=x.dtype, device=x.device)
    return float((x.detach().mT @ x.detach() - eye).norm())


def _random_stiefel(p: int, r: int, like: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    g = torch.randn(p, r, dtype=torch.float64, generator=generator)
    return sign_fixed_qr(g)[0].to(dtype=like.dtype, device=like.device)


class PoLARLinear(AdapterLinear):
    r"""PoLAR around a frozen ``nn.Linear``: :math:`y = W x + b + s\, X \Theta Y^\top x`.

    Parameters
    ----------
    base : nn.Linear
        The frozen layer, weight of shape (out, in).
    r : int
        Rank, ``1 <= r <= min(in, out)``.
    alpha : float, optional
        :math:`\alpha` of :math:`s = \alpha / r` (default ``alpha = r``).
    dropout : float
        Dropout probability on the adapter's input.
    generator : torch.Generator, optional
        Random source of the orthonormal initialisation of ``X`` and ``Y``.

    Attributes
    ----------
    X : nn.Parameter, shape (out, r)
        Left direction matrix on :math:`\mathrm{St}(out, r)`; flagged ``X.stiefel = True``.
    Y : nn.Parameter, shape (in, r)
        Right direction matrix on :math:`\mathrm{St}(in, r)`; flagged ``Y.stiefel = True``.
    theta : nn.Parameter, shape (r, r)
        Scale matrix :math:`\Theta`, zero at initialisation.
    scaling : float
    """

    def __init__(
        self,
        base: nn.Linear,
        r: int,
        alpha: float | None = None,
        *,
        dropout: float = 0.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(base)
        self.r = check_rank(r, base)
        self.alpha = float(self.r) if alpha is None else check_positive("alpha", alpha)
        self.scaling = self.alpha / self.r
        p = check_real("dropout", dropout, low=0.0, high=1.0)
        self.dropout = nn.Dropout(p) if p > 0 else nn.Identity()
        w = base.weight
        self.X = nn.Parameter(_random_stiefel(self.out_features, self.r, w, generator))
        self.Y = nn.Parameter(_random_stiefel(self.in_features, self.r, w, generator))
        self.theta = nn.Parameter(torch.zeros(self.r, self.r, dtype=w.dtype, device=w.device))
        self.X.stiefel = True
        self.Y.stiefel = True

    def delta_weight(self) -> torch.Tensor:
        return self.scaling * (self.X @ self.theta @ self.Y.T)

    def adapter_output(self, x: torch.Tensor) -> torch.Tensor:
        return self.scaling * (((self.dropout(x) @ self.Y) @ self.theta.T) @ self.X.T)

    def lora_factors(self) -> tuple[torch.Tensor, torch.Tensor, float]:
        r""":math:`A = Y^\top`, :math:`B = X \Theta` and :math:`s`: the same :math:`\Delta W` in LoRA's format."""
        return self.Y.T, self.X @ self.theta, self.scaling

    def orthogonality_error(self) -> float:
        r""":math:`\max(\lVert X^\top X - I\rVert_F, \lVert Y^\top Y - I\rVert_F)`."""
        return max(orthogonality_error(self.X), orthogonality_error(self.Y))

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, r={self.r}, alpha={self.alpha:g}, scaling={self.scaling:g}"


def stiefel_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The parameters of ``model`` flagged ``stiefel`` (the ``X``, ``Y`` of its PoLAR adapters)."""
    return [p for p in model.parameters() if getattr(p, "stiefel", False)]


def polar_parameter_groups(
    model: nn.Module,
    *,
    lr: float,
    lr_theta: float | None = None,
    landing_lambda: float = 1.0,
    weight_decay: float = 0.0,
) -> list[dict[str, Any]]:
    """Parameter groups for :class:`LandingAdamW`: the Stiefel frames, then every other trainable parameter.

    The frames get no weight decay (it would pull them off the manifold); ``lr_theta`` (default
    ``lr``) is the rate of everything else (``theta``, heads, ...).
    """
    frames = stiefel_parameters(model)
    ids = {id(p) for p in frames}
    rest = [p for p in model.parameters() if p.requires_grad and id(p) not in ids]
    groups: list[dict[str, Any]] = []
    if frames:
        groups.append(
            {"params": frames, "lr": lr, "stiefel": True, "landing_lambda": landing_lambda, "weight_decay": 0.0}
        )
    if rest:
        groups.append({"params": rest, "lr": lr if lr_theta is None else lr_theta, "weight_decay": weight_decay})
    if not groups:
        raise ValueError("model has no trainable parameters")
    return groups


def retract_(params: Iterable[torch.Tensor], method: str = "qr") -> None:
    """Put each tall frame exactly back on the Stiefel manifold, in place (sign-fixed QR or polar factor)."""
    check_choice("method", method, ("qr", "polar"))
    with torch.no_grad():
        for p in params:
            q = sign_fixed_qr(p)[0] if method == "qr" else polar(p)[0]
            p.copy_(q)


class LandingAdamW(torch.optim.AdamW):
    r"""AdamW in which the parameter groups flagged ``stiefel=True`` step along the landing field.

    Before AdamW's step the gradient of every such frame :math:`X` is replaced by
    :math:`\Lambda(X)` (:func:`landing_field`, weight ``landing_lambda`` of the group, default 1);
    with ``retraction="qr"`` or ``"polar"`` in the group, the frame is retracted after the step.
    Build the groups with :func:`polar_parameter_groups`.

    Examples
    --------
    >>> layer = PoLARLinear(nn.Linear(8, 6), r=2)
    >>> opt = LandingAdamW(polar_parameter_groups(layer, lr=1e-2))
    >>> layer(torch.randn(4, 8)).pow(2).sum().backward(); opt.step()
    """

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        with torch.no_grad():
            for group in self.param_groups:
                if group.get("stiefel", False):
                    lam = group.get("landing_lambda", 1.0)
                    for p in group["params"]:
                        if p.grad is not None:
                            p.grad.copy_(landing_field(p, p.grad, lam))
        super().step()
        for group in self.param_groups:
            if group.get("stiefel", False) and group.get("retraction") is not None:
                retract_(group["params"], group["retraction"])
        return loss


def polar_adapters(model: nn.Module) -> dict[str, PoLARLinear]:
    """The PoLAR adapters of ``model`` by module name."""
    return {n: m for n, m in adapter_modules(model).items() if isinstance(m, PoLARLinear)}
