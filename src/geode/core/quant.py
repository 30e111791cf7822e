r"""Integer codes for weight quantisers: packing to bytes and round-to-nearest on groups of columns.

Shared by the quantisers of two fields (``geode.optim.quant``, HoZO's int4/int8 trainable-scale layer,
and ``geode.compression.quant``, the RTN/GPTQ baselines and the packed formats of the compression
papers), so it lives here. Imported as ``geode.core.quant`` (it needs torch, which ``geode.core`` does
not import).

- :func:`pack_int4` / :func:`unpack_int4`: signed 4-bit codes, two per byte (moved from
  ``geode.optim.quant``, which re-exports them unchanged);
- :func:`pack_bits` / :func:`unpack_bits`: unsigned ``b``-bit codes (``1 <= b <= 8``) as a little-endian
  bit stream per row, ``ceil(n b / 8)`` bytes for ``n`` codes (2- and 3-bit RTN/GPTQ codes);
- :func:`minmax_quantize` / :func:`minmax_dequantize`: asymmetric round-to-nearest per group of
  ``group_size`` consecutive input columns with a scale and a zero point,

.. math::

    \Delta_g = \frac{c\,(\max_g W - \min_g W)}{2^b - 1}, \qquad z_g = \operatorname{round}(-c \min_g W / \Delta_g),
    \qquad q_j = \operatorname{clip}(\operatorname{round}(W_j/\Delta_g) + z_g,\, 0,\, 2^b - 1),
    \qquad \hat W_j = \Delta_g (q_j - z_g),

where :math:`c \in (0, 1]` shrinks the range (``clip``; 1 is plain min-max). This is the quantiser of
RTN-g128 and of GPTQ (Frantar et al., 2023) in their public code's convention: the grid always contains 0.

FP4 block formats (moved here from ``geode.compression.moe_quant`` when the llm field's CPA needed the same
E2M1 grid; ``geode.compression.moe_quant`` re-exports :data:`E2M1_VALUES` and :func:`mxfp4_quantize`
unchanged). Both formats store E2M1 elements (1 sign, 2 exponent, 1 mantissa bit; magnitudes
:math:`\{0, 0.5, 1, 1.5, 2, 3, 4, 6\}`) times one scale per block of consecutive elements along the last axis:

- :func:`fp4_quantize` with ``fmt="mxfp4"`` (OCP Microscaling v1.0): blocks of 32, an E8M0 (power-of-two)
  scale :math:`X = 2^{\lfloor \log_2 \max_b |x| \rfloor - 2}` (2 is E2M1's largest exponent), elements
  :math:`\operatorname{clip}(x / X, \pm 6)` rounded to the nearest E2M1 value;
- ``fmt="nvfp4"`` (NVIDIA NVFP4, the vLLM/ModelOpt recipe): blocks of 16, a per-tensor FP32 scale
  :math:`s = 448 \cdot 6 / \max|x|` and an FP8-E4M3 block scale
  :math:`\sigma_b = \operatorname{e4m3}(s \max_b|x| / 6)`; elements
  :math:`\operatorname{clip}(x\,s/\sigma_b, \pm 6)` rounded to E2M1, dequantised as :math:`q\,\sigma_b / s`.

Rounding to E2M1 is to nearest, ties to the even mantissa (the vLLM ``cast_to_fp4`` boundaries: 0.25 -> 0,
0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4); ``ties="toward_zero"`` rounds every tie
down in magnitude, the convention :func:`mxfp4_quantize` has always used (kept so that MoE quantisation's
results do not move).
"""

from __future__ import annotations

from typing import Any

import torch

from geode.core.validation import check_int, check_real

__all__ = [
    "E2M1_VALUES",
    "FP4_FORMATS",
    "fp4_quantize",
    "minmax_dequantize",
    "minmax_params",
    "minmax_quantize",
    "mxfp4_quantize",
    "nvfp4_quantize",
    "pack_bits",
    "pack_int4",
    "unpack_bits",
    "unpack_int4",
]


