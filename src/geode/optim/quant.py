r"""Weight-only quantisation with trainable per-group scales: round-to-nearest int4/int8, packed, dequantised lazily.

The quantiser of quantised zeroth-order fine-tuning (QZO, Shang et al., 2025; HoZO): each row of a linear
layer's weight :math:`W \in \mathbb{R}^{n_{out} \times n_{in}}` is cut into groups of ``group_size``
consecutive input columns; group :math:`g` keeps integer codes :math:`\bar w_g \in \{-2^{b-1}, \dots,
2^{b-1}-1\}^{\text{group}}` (frozen) and one positive scale :math:`\Delta_g > 0` (trainable),

.. math::

    \Delta_g = \frac{\max_{j \in g} |W_j|}{2^{b-1} - 1}, \qquad
    \bar w_j = \operatorname{clip}\big(\operatorname{round}(W_j / \Delta_g),\, -2^{b-1},\, 2^{b-1} - 1\big),
    \qquad \hat W_j = \Delta_{g(j)}\, \bar w_j ,

symmetric round-to-nearest (RTN) with no zero point, so the sign of a weight lives in its code and the
scale must stay strictly positive: :math:`\Delta_g \le 0` flips or erases the whole group (a *boundary
violation*). int4 codes are packed two to a byte (``uint8``); int8 codes are stored as ``int8``. The
forward pass unpacks and rescales the weight each call (no float copy of the weight is kept), so the
scales are the only floating-point state a quantised layer owns besides its bias.

:class:`QuantLinear` is the layer; :func:`quantize_model` swaps the ``nn.Linear`` layers of any model for
it and freezes everything but the scales; :func:`scale_parameters` lists the scales. The int4 packing
(:func:`pack_int4`, :func:`unpack_int4`) lives in :mod:`geode.core.quant` (shared with
:mod:`geode.compression.quant`) and is re-exported here unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from geode.core.quant import pack_int4, unpack_int4
from geode.core.validation import check_choice, check_int, check_tensor

__all__ = [
    "QuantLinear",
    "dequantize_rtn",
    "pack_int4",
    "quantize_model",
    "quantize_rtn",
    "scale_parameters",
    "unpack_int4",
]

_SCALE_FLOOR = 1e-12  # an all-zero group gets this scale (its codes are 0, so any positive scale is exact)


def _check_bits_group(bits: Any, group_size: Any, n_in: int) -> tuple[int, int]:
    check_choice("bits", bits, (4, 8))
    group_size = check_int("group_size", group_size, low=1)
    if n_in % group_size:
        raise ValueError(f"group_size must divide the input dimension {n_in}; got {group_size}")
    return int(bits), group_size


def quantize_rtn(weight: torch.Tensor, *, bits: int = 4, group_size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric round-to-nearest quantisation of a 2-D weight per group of ``group_size`` input columns.

    Parameters
    ----------
    weight : Tensor, shape (n_out, n_in)
    bits : {4, 8}
    group_size : int
        Must divide ``n_in``.

    Returns
    -------
    codes : int8 Tensor, shape (n_out, n_in)
        In ``[-2^(bits-1), 2^(bits-1) - 1]``.
    scales : float Tensor, shape (n_out, n_in // group_size)
        Strictly positive: ``absmax / (2^(bits-1) - 1)`` (an all-zero group gets ``1e-12``).
    """
    if not isinstance(weight, torch.Tensor) or weight.ndim != 2 or not weight.is_floating_point():
        raise ValueError("weight must be a 2-D floating-point tensor")
    if weight.numel() == 0:
        raise ValueError(f"weight must not be empty; got shape {tuple(weight.shape)}")
    if not torch.isfinite(weight).all():
        raise ValueError("weight must be finite")
    bits, group_size = _check_bits_group(bits, group_size, weight.shape[1])
    qmax = 2 ** (bits - 1) - 1
    w = weight.detach().reshape(weight.shape[0], -1, group_size)
    scales = (w.abs().amax(dim=-1) / qmax).clamp_min(_SCALE_FLOOR)
    codes = torch.round(w / scales.unsqueeze(-1)).clamp(-qmax - 1, qmax).to(torch.int8)
    return codes.reshape(weight.shape), scales


