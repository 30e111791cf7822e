"""Pack3D attention modules: axial RoPE on grid coordinates, the Pack3D layer and its baselines.

- :func:`axial_rope_3d`: rotary embedding on the true (z, y, x) grid coordinates;
- :class:`Pack3DAttention`: projections, axial RoPE, then the local-global kernel
  :func:`~geode.layers.pack3d.pack3d_attention` (the equations are in :mod:`geode.layers.pack3d.core`);
- :class:`DenseAxialRoPEAttention`: dense SDPA with the same projections and RoPE (the limit and speed baseline);
- :class:`PackedSequenceAttention`: the matched local-global layer over the packed order, with 1-D RoPE on the
  packed index or no positional signal (for use after a learned absolute embedding): the sequence-index baselines.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from geode.core import check_choice, check_int, check_real
from geode.layers.pack3d.core import _DEFAULT_MAX_ELEMENTS, check_coords, pack3d_attention, packed_sequence_attention
from geode.layers.positional import apply_rotary, rope_1d, rope_frequencies

__all__ = [
    "DenseAxialRoPEAttention",
    "Pack3DAttention",
    "PackedSequenceAttention",
    "axial_rope_3d",
]


def _check_features(x: Any, dim: int) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor of shape (B, N, {dim}); got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"x must be a floating-point tensor; got dtype {x.dtype}")
    if x.ndim != 3 or x.shape[-1] != dim:
        raise ValueError(f"x must have shape (B, N, {dim}); got {tuple(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"x must hold at least one token; got shape {tuple(x.shape)}")
    return x


# ------------------------------------------------------------------------------------------------ axial RoPE


def axial_rope_3d(x: torch.Tensor, coords: torch.Tensor, base: float = 100.0) -> torch.Tensor:
    """Axial rotary embedding on 3-D grid coordinates.

    The :math:`d` channels are cut into three chunks of :math:`2p` channels, :math:`p = \\lfloor d / 6
    \\rfloor`, one per axis :math:`a \\in (z, y, x)`; chunk :math:`a` is rotated (:func:`apply_rotary`) by

    .. math:: \\phi_{n,a,j} = g_{n,a}\\, \\omega_j, \\qquad \\omega_j = \\text{base}^{-j/p},\\ j < p,

    and the :math:`d - 6p` trailing channels are left unrotated (position-free content channels). Hence, for
    queries and keys rotated this way,

    .. math:: \\langle \\operatorname{rot}(q, g), \\operatorname{rot}(k, g') \\rangle
              = \\langle \\operatorname{rot}(q, g - g'), k \\rangle ,

    a function of the coordinate difference :math:`g - g'` only: attention sees relative 3-D offsets, whatever
    the packed order.

    Parameters
    ----------
    x : torch.Tensor
        Shape ``(B, N, d)`` or ``(B, N, H, d)``, floating point, ``d >= 6``.
    coords : torch.Tensor
        Shape ``(B, N, 3)`` or ``(N, 3)``, integer or real coordinates in (z, y, x) order.
    base : float
        Wavelength base (> 1). The default 100 (rather than the 10^4 of 1-D RoPE) suits grid extents of
        10-1000 voxels: wavelengths run from :math:`2\\pi` to about :math:`2\\pi \\cdot 100` voxels.

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``x``. NaN and inf in ``x`` propagate as in torch's own layers (no per-step
        scan), and an empty batch gives an empty output.

    Examples
    --------
    >>> x = torch.randn(1, 4, 2, 12)
    >>> g = torch.tensor([[0, 0, 0], [1, 2, 3], [4, 0, 1], [2, 2, 2]])
    >>> torch.allclose(axial_rope_3d(x, g)[:, 0], x[:, 0])  # the origin is not rotated
    True
    """
    if not isinstance(x, torch.Tensor) or not x.dtype.is_floating_point or x.ndim not in (3, 4):
        got = f"dtype {x.dtype}, shape {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise TypeError(f"x must be a floating-point tensor of shape (B, N, d) or (B, N, H, d); got {got}")
    b, n, d = x.shape[0], x.shape[1], x.shape[-1]
    if d < 6:
        raise ValueError(f"x must have at least 6 channels (2 per axis) for axial_rope_3d; got {d}")
    if not isinstance(coords, torch.Tensor) or coords.dtype == torch.bool or coords.dtype.is_complex:
        raise TypeError("coords must be an integer or real torch.Tensor of shape (B, N, 3) or (N, 3)")
    if coords.shape not in ((b, n, 3), (n, 3)):
        raise ValueError(f"coords must have shape ({b}, {n}, 3) or ({n}, 3); got {tuple(coords.shape)}")
    p = d // 6
    omega = rope_frequencies(p, base, device=x.device, dtype=torch.float64)
    angles = coords.to(x.device, torch.float64)[..., None] * omega  # (..., N, 3, p)
    if x.ndim == 4:
        angles = angles.unsqueeze(-3)  # (..., N, 1, 3, p): broadcast over heads
    rot = x[..., : 6 * p].unflatten(-1, (3, 2 * p))  # chunk a = axis a
    rot = apply_rotary(rot, angles).flatten(-2)
    return torch.cat([rot, x[..., 6 * p :]], dim=-1) if 6 * p < d else rot


# ------------------------------------------------------------------------------------------------ modules


class _Projected(nn.Module):
    """Shared projections: ``qkv`` (C -> 3C) and ``out`` (C -> C), ``heads`` heads of ``C / heads`` channels."""

    def __init__(self, dim: int, heads: int, bias: bool) -> None:
        super().__init__()
        self.dim = check_int("dim", dim, low=1)
        self.heads = check_int("heads", heads, low=1)
        if self.dim % self.heads:
            raise ValueError(f"dim must be divisible by heads; got dim={dim}, heads={heads}")
        self.head_dim = self.dim // self.heads
        self.qkv = nn.Linear(self.dim, 3 * self.dim, bias=bias)
        self.out = nn.Linear(self.dim, self.dim, bias=bias)

    def _qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.head_dim).unbind(2)
        return q, k, v

    def _out(self, o: torch.Tensor) -> torch.Tensor:
        return self.out(o.reshape(o.shape[0], o.shape[1], self.dim))


class Pack3DAttention(_Projected):
    """Pack3D: geometry-aware local-global attention on packed 3-D tokens.

    ``forward(x, coords)`` projects :math:`x` to per-head :math:`q, k, v`, rotates :math:`q, k` with axial RoPE on
    the true grid coordinates (:func:`axial_rope_3d`), attends exactly within the Chebyshev radius :math:`r` and
    to the mean summaries of the distant :math:`b^3` blocks in one softmax (:func:`pack3d_attention`; the
    equations are in the module docstring) and projects back. The output does not depend on the packed order:
    permuting tokens and coordinates together permutes the output the same way.

    Parameters
    ----------
    dim : int
        Channels :math:`C`.
    heads : int
        Heads :math:`H` (``dim`` divisible by ``heads``; the head size should be >= 6 for axial RoPE).
    local_radius : int
        :math:`r \\ge 0` (default 1: the 27-voxel neighbourhood).
    block_size : int or None
        Block edge :math:`b` (default 4); ``None`` keeps only the local branch.
    rope_base : float
        Axial RoPE wavelength base (default 100, see :func:`axial_rope_3d`).
    bias : bool
        Biases in the projections.
    method : {"auto", "tiles", "gather"}
        Evaluation of the kernel (:func:`~geode.layers.pack3d.pack3d_attention`); the results agree.
    max_elements : int
        Memory bound of the kernel (tiles or queries are processed in chunks of about this many score and
        gathered key/value elements; default 2**18, which keeps the peak within 1.5x dense SDPA's at 16k-64k
        tokens on a CPU). The output does not depend on it.
    position : {"axial", "rope1d", "none"}
        The positional signal inside attention: ``"axial"`` (Pack3D, axial RoPE on the grid coordinates), or,
        for the matched baselines of the repacking claim (same 3-D neighbourhood and blocks, only the position
        signal differs), ``"rope1d"`` (1-D RoPE on the packed index, base :math:`10^4`) or ``"none"`` (for use
        after a learned absolute position embedding of the packed index).

    NaN and inf in ``x`` propagate as in torch's own layers (no per-step scan of the input).

    Examples
    --------
    >>> attn = Pack3DAttention(dim=24, heads=2, local_radius=1, block_size=2)
    >>> g = torch.stack(torch.meshgrid(*[torch.arange(4)] * 3, indexing="ij"), -1).reshape(-1, 3)
    >>> attn(torch.randn(2, 64, 24), g).shape
    torch.Size([2, 64, 24])
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        local_radius: int = 1,
        block_size: int | None = 4,
        rope_base: float = 100.0,
        *,
        bias: bool = True,
        method: str = "auto",
        max_elements: int = _DEFAULT_MAX_ELEMENTS,
        position: str = "axial",
    ) -> None:
        super().__init__(dim, heads, bias)
        self.position = check_choice("position", position, ("axial", "rope1d", "none"))
        if self.position == "axial" and self.head_dim < 6:
            raise ValueError(f"dim / heads must be >= 6 for axial RoPE (2 channels per axis); got {self.head_dim}")
        self.method = check_choice("method", method, ("auto", "tiles", "gather"))
        self.local_radius = check_int("local_radius", local_radius, low=0)
        self.block_size = None if block_size is None else check_int("block_size", block_size, low=1)
        self.rope_base = check_real("rope_base", rope_base, low=1.0, low_inclusive=False)
        self.max_elements = check_int("max_elements", max_elements, low=1)

    def forward(
        self, x: torch.Tensor, coords: torch.Tensor, grid_shape: tuple[int, int, int] | None = None
    ) -> torch.Tensor:
        """Attend over tokens ``x`` (B, N, C) at integer grid points ``coords`` (B, N, 3) or (N, 3).

        ``grid_shape`` (optional) fixes the grid extent that cuts the far-face blocks; by default each sample
        uses its own extent, so no sample's output depends on the rest of the batch.
        """
        x = _check_features(x, self.dim)
        g = check_coords(coords, x.shape[0], x.shape[1]).to(x.device)
        q, k, v = self._qkv(x)
        if self.position == "axial":
            q, k = axial_rope_3d(q, g, self.rope_base), axial_rope_3d(k, g, self.rope_base)
        elif self.position == "rope1d":
            q, k = rope_1d(q, base=10000.0), rope_1d(k, base=10000.0)
        o = pack3d_attention(
            q,
            k,
            v,
            g,
            self.local_radius,
            self.block_size,
            method=self.method,
            max_elements=self.max_elements,
            grid_shape=grid_shape,
        )
        return self._out(o)

    def extra_repr(self) -> str:
        return (
            f"dim={self.dim}, heads={self.heads}, local_radius={self.local_radius}, block_size={self.block_size}, "
            f"rope_base={self.rope_base:g}" + ("" if self.position == "axial" else f", position={self.position!r}")
        )