def pack_int4(codes: torch.Tensor) -> torch.Tensor:
    """Pack signed 4-bit codes (int8 tensor with values in [-8, 7], even last dimension) two per ``uint8`` byte.

    The low nibble holds the even column, the high nibble the odd column, both in two's complement.
    """
    if not isinstance(codes, torch.Tensor) or codes.dtype != torch.int8:
        raise TypeError(f"codes must be an int8 tensor; got {getattr(codes, 'dtype', type(codes).__name__)}")
    if codes.ndim < 1 or codes.shape[-1] % 2:
        raise ValueError(f"codes must have an even last dimension; got shape {tuple(codes.shape)}")
    if codes.numel() and (int(codes.min()) < -8 or int(codes.max()) > 7):
        raise ValueError("codes must lie in [-8, 7] for int4 packing")
    u = (codes.to(torch.int16) & 0xF).to(torch.uint8)
    return u[..., 0::2] | (u[..., 1::2] << 4)


_LUTS: dict[tuple[Any, Any], torch.Tensor] = {}


def _int4_lut(dtype: Any, device: Any) -> torch.Tensor:
    """(256, 2) table: byte -> (low code, high code), in ``dtype`` (cached per dtype and device)."""
    key = (dtype, device)
    lut = _LUTS.get(key)
    if lut is None:
        b = torch.arange(256)
        nib = torch.stack((b & 0xF, b >> 4), dim=1)
        lut = _LUTS[key] = torch.where(nib > 7, nib - 16, nib).to(dtype=dtype, device=device)
    return lut


def unpack_int4(packed: torch.Tensor, dtype: Any = torch.int8) -> torch.Tensor:
    """Inverse of :func:`pack_int4`: ``uint8`` bytes to codes in [-8, 7] (last dimension doubled), as ``dtype``."""
    if not isinstance(packed, torch.Tensor) or packed.dtype != torch.uint8:
        raise TypeError(f"packed must be a uint8 tensor; got {getattr(packed, 'dtype', type(packed).__name__)}")
    lut = _int4_lut(dtype, packed.device)
    return lut.index_select(0, packed.reshape(-1).long()).reshape(*packed.shape[:-1], 2 * packed.shape[-1])


