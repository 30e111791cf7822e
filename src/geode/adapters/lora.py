r"""The field's adapter base: wrapping ``nn.Linear`` layers, LoRA and DoRA, merging, and HF PEFT interop.

An adapter wraps a frozen linear layer :math:`y = W x + b` (``W`` of shape (out, in)) and adds a
trainable weight update :math:`\Delta W`:

.. math::

    y = (W + \Delta W)\, x + b .

- **LoRA** (Hu et al., 2022): :math:`\Delta W = s\, B A` with ``lora_A`` :math:`A \in \mathbb{R}^{r \times
  n_{in}}`, ``lora_B`` :math:`B \in \mathbb{R}^{n_{out} \times r}` and ``scaling`` :math:`s = \alpha / r`
  (or :math:`\alpha / \sqrt{r}` with rsLoRA). :math:`A` starts Kaiming-uniform and :math:`B = 0`, so the
  wrapped model starts as the base model.
- **DoRA** (Liu et al., 2024): a magnitude vector :math:`m \in \mathbb{R}^{n_{out}}` times the row-normalised
  direction, :math:`W' = \operatorname{diag}(m / \lVert W + sBA \rVert_{\text{row}})\,(W + sBA)`, with
  :math:`m` initialised to the row norms of :math:`W` and the norm treated as a constant in the backward
  pass (DoRA's Sec. 4.3, as PEFT does).

:func:`inject_adapters` swaps matching ``nn.Linear`` modules of any model for adapters built by a
factory; :func:`merge_adapters`/:func:`unmerge_adapters` fold :math:`\Delta W` into ``W`` and back (exact
up to one floating-point rounding per entry); :func:`save_peft_lora`/:func:`load_peft_lora` write and
read Hugging Face PEFT's LoRA checkpoint format (``adapter_config.json`` + ``adapter_model.safetensors``
with keys ``base_model.model.<module>.lora_A.weight``), so any LoRA-shaped adapter (LoRA, SDS-LoRA,
PoLAR with :math:`B = X\Theta`, :math:`A = Y^\top`, DoRA with ``use_dora``) loads in ``peft``
(the format lives in :mod:`geode.adapters.peft_format`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from geode.core.validation import check_choice, check_int, check_positive, check_probability

__all__ = [
    "AdapterLinear",
    "DoRALinear",
    "LoRALinear",
    "adapter_modules",
    "check_rank",
    "inject_adapters",
    "merge_adapters",
    "remove_adapters",
    "trainable_parameters",
    "unmerge_adapters",
]


def check_rank(r: Any, base: nn.Linear) -> int:
    """Validate an adapter rank: an int in ``[1, min(in_features, out_features)]`` of ``base``."""
    hi = min(base.in_features, base.out_features)
    r = check_int("r", r)
    if not 1 <= r <= hi:
        raise ValueError(
            f"r must be in [1, min(in_features, out_features)] = [1, {hi}] for a Linear({base.in_features}, "
            f"{base.out_features}); got {r}"
        )
    return r


class AdapterLinear(nn.Module):
    r"""Base class of adapters around a frozen ``nn.Linear``: :math:`y = W x + b + \Delta W x`.

    Subclasses define :meth:`delta_weight` (:math:`\Delta W`, shape (out, in)) and may override
    :meth:`adapter_output` (:math:`\Delta W x` computed without forming :math:`\Delta W`). The base
    layer's parameters are frozen. After :meth:`merge` the forward is the base layer's alone.

    The forward takes a tensor ``x`` of shape (..., in_features) (else a ``TypeError``/``ValueError`` naming
    ``x``). Like the ``nn.Linear`` it wraps, it is a per-row map: an empty batch gives an empty output, and a NaN
    or infinity in a row of ``x`` gives non-finite outputs in that row only, unchecked, because an adapter is a
    layer inside a model and a finiteness test of every activation would cost a device synchronisation per
    layer and step (check the model's loss instead).

    Parameters
    ----------
    base : nn.Linear
        The layer to adapt; it is kept as the submodule ``base``.
    """

    def __init__(self, base: nn.Linear) -> None:
        super().__init__()
        if not isinstance(base, nn.Linear):
            raise TypeError(f"base must be an nn.Linear; got {type(base).__name__}")
        self.base = base
        self.merged = False
        for p in base.parameters():
            p.requires_grad_(False)

    @property
    def in_features(self) -> int:
        return self.base.in_features

    @property
    def out_features(self) -> int:
        return self.base.out_features

    @property
    def weight(self) -> torch.Tensor:
        """The base layer's weight (merged or not), for code that reads ``module.weight``."""
        return self.base.weight

    @property
    def bias(self) -> torch.Tensor | None:
        return self.base.bias

    def delta_weight(self) -> torch.Tensor:  # pragma: no cover - abstract
        r"""The weight update :math:`\Delta W`, shape (out_features, in_features)."""
        raise NotImplementedError

    def adapter_output(self, x: torch.Tensor) -> torch.Tensor:
        r""":math:`\Delta W x` for inputs ``x`` of shape (..., in_features)."""
        return nn.functional.linear(x, self.delta_weight())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch tensor of shape (..., {self.in_features}); got {type(x).__name__}")
        if x.ndim < 1 or x.shape[-1] != self.in_features:
            raise ValueError(f"x must have shape (..., {self.in_features}); got {tuple(x.shape)}")
        if self.merged:
            return self.base(x)
        return self.base(x) + self.adapter_output(x)

    def merge(self) -> None:
        r"""Fold the update into the base weight: :math:`W \leftarrow W + \Delta W`."""
        if self.merged:
            raise RuntimeError(f"{type(self).__name__} is already merged; call unmerge() before merging again")
        with torch.no_grad():
            self.base.weight.add_(self.delta_weight().to(self.base.weight.dtype))
        self.merged = True

    def unmerge(self) -> None:
        r"""Take the update out of the base weight again: :math:`W \leftarrow W - \Delta W`."""
        if not self.merged:
            raise RuntimeError(f"{type(self).__name__} is not merged; nothing to unmerge")
        with torch.no_grad():
            self.base.weight.sub_(self.delta_weight().to(self.base.weight.dtype))
        self.merged = False

    def lora_factors(self) -> tuple[torch.Tensor, torch.Tensor, float]:
        r"""``(A, B, s)`` with :math:`\Delta W = s B A` for LoRA-shaped adapters (PEFT export).

        Raises ``NotImplementedError`` for adapters whose update is not of that form.
        """
        raise NotImplementedError(f"{type(self).__name__} is not LoRA-shaped and cannot be exported to PEFT")

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, merged={self.merged}"


class LoRALinear(AdapterLinear):
    r"""LoRA around a frozen ``nn.Linear``: :math:`y = W x + b + s\, B A\, \mathrm{dropout}(x)`.

    Parameters
    ----------
    base : nn.Linear
        The frozen layer, weight :math:`W` of shape (out, in).
    r : int
        Rank, ``1 <= r <= min(in, out)``.
    alpha : float, optional
        :math:`\alpha` of the scaling :math:`s = \alpha / r` (default ``alpha = r``, so ``s = 1``).
    dropout : float
        Dropout probability on the adapter's input (PEFT's ``lora_dropout``).
    use_rslora : bool
        Rank-stabilised scaling :math:`s = \alpha / \sqrt{r}`.
    init : {"default", "gaussian"}
        ``lora_A`` Kaiming-uniform (bound :math:`1/\sqrt{n_{in}}`, as PEFT) or :math:`\mathcal{N}(0, 1/r^2)`
        (PEFT's ``"gaussian"``); ``lora_B`` is zero either way.
    generator : torch.Generator, optional
        Random source of the initialisation (default: torch's global generator).

    Attributes
    ----------
    lora_A : nn.Parameter, shape (r, in)
    lora_B : nn.Parameter, shape (out, r)
    scaling : float

    Examples
    --------
    >>> layer = LoRALinear(nn.Linear(8, 6), r=2, alpha=4)
    >>> tuple(layer.lora_A.shape), tuple(layer.lora_B.shape), layer.scaling
    ((2, 8), (6, 2), 2.0)
    """

    def __init__(
        self,
        base: nn.Linear,
        r: int,
        alpha: float | None = None,
        *,
        dropout: float = 0.0,
        use_rslora: bool = False,
        init: str = "default",
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(base)
        self.r = check_rank(r, base)
        self.alpha = float(self.r) if alpha is None else check_positive("alpha", alpha)
        self.use_rslora = bool(use_rslora)
        self.scaling = self.alpha / (math.sqrt(self.r) if self.use_rslora else self.r)
        self.dropout_p = check_probability("dropout", dropout)
        self.dropout = nn.Dropout(self.dropout_p) if self.dropout_p > 0 else nn.Identity()
        check_choice("init", init, ("default", "gaussian"))
        w = base.weight
        a = torch.empty(self.r, self.in_features, dtype=w.dtype, device=w.device)
        if init == "default":
            bound = 1.0 / math.sqrt(self.in_features)
            a.uniform_(-bound, bound, generator=generator)
        else:
            a.normal_(0.0, 1.0 / self.r, generator=generator)
        self.lora_A = nn.Parameter(a)
        self.lora_B = nn.Parameter(torch.zeros(self.out_features, self.r, dtype=w.dtype, device=w.device))

    def delta_weight(self) -> torch.Tensor:
        return self.scaling * (self.lora_B @ self.lora_A)

    def adapter_output(self, x: torch.Tensor) -> torch.Tensor:
        return self.scaling * ((self.dropout(x) @ self.lora_A.T) @ self.lora_B.T)

    def lora_factors(self) -> tuple[torch.Tensor, torch.Tensor, float]:
        return self.lora_A, self.lora_B, self.scaling

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, r={self.r}, alpha={self.alpha:g}, scaling={self.scaling:g}"


class DoRALinear(LoRALinear):
    r"""DoRA: :math:`y = \operatorname{diag}(m / \lVert W + sBA \rVert_{\text{row}})(W + sBA)x + b`.

    Same constructor as :class:`LoRALinear`; adds ``lora_magnitude_vector`` :math:`m` (shape (out,))
    initialised to the row norms :math:`\lVert W_{i,:} \rVert_2`, so the layer starts as the base layer.
    The row norm :math:`\lVert W + sBA \rVert` is detached in the backward pass, as in DoRA's Sec. 4.3
    and PEFT. With dropout, the dropped input feeds only the low-rank path (as PEFT).
    """

    def __init__(self, base: nn.Linear, r: int, alpha: float | None = None, **kwargs: Any) -> None:
        super().__init__(base, r, alpha, **kwargs)
        self.lora_magnitude_vector = nn.Parameter(base.weight.detach().norm(dim=1).clone())
        self.register_buffer("_merged_norm", None, persistent=False)

    def _row_norm(self) -> torch.Tensor:
        w = self.base.weight + self.scaling * (self.lora_B @ self.lora_A)
        return w.norm(dim=1).detach()

    def delta_weight(self) -> torch.Tensor:
        r"""The effective update :math:`W' - W`."""
        w = self.base.weight if not self.merged else self._unmerged_weight()
        v = w + self.scaling * (self.lora_B @ self.lora_A)
        return (self.lora_magnitude_vector / v.norm(dim=1).detach()).unsqueeze(1) * v - w

    def adapter_output(self, x: torch.Tensor) -> torch.Tensor:
        ratio = self.lora_magnitude_vector / self._row_norm()  # m / ||W + sBA||
        base_out = nn.functional.linear(x, self.base.weight)
        low_rank = self.scaling * ((self.dropout(x) @ self.lora_A.T) @ self.lora_B.T)
        return (ratio - 1.0) * base_out + ratio * low_rank

    def _unmerged_weight(self) -> torch.Tensor:
        ratio = self.lora_magnitude_vector.detach() / self._merged_norm
        return self.base.weight / ratio.unsqueeze(1) - self.scaling * (self.lora_B @ self.lora_A).detach()

    def merge(self) -> None:
        if self.merged:
            raise RuntimeError("DoRALinear is already merged; call unmerge() before merging again")
        with torch.no_grad():
            norm = self._row_norm()
            v = self.base.weight + self.scaling * (self.lora_B @ self.lora_A)
            self.base.weight.copy_((self.lora_magnitude_vector / norm).unsqueeze(1) * v)
            self._merged_norm = norm
        self.merged = True

    def unmerge(self) -> None:
        if not self.merged:
            raise RuntimeError("DoRALinear is not merged; nothing to unmerge")
        with torch.no_grad():
            self.base.weight.copy_(self._unmerged_weight())
            self._merged_norm = None
        self.merged = False

    def lora_factors(self) -> tuple[torch.Tensor, torch.Tensor, float]:
        raise NotImplementedError("DoRA is exported with its magnitude vector; use save_peft_lora")


# ----------------------------------------------------------------------------------------------------
# injection into a model


def _linear_names(model: nn.Module) -> list[str]:
    """Names of the ``nn.Linear`` modules of ``model`` that are not already inside an adapter."""
    inside = {n for n, m in model.named_modules() if isinstance(m, AdapterLinear)}
    return [
        n
        for n, m in model.named_modules()
        if isinstance(m, nn.Linear) and not any(n.startswith(p + ".") for p in inside)
    ]


def _matches(name: str, target: str | Sequence[str]) -> bool:
    if isinstance(target, str):
        return re.fullmatch(target, name) is not None
    return any(name == t or name.endswith("." + t) for t in target)


def inject_adapters(
    model: nn.Module,
    target_modules: str | Sequence[str],
    factory: Callable[[nn.Linear], nn.Module],
    *,
    freeze_base: bool = True,
) -> list[str]:
    """Replace the matching ``nn.Linear`` modules of ``model`` by ``factory(linear)``, in place.

    Parameters
    ----------
    model : nn.Module
    target_modules : str or sequence of str
        As PEFT: a string is a regular expression the full module name must match; a sequence lists
        names that a module's full name must equal or end with (after a dot), e.g.
        ``["q_proj", "v_proj"]``.
    factory : callable
        ``factory(linear) -> nn.Module``, e.g. ``lambda lin: LoRALinear(lin, r=8, alpha=16)``. It is
        called in the order of ``model.named_modules()``, so a factory drawing from one seeded
        ``torch.Generator`` gives a deterministic model.
    freeze_base : bool
        Freeze every parameter of ``model`` first except those of adapters already injected (only
        adapters' parameters train).

    Returns
    -------
    list of str
        The names of the replaced modules.

    Raises
    ------
    ValueError
        When no ``nn.Linear`` matches; the message lists the names available.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module; got {type(model).__name__}")
    if isinstance(target_modules, str):
        try:
            re.compile(target_modules)
        except re.error as exc:
            raise ValueError(f"target_modules {target_modules!r} is not a valid regular expression: {exc}") from None
    else:
        target_modules = list(target_modules)
        if not target_modules or not all(isinstance(t, str) and t for t in target_modules):
            raise ValueError(f"target_modules must be a regex or a non-empty list of names; got {target_modules!r}")
    if not callable(factory):
        raise TypeError(f"factory must be callable; got {type(factory).__name__}")
    names = _linear_names(model)
    chosen = [n for n in names if _matches(n, target_modules)]
    if not chosen:
        short = sorted({n.rsplit(".", 1)[-1] for n in names})
        raise ValueError(
            f"target_modules {target_modules!r} match no nn.Linear of the model; available leaf names: {short}; "
            f"full names: {names}"
        )
    if freeze_base:  # freeze everything but the trainable parameters of adapters already in place
        keep = {
            id(p)
            for m in adapter_modules(model).values()
            for n, p in m.named_parameters()
            if not n.startswith("base.") and p.requires_grad
        }
        for p in model.parameters():
            if id(p) not in keep:
                p.requires_grad_(False)
    for name in chosen:
        parent_name, _, leaf = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        new = factory(getattr(parent, leaf))
        if not isinstance(new, nn.Module):
            raise TypeError(f"factory must return an nn.Module; got {type(new).__name__} for {name}")
        setattr(parent, leaf, new)
    return chosen


def adapter_modules(model: nn.Module) -> dict[str, AdapterLinear]:
    """The adapters of ``model`` by module name, in ``named_modules`` order."""
    return {n: m for n, m in model.named_modules() if isinstance(m, AdapterLinear)}


def _require_adapters(model: nn.Module) -> dict[str, AdapterLinear]:
    mods = adapter_modules(model)
    if not mods:
        raise ValueError("model has no adapters (inject_adapters first)")
    return mods


def merge_adapters(model: nn.Module) -> list[str]:
    """Merge every adapter of ``model`` into its base weight; returns their names.

    Raises ``RuntimeError`` if an adapter is already merged (nothing is changed then).
    """
    mods = _require_adapters(model)
    twice = [n for n, m in mods.items() if m.merged]
    if twice:
        raise RuntimeError(f"adapters already merged: {twice}; call unmerge_adapters() before merging again")
    for m in mods.values():
        m.merge()
    return list(mods)


def unmerge_adapters(model: nn.Module) -> list[str]:
    """Undo :func:`merge_adapters`; raises ``RuntimeError`` if an adapter is not merged."""
    mods = _require_adapters(model)
    not_merged = [n for n, m in mods.items() if not m.merged]
    if not_merged:
        raise RuntimeError(f"adapters not merged: {not_merged}; nothing to unmerge")
    for m in mods.values():
        m.unmerge()
    return list(mods)


def remove_adapters(model: nn.Module, *, merge: bool = True) -> nn.Module:
    """Put the base ``nn.Linear`` layers back in place of the adapters (merged into them if ``merge``)."""
    for name, m in list(_require_adapters(model).items()):
        if merge and not m.merged:
            m.merge()
        elif not merge and m.merged:
            m.unmerge()
        parent_name, _, leaf = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, leaf, m.base)
    return model


def trainable_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The parameters of ``model`` that require gradients (ready for an optimiser)."""
    return [p for p in model.parameters() if p.requires_grad]