def _check_codes_scales(codes: Any, scales: Any) -> None:
    if not isinstance(codes, torch.Tensor) or codes.ndim != 2 or codes.is_floating_point():
        raise TypeError(f"codes must be a 2-D integer tensor; got {getattr(codes, 'dtype', type(codes).__name__)}")
    check_tensor("scales", scales, ndim=2, floating=True)
    if scales.shape[0] != codes.shape[0] or codes.shape[1] % scales.shape[1]:
        raise ValueError(
            f"scales must have shape (n_out, n_in // group_size); got {tuple(scales.shape)} for codes "
            f"{tuple(codes.shape)}"
        )
    if not bool((scales > 0).all()):
        raise ValueError("scales must be strictly positive")


def dequantize_rtn(codes: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """``codes * scales`` broadcast over each group: the float weight of shape ``codes.shape``.

    ``codes``: a 2-D integer tensor (n_out, n_in); ``scales``: a finite, strictly positive floating tensor of
    shape (n_out, n_in // group_size) (as :func:`quantize_rtn` returns them).
    """
    _check_codes_scales(codes, scales)
    n_out, n_in = codes.shape
    g = n_in // scales.shape[1]
    return (codes.reshape(n_out, -1, g).to(scales.dtype) * scales.unsqueeze(-1)).reshape(n_out, n_in)


class QuantLinear(nn.Module):
    """A linear layer with frozen packed integer codes and trainable positive per-group scales.

    Parameters
    ----------
    codes : int8 Tensor, shape (n_out, n_in)
    scales : Tensor, shape (n_out, n_in // group_size)
        Strictly positive; becomes the trainable parameter ``scales``.
    bits : {4, 8}
    bias : Tensor or None
        Kept frozen (a buffer).
    pack : bool
        Store int4 codes two per byte (default). ``False`` keeps one int4 code per ``int8`` byte: twice the
        code memory, a cheaper unpack (for small models where the unpack dominates the step time).

    Attributes
    ----------
    scales : nn.Parameter
        The only trainable tensor.
    codes_packed : buffer
        ``uint8`` (two int4 codes per byte) or ``int8``.
    """

    def __init__(
        self, codes: torch.Tensor, scales: torch.Tensor, *, bits: int = 4, bias: Any = None, pack: bool = True
    ) -> None:
        super().__init__()
        check_choice("bits", bits, (4, 8))
        if not isinstance(codes, torch.Tensor) or codes.ndim != 2 or codes.dtype != torch.int8:
            raise ValueError("codes must be a 2-D int8 tensor")
        if not isinstance(scales, torch.Tensor):
            raise TypeError(f"scales must be a torch tensor; got {type(scales).__name__}")
        if scales.ndim != 2 or scales.shape[0] != codes.shape[0] or codes.shape[1] % scales.shape[1]:
            raise ValueError(
                f"scales must have shape (n_out, n_in // group_size); got {tuple(scales.shape)} for codes "
                f"{tuple(codes.shape)}"
            )
        if not torch.isfinite(scales).all() or not (scales > 0).all():
            raise ValueError("scales must be finite and strictly positive")
        if bias is not None:
            check_tensor("bias", bias, shape=(codes.shape[0],), floating=True)
        self.bits = int(bits)
        self.in_features = int(codes.shape[1])
        self.out_features = int(codes.shape[0])
        self.group_size = self.in_features // int(scales.shape[1])
        if bits == 4 and codes.numel() and (int(codes.min()) < -8 or int(codes.max()) > 7):
            raise ValueError("codes must lie in [-8, 7] for bits=4")
        self.packed = bool(pack) and bits == 4
        packed = pack_int4(codes) if self.packed else codes.clone()
        self.register_buffer("codes_packed", packed)
        self.scales = nn.Parameter(scales.detach().clone().float())
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    @classmethod
    def from_linear(cls, linear: nn.Linear, *, bits: int = 4, group_size: int = 32, pack: bool = True) -> QuantLinear:
        """Quantise an ``nn.Linear`` with :func:`quantize_rtn`."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"linear must be an nn.Linear; got {type(linear).__name__}")
        codes, scales = quantize_rtn(linear.weight, bits=bits, group_size=group_size)
        return cls(codes, scales, bits=bits, bias=linear.bias, pack=pack)

    def codes(self) -> torch.Tensor:
        """The integer codes (int8, shape (n_out, n_in))."""
        return unpack_int4(self.codes_packed) if self.packed else self.codes_packed

    def dequantize(self) -> torch.Tensor:
        """The float weight ``scales * codes`` (differentiable in the scales), unpacked on the fly."""
        s = self.scales
        if self.packed:
            codes = unpack_int4(self.codes_packed, s.dtype)
        else:
            codes = self.codes_packed.to(s.dtype)
        w = codes.reshape(self.out_features, -1, self.group_size) * s.unsqueeze(-1)
        return w.reshape(self.out_features, self.in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ W^T + b`` on the last axis, like ``nn.Linear``: its shape is checked, its values are not
        scanned (a NaN row gives NaN outputs, as in torch's own layers; an empty batch gives an empty output)."""
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch tensor; got {type(x).__name__}")
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise ValueError(f"x must have {self.in_features} features on its last axis; got shape {tuple(x.shape)}")
        w = self.dequantize().to(x.dtype)
        return nn.functional.linear(x, w, None if self.bias is None else self.bias.to(x.dtype))

    def storage_bytes(self) -> int:
        """Bytes of the packed codes, the scales and the bias."""
        n = self.codes_packed.numel() * self.codes_packed.element_size()
        n += self.scales.numel() * self.scales.element_size()
        if self.bias is not None:
            n += self.bias.numel() * self.bias.element_size()
        return int(n)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bits={self.bits}, " + (
            f"group_size={self.group_size}"
        )