def pack_bits(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack unsigned ``bits``-bit codes along the last dimension into a little-endian ``uint8`` bit stream.

    Parameters
    ----------
    codes : integer Tensor, shape (..., n)
        Values in ``[0, 2^bits - 1]``.
    bits : int
        In 1..8.

    Returns
    -------
    uint8 Tensor, shape (..., ceil(n * bits / 8))
        Code ``j`` occupies bits ``j*bits .. (j+1)*bits - 1`` of the row's stream (bit 0 is the low bit of
        byte 0); the tail of the last byte is zero.
    """
    bits = check_int("bits", bits, low=1, high=8)
    if not isinstance(codes, torch.Tensor) or codes.is_floating_point() or codes.is_complex() or codes.ndim < 1:
        raise TypeError("codes must be an integer tensor with at least one dimension")
    if codes.numel() and (int(codes.min()) < 0 or int(codes.max()) > 2**bits - 1):
        raise ValueError(f"codes must lie in [0, {2**bits - 1}] for bits={bits}")
    n = codes.shape[-1]
    shifts = torch.arange(bits, device=codes.device)
    stream = ((codes.long().unsqueeze(-1) >> shifts) & 1).reshape(*codes.shape[:-1], n * bits)
    pad = (-stream.shape[-1]) % 8
    if pad:
        stream = torch.nn.functional.pad(stream, (0, pad))
    weights = 1 << torch.arange(8, device=codes.device)
    return (stream.reshape(*codes.shape[:-1], -1, 8) * weights).sum(-1).to(torch.uint8)


def unpack_bits(packed: torch.Tensor, bits: int, n: int) -> torch.Tensor:
    """Inverse of :func:`pack_bits`: the first ``n`` codes of each row, as ``int64``."""
    bits = check_int("bits", bits, low=1, high=8)
    n = check_int("n", n, low=0)
    if not isinstance(packed, torch.Tensor) or packed.dtype != torch.uint8:
        raise TypeError(f"packed must be a uint8 tensor; got {getattr(packed, 'dtype', type(packed).__name__)}")
    if packed.shape[-1] * 8 < n * bits:
        raise ValueError(f"packed holds {packed.shape[-1] * 8} bits per row; {n} codes of {bits} bits need more")
    if 8 % bits == 0:  # fast path (1, 2, 4, 8 bits): codes never straddle a byte
        per = 8 // bits
        shifts = torch.arange(per, device=packed.device, dtype=torch.uint8) * bits
        codes = (packed.unsqueeze(-1) >> shifts) & (2**bits - 1)
        return codes.reshape(*packed.shape[:-1], -1)[..., :n].long()
    stream = (packed.long().unsqueeze(-1) >> torch.arange(8, device=packed.device)) & 1
    stream = stream.reshape(*packed.shape[:-1], -1)[..., : n * bits].reshape(*packed.shape[:-1], n, bits)
    return (stream << torch.arange(bits, device=packed.device)).sum(-1)


def _check_weight(weight: Any) -> torch.Tensor:
    if not isinstance(weight, torch.Tensor) or weight.ndim != 2 or not weight.is_floating_point():
        raise ValueError("weight must be a 2-D floating-point tensor")
    if not torch.isfinite(weight).all():
        raise ValueError("weight must be finite")
    return weight


def minmax_params(weight: torch.Tensor, *, bits: int, clip: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Scale and zero point of each row of ``weight`` (shape (rows, g)): the min-max grid shrunk by ``clip``.

    Returns ``(scale, zero)`` of shape (rows,); an all-constant row gets a positive floor scale.
    """
    bits = check_int("bits", bits, low=1, high=8)
    clip = check_real("clip", clip, low=0.0, high=1.0)
    if clip <= 0:
        raise ValueError("clip must lie in (0, 1]")
    qmax = 2**bits - 1
    lo = (weight.min(dim=-1).values.clamp(max=0.0)) * clip
    hi = (weight.max(dim=-1).values.clamp(min=0.0)) * clip
    scale = ((hi - lo) / qmax).clamp_min(1e-10)
    zero = torch.round(-lo / scale).clamp(0, qmax)
    return scale, zero