class DenseAxialRoPEAttention(_Projected):
    """Dense softmax attention (PyTorch SDPA) with the same projections and axial RoPE as :class:`Pack3DAttention`.

    :math:`o_n = \\sum_m \\operatorname{softmax}_m(\\tau \\tilde q_n^\\top \\tilde k_m) v_m` over all :math:`N`
    tokens: :math:`O(N^2)` time. It is the limit of Pack3D when the radius spans the grid, and the speed
    baseline. Parameter names match :class:`Pack3DAttention`, so ``load_state_dict`` moves weights across.
    NaN and inf in ``x`` propagate as in torch's own layers (no per-step scan of the input).
    """

    def __init__(self, dim: int, heads: int, rope_base: float = 100.0, *, bias: bool = True) -> None:
        super().__init__(dim, heads, bias)
        if self.head_dim < 6:
            raise ValueError(f"dim / heads must be >= 6 for axial RoPE (2 channels per axis); got {self.head_dim}")
        self.rope_base = check_real("rope_base", rope_base, low=1.0, low_inclusive=False)

    def forward(self, x: torch.Tensor, coords: torch.Tensor) -> torch.Tensor:
        """Attend over all tokens ``x`` (B, N, C) at grid points ``coords`` (B, N, 3) or (N, 3)."""
        x = _check_features(x, self.dim)
        g = check_coords(coords, x.shape[0], x.shape[1]).to(x.device)
        q, k, v = self._qkv(x)
        q, k = axial_rope_3d(q, g, self.rope_base), axial_rope_3d(k, g, self.rope_base)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return self._out(o.transpose(1, 2))


