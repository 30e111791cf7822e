"""Positional mechanisms indexed by the packed sequence position: rotary embeddings and learned absolute tables.

These are the positional encodings every sequence layer meets, and the baselines geometry-aware layers are
compared against: they see a token only through its *index* in the packed sequence, so whatever they learn is
tied to the memory layout of the data.

- :func:`apply_rotary` rotates pairs of channels by given angles (the kernel of every rotary embedding);
- :func:`rope_frequencies` gives the standard geometric frequency ladder :math:`\\omega_j = \\text{base}^{-j/p}`;
- :func:`rope_1d` is RoPE (Su et al., 2021) on 1-D positions, by default the packed index :math:`0, \\dots, N-1`;
- :class:`LearnedPositionalEmbedding` adds a trained vector per sequence index (BERT/GPT-2 style).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from geode.core import check_int, check_real

__all__ = ["LearnedPositionalEmbedding", "apply_rotary", "rope_1d", "rope_frequencies"]


def _check_float_tensor(name: str, x: Any, ndims: tuple[int, ...]) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor; got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point tensor; got dtype {x.dtype}")
    if x.ndim not in ndims:
        raise ValueError(f"{name} must have {' or '.join(map(str, ndims))} dimensions; got shape {tuple(x.shape)}")
    return x


def rope_frequencies(pairs: int, base: float = 10000.0, *, device: Any = None, dtype: Any = None) -> torch.Tensor:
    """The rotary frequency ladder :math:`\\omega_j = \\text{base}^{-j/p}`, :math:`j = 0, \\dots, p-1`.

    This is RoPE's :math:`\\theta_j = \\text{base}^{-2j/d}` for a block of :math:`d = 2p` channels: the fastest
    pair turns by one radian per unit of position, the slowest by :math:`\\text{base}^{-(p-1)/p}`.

    Parameters
    ----------
    pairs : int
        Number :math:`p \\ge 1` of rotated channel pairs.
    base : float
        Wavelength base (> 1).
    device, dtype : optional
        Of the result (default CPU, float32).

    Returns
    -------
    torch.Tensor
        Shape ``(pairs,)``.

    Examples
    --------
    >>> rope_frequencies(2, 100.0).tolist()
    [1.0, 0.10000000149011612]
    """
    pairs = check_int("pairs", pairs, low=1)
    base = check_real("base", base, low=1.0, low_inclusive=False)
    j = torch.arange(pairs, device=device, dtype=torch.float64)
    return (base ** (-j / pairs)).to(dtype or torch.float32)


def apply_rotary(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate channel pairs of ``x`` by ``angles`` (the half-split convention of GPT-NeoX and LLaMA).

    With :math:`p` = ``angles.shape[-1]`` and :math:`x = (x^{(1)}, x^{(2)})` split into two halves of :math:`p`
    channels,

    .. math::

        \\operatorname{rot}(x, \\phi) = \\big(x^{(1)} \\cos\\phi - x^{(2)} \\sin\\phi,\\;
                                        x^{(1)} \\sin\\phi + x^{(2)} \\cos\\phi\\big),

    i.e. the pair :math:`(x_j, x_{j+p})` is turned by the angle :math:`\\phi_j`. Rotations preserve norms and
    :math:`\\langle \\operatorname{rot}(q, \\phi), \\operatorname{rot}(k, \\psi) \\rangle` depends on the angles
    only through :math:`\\phi - \\psi`, which is what makes RoPE relative.

    Parameters
    ----------
    x : torch.Tensor
        Shape ``(..., 2p)``.
    angles : torch.Tensor
        Shape broadcastable to ``(..., p)``.

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``x``. NaN and inf propagate as in torch's own layers (no per-step scan), and an
        empty ``x`` gives an empty output.
    """
    _check_float_tensor("x", x, tuple(range(1, 9)))
    _check_float_tensor("angles", angles, tuple(range(1, 9)))
    p = angles.shape[-1]
    if x.shape[-1] != 2 * p:
        raise ValueError(f"x must have 2 * angles.shape[-1] = {2 * p} channels; got x shape {tuple(x.shape)}")
    try:
        torch.broadcast_shapes(angles.shape, (*x.shape[:-1], p))
    except RuntimeError:
        raise ValueError(
            f"angles must broadcast to x's leading shape (..., p) = {(*x.shape[:-1], p)}; got {tuple(angles.shape)}"
        ) from None
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    x1, x2 = x[..., :p], x[..., p:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def rope_1d(x: torch.Tensor, positions: torch.Tensor | None = None, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding on 1-D positions (by default the packed sequence index).

    Token :math:`n` at position :math:`t_n` has its :math:`d` channels (in :math:`p = d/2` pairs) rotated by

    .. math::

        \\phi_{n,j} = t_n\\, \\omega_j, \\qquad \\omega_j = \\text{base}^{-j/p},

    see :func:`apply_rotary`. Applied to queries and keys, the score
    :math:`\\langle \\operatorname{rot}(q_n), \\operatorname{rot}(k_m) \\rangle` depends on positions only
    through :math:`t_n - t_m`. With the default ``positions`` :math:`t_n = n` this is "packed-sequence RoPE":
    it sees the memory layout of a packed volume, not its geometry.

    Parameters
    ----------
    x : torch.Tensor
        Shape ``(B, N, d)`` or ``(B, N, H, d)`` (heads), ``d`` even.
    positions : torch.Tensor, optional
        Shape ``(N,)`` or ``(B, N)``, integer or real; default ``arange(N)``.
    base : float
        Wavelength base (> 1).

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``x``. NaN and inf in ``x`` propagate as in torch's own layers (no per-step
        scan), and an empty batch gives an empty output.

    Examples
    --------
    >>> x = torch.randn(1, 5, 4)
    >>> torch.allclose(rope_1d(x)[:, 0], x[:, 0])  # position 0 is not rotated
    True
    """
    x = _check_float_tensor("x", x, (3, 4))
    b, n, d = x.shape[0], x.shape[1], x.shape[-1]
    if d % 2:
        raise ValueError(f"x must have an even number of channels for rope_1d; got {d}")
    if positions is None:
        pos = torch.arange(n, device=x.device, dtype=torch.float64)
    else:
        if not isinstance(positions, torch.Tensor):
            raise TypeError(f"positions must be a torch.Tensor; got {type(positions).__name__}")
        if positions.dtype == torch.bool or positions.dtype.is_complex:
            raise TypeError(f"positions must be integer or real; got dtype {positions.dtype}")
        if positions.shape not in ((n,), (b, n)):
            raise ValueError(f"positions must have shape ({n},) or ({b}, {n}); got {tuple(positions.shape)}")
        pos = positions.to(x.device, torch.float64)
    omega = rope_frequencies(d // 2, base, device=x.device, dtype=torch.float64)
    angles = pos[..., None] * omega  # (N, p) or (B, N, p)
    if x.ndim == 4:
        angles = angles[..., None, :]  # broadcast over heads
    return apply_rotary(x, angles)


class LearnedPositionalEmbedding(nn.Module):
    """A learned absolute position embedding indexed by sequence position: :math:`x_n \\mapsto x_n + P_n`.

    The table :math:`P \\in \\mathbb{R}^{L \\times C}` is trained with the model (GPT-2/ViT style) and
    initialised :math:`P_{nc} \\sim \\mathcal{N}(0, \\sigma^2)`. Row :math:`n` belongs to the :math:`n`-th token of
    the packed sequence, whatever that token is; when a volume is repacked the rows land on other voxels.

    Parameters
    ----------
    max_len : int
        Number of rows :math:`L` (the longest sequence).
    dim : int
        Channels :math:`C`.
    init_std : float
        :math:`\\sigma` of the initialisation (default 0.02).

    ``forward(x)`` adds the table's first ``N`` rows to ``x`` ``(B, N, C)``; NaN and inf in ``x`` propagate as in
    torch's own layers (no per-step scan), and an empty batch gives an empty output.

    Examples
    --------
    >>> pe = LearnedPositionalEmbedding(8, 4)
    >>> pe(torch.zeros(2, 5, 4)).shape
    torch.Size([2, 5, 4])
    """

    def __init__(self, max_len: int, dim: int, init_std: float = 0.02) -> None:
        super().__init__()
        self.max_len = check_int("max_len", max_len, low=1)
        self.dim = check_int("dim", dim, low=1)
        init_std = check_real("init_std", init_std, low=0.0)
        self.table = nn.Parameter(torch.randn(self.max_len, self.dim) * init_std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Add the first ``N`` rows to ``x`` of shape ``(B, N, C)``."""
        x = _check_float_tensor("x", x, (3,))
        n = x.shape[1]
        if n > self.max_len or x.shape[-1] != self.dim:
            raise ValueError(f"x must have shape (B, N <= {self.max_len}, {self.dim}); got {tuple(x.shape)}")
        return x + self.table[:n].to(x.dtype)
