"""A tiny pre-norm transformer segmenter over packed tokens, with a pluggable attention layer.

Used by the repacking benchmark to compare positional mechanisms inside otherwise identical networks:

.. math::

    h^{(0)} = W_e x_n\\ (+ P_n), \\quad
    h \\leftarrow h + \\operatorname{Attn}(\\operatorname{LN}(h), g), \\quad
    h \\leftarrow h + \\operatorname{MLP}(\\operatorname{LN}(h)), \\quad
    \\text{logits}_n = W_o \\operatorname{LN}(h_n),

with :math:`P_n` a learned absolute position embedding (only for the ``learned_pe`` baseline).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from geode.core import check_choice, check_int, check_real
from geode.layers.pack3d.attention import DenseAxialRoPEAttention, Pack3DAttention, PackedSequenceAttention
from geode.layers.positional import LearnedPositionalEmbedding

__all__ = ["MODEL_KINDS", "TokenSegmenter", "make_segmenter"]

MODEL_KINDS: tuple[str, ...] = ("pack3d", "learned_pe_3d", "rope1d_3d", "learned_pe", "rope1d", "dense")
"""``pack3d``: :class:`Pack3DAttention`; ``learned_pe_3d`` / ``rope1d_3d``: Pack3D's own 3-D neighbourhood and
blocks with the positional signal swapped (a learned absolute embedding of the packed index, or 1-D RoPE on the
packed index; the matched baselines of the repacking claim); ``learned_pe`` / ``rope1d``: the same signals with
local-global attention over the packed order (1-D window); ``dense``: dense SDPA, axial RoPE."""


class _Block(nn.Module):
    def __init__(self, dim: int, attention: nn.Module, mlp_ratio: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = attention
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_ratio * dim), nn.GELU(), nn.Linear(mlp_ratio * dim, dim))

    def forward(self, h: torch.Tensor, coords: torch.Tensor) -> torch.Tensor:
        h = h + self.attn(self.norm1(h), coords)
        return h + self.mlp(self.norm2(h))


class TokenSegmenter(nn.Module):
    """Per-token classifier: embedding, ``depth`` pre-norm attention/MLP blocks, linear head.

    Parameters
    ----------
    in_channels, num_classes : int
        Input features per token and output classes.
    dim, depth : int
        Width :math:`C` and number of blocks.
    attention : callable
        ``attention() -> nn.Module`` with ``forward(h, coords)``; called once per block.
    mlp_ratio : int
        Hidden width of the MLP in units of ``dim``.
    max_positions : int, optional
        If given, add a :class:`~geode.layers.positional.LearnedPositionalEmbedding` with that many rows after
        the input embedding.
    """

    def __init__(
        self,
        in_channels: int,
        num_classes: int,
        dim: int,
        depth: int,
        attention: Callable[[], nn.Module],
        *,
        mlp_ratio: int = 2,
        max_positions: int | None = None,
    ) -> None:
        super().__init__()
        in_channels = check_int("in_channels", in_channels, low=1)
        num_classes = check_int("num_classes", num_classes, low=1)
        dim = check_int("dim", dim, low=1)
        depth = check_int("depth", depth, low=1)
        mlp_ratio = check_int("mlp_ratio", mlp_ratio, low=1)
        self.embed = nn.Linear(in_channels, dim)
        self.pos = None if max_positions is None else LearnedPositionalEmbedding(max_positions, dim)
        self.blocks = nn.ModuleList([_Block(dim, attention(), mlp_ratio) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x: torch.Tensor, coords: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, N, num_classes)`` for tokens ``x`` ``(B, N, in_channels)`` at ``coords`` ``(B, N, 3)``.

        NaN and inf in ``x`` propagate as in torch's own layers (no per-step scan of the input).
        """
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor of shape (B, N, in_channels); got {type(x).__name__}")
        c_in = self.embed.in_features
        if x.ndim != 3 or x.shape[-1] != c_in:
            raise ValueError(f"x must have shape (B, N, {c_in}); got {tuple(x.shape)}")
        if x.numel() == 0:
            raise ValueError(f"x must hold at least one token; got shape {tuple(x.shape)}")
        h = self.embed(x)
        if self.pos is not None:
            h = self.pos(h)
        for blk in self.blocks:
            h = blk(h, coords)
        return self.head(self.norm(h))


def make_segmenter(
    kind: str,
    *,
    in_channels: int = 1,
    num_classes: int = 4,
    dim: int = 64,
    depth: int = 2,
    heads: int = 4,
    local_radius: int = 1,
    block_size: int = 4,
    max_positions: int = 1728,
    rope_base: float = 100.0,
) -> TokenSegmenter:
    """A :class:`TokenSegmenter` of one of :data:`MODEL_KINDS`, matched in key slots and blocks.

    The sequence-index baselines get the window :math:`w = ((2r+1)^3 - 1)/2` (as many exact keys as Pack3D's
    neighbourhood) and runs of :math:`L = b^3` tokens (as many blocks as Pack3D on a full grid). 1-D RoPE uses
    the usual base :math:`10^4` (sequence positions reach :math:`N`); axial RoPE uses ``rope_base``.
    """
    check_choice("kind", kind, MODEL_KINDS)
    r = check_int("local_radius", local_radius, low=0)
    b = check_int("block_size", block_size, low=1)
    rope_base = check_real("rope_base", rope_base, low=1.0, low_inclusive=False)
    window, block_len = ((2 * r + 1) ** 3 - 1) // 2, b**3
    factories: dict[str, Callable[[], nn.Module]] = {
        "pack3d": lambda: Pack3DAttention(dim, heads, r, b, rope_base),
        "learned_pe_3d": lambda: Pack3DAttention(dim, heads, r, b, rope_base, position="none"),
        "rope1d_3d": lambda: Pack3DAttention(dim, heads, r, b, rope_base, position="rope1d"),
        "learned_pe": lambda: PackedSequenceAttention(dim, heads, window, block_len, position="none"),
        "rope1d": lambda: PackedSequenceAttention(dim, heads, window, block_len, position="rope1d"),
        "dense": lambda: DenseAxialRoPEAttention(dim, heads, rope_base),
    }
    return TokenSegmenter(
        in_channels,
        num_classes,
        dim,
        depth,
        factories[kind],
        max_positions=max_positions if kind in ("learned_pe", "learned_pe_3d") else None,
    )
