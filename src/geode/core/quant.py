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
"""

from __future__ import annotations

from typing import Any

import torch

from geode.core.validation import check_int, check_real

__all__ = [
    "minmax_dequantize",
    "minmax_params",
    "minmax_quantize",
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
