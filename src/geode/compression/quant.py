r"""Weight-quantisation baselines of the compression field: RTN per group, GPTQ, and a packed linear layer.

Every compression paper here compares against the same two post-training quantisers of a weight
:math:`W \in \mathbb{R}^{n_{out} \times n_{in}}`, per group of ``group_size`` consecutive input columns with
an asymmetric min-max grid (scale and zero point, :func:`geode.core.quant.minmax_quantize`):

- **RTN** (:func:`rtn_quantize`): round each weight to its group's grid;
- **GPTQ** (:func:`gptq_quantize`, Frantar et al., ICLR 2023, our own implementation): quantise the columns
  one at a time and spread each column's rounding error over the columns not yet quantised, weighted by
  the inverse of the layer Hessian :math:`H = \tfrac{2}{n} X^\top X` of the calibration inputs
  :math:`X \in \mathbb{R}^{n \times n_{in}}`,

  .. math::

      \delta_i = \frac{w_{:,i} - q(w_{:,i})}{[H^{-1}]_{ii}}, \qquad
      w_{:,j} \leftarrow w_{:,j} - \delta_i\,[H^{-1}]_{ij} \quad (j > i),

  with :math:`H^{-1}` taken as the upper Cholesky factor of the inverse of :math:`H + \lambda
  \overline{\operatorname{diag} H}\, I` (``damp`` :math:`= \lambda`), updates applied lazily per block of
  columns, and each group's grid computed from the (already updated) weights when the group's first column
  is reached (the public code's ``static_groups=False``). It minimises the layer-output error
  :math:`\|X W^\top - X \hat W^\top\|_F^2` greedily.

:class:`PackedLinear` holds the integer codes bit-packed (:func:`geode.core.quant.pack_bits`: ``bits`` bits
per weight plus a 16-bit scale and zero point per group, i.e. ``bits + 32 / group_size`` bits per weight,
the accounting of the GPTQ/AWQ papers) and dequantises on the fly. :func:`calibration_hessians` collects
:math:`H` of every linear layer of a model with forward hooks; :func:`replace_linears` swaps layers.

Bad input: bit widths outside 1..8, a ``group_size`` that does not divide the input dimension (pad the
columns with zeros, :func:`pad_columns`, and crop the output), a Hessian of the wrong shape: ``ValueError``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch import nn

from geode.compression._checks import check_bias, check_input
from geode.core.quant import minmax_dequantize, minmax_params, minmax_quantize, pack_bits, unpack_bits
from geode.core.validation import check_int, check_real, check_tensor

__all__ = [
    "PackedLinear",
    "calibration_hessians",
    "gptq_quantize",
    "linear_names",
    "output_error",
    "pad_columns",
    "replace_linears",
    "rtn_quantize",
]


def fitting_group_size(dims: Iterable[int], limit: int, *, multiple: int = 1) -> int | None:
    """The largest group size up to ``limit``, a multiple of ``multiple``, that divides every one of ``dims``.

    None when there is none (a dimension is not a multiple of ``multiple``). Used by the error messages that
    suggest a ``group_size`` for a model's layers.
    """
    g = 0
    for d in dims:
        g = math.gcd(g, int(d))
    best = None
    for k in range(multiple, min(int(limit), g) + 1, multiple):
        if g % k == 0:
            best = k
    return best


def _check_group_size(in_features: int, group_size: int, what: str) -> None:
    """Raise a ValueError naming ``what``, its input width and a ``group_size`` that divides it."""
    if group_size >= 1 and in_features % group_size == 0:
        return
    fit = fitting_group_size([in_features], max(group_size, 1))
    raise ValueError(
        f"{what} has in_features={in_features}, which group_size={group_size} does not divide: pass "
        f"group_size={fit} (the largest divisor of {in_features} up to {group_size}), or pad the weight's columns "
        "with zeros (pad_columns) and the input likewise"
    )


def pad_columns(weight: torch.Tensor, multiple: int) -> torch.Tensor:
    """``weight`` with zero columns appended so that its input dimension is a multiple of ``multiple``.

    Zero columns are exact under every quantiser here (they quantise to 0), so a padded layer computes
    the same output when its input is zero-padded the same way.
    """
    check_tensor("weight", weight, ndim=2, floating=True)
    multiple = check_int("multiple", multiple, low=1)
    pad = (-weight.shape[1]) % multiple
    return torch.nn.functional.pad(weight, (0, pad)) if pad else weight


def rtn_quantize(
    weight: torch.Tensor, *, bits: int = 3, group_size: int = 128, clip: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Round-to-nearest per group (asymmetric min-max grid shrunk by ``clip``): ``(codes, scales, zeros)``.

    See :func:`geode.core.quant.minmax_quantize`; ``minmax_dequantize(*rtn_quantize(w))`` is the float weight.
    ``weight`` is a finite 2-D floating tensor ``(n_out, n_in)``.
    """
    check_tensor("weight", weight, ndim=2, floating=True)
    return minmax_quantize(weight, bits=bits, group_size=group_size, clip=clip)


