r"""FP4 fake-quantised linear layers for quantisation-aware training and for a low-precision rollout engine.

:class:`FP4Linear` is an ``nn.Linear`` (same parameters, same ``state_dict`` keys) whose forward uses the
FP4 block format of :func:`geode.core.quant.fp4_quantize` on its weight and, for W4A4, on its input:

.. math::

    y = Q(x)\,Q(W)^\top + b, \qquad Q(v) = v + \operatorname{sg}\big(\operatorname{fp4}(v) - v\big),

the straight-through estimator (STE): the value is the quantised one, the gradient that of the identity,
so the full-precision master weights :math:`W` receive the gradient of the fake-quantised forward (QAT).
With ``enabled = False`` the layer is a plain ``nn.Linear`` (the "fake quantisation off" forward that CPA
uses as its teacher). :func:`quantize_model` swaps every ``nn.Linear`` of a model (except those named in
``skip``, by default the LM head) for an :class:`FP4Linear` in place; :func:`fake_quant_disabled` turns
them off and the model to eval mode for the duration of a ``with`` block, and restores both afterwards
(also on an exception), as the authors' ``temporarily_disable_fake_quant_and_eval``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from geode.core.quant import FP4_FORMATS, fp4_quantize
from geode.core.validation import check_tensor

__all__ = ["FP4Linear", "fake_quant_disabled", "fp4_layers", "quantize_model", "ste_fp4"]


def ste_fp4(x: torch.Tensor, fmt: str = "nvfp4", block_size: int | None = None) -> torch.Tensor:
    """FP4 fake quantisation with a straight-through gradient: value ``fp4(x)``, gradient of the identity.

    An empty ``x`` gives an empty output; values are not scanned (this runs at every forward).
    """
    check_tensor("x", x, finite=False, nonempty=False, floating=True)
    if x.numel() == 0:
        return x + 0.0
    return x + (fp4_quantize(x, fmt, block_size) - x).detach()


class FP4Linear(nn.Linear):
    """An ``nn.Linear`` whose forward fake-quantises its weight (and input, for W4A4) to FP4 with an STE.

    Parameters
    ----------
    in_features, out_features : int
        ``in_features`` must be a multiple of ``block_size`` (blocks run along the input dimension, for the
        weight's rows and the activations alike).
    bias : bool
    fmt : {"nvfp4", "mxfp4"}
    block_size : int, optional
        Default the format's (16 NVFP4, 32 MXFP4).
    activations : bool
        Quantise the input too (W4A4, the authors' QAT setting); False is weight-only (W4A16).

    Attributes
    ----------
    enabled : bool
        False: a plain full-precision linear layer.
    weight_prequantized : bool
        The stored weight already holds FP4 values (a rollout engine after :meth:`store_quantized`): the
        forward then skips re-quantising it (FP4 fake quantisation is idempotent, so only time is saved).
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        *,
        fmt: str = "nvfp4",
        block_size: int | None = None,
        activations: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if fmt not in FP4_FORMATS:
            raise ValueError(f"fmt must be one of {sorted(FP4_FORMATS)}; got {fmt!r}")
        bs = FP4_FORMATS[fmt] if block_size is None else int(block_size)
        if bs < 1 or in_features % bs:
            raise ValueError(
                f"in_features={in_features} must be a multiple of the {fmt} block size {bs}: FP4 blocks run "
                "along the input dimension"
            )
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        self.fmt = fmt
        self.block_size = bs
        self.activations = bool(activations)
        self.enabled = True
        self.weight_prequantized = False

    @classmethod
    def from_linear(cls, linear: nn.Linear, **kwargs: Any) -> FP4Linear:
        """An :class:`FP4Linear` sharing ``linear``'s parameters (no copy)."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"linear must be an nn.Linear; got {type(linear).__name__}")
        new = cls(
            linear.in_features,
            linear.out_features,
            linear.bias is not None,
            device="meta",
            dtype=linear.weight.dtype,
            **kwargs,
        )
        new.weight = linear.weight
        new.bias = linear.bias
        return new

    def store_quantized(self) -> None:
        """Overwrite the stored weight by its FP4 values (a rollout engine's real FP4 weights)."""
        with torch.no_grad():
            self.weight.copy_(fp4_quantize(self.weight, self.fmt, self.block_size))
        self.weight_prequantized = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor("x", x, finite=False, nonempty=False, floating=True)
        if x.ndim < 1 or x.shape[-1] != self.in_features:
            raise ValueError(f"x must have {self.in_features} features on its last axis; got shape {tuple(x.shape)}")
        if not self.enabled:
            return F.linear(x, self.weight, self.bias)
        w = self.weight if self.weight_prequantized else ste_fp4(self.weight, self.fmt, self.block_size)
        if self.activations:
            x = ste_fp4(x, self.fmt, self.block_size)
        return F.linear(x, w, self.bias)

    def extra_repr(self) -> str:
        return (
            f"{super().extra_repr()}, fmt={self.fmt}, block_size={self.block_size}, "
            f"{'W4A4' if self.activations else 'W4A16'}, enabled={self.enabled}"
        )


def fp4_layers(model: nn.Module) -> list[FP4Linear]:
    """The :class:`FP4Linear` modules of ``model``."""
    return [m for m in model.modules() if isinstance(m, FP4Linear)]


def quantize_model(
    model: nn.Module,
    *,
    fmt: str = "nvfp4",
    block_size: int | None = None,
    activations: bool = True,
    skip: Sequence[str] = ("lm_head",),
) -> int:
    """Replace every ``nn.Linear`` of ``model`` by an :class:`FP4Linear` sharing its parameters, in place.

    Parameters
    ----------
    model : nn.Module
    fmt, block_size, activations
        As :class:`FP4Linear`.
    skip : sequence of str
        Modules whose qualified name ends with one of these stay full precision (default the LM head, as
        NVFP4 serving recipes keep it in BF16; embeddings and norms are never quantised).

    Returns
    -------
    int
        The number of layers replaced. Raises ``ValueError`` if a layer's input width is not a multiple
        of the block size (the message names the layer), before anything is replaced.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module; got {type(model).__name__}")
    bs = FP4_FORMATS.get(fmt) if block_size is None else block_size
    targets = []
    for name, mod in model.named_modules():
        if type(mod) is nn.Linear and not any(name == s or name.endswith("." + s) for s in skip):
            if bs is not None and mod.in_features % bs:
                raise ValueError(
                    f"layer {name!r} has in_features={mod.in_features}, not a multiple of the {fmt} block size {bs}"
                )
            targets.append(name)
    for name in targets:
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(
            parent,
            attr,
            FP4Linear.from_linear(getattr(parent, attr), fmt=fmt, block_size=block_size, activations=activations),
        )
    return len(targets)


@contextmanager
def fake_quant_disabled(model: nn.Module, *, require_enabled: bool = False) -> Iterator[int]:
    """Turn off every enabled :class:`FP4Linear` of ``model`` and switch it to eval mode; restore on exit.

    Yields the number of layers turned off (layers already off are left alone). With ``require_enabled``
    a model without an enabled FP4 layer raises ``RuntimeError`` (CPA's teacher would equal its student).
    """
    was_training = model.training
    off = [m for m in fp4_layers(model) if m.enabled]
    if require_enabled and not off:
        raise RuntimeError("fake_quant_disabled: the model has no enabled FP4Linear layer (quantize_model first)")
    try:
        for m in off:
            m.enabled = False
        model.eval()
        yield len(off)
    finally:
        for m in off:
            m.enabled = True
        model.train(was_training)