class PackedSequenceAttention(_Projected):
    """Matched sequence-index baseline: local-global attention over the packed order.

    Exact keys in a 1-D window of half-width :math:`w` and mean summaries of contiguous runs of :math:`L` tokens
    (:func:`packed_sequence_attention`), with either 1-D RoPE on the packed index (``position="rope1d"``,
    :func:`~geode.layers.positional.rope_1d`) or no positional signal inside attention (``position="none"``, for
    use after a :class:`~geode.layers.positional.LearnedPositionalEmbedding`). With :math:`w = ((2r+1)^3 - 1)/2`
    and :math:`L = b^3` it has the key slots and block count of :class:`Pack3DAttention` and the same parameters.
    ``coords`` are accepted and ignored: the layer sees only the packed order, which is what breaks under
    repacking. NaN and inf in ``x`` propagate as in torch's own layers (no per-step scan of the input).
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        window: int = 13,
        block_len: int | None = 64,
        position: str = "rope1d",
        rope_base: float = 10000.0,
        *,
        bias: bool = True,
        max_elements: int = _DEFAULT_MAX_ELEMENTS,
    ) -> None:
        super().__init__(dim, heads, bias)
        self.window = check_int("window", window, low=0)
        self.block_len = None if block_len is None else check_int("block_len", block_len, low=1)
        self.position = check_choice("position", position, ("rope1d", "none"))
        self.rope_base = check_real("rope_base", rope_base, low=1.0, low_inclusive=False)
        if self.position == "rope1d" and self.head_dim % 2:
            raise ValueError(f"dim / heads must be even for 1-D RoPE; got {self.head_dim}")
        self.max_elements = check_int("max_elements", max_elements, low=1)

    def forward(self, x: torch.Tensor, coords: torch.Tensor | None = None) -> torch.Tensor:
        """Attend over ``x`` (B, N, C) in its packed order; ``coords`` is ignored."""
        x = _check_features(x, self.dim)
        q, k, v = self._qkv(x)
        if self.position == "rope1d":
            q, k = rope_1d(q, base=self.rope_base), rope_1d(k, base=self.rope_base)
        o = packed_sequence_attention(q, k, v, self.window, self.block_len, max_elements=self.max_elements)
        return self._out(o)

    def extra_repr(self) -> str:
        return (
            f"dim={self.dim}, heads={self.heads}, window={self.window}, block_len={self.block_len}, "
            f"position={self.position!r}"
        )