def _check_hessian(hessian: Any, n_in: int) -> torch.Tensor:
    if not isinstance(hessian, torch.Tensor) or hessian.shape != (n_in, n_in):
        raise ValueError(f"hessian must be a ({n_in}, {n_in}) tensor; got {getattr(hessian, 'shape', hessian)!r}")
    if not torch.isfinite(hessian).all():
        raise ValueError("hessian must be finite")
    return hessian


def gptq_quantize(
    weight: torch.Tensor,
    hessian: torch.Tensor,
    *,
    bits: int = 3,
    group_size: int = 128,
    damp: float = 0.01,
    clip: float = 1.0,
    block_size: int = 128,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GPTQ: column-by-column quantisation with inverse-Hessian error feedback (see the module docstring).

    Parameters
    ----------
    weight : Tensor, shape (n_out, n_in)
    hessian : Tensor, shape (n_in, n_in)
        :math:`\\tfrac{2}{n} X^\\top X` of the calibration inputs (any positive multiple gives the same result).
    bits : int
        1..8.
    group_size : int
        Must divide ``n_in``.
    damp : float
        Relative diagonal damping :math:`\\lambda > 0` (fraction of the mean diagonal).
    clip : float
        Range shrink of each group's min-max grid, in (0, 1].
    block_size : int
        Columns per lazy-update block (rounded up to a multiple of ``group_size``).

    Returns
    -------
    codes : uint8 Tensor (n_out, n_in); scales, zeros : Tensors (n_out, n_in // group_size)
    """
    check_tensor("weight", weight, ndim=2, floating=True)
    n_out, n_in = weight.shape
    bits = check_int("bits", bits, low=1, high=8)
    group_size = check_int("group_size", group_size, low=1)
    if n_in % group_size:
        raise ValueError(f"group_size must divide the input dimension {n_in}; got {group_size} (pad the columns)")
    damp = check_real("damp", damp, low=0.0)
    if damp <= 0:
        raise ValueError("damp must be > 0")
    check_real("clip", clip, low=0.0, high=1.0)
    block_size = check_int("block_size", block_size, low=1)
    block_size = int(math.ceil(block_size / group_size) * group_size)
    H = _check_hessian(hessian, n_in).detach().to(torch.float64).clone()
    W = weight.detach().to(torch.float64).clone()
    dead = torch.diag(H) == 0
    H[dead, dead] = 1.0
    W[:, dead] = 0.0
    H += damp * torch.mean(torch.diag(H)) * torch.eye(n_in, dtype=H.dtype)
    Hinv = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(H)), upper=True)
    qmax = 2**bits - 1
    codes = torch.zeros(n_out, n_in, dtype=torch.uint8)
    scales = torch.zeros(n_out, n_in // group_size, dtype=torch.float64)
    zeros = torch.zeros_like(scales)
    for i1 in range(0, n_in, block_size):
        i2 = min(i1 + block_size, n_in)
        W1 = W[:, i1:i2].clone()
        Err = torch.zeros_like(W1)
        Hb = Hinv[i1:i2, i1:i2]
        for i in range(i2 - i1):
            col = i1 + i
            if col % group_size == 0:
                s, z = minmax_params(W1[:, i : i + group_size], bits=bits, clip=clip)
                scales[:, col // group_size], zeros[:, col // group_size] = s, z
            s, z = scales[:, col // group_size], zeros[:, col // group_size]
            w = W1[:, i]
            q = (torch.round(w / s) + z).clamp(0, qmax)
            codes[:, col] = q.to(torch.uint8)
            err = (w - s * (q - z)) / Hb[i, i]
            W1[:, i:] -= err.unsqueeze(1) * Hb[i, i:].unsqueeze(0)
            Err[:, i] = err
        W[:, i2:] -= Err @ Hinv[i1:i2, i2:]
    return codes, scales.to(weight.dtype), zeros.to(weight.dtype)


def output_error(weight: torch.Tensor, approx: torch.Tensor, hessian: torch.Tensor) -> torch.Tensor:
    """Relative layer-output error: the output error of ``approx`` over the layer's output energy,

    .. math:: \\operatorname{tr}(\\Delta H \\Delta^\\top) / \\operatorname{tr}(W H W^\\top).

    With :math:`H \\propto X^\\top X` this is :math:`\\|X\\Delta^\\top\\|_F^2 / \\|X W^\\top\\|_F^2`,
    :math:`\\Delta = \\hat W - W`. Differentiable in ``approx``.
    """
    check_tensor("weight", weight, ndim=2, floating=True)
    check_tensor("approx", approx, shape=tuple(weight.shape), floating=True)
    _check_hessian(hessian, weight.shape[1])
    d = approx - weight
    den = ((weight @ hessian) * weight).sum().clamp_min(1e-30)
    return ((d @ hessian) * d).sum() / den


class PackedLinear(nn.Module):
    """A linear layer with bit-packed integer codes, 16-bit scales and zero points, dequantised on the fly.

    Parameters
    ----------
    codes : integer Tensor, shape (n_out, n_in)
        Values in ``[0, 2^bits - 1]`` (from :func:`rtn_quantize` or :func:`gptq_quantize`).
    scales, zeros : Tensors, shape (n_out, n_in // group_size)
    bits : int
        1..8.
    bias : Tensor or None
    """

    def __init__(
        self, codes: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor, *, bits: int, bias: Any = None
    ) -> None:
        super().__init__()
        self.bits = check_int("bits", bits, low=1, high=8)
        check_tensor("codes", codes, ndim=2)
        check_tensor("scales", scales, ndim=2, floating=True)
        check_tensor("zeros", zeros, ndim=2, floating=True)
        check_bias(bias, codes.shape[0])
        if codes.ndim != 2 or scales.ndim != 2 or scales.shape != zeros.shape or scales.shape[0] != codes.shape[0]:
            raise ValueError("codes must be (n_out, n_in) and scales, zeros (n_out, n_groups)")
        if codes.shape[1] % scales.shape[1]:
            raise ValueError("the number of groups must divide n_in")
        self.out_features, self.in_features = int(codes.shape[0]), int(codes.shape[1])
        self.group_size = self.in_features // int(scales.shape[1])
        self.register_buffer("packed", pack_bits(codes, self.bits))
        self.register_buffer("scales", scales.detach().to(torch.float16))
        self.register_buffer("zeros", zeros.detach().to(torch.float16))
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    @classmethod
    def from_linear(
        cls,
        linear: nn.Linear,
        *,
        bits: int = 3,
        group_size: int = 128,
        hessian: torch.Tensor | None = None,
        damp: float = 0.01,
        clip: float = 1.0,
    ) -> PackedLinear:
        """Quantise an ``nn.Linear``: GPTQ when ``hessian`` is given, else RTN."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"linear must be an nn.Linear; got {type(linear).__name__}")
        _check_group_size(linear.in_features, check_int("group_size", group_size, low=1), "linear")
        w = linear.weight
        if hessian is None:
            c, s, z = rtn_quantize(w, bits=bits, group_size=group_size, clip=clip)
        else:
            c, s, z = gptq_quantize(w, hessian, bits=bits, group_size=group_size, damp=damp, clip=clip)
        return cls(c, s, z, bits=bits, bias=linear.bias)

    def codes(self) -> torch.Tensor:
        """The integer codes, shape (n_out, n_in)."""
        return unpack_bits(self.packed, self.bits, self.in_features)

    def dequantize(self) -> torch.Tensor:
        """The float32 weight ``scale * (code - zero)``."""
        return minmax_dequantize(self.codes(), self.scales.float(), self.zeros.float())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x W^T + b`` with the dequantised weight; ``x`` is checked for shape only (see :func:`check_input`)."""
        check_input("x", x, self.in_features)
        w = self.dequantize().to(x.dtype)
        return nn.functional.linear(x, w, None if self.bias is None else self.bias.to(x.dtype))

    def bits_per_weight(self) -> float:
        """Code bits plus the 16-bit scale and zero of each group, per weight (bias excluded)."""
        return self.bits + 32.0 / self.group_size

    def storage_bytes(self) -> int:
        """Bytes of the packed codes, scales, zeros and bias."""
        n = sum(t.numel() * t.element_size() for t in (self.packed, self.scales, self.zeros))
        if self.bias is not None:
            n += self.bias.numel() * self.bias.element_size()
        return int(n)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bits={self.bits}, " + (
            f"group_size={self.group_size}"
        )


def linear_names(
    model: nn.Module, *, targets: Sequence[str] | None = None, exclude: Sequence[str] = ("lm_head",)
) -> list[str]:
    """Qualified names of the ``nn.Linear`` layers matching ``targets`` (regexes; default all) minus ``exclude``."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module; got {type(model).__name__}")
    tgt = [re.compile(t) for t in targets] if targets is not None else None
    exc = [re.compile(t) for t in exclude]
    return [
        name
        for name, mod in model.named_modules()
        if isinstance(mod, nn.Linear)
        and (tgt is None or any(t.search(name) for t in tgt))
        and not any(e.search(name) for e in exc)
    ]


def calibration_hessians(
    model: nn.Module, batches: Iterable[Any], names: Sequence[str], *, forward: Callable[[Any], Any] | None = None
) -> dict[str, torch.Tensor]:
    """:math:`H = \\tfrac{2}{n} X^\\top X` (float64) of the inputs of each named linear layer over ``batches``.

    ``forward(batch)`` runs the model (default ``model(batch)``); the inputs are those of the model as it is
    (the float model: every layer sees full-precision inputs, the "parallel" calibration). A batch the model
    fails on, or one that gives a layer a NaN or inf input, raises a ``ValueError`` naming ``batches``.
    """
    if not names:
        raise ValueError("names must list at least one linear layer")
    sums: dict[str, torch.Tensor] = {}
    counts: dict[str, int] = {}
    handles = []

    def hook(name: str) -> Callable[..., None]:
        def f(_mod: nn.Module, inp: tuple[torch.Tensor, ...], _out: Any) -> None:
            x = inp[0].detach().reshape(-1, inp[0].shape[-1]).to(torch.float64)
            sums[name] = sums.get(name, 0) + x.T @ x
            counts[name] = counts.get(name, 0) + x.shape[0]

        return f

    for name in names:
        handles.append(model.get_submodule(name).register_forward_hook(hook(name)))
    try:
        with torch.no_grad():
            for i, b in enumerate(batches):
                try:
                    model(b) if forward is None else forward(b)
                except RuntimeError as exc:
                    raise ValueError(f"batches[{i}]: the model failed on this batch: {exc}") from exc
    finally:
        for h in handles:
            h.remove()
    missing = [n for n in names if n not in sums]
    if missing:
        raise ValueError(f"no calibration input reached {missing}: batches is empty or skips these layers")
    out = {n: 2.0 * sums[n] / counts[n] for n in names}
    for n, h in out.items():
        if not bool(torch.isfinite(h).all()):
            raise ValueError(f"batches gave layer {n!r} a NaN or inf input: its Hessian is not finite")
    return out


def replace_linears(model: nn.Module, build: Callable[[str, nn.Linear], nn.Module], names: Sequence[str]) -> None:
    """Replace each named ``nn.Linear`` of ``model`` in place by ``build(name, linear)`` (empty ``names``: none)."""
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, build(name, getattr(parent, child)))