def minmax_quantize(
    weight: torch.Tensor, *, bits: int, group_size: int, clip: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Asymmetric round-to-nearest of a 2-D weight per group of ``group_size`` input columns.

    Parameters
    ----------
    weight : Tensor, shape (n_out, n_in)
    bits : int
        1..8.
    group_size : int
        Must divide ``n_in`` (pad the weight's columns with zeros otherwise).
    clip : float
        Range shrink factor in (0, 1].

    Returns
    -------
    codes : uint8 Tensor, shape (n_out, n_in), values in ``[0, 2^bits - 1]``
    scales, zeros : float Tensors, shape (n_out, n_in // group_size)
    """
    w = _check_weight(weight).detach()
    group_size = check_int("group_size", group_size, low=1)
    if w.shape[1] % group_size:
        raise ValueError(
            f"group_size must divide the input dimension {w.shape[1]}; got {group_size} (pad the columns with zeros)"
        )
    g = w.reshape(w.shape[0], -1, group_size)
    scale, zero = minmax_params(g, bits=bits, clip=clip)
    q = (torch.round(g / scale.unsqueeze(-1)) + zero.unsqueeze(-1)).clamp(0, 2**bits - 1)
    return q.to(torch.uint8).reshape(w.shape), scale, zero


def minmax_dequantize(codes: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor) -> torch.Tensor:
    """``scale * (code - zero)`` per group: the float weight of shape ``codes.shape``."""
    n_out, n_in = codes.shape
    if scales.shape != zeros.shape or scales.ndim != 2 or scales.shape[0] != n_out or n_in % scales.shape[1]:
        raise ValueError(f"scales and zeros must have shape (n_out, n_groups); got {tuple(scales.shape)}")
    gs = n_in // scales.shape[1]
    q = codes.reshape(n_out, -1, gs).to(scales.dtype)
    return ((q - zeros.unsqueeze(-1)) * scales.unsqueeze(-1)).reshape(n_out, n_in)


# ---------------------------------------------------------------------------------------------------------
# FP4 block formats (E2M1 elements with block scales)

E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
"""The non-negative values of FP4 E2M1 (1 sign, 2 exponent, 1 mantissa bit)."""

FP4_FORMATS = {"mxfp4": 32, "nvfp4": 16}
"""The FP4 block formats and their standard block sizes (elements per shared scale)."""

_E2M1_MAX = 6.0
_E4M3_MAX = 448.0


def _round_e2m1(x: torch.Tensor, ties: str) -> torch.Tensor:
    """Round non-negative ``x`` (already clipped to [0, 6]) to the nearest E2M1 magnitude.

    E2M1's spacing is 0.5 below 2, 1 in [2, 4) and 2 in [4, 6], so rounding ``x / spacing`` to an integer
    (``torch.round`` rounds half to even, which is the even mantissa here) is rounding to the grid.
    """
    step = torch.exp2(torch.floor(torch.log2(x)).clamp_(0.0, 2.0) - 1.0)  # 0.5 | 1 | 2; log2(0) = -inf -> 0.5
    v = x / step
    return (torch.round(v) if ties == "even" else torch.ceil(v - 0.5)) * step


def fp4_quantize(
    x: torch.Tensor, fmt: str = "nvfp4", block_size: int | None = None, *, ties: str = "even"
) -> torch.Tensor:
    """FP4 fake quantisation (quantise, then dequantise) of ``x`` along its last axis.

    Parameters
    ----------
    x : torch.Tensor
        Finite floating-point tensor whose last dimension is a multiple of ``block_size``.
    fmt : {"nvfp4", "mxfp4"}
        The block format (see the module docstring).
    block_size : int, optional
        Elements per block scale; default the format's standard (16 for NVFP4, 32 for MXFP4).
    ties : {"even", "toward_zero"}
        How a value exactly between two E2M1 neighbours rounds.

    Returns
    -------
    torch.Tensor
        The dequantised tensor, same shape and dtype; no gradient flows through it (wrap it in a
        straight-through estimator to train through it). The scale arithmetic runs in float32 whatever the
        input dtype (as vLLM's kernels do), so a bfloat16 input differs from its float32 original only by
        its own rounding.
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"x must be a floating-point torch.Tensor; got {type(x).__name__}")
    if fmt not in FP4_FORMATS:
        raise ValueError(f"fmt must be one of {sorted(FP4_FORMATS)}; got {fmt!r}")
    if ties not in ("even", "toward_zero"):
        raise ValueError(f"ties must be 'even' or 'toward_zero'; got {ties!r}")
    block_size = FP4_FORMATS[fmt] if block_size is None else check_int("block_size", block_size, low=1)
    if x.ndim == 0 or x.shape[-1] % block_size:
        raise ValueError(
            f"the last dimension of x (shape {tuple(x.shape)}) must be a multiple of the {fmt} block size "
            f"{block_size}: pad it with zeros and crop the output"
        )
    if fmt == "mxfp4" and ties == "toward_zero":
        return mxfp4_quantize(x, block_size)
    w = x.detach()
    calc = torch.float64 if w.dtype == torch.float64 else torch.float32
    blocks = w.to(calc).reshape(*w.shape[:-1], -1, block_size)
    amax = blocks.abs().amax(-1, keepdim=True)
    if not bool(torch.isfinite(amax.amax())):  # amax propagates NaN and inf
        raise ValueError("x must be finite")
    if fmt == "mxfp4":
        scale = torch.exp2(torch.floor(torch.log2(amax.clamp_min(2.0**-126))) - 2.0)
        q = _round_e2m1((blocks.abs() / scale).clamp(max=_E2M1_MAX), ties)
        out = torch.sign(blocks) * q * scale
    else:
        gamax = amax.amax()
        if float(gamax) == 0.0:
            return torch.zeros_like(x)
        gs = (_E4M3_MAX * _E2M1_MAX) / gamax.to(torch.float32)  # per-tensor FP32 scale s
        sf = (gs * amax.to(torch.float32) / _E2M1_MAX).to(torch.float8_e4m3fn).to(torch.float32)  # E4M3 sigma_b
        inv = torch.where(sf > 0, gs / sf, 0.0)  # an all-zero (or underflowing) block stays zero
        normed = (blocks.to(torch.float32) * inv).clamp(-_E2M1_MAX, _E2M1_MAX)
        q = _round_e2m1(normed.abs(), ties) * torch.sign(normed)
        out = q * (sf / gs)
    return out.reshape(x.shape).to(x.dtype)


def nvfp4_quantize(x: torch.Tensor, block_size: int = 16) -> torch.Tensor:
    """NVFP4 fake quantisation of ``x`` along its last axis: ``fp4_quantize(x, "nvfp4", block_size)``."""
    return fp4_quantize(x, "nvfp4", block_size)


def mxfp4_quantize(weight: torch.Tensor, block_size: int = 32) -> torch.Tensor:
    """MXFP4 fake quantisation of ``weight`` along its last axis (blocks of ``block_size`` share a scale).

    Parameters
    ----------
    weight : torch.Tensor
        Floating-point tensor whose last dimension is a multiple of ``block_size`` (pad it with zero
        columns, :func:`geode.compression.pad_columns`, and crop the output otherwise).
    block_size : int
        Elements per shared E8M0 scale (32 in the OCP MX specification).

    Returns
    -------
    torch.Tensor
        The dequantised tensor, same shape and dtype. Ties between two grid values round down in magnitude
        (the specification rounds to even, :func:`fp4_quantize` with ``ties="even"``; the difference is
        measure-zero on real weights). Computed in the input's dtype.

    Raises
    ------
    TypeError
        ``weight`` is not a floating-point tensor.
    ValueError
        ``weight`` is empty, holds a NaN or inf (checked on the block maxima, 1/``block_size`` of a scan), or its
        last dimension is not a multiple of ``block_size``.
    """
    if not isinstance(weight, torch.Tensor) or not weight.is_floating_point():
        raise TypeError(f"weight must be a floating-point torch.Tensor; got {type(weight).__name__}")
    block_size = check_int("block_size", block_size, low=1)
    if weight.ndim == 0 or weight.shape[-1] % block_size:
        raise ValueError(
            f"weight's last dimension ({tuple(weight.shape)}) must be a multiple of block_size={block_size}; "
            "pad the columns with zeros (geode.compression.pad_columns) and crop the output"
        )
    if weight.numel() == 0:
        raise ValueError(f"weight must not be empty; got shape {tuple(weight.shape)}")
    w = weight.detach()
    blocks = w.reshape(*w.shape[:-1], -1, block_size)
    amax = blocks.abs().amax(-1, keepdim=True)
    if not bool(torch.isfinite(amax).all()):  # a block max is NaN or inf exactly when the block holds one
        raise ValueError("weight must contain only finite values (found NaN or inf)")
    scale = torch.exp2(torch.floor(torch.log2(amax.clamp_min(2.0**-126))) - 2.0)
    grid = torch.tensor(E2M1_VALUES, dtype=w.dtype, device=w.device)
    x = (blocks.abs() / scale).clamp(max=6.0)
    q = grid[torch.bucketize(x, (grid[1:] + grid[:-1]) / 2)]
    return (torch.sign(blocks) * q * scale).reshape(weight.shape).to(weight.dtype)
