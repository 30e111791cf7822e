"""GARD's networks: a frozen multi-view reconstructor, the feature-space flow-matching denoiser, the decoder.

Shapes: multi-view images are ``(B, V, 3, H, W)``; tokens are ``(B, V, N, D)`` with ``N = (H / p) (W / p)``
patches of ``p x p`` pixels. *Local* attention mixes the ``N`` tokens of one view, *global* (cross-view)
attention mixes all ``V N`` tokens of a scene; alternating the two is the reconstructor's and the denoiser's
block pattern (DA3 and the authors' ``GARD.py``: even blocks local, odd blocks global). No view embedding
is used and the positional embedding is per patch, shared by all views, so every module here is equivariant
to a permutation of the views.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from geode.core import check_int

__all__ = [
    "FeatureDecoder",
    "GARDDenoiser",
    "MultiViewReconstructor",
    "PixelRestorer",
    "ViewAttention",
    "check_views",
]


def check_views(images: Any, *, name: str = "images", min_views: int = 2, patch: int | None = None) -> torch.Tensor:
    """Validate multi-view images and return them as a float tensor of shape ``(B, V, 3, H, W)``.

    Accepts a tensor ``(B, V, 3, H, W)`` or ``(V, 3, H, W)`` (one scene), or a sequence of per-view tensors
    ``(3, H, W)`` / ``(B, 3, H, W)``; views of different sizes, fewer than ``min_views`` views, or an image
    size that the patch size does not divide raise a ``ValueError`` naming ``name``.
    """
    if isinstance(images, (list, tuple)):
        if len(images) < min_views:
            raise ValueError(f"{name} needs at least {min_views} views; got {len(images)}")
        views = [torch.as_tensor(v) for v in images]
        shapes = {tuple(v.shape) for v in views}
        if len(shapes) > 1:
            raise ValueError(f"{name}: all views must have the same size; got shapes {sorted(shapes)}")
        x = torch.stack(views, dim=-4) if views[0].ndim == 4 else torch.stack(views, dim=0)
    elif isinstance(images, torch.Tensor):
        x = images
    else:
        raise TypeError(f"{name} must be a tensor or a sequence of per-view tensors; got {type(images).__name__}")
    if x.ndim == 4:
        x = x.unsqueeze(0)
    if x.ndim != 5 or x.shape[2] != 3:
        raise ValueError(f"{name} must have shape (batch, views, 3, H, W); got {tuple(x.shape)}")
    if x.shape[1] < min_views:
        raise ValueError(f"{name} needs at least {min_views} views; got {x.shape[1]}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be a floating-point tensor; got {x.dtype}")
    if patch is not None and (x.shape[-2] % patch or x.shape[-1] % patch):
        raise ValueError(f"{name}: H and W must be multiples of the patch size {patch}; got {tuple(x.shape[-2:])}")
    return x


def _patchify(x: torch.Tensor, p: int) -> torch.Tensor:
    b, v, c, h, w = x.shape
    x = x.reshape(b, v, c, h // p, p, w // p, p).permute(0, 1, 3, 5, 2, 4, 6)
    return x.reshape(b, v, (h // p) * (w // p), c * p * p)


def _unpatchify(t: torch.Tensor, p: int, c: int, h: int, w: int) -> torch.Tensor:
    b, v, _, _ = t.shape
    t = t.reshape(b, v, h // p, w // p, c, p, p).permute(0, 1, 4, 2, 5, 3, 6)
    return t.reshape(b, v, c, h, w)


def _rms(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


class ViewAttention(nn.Module):
    """Multi-head self-attention over multi-view tokens, within each view (local) or across views (global).

    Parameters
    ----------
    dim : int
        Token width ``D`` (divisible by ``heads``).
    heads : int
        Number of heads.
    mode : {"local", "global"}
        ``local``: each view attends to itself (``(B V, N, D)``); ``global``: all ``V N`` tokens of a scene
        attend to each other, the cross-view attention.

    Notes
    -----
    Queries and keys are RMS-normalised per head (QK-norm, as the authors' ``use_qknorm: true``). With
    ``keep_attention = True`` the head-averaged attention map of the last call is kept in ``last_attention``
    (``(B, L, L)`` with ``L = V N`` in global mode), which the alignment loss supervises.
    """

    def __init__(self, dim: int, heads: int, mode: str = "global") -> None:
        super().__init__()
        dim, heads = check_int("dim", dim, low=1), check_int("heads", heads, low=1)
        if dim % heads:
            raise ValueError(f"dim ({dim}) must be divisible by heads ({heads})")
        if mode not in ("local", "global"):
            raise ValueError(f"mode must be 'local' or 'global'; got {mode!r}")
        self.heads, self.mode = heads, mode
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.keep_attention = False
        self.last_attention: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, v, n, d = x.shape
        seq = x.reshape(b * v, n, d) if self.mode == "local" else x.reshape(b, v * n, d)
        bb, length, _ = seq.shape
        h, dh = self.heads, d // self.heads
        q, k, val = self.qkv(seq).reshape(bb, length, 3, h, dh).permute(2, 0, 3, 1, 4)
        q, k = _rms(q), _rms(k)
        attn = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), dim=-1)
        self.last_attention = attn.mean(1) if self.keep_attention else None
        out = (attn @ val).transpose(1, 2).reshape(bb, length, d)
        return self.proj(out).reshape(b, v, n, d)


class _Block(nn.Module):
    """Pre-norm transformer block; with ``cond`` an AdaLN-zero modulation by a conditioning vector."""

    def __init__(self, dim: int, heads: int, mode: str, cond: bool = False, mlp_ratio: float = 4.0) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=not cond)
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=not cond)
        self.attn = ViewAttention(dim, heads, mode)
        hid = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hid), nn.GELU(approximate="tanh"), nn.Linear(hid, dim))
        self.ada = None
        if cond:
            self.ada = nn.Sequential(nn.SiLU(), nn.Linear(dim, 6 * dim))
            nn.init.zeros_(self.ada[-1].weight)  # AdaLN-zero: the block starts as the identity
            nn.init.zeros_(self.ada[-1].bias)

    def forward(self, x: torch.Tensor, c: torch.Tensor | None = None) -> torch.Tensor:
        if self.ada is None or c is None:
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))
        sh1, sc1, g1, sh2, sc2, g2 = self.ada(c)[:, None, None, :].chunk(6, dim=-1)
        x = x + g1 * self.attn(self.norm1(x) * (1 + sc1) + sh1)
        return x + g2 * self.mlp(self.norm2(x) * (1 + sc2) + sh2)


class MultiViewReconstructor(nn.Module):
    """A small feed-forward multi-view depth reconstructor (the stand-in for Depth Anything 3).

    Patches of every view are embedded, pass ``early`` blocks (alternating local/global attention) to give
    the *features* GARD denoises (DA3's backbone layer 17), then ``late`` blocks and a linear head that
    predicts the log-depth of every pixel of its patch.

    Parameters
    ----------
    image_size : (int, int)
        ``(H, W)``, multiples of ``patch``.
    patch : int
        Patch size ``p``.
    dim, heads : int
        Token width and heads.
    early, late : int
        Blocks before and after the feature layer.
    """

    def __init__(
        self,
        image_size: Sequence[int] = (24, 32),
        patch: int = 4,
        dim: int = 64,
        heads: int = 4,
        early: int = 2,
        late: int = 2,
    ) -> None:
        super().__init__()
        self.patch = check_int("patch", patch, low=1)
        h, w = (check_int("image_size[0]", image_size[0], low=1), check_int("image_size[1]", image_size[1], low=1))
        if h % patch or w % patch:
            raise ValueError(f"image_size {(h, w)} must be a multiple of patch {patch}")
        self.image_size = (h, w)
        self.n_tokens = (h // patch) * (w // patch)
        self.dim = check_int("dim", dim, low=1)
        self.embed = nn.Linear(3 * patch * patch, dim)
        self.pos = nn.Parameter(0.02 * torch.randn(1, 1, self.n_tokens, dim))
        modes = ["local" if i % 2 == 0 else "global" for i in range(early + late)]
        self.early = nn.ModuleList(_Block(dim, heads, m) for m in modes[:early])
        self.late = nn.ModuleList(_Block(dim, heads, m) for m in modes[early:])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, patch * patch)
        nn.init.constant_(self.head.bias, math.log(5.0))  # depths of the scenes are around 5 units

    def features(self, images: Any) -> torch.Tensor:
        """Tokens ``(B, V, N, D)`` after the early blocks: the representation GARD restores."""
        x = check_views(images, patch=self.patch)
        if tuple(x.shape[-2:]) != self.image_size:
            raise ValueError(f"images must be {self.image_size[0]}x{self.image_size[1]}; got {tuple(x.shape[-2:])}")
        z = self.embed(_patchify(x, self.patch)) + self.pos
        for blk in self.early:
            z = blk(z)
        return z

    def depth_from_features(self, z: torch.Tensor) -> torch.Tensor:
        """Depth ``(B, V, H, W)`` predicted by the late blocks and the head from feature tokens ``z``."""
        if z.ndim != 4 or z.shape[2:] != (self.n_tokens, self.dim):
            raise ValueError(f"z must have shape (B, V, {self.n_tokens}, {self.dim}); got {tuple(z.shape)}")
        for blk in self.late:
            z = blk(z)
        logd = self.head(self.norm(z))
        return _unpatchify(logd, self.patch, 1, *self.image_size).squeeze(2).exp()

    def forward(self, images: Any) -> torch.Tensor:
        """Depth of every view, ``(B, V, H, W)``."""
        return self.depth_from_features(self.features(images))


class FeatureDecoder(nn.Module):
    """Decoder from reconstructor feature tokens back to RGB (per token, an MLP to its patch's pixels)."""

    def __init__(self, dim: int = 64, patch: int = 4, image_size: Sequence[int] = (24, 32), hidden: int = 128) -> None:
        super().__init__()
        self.patch, self.image_size = check_int("patch", patch, low=1), (int(image_size[0]), int(image_size[1]))
        self.net = nn.Sequential(
            nn.LayerNorm(dim), nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, 3 * patch * patch)
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """RGB ``(B, V, 3, H, W)`` in [0, 1] from tokens ``(B, V, N, D)``."""
        return torch.sigmoid(_unpatchify(self.net(z), self.patch, 3, *self.image_size))


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10000.0) -> torch.Tensor:
    """Sinusoidal embedding of flow times ``t`` in [0, 1] (scaled by 1000 as in DiT), shape ``(B, dim)``."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)
    args = 1000.0 * t.float()[:, None] * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    return emb if dim % 2 == 0 else torch.cat([emb, torch.zeros_like(emb[:, :1])], dim=-1)


class GARDDenoiser(nn.Module):
    """The flow-matching velocity network in the reconstructor's feature space (a DiT-lite).

    Input tokens ``(B, V, N, D)`` and flow times ``t`` ``(B,)``; output the velocity, same shape. Blocks
    alternate per-view (local) and cross-view (global) attention when ``cross_view`` (GARD); with
    ``cross_view=False`` every block is local (the latent-restorer baseline). AdaLN-zero on ``t`` and a
    zero-initialised output layer, so an untrained denoiser predicts zero velocity (as the authors' init).

    Parameters
    ----------
    dim : int
        Feature width ``D`` of the reconstructor.
    n_tokens : int
        Tokens per view ``N`` (for the per-patch positional embedding).
    hidden, depth, heads : int
        Width, number of blocks and heads.
    cross_view : bool
        Alternate local and global attention (True) or use local attention only (False).
    align_layer : int, optional
        Index of the (global) block whose attention map the alignment loss supervises (default: the first
        global block, index 1).
    """

    def __init__(
        self,
        dim: int = 64,
        n_tokens: int = 48,
        hidden: int = 64,
        depth: int = 4,
        heads: int = 4,
        cross_view: bool = True,
        align_layer: int | None = None,
    ) -> None:
        super().__init__()
        self.dim, self.hidden = check_int("dim", dim, low=1), check_int("hidden", hidden, low=1)
        depth = check_int("depth", depth, low=1)
        self.cross_view = bool(cross_view)
        modes = ["global" if (self.cross_view and i % 2 == 1) else "local" for i in range(depth)]
        if align_layer is None:
            align_layer = 1 if self.cross_view and depth > 1 else None
        if align_layer is not None:
            align_layer = check_int("align_layer", align_layer, low=0, high=depth - 1)
            if modes[align_layer] != "global":
                raise ValueError(f"align_layer {align_layer} must index a global (cross-view) block; modes {modes}")
        self.align_layer = align_layer
        self.embed = nn.Linear(dim, hidden)
        self.pos = nn.Parameter(0.02 * torch.randn(1, 1, n_tokens, hidden))
        self.t_mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.blocks = nn.ModuleList(_Block(hidden, heads, m, cond=True) for m in modes)
        self.norm = nn.LayerNorm(hidden, elementwise_affine=False)
        self.final_ada = nn.Sequential(nn.SiLU(), nn.Linear(hidden, 2 * hidden))
        self.out = nn.Linear(hidden, dim)
        for lin in (self.final_ada[-1], self.out):
            nn.init.zeros_(lin.weight)
            nn.init.zeros_(lin.bias)

    def forward(self, x: torch.Tensor, t: torch.Tensor, keep_attention: bool = False) -> torch.Tensor:
        if x.ndim != 4 or x.shape[-1] != self.dim:
            raise ValueError(f"x must have shape (B, V, N, {self.dim}); got {tuple(x.shape)}")
        if x.shape[2] != self.pos.shape[2]:
            raise ValueError(f"x has {x.shape[2]} tokens per view; the denoiser was built for {self.pos.shape[2]}")
        t = torch.as_tensor(t, dtype=x.dtype).reshape(-1).expand(x.shape[0])
        c = self.t_mlp(timestep_embedding(t, self.hidden))
        h = self.embed(x) + self.pos
        for i, blk in enumerate(self.blocks):
            blk.attn.keep_attention = keep_attention and i == self.align_layer
            h = blk(h, c)
        shift, scale = self.final_ada(c)[:, None, None, :].chunk(2, dim=-1)
        return self.out(self.norm(h) * (1 + scale) + shift)

    def alignment_attention(self) -> torch.Tensor | None:
        """The head-averaged attention ``(B, V N, V N)`` of the alignment block from the last kept forward."""
        return None if self.align_layer is None else self.blocks[self.align_layer].attn.last_attention


class PixelRestorer(nn.Module):
    """Pixel-space restorer baseline: a per-view patch transformer of the denoiser's size, plus a 3x3 refiner.

    Regression to the clean image (a residual on the degraded one), one view at a time, as the single-image
    restorers the paper compares with (Restormer); its output is fed to the frozen reconstructor.
    """

    def __init__(
        self, patch: int = 4, image_size: Sequence[int] = (24, 32), hidden: int = 64, depth: int = 4, heads: int = 4
    ) -> None:
        super().__init__()
        self.patch, self.image_size = check_int("patch", patch, low=1), (int(image_size[0]), int(image_size[1]))
        n = (self.image_size[0] // patch) * (self.image_size[1] // patch)
        self.embed = nn.Linear(3 * patch * patch, hidden)
        self.pos = nn.Parameter(0.02 * torch.randn(1, 1, n, hidden))
        self.blocks = nn.ModuleList(_Block(hidden, heads, "local") for _ in range(depth))
        self.norm = nn.LayerNorm(hidden)
        self.out = nn.Linear(hidden, 3 * patch * patch)
        self.refine = nn.Sequential(nn.Conv2d(6, 16, 3, padding=1), nn.GELU(), nn.Conv2d(16, 3, 3, padding=1))
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, images: Any) -> torch.Tensor:
        x = check_views(images, min_views=1, patch=self.patch)
        h = self.embed(_patchify(x, self.patch)) + self.pos
        for blk in self.blocks:
            h = blk(h)
        y = x + _unpatchify(self.out(self.norm(h)), self.patch, 3, *x.shape[-2:])
        b, v = x.shape[:2]
        r = self.refine(torch.cat([y, x], dim=2).reshape(b * v, 6, *x.shape[-2:])).reshape(y.shape)
        return (y + r).clamp(0, 1)
