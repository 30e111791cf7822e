r"""A tiny CLIP and a procedural image-caption world in which classes are defined by part relations.

:class:`TinyCLIP` is a ViT image encoder (patch embedding, CLS token, pre-norm transformer blocks with
separate ``q_proj``/``k_proj``/``v_proj``/``out_proj`` linear layers, so LoRA can target them by name) and a
text transformer (word embedding, causal-free attention, the last token's state as the caption embedding),
both projected to a shared space; logits are :math:`s \cos(f, t)` with a learned scale :math:`s`.

:class:`RelationWorld` draws images of two glyphs (from ``n_glyphs`` 3x3 binary patterns) on a noisy
canvas, one left of or above the other, captioned ``"<glyph a> <relation> <glyph b>"`` (three words). A
concept is the triple (a, relation, b), a != b. The few-shot ("novel") classes are four unordered glyph
pairs in both orders with the relation "left-of": each class has a twin with the same glyphs swapped, so
a bag of patch features cannot tell them apart; only the spatial relation of the parts can. The tiny
CLIP is pre-trained contrastively on the remaining ("base") concepts only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.core.validation import check_int, check_positive, check_real, check_tensor

__all__ = ["RelationWorld", "TinyCLIP", "pretrain_clip"]


class _Attention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        h = self.heads

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, n, h, d // h).transpose(1, 2)

        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // h), dim=-1)
        return self.out_proj((att @ v).transpose(1, 2).reshape(b, n, d))


class _Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = _Attention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyCLIP(nn.Module):
    r"""A small CLIP: ViT image encoder and text transformer with a shared embedding space.

    Parameters
    ----------
    image_size, patch : int
        Square grey images of side ``image_size`` cut into ``(image_size / patch)^2`` patches.
    vocab_size, text_length : int
        Word vocabulary and caption length (captions are fixed-length word-id sequences).
    d, layers, heads, embed_dim : int
        Width, depth and heads of both encoders, and the dimension of the shared space.

    ``images`` are finite, non-empty tensors of shape (B, image_size, image_size); ``captions`` integer tensors
    of shape (C, L), ``1 <= L <= text_length``, with word ids in ``[0, vocab_size)`` (else a ``TypeError`` or
    ``ValueError`` naming the argument).
    """

    def __init__(
        self,
        image_size: int = 16,
        patch: int = 4,
        vocab_size: int = 16,
        text_length: int = 3,
        d: int = 48,
        layers: int = 2,
        heads: int = 4,
        embed_dim: int = 32,
    ) -> None:
        super().__init__()
        image_size, patch = check_int("image_size", image_size, low=1), check_int("patch", patch, low=1)
        if image_size % patch:
            raise ValueError(f"patch must divide image_size; got patch={patch}, image_size={image_size}")
        if d % heads:
            raise ValueError(f"heads must divide d; got heads={heads}, d={d}")
        self.image_size, self.patch, self.grid = image_size, patch, image_size // patch
        self.d = d
        self.vocab_size, self.text_length = vocab_size, text_length
        self.patch_embed = nn.Linear(patch * patch, d)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, self.grid**2 + 1, d) * 0.02)
        self.visual = nn.ModuleList(_Block(d, heads) for _ in range(layers))
        self.ln_v = nn.LayerNorm(d)
        self.proj_v = nn.Linear(d, embed_dim, bias=False)
        self.word = nn.Embedding(vocab_size, d)
        self.tpos = nn.Parameter(torch.randn(1, text_length, d) * 0.02)
        self.text = nn.ModuleList(_Block(d, heads) for _ in range(layers))
        self.ln_t = nn.LayerNorm(d)
        self.proj_t = nn.Linear(d, embed_dim, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(10.0)))

    def _check_images(self, images: torch.Tensor) -> None:
        s = self.image_size
        check_tensor("images", images, finite=False, nonempty=False)
        if images.ndim != 3 or tuple(images.shape[1:]) != (s, s):
            raise ValueError(f"images must have shape (B, {s}, {s}); got {tuple(images.shape)}")
        check_tensor("images", images, floating=True)

    def _check_captions(self, captions: torch.Tensor) -> None:
        check_tensor("captions", captions, ndim=2, finite=False)
        if captions.is_floating_point() or captions.is_complex() or captions.dtype == torch.bool:
            raise TypeError(f"captions must be an integer tensor of word ids; got {captions.dtype}")
        if captions.shape[1] > self.text_length:
            raise ValueError(
                f"captions must have at most text_length = {self.text_length} words; got {captions.shape[1]}"
            )
        lo, hi = int(captions.min()), int(captions.max())
        if lo < 0 or hi >= self.vocab_size:
            raise ValueError(f"captions must hold word ids in [0, {self.vocab_size}); got range [{lo}, {hi}]")

    def image_tokens(self, images: torch.Tensor) -> torch.Tensor:
        """Final-layer tokens (CLS first, then patches in row-major order), shape (B, 1 + P, d)."""
        self._check_images(images)
        b = images.shape[0]
        p, g = self.patch, self.grid
        x = images.reshape(b, g, p, g, p).permute(0, 1, 3, 2, 4).reshape(b, g * g, p * p)
        x = torch.cat([self.cls.expand(b, -1, -1), self.patch_embed(x)], dim=1) + self.pos
        for blk in self.visual:
            x = blk(x)
        return self.ln_v(x)

    def encode_image(self, images: torch.Tensor, tokens: torch.Tensor | None = None) -> torch.Tensor:
        """L2-normalised image embeddings, shape (B, embed_dim)."""
        if tokens is not None:
            check_tensor("tokens", tokens, ndim=3, finite=False)
        t = self.image_tokens(images) if tokens is None else tokens
        return nn.functional.normalize(self.proj_v(t[:, 0]), dim=-1)

    def encode_text(self, captions: torch.Tensor) -> torch.Tensor:
        """L2-normalised caption embeddings (last token's state), shape (C, embed_dim)."""
        self._check_captions(captions)
        x = self.word(captions) + self.tpos[:, : captions.shape[1]]
        for blk in self.text:
            x = blk(x)
        return nn.functional.normalize(self.proj_t(self.ln_t(x)[:, -1]), dim=-1)

    def forward(self, images: torch.Tensor, captions: torch.Tensor) -> torch.Tensor:
        """Logits :math:`s \\cos(f_i, t_c)`, shape (B, C)."""
        return self.logit_scale.exp() * self.encode_image(images) @ self.encode_text(captions).T


_GLYPHS = np.array(
    [
        [[1, 1, 1], [1, 0, 1], [1, 1, 1]],  # ring
        [[0, 1, 0], [1, 1, 1], [0, 1, 0]],  # plus
        [[1, 0, 1], [0, 1, 0], [1, 0, 1]],  # x
        [[1, 1, 1], [0, 0, 0], [1, 1, 1]],  # bars
        [[1, 0, 0], [1, 1, 0], [1, 1, 1]],  # triangle
        [[0, 1, 1], [1, 0, 1], [1, 1, 0]],  # s
    ],
    dtype=np.float32,
)


class RelationWorld:
    """Procedural images of two glyphs in a spatial relation, with three-word captions.

    Parameters
    ----------
    image_size : int
        Canvas side (>= 12).
    noise : float
        Standard deviation of the Gaussian pixel noise (finite, >= 0).

    Attributes
    ----------
    concepts : list of (a, rel, b)
        Every glyph pair a != b with rel 0 (left-of) or 1 (above).
    novel : list of (a, rel, b)
        The 8 few-shot classes: pairs (0,1), (2,3), (4,5), (0,3), each in both orders, left-of.
    base : list of (a, rel, b)
        The other concepts (pre-training only).
    vocab_size : int
        Glyph words plus the two relation words.
    """

    def __init__(self, image_size: int = 16, noise: float = 0.2) -> None:
        self.image_size = check_int("image_size", image_size, low=8)
        if self.image_size % 8:
            raise ValueError(f"image_size must be a multiple of 8; got {image_size}")
        self.noise = check_real("noise", noise, low=0.0)
        n = len(_GLYPHS)
        self.concepts = [(a, r, b) for r in (0, 1) for a in range(n) for b in range(n) if a != b]
        pairs = [(0, 1), (2, 3), (4, 5), (0, 3)]
        self.novel = [c for a, b in pairs for c in ((a, 0, b), (b, 0, a))]
        self.base = [c for c in self.concepts if c not in self.novel]
        self.vocab_size = n + 2

    def caption(self, concept: tuple[int, int, int]) -> list[int]:
        """Word ids of ``"<a> <rel> <b>"``."""
        a, r, b = concept
        return [a, len(_GLYPHS) + r, b]

    def captions(self, concepts: list[tuple[int, int, int]]) -> torch.Tensor:
        return torch.tensor([self.caption(c) for c in concepts], dtype=torch.long)

    def draw(self, concepts: list[tuple[int, int, int]], labels: np.ndarray, rng: np.random.Generator) -> torch.Tensor:
        """Images of ``concepts[labels[i]]``, shape (len(labels), S, S)."""
        s = self.image_size
        half = s // 2
        out = rng.normal(0.0, self.noise, size=(len(labels), s, s)).astype(np.float32)
        for i, lab in enumerate(labels):
            a, r, b = concepts[int(lab)]
            inten = rng.uniform(0.7, 1.3)
            # first glyph in the left (or top) half, second in the right (or bottom) half
            # cells of 4 pixels (the ViT's patches) with a jitter of 0-1 pixel
            y1, x1 = (
                4 * rng.integers(0, s // 4) + rng.integers(0, 2),
                4 * rng.integers(0, half // 4) + rng.integers(0, 2),
            )
            y2, x2 = (
                4 * rng.integers(0, s // 4) + rng.integers(0, 2),
                4 * rng.integers(half // 4, s // 4) + rng.integers(0, 2),
            )
            if r == 1:
                (y1, x1), (y2, x2) = (x1, y1), (x2, y2)
            out[i, y1 : y1 + 3, x1 : x1 + 3] += inten * _GLYPHS[a]
            out[i, y2 : y2 + 3, x2 : x2 + 3] += inten * _GLYPHS[b]
        return torch.from_numpy(out)

    def sample(
        self, concepts: list[tuple[int, int, int]], per_class: int, seed: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``per_class`` images of every concept: (images, labels)."""
        per_class = check_int("per_class", per_class, low=1)
        rng = np.random.default_rng(seed)
        labels = np.repeat(np.arange(len(concepts)), per_class)
        rng.shuffle(labels)
        return self.draw(concepts, labels, rng), torch.from_numpy(labels).long()


def pretrain_clip(
    world: RelationWorld, *, steps: int, batch_size: int = 64, lr: float = 3e-3, seed: int = 0, **arch: Any
) -> TinyCLIP:
    """Pre-train a :class:`TinyCLIP` contrastively (symmetric InfoNCE) on the world's base concepts.

    Every batch draws ``batch_size`` base concepts at random (duplicates in a batch are masked out as
    negatives by using per-concept targets); AdamW with cosine decay. ``lr`` > 0 and ``batch_size`` >= 1.
    """
    if not isinstance(world, RelationWorld):
        raise TypeError(f"world must be a RelationWorld; got {type(world).__name__}")
    check_int("batch_size", batch_size, low=1)
    check_positive("lr", lr)
    torch.manual_seed(seed)
    model = TinyCLIP(image_size=world.image_size, vocab_size=world.vocab_size, **arch)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    rng = np.random.default_rng(seed + 7)
    caps = world.captions(world.base)
    for _ in range(check_int("steps", steps, low=0)):
        labels = rng.integers(0, len(world.base), size=batch_size)
        images = world.draw(world.base, labels, rng)
        # image -> all base captions (a softmax over concepts), and caption -> images of the batch
        logits = model(images, caps)
        lab = torch.from_numpy(labels).long()
        same = lab[:, None] == lab[None, :]
        li = logits[:, lab]  # (B, B): image i vs caption of image j
        lt = torch.log_softmax(li.T, dim=-1)
        loss = nn.functional.cross_entropy(logits, lab) - (lt * same.float()).sum(-1).div(same.sum(-1)).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model