def quantize_model(
    model: nn.Module,
    *,
    bits: int = 4,
    group_size: int = 32,
    targets: Sequence[str] | None = None,
    exclude: Sequence[str] = ("lm_head",),
    pack: bool = True,
) -> list[str]:
    """Swap ``nn.Linear`` layers of ``model`` for :class:`QuantLinear` in place; freeze all but the scales.

    Parameters
    ----------
    model : nn.Module
    bits : {4, 8}
    group_size : int
        Must divide every quantised layer's input dimension.
    targets : sequence of str, optional
        Regular expressions; a linear layer is quantised when its qualified name matches one (``re.search``).
        Default: every ``nn.Linear``.
    exclude : sequence of str
        Regular expressions of layers left in float (default the LM head, as GPTQ/AWQ/QZO do).
    pack : bool
        Pack int4 codes two per byte (see :class:`QuantLinear`).

    Returns
    -------
    list of str
        The qualified names of the quantised layers.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module; got {type(model).__name__}")
    check_choice("bits", bits, (4, 8))
    check_int("group_size", group_size, low=1)
    tgt = [re.compile(t) for t in targets] if targets is not None else None
    exc = [re.compile(t) for t in exclude]
    chosen = [
        name
        for name, mod in model.named_modules()
        if isinstance(mod, nn.Linear)
        and (tgt is None or any(t.search(name) for t in tgt))
        and not any(e.search(name) for e in exc)
    ]
    if not chosen:
        raise ValueError("quantize_model: no nn.Linear layer matches targets/exclude")
    for name in chosen:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(
            parent,
            child,
            QuantLinear.from_linear(getattr(parent, child), bits=bits, group_size=group_size, pack=pack),
        )
    for p in model.parameters():
        p.requires_grad_(False)
    for mod in model.modules():
        if isinstance(mod, QuantLinear):
            mod.scales.requires_grad_(True)
    return chosen


def scale_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The ``scales`` parameters of every :class:`QuantLinear` in ``model``, in module order."""
    out = [m.scales for m in model.modules() if isinstance(m, QuantLinear)]
    if not out:
        raise ValueError("model has no QuantLinear layer; call quantize_model first")
    return out
