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

Inside Hugging Face PEFT, :func:`polar_config` makes ``get_peft_model`` build PoLAR layers (the layout of the
PoLAR authors' PEFT layer): ``lora_A`` holds :math:`Y^\top` (a *row* frame, flagged ``stiefel = "rows"``),
``lora_B`` holds :math:`X`, ``lora_S`` holds :math:`\Theta`; :class:`LandingAdamW` with
:func:`polar_parameter_groups` trains them as it trains :class:`PoLARLinear`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from geode.adapters.lora import AdapterLinear, adapter_modules, check_rank
from geode.core.linalg import polar, sign_fixed_qr
from geode.core.validation import check_choice, check_positive, check_real, check_tensor

__all__ = [
    "LandingAdamW",
    "PoLARLinear",
    "landing_field",
    "orthogonality_error",
    "polar_adapters",
    "polar_config",
    "polar_parameter_groups",
    "retract_",
    "stiefel_parameters",
]


def landing_field(x: torch.Tensor, grad: torch.Tensor, landing_lambda: float = 1.0) -> torch.Tensor:
    r"""The landing field of a tall frame ``x``: a step along the Stiefel manifold plus a pull back onto it.

    :math:`\Lambda(X) = (\nabla X^\top - X \nabla^\top) X + \lambda X (X^\top X - I)`.

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

    Raises
    ------
    TypeError, ValueError
        ``x`` or ``grad`` not a finite, non-empty matrix, shapes that differ, a wide ``x``, or a negative or
        non-finite ``landing_lambda``.
    """
    check_tensor("x", x, ndim=2)
    check_tensor("grad", grad, ndim=2)
    return _landing_field(x, grad, landing_lambda)


def _landing_field(x: torch.Tensor, grad: torch.Tensor, landing_lambda: float) -> torch.Tensor:
    """:func:`landing_field` without the finiteness checks (the optimiser's step: no device synchronisation)."""
    if x.ndim != 2 or grad.shape != x.shape:
        raise ValueError(f"x and grad must be matrices of the same shape; got {tuple(x.shape)}, {tuple(grad.shape)}")
    if x.shape[0] < x.shape[1]:
        raise ValueError(f"x must be tall (p >= r); got shape {tuple(x.shape)}")
    lam = check_real("landing_lambda", landing_lambda, low=0.0)
    xtx = x.T @ x
    eye = torch.eye(x.shape[1], dtype=x.dtype, device=x.device)
    return grad @ xtx - x @ (grad.T @ x) + lam * (x @ (xtx - eye))


def orthogonality_error(x: torch.Tensor) -> float:
    r"""How far a frame is from orthonormal: ‖XᵀX − I‖_F (0 on the Stiefel manifold).

    :math:`\lVert X^\top X - I \rVert_F` of a tall frame ``x``.

    A wide ``x`` (more columns than rows, such as PEFT's ``lora_A`` :math:`= Y^\top`) is a row frame: the error is
    :math:`\lVert X X^\top - I \rVert_F`. ``x`` must be a finite, non-empty matrix.
    """
    check_tensor("x", x, ndim=2)
    x = x.detach()
    if x.shape[-2] < x.shape[-1]:
        x = x.mT
    eye = torch.eye(x.shape[-1], dtype=x.dtype, device=x.device)
    return float((x.mT @ x - eye).norm())


def _random_stiefel(p: int, r: int, like: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    g = torch.randn(p, r, dtype=torch.float64, generator=generator)
    return sign_fixed_qr(g)[0].to(dtype=like.dtype, device=like.device)


class PoLARLinear(AdapterLinear):
    r"""PoLAR around a frozen ``nn.Linear``: y = W x + b + s·X Θ Yᵀ x, with orthonormal frames X and Y.

    :math:`y = W x + b + s\, X \Theta Y^\top x`.

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
    """The parameters of ``model`` flagged ``stiefel`` (the ``X``, ``Y`` of its PoLAR adapters).

    ``stiefel = True`` marks a column frame (orthonormal columns, :math:`X^\top X = I`); ``stiefel = "rows"`` a row
    frame (orthonormal rows), as PEFT's ``lora_A`` :math:`= Y^\top` of a :func:`polar_config` model.
    """
    return [p for p in model.parameters() if getattr(p, "stiefel", False)]


def _is_row_frame(p: torch.Tensor, group_flag: Any = None) -> bool:
    return group_flag == "rows" or getattr(p, "stiefel", None) == "rows"


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
    ``lr``) is the rate of everything else (``theta``, heads, ...). Column frames (``X``, ``Y`` of
    :class:`PoLARLinear`, PEFT's ``lora_B``) form a group with ``stiefel=True``; row frames (PEFT's
    ``lora_A`` :math:`= Y^\top` in a :func:`polar_config` model) a group with ``stiefel="rows"``.
    ``lr`` and ``lr_theta`` must be > 0, ``landing_lambda`` and ``weight_decay`` >= 0 (all finite).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module; got {type(model).__name__}")
    check_positive("lr", lr)
    if lr_theta is not None:
        check_positive("lr_theta", lr_theta)
    check_real("landing_lambda", landing_lambda, low=0.0)
    check_real("weight_decay", weight_decay, low=0.0)
    frames = [p for p in stiefel_parameters(model) if p.requires_grad]
    ids = {id(p) for p in frames}
    rest = [p for p in model.parameters() if p.requires_grad and id(p) not in ids]
    groups: list[dict[str, Any]] = []
    for flag in (True, "rows"):
        these = [p for p in frames if _is_row_frame(p) == (flag == "rows")]
        if these:
            groups.append(
                {"params": these, "lr": lr, "stiefel": flag, "landing_lambda": landing_lambda, "weight_decay": 0.0}
            )
    if rest:
        groups.append({"params": rest, "lr": lr if lr_theta is None else lr_theta, "weight_decay": weight_decay})
    if not groups:
        raise ValueError("model has no trainable parameters")
    return groups


def retract_(params: Iterable[torch.Tensor], method: str = "qr", *, rows: bool = False) -> None:
    """Put each frame exactly back on the Stiefel manifold, in place (sign-fixed QR or polar factor).

    A frame is a tall matrix with orthonormal columns, or, when ``rows`` is true or it is flagged
    ``stiefel = "rows"``, a wide one with orthonormal rows (it is retracted as its transpose). Each frame must be
    a finite, non-empty matrix; an empty ``params`` retracts nothing.
    """
    check_choice("method", method, ("qr", "polar"))
    if isinstance(params, torch.Tensor):
        raise TypeError("params must be an iterable of frames (e.g. a list of tensors), not one tensor")
    params = list(params)
    for i, p in enumerate(params):
        check_tensor(f"params[{i}]", p, ndim=2)
    _retract(params, method, rows=rows)


def _retract(params: Iterable[torch.Tensor], method: str, *, rows: bool = False) -> None:
    """:func:`retract_` without the checks (the optimiser's step; no device synchronisation)."""
    with torch.no_grad():
        for p in params:
            t = rows or _is_row_frame(p)
            m = p.mT if t else p
            q = sign_fixed_qr(m)[0] if method == "qr" else polar(m)[0]
            p.copy_(q.mT if t else q)


class LandingAdamW(torch.optim.AdamW):
    r"""AdamW in which the parameter groups flagged ``stiefel=True`` step along the landing field.

    Before AdamW's step the gradient of every such frame :math:`X` is replaced by
    :math:`\Lambda(X)` (:func:`landing_field`, weight ``landing_lambda`` of the group, default 1);
    with ``retraction="qr"`` or ``"polar"`` in the group, the frame is retracted after the step.
    A group with ``stiefel="rows"`` (or a parameter flagged so) holds row frames, such as PEFT's
    ``lora_A`` :math:`= Y^\top`: they step along :math:`\Lambda(X^\top)^\top`. Build the groups with
    :func:`polar_parameter_groups`.

    Examples
    --------
    >>> layer = PoLARLinear(nn.Linear(8, 6), r=2)
    >>> opt = LandingAdamW(polar_parameter_groups(layer, lr=1e-2))
    >>> layer(torch.randn(4, 8)).pow(2).sum().backward(); opt.step()

    The constructor is AdamW's, with its hyper-parameters checked first: ``params`` non-empty, ``lr`` > 0, ``betas``
    two numbers in [0, 1), ``eps`` and ``weight_decay`` >= 0 (all finite).
    """

    def __init__(
        self,
        params: Any,
        lr: float | torch.Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        **kwargs: Any,
    ) -> None:
        if isinstance(params, torch.Tensor):
            raise TypeError("params must be an iterable of parameters or parameter groups, not one tensor")
        params = list(params)
        if not params:
            raise ValueError("params must hold at least one parameter or parameter group; got none")
        if isinstance(lr, torch.Tensor):
            if lr.numel() != 1 or not bool(torch.isfinite(lr).all()) or float(lr) <= 0:
                raise ValueError(f"lr must be one finite number > 0; got {lr!r}")
        else:
            check_positive("lr", lr)
        if isinstance(betas, (str, bytes)) or not hasattr(betas, "__len__") or len(betas) != 2:
            raise ValueError(f"betas must be two numbers in [0, 1); got {betas!r}")
        for i, b in enumerate(betas):
            check_real(
                f"betas[{i}]", float(b) if isinstance(b, torch.Tensor) else b, low=0.0, high=1.0, high_inclusive=False
            )
        check_real("eps", eps, low=0.0)
        check_real("weight_decay", weight_decay, low=0.0)
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, **kwargs)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        with torch.no_grad():
            for group in self.param_groups:
                flag = group.get("stiefel", False)
                if flag:
                    lam = group.get("landing_lambda", 1.0)
                    for p in group["params"]:
                        if p.grad is None:
                            continue
                        if _is_row_frame(p, flag):
                            p.grad.copy_(_landing_field(p.mT, p.grad.mT, lam).mT)
                        else:
                            p.grad.copy_(_landing_field(p, p.grad, lam))
        super().step()
        for group in self.param_groups:
            if group.get("stiefel", False) and group.get("retraction") is not None:
                check_choice("retraction", group["retraction"], ("qr", "polar"))
                _retract(group["params"], group["retraction"], rows=group["stiefel"] == "rows")
        return loss


def polar_config(*, from_checkpoint: str | Path | None = None, **lora_config_kwargs: Any) -> Any:
    r"""A ``peft.LoraConfig`` whose ``nn.Linear`` targets become PoLAR layers in ``get_peft_model`` (needs ``peft``).

    The layers (:class:`~geode.adapters.polar_vbll.peft_layer.PoLARPeftLinear`) hold ``lora_A`` :math:`= Y^\top`,
    ``lora_B`` :math:`= X` and ``lora_S`` :math:`= \Theta`, so :math:`\Delta W = s X \Theta Y^\top` with
    :math:`s = \alpha/r`. They start as the base model (:math:`\Theta = 0`; orthonormal frames drawn from torch's
    global generator) and are trained with :class:`LandingAdamW` over :func:`polar_parameter_groups` of the PEFT
    model (plain AdamW would let the frames drift off the manifold). ``merge_and_unload`` and ``save_pretrained``
    are PEFT's. A checkpoint holds ``lora_A``, ``lora_S`` and ``lora_B`` and records ``init_lora_weights =
    "polar"``: load it with ``PeftModel.from_pretrained(base, path, config=polar_config(from_checkpoint=path))``;
    a plain ``LoraConfig`` refuses it. For a plain LoRA checkpoint (:math:`B = X\Theta`, :math:`A = Y^\top`),
    train geode's :class:`PoLARLinear` (:func:`geode.adapters.inject_adapters`) and export it with
    :func:`geode.adapters.save_peft_lora`, or merge.

    Uses PEFT's experimental custom-module hook ``LoraConfig._register_custom_module``; any other targeted layer
    type (GPT-2's ``Conv1D``, embeddings, convolutions) makes ``get_peft_model`` raise a ``TypeError``.

    Parameters
    ----------
    from_checkpoint : str or Path, optional
        A folder written by ``save_pretrained`` of a PoLAR PEFT model: its LoRA settings are read back.
    **lora_config_kwargs
        Passed to ``peft.LoraConfig`` (``r``, ``lora_alpha``, ``target_modules``, ``lora_dropout``, ...).
        ``use_dora``, ``lora_bias``, ``use_rslora``, ``fan_in_fan_out`` and an ``init_lora_weights`` other than
        ``True`` are refused.

    Examples
    --------
    >>> from peft import get_peft_model  # doctest: +SKIP
    >>> model = get_peft_model(model, polar_config(r=8, lora_alpha=16, target_modules=["q_proj"]))  # doctest: +SKIP
    >>> opt = LandingAdamW(polar_parameter_groups(model, lr=4e-3))  # doctest: +SKIP
    """
    try:
        from peft import LoraConfig
    except ImportError:  # pragma: no cover - peft is in the llm extra
        raise ImportError("PoLAR in PEFT needs peft: pip install 'geode[llm]'") from None
    from geode.adapters.peft_format import refused_layer_types
    from geode.adapters.polar_vbll.peft_layer import INIT, PoLARPeftLinear

    for key in ("use_dora", "lora_bias", "use_rslora", "fan_in_fan_out"):
        if lora_config_kwargs.get(key):
            raise ValueError(f"{key}: PoLAR supports plain LoRA settings only")
    if from_checkpoint is not None:
        if lora_config_kwargs:
            raise ValueError("pass either from_checkpoint or LoRA settings, not both")
        folder = Path(from_checkpoint)
        cfg_file = folder / "adapter_config.json"
        if not cfg_file.is_file():
            raise FileNotFoundError(f"{folder} holds no adapter_config.json")
        saved = json.loads(cfg_file.read_text(encoding="utf-8")).get("init_lora_weights")
        if saved != INIT:
            raise ValueError(f"{folder} is not a PoLAR checkpoint (init_lora_weights={saved!r}, not {INIT!r})")
        cfg = LoraConfig.from_pretrained(str(folder))
    else:
        init = lora_config_kwargs.pop("init_lora_weights", INIT)
        if init not in (INIT, True):
            raise ValueError(f"init_lora_weights: PoLAR initialises itself (Θ = 0, orthonormal frames); got {init!r}")
        cfg = LoraConfig(init_lora_weights=INIT, **lora_config_kwargs)
    mapping: dict[type, type] = {nn.Linear: PoLARPeftLinear}
    mapping.update(refused_layer_types("PoLAR"))
    cfg._register_custom_module(mapping)
    return cfg


def polar_adapters(model: nn.Module) -> dict[str, PoLARLinear]:
    """The PoLAR adapters of ``model`` by module name."""
    return {n: m for n, m in adapter_modules(model).items() if isinstance(m, PoLARLinear)}
