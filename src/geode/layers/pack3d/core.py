"""Pack3D's local-global attention kernel: exact 3-D neighbourhoods plus compressed distant blocks.

Notation. A sample holds :math:`N` tokens :math:`x_n \\in \\mathbb{R}^C` with distinct integer grid coordinates
:math:`g_n = (z_n, y_n, x_n) \\in \\mathbb{Z}_{\\ge 0}^3`, stored in an arbitrary packed order. Per head,
:math:`q_n, k_n, v_n \\in \\mathbb{R}^d` are linear projections and
:math:`\\tilde q_n = R(g_n) q_n`, :math:`\\tilde k_n = R(g_n) k_n` their axial rotations
(:func:`~geode.layers.pack3d.axial_rope_3d`).

- Local set: :math:`\\mathcal{N}_r(n) = \\{m : \\lVert g_m - g_n \\rVert_\\infty \\le r\\}`, up to
  :math:`(2r+1)^3` tokens, attended exactly.
- Blocks: the grid is cut into cubes :math:`B_c = \\{g : \\lfloor g / b \\rfloor = c\\}` of edge :math:`b`
  (the last cube along an axis is cut by the grid; empty cubes are dropped). Each non-empty block gets the
  summaries (rotation *before* pooling)

  .. math:: \\bar k_c = \\frac{1}{|B_c|} \\sum_{m \\in B_c} \\tilde k_m, \\qquad
            \\bar v_c = \\frac{1}{|B_c|} \\sum_{m \\in B_c} v_m .

- Distant blocks of query :math:`n`: :math:`\\mathcal{D}(n) = \\{c : \\operatorname{box}(B_c) \\not\\subseteq
  \\operatorname{box}(\\mathcal{N}_r(n))\\}`, every block except those whose whole box (clipped to the grid)
  lies inside the query's exact neighbourhood, so no token is seen both exactly and again as a full summary.
- Output: one joint softmax over the exact local keys and the distant summaries,

  .. math::

      o_n = \\frac{\\sum_{m \\in \\mathcal{N}_r(n)} e^{\\tau \\tilde q_n^\\top \\tilde k_m} v_m
                  + \\sum_{c \\in \\mathcal{D}(n)} e^{\\tau \\tilde q_n^\\top \\bar k_c} \\bar v_c}
                 {\\sum_{m \\in \\mathcal{N}_r(n)} e^{\\tau \\tilde q_n^\\top \\tilde k_m}
                  + \\sum_{c \\in \\mathcal{D}(n)} e^{\\tau \\tilde q_n^\\top \\bar k_c}},
      \\qquad \\tau = d^{-1/2}.

Cost :math:`O(N ((2r+1)^3 + N / b^3)\\, C)` against :math:`O(N^2 C)` for dense attention. Everything is defined
through :math:`g`, never through the packed index, so for any permutation :math:`P` of the tokens
:math:`f(Px, Pg) = P f(x, g)` (up to floating-point summation order). When :math:`r` spans the grid every block
lies inside every neighbourhood, :math:`\\mathcal{D}(n) = \\emptyset`, and the operator is dense attention with
axial RoPE (:class:`~geode.layers.pack3d.DenseAxialRoPEAttention`).

The same local-global core also runs on the packed order (:func:`packed_sequence_attention`, the sequence-index
baseline): 1-D windows :math:`|i - j| \\le w` and contiguous runs of :math:`L` tokens as blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch.nn import functional as F

from geode.core import check_choice, check_int, check_real
from geode.layers.attention import check_qkv

__all__ = ["check_coords", "pack3d_attention", "packed_sequence_attention"]

# Elements of one chunk of tiles' score and gathered key/value blocks. 2**18 keeps the peak resident memory of a
# forward within 1.5x dense SDPA's (measured on CPU, dim 64, 4 heads: 1.10x at 16,384 tokens, 1.39x at 65,536;
# 2**24 held 5.75x at 16,384) and is as fast or faster (fewer cache misses); the output does not depend on it.
_DEFAULT_MAX_ELEMENTS = 2**18


# ------------------------------------------------------------------------------------------------ validation


def check_coords(coords: Any, batch: int, tokens: int, *, name: str = "coords", unique: bool = True) -> torch.Tensor:
    """Validate integer grid coordinates and return them as ``int64`` of shape ``(B, N, 3)``.

    Parameters
    ----------
    coords : torch.Tensor
        Integer tensor of shape ``(B, N, 3)`` or ``(N, 3)`` (one layout shared by the batch), entries >= 0,
        in (z, y, x) order.
    batch, tokens : int
        The ``B`` and ``N`` of the features the coordinates belong to.
    name : str
        Argument name for error messages.
    unique : bool
        Reject a coordinate that occurs twice within one sample (default ``True``).

    Returns
    -------
    torch.Tensor
        ``int64``, shape ``(B, N, 3)`` (a shared layout is expanded, not copied).

    Raises
    ------
    TypeError
        If ``coords`` is not an integer tensor.
    ValueError
        If the shape does not match, an entry is negative, or (``unique``) a sample repeats a coordinate.
    """
    if not isinstance(coords, torch.Tensor):
        raise TypeError(f"{name} must be an integer torch.Tensor of shape (B, N, 3); got {type(coords).__name__}")
    if coords.dtype.is_floating_point or coords.dtype.is_complex or coords.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer grid coordinates (e.g. torch.int64); got dtype {coords.dtype}")
    if coords.shape == (tokens, 3):
        coords = coords.unsqueeze(0).expand(batch, tokens, 3)
    if coords.shape != (batch, tokens, 3):
        raise ValueError(f"{name} must have shape ({batch}, {tokens}, 3) or ({tokens}, 3); got {tuple(coords.shape)}")
    coords = coords.to(torch.int64)
    if coords.numel() and int(coords.min()) < 0:
        raise ValueError(f"{name} must be >= 0 (grid indices); got minimum {int(coords.min())}")
    if unique and tokens > 1:
        ext = coords.amax(dim=(0, 1)) + 1
        key = (coords[..., 0] * ext[1] + coords[..., 1]) * ext[2] + coords[..., 2]
        srt = key.sort(dim=1).values
        dup = srt[:, 1:] == srt[:, :-1]
        if bool(dup.any()):
            b, i = (int(t) for t in torch.nonzero(dup)[0])
            k = int(srt[b, i])
            g = (k // int(ext[2] * ext[1]), (k // int(ext[2])) % int(ext[1]), k % int(ext[2]))
            raise ValueError(f"{name} must be distinct within a sample; sample {b} repeats grid point {g}")
    return coords


# ------------------------------------------------------------------------------------------------ kernels


def _block_summaries(
    k: torch.Tensor, v: torch.Tensor, block_of: torch.Tensor, n_blocks: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Means of (rotated) keys and of values over each block: ``(B, M, H, d)``, ``(B, M, H, d_v)``, ``(B, M)``.

    The last output flags the non-empty blocks. ``block_of`` is ``(B, N)`` with entries in ``[0, M)``.
    """
    bsz, n, heads, d = k.shape
    dv = v.shape[-1]
    flat = (block_of + torch.arange(bsz, device=k.device)[:, None] * n_blocks).reshape(-1)
    cnt = torch.zeros(bsz * n_blocks, device=k.device, dtype=k.dtype).index_add(
        0, flat, torch.ones(bsz * n, device=k.device, dtype=k.dtype)
    )
    inv = (1.0 / cnt.clamp(min=1.0))[:, None, None]
    ksum = k.new_zeros(bsz * n_blocks, heads, d).index_add(0, flat, k.reshape(bsz * n, heads, d))
    vsum = v.new_zeros(bsz * n_blocks, heads, dv).index_add(0, flat, v.reshape(bsz * n, heads, dv))
    return (
        (ksum * inv).view(bsz, n_blocks, heads, d),
        (vsum * inv).view(bsz, n_blocks, heads, dv),
        (cnt > 0).view(bsz, n_blocks),
    )


Blocks = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def _tiled_local_global(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    tile_tokens: torch.Tensor,
    window_tokens: torch.Tensor,
    static: torch.Tensor,
    token_slot: torch.Tensor,
    blocks: Blocks | None,
    distant: Callable[[int, int], torch.Tensor] | None,
    scale: float,
    max_elements: int,
) -> torch.Tensor:
    """Joint softmax over key windows and block summaries, tile by tile, with matrix products.

    Queries are grouped in tiles of ``Tq`` slots and each tile attends to a window of ``Tk`` key slots:
    ``tile_tokens`` ``(B', T, Tq)`` and ``window_tokens`` ``(B', T, Tk)`` hold the token in each slot, or ``N``
    for an empty slot (``B'`` is 1 when the batch shares one layout, else ``B``). ``static`` ``(Tq, Tk)`` says
    which window slot each tile slot may see; ``token_slot`` ``(B', N)`` is each token's flat slot
    ``tile * Tq + i``. ``blocks`` are the summaries ``(B, M, H, d)``, ``(B, M, H, d_v)`` and non-empty flags
    ``(B, M)``; ``distant(t0, t1)`` ``(t1 - t0, Tq, M)`` the blocks the slots of tiles ``t0:t1`` may see.
    Returns ``(B, N, H, d_v)`` for ``q``, ``k``, ``v`` of shape ``(B, N, H, d)``.

    Masked scores are set to the most negative finite number rather than ``-inf``: a slot with nothing to
    attend to (an empty cell, whose output is discarded) then stays finite in the backward pass, while every
    real query sees at least itself, so its result is exact.
    """
    bsz, n, heads, d = q.shape
    dv = v.shape[-1]
    shared, n_tiles, tq = tile_tokens.shape
    tk = window_tokens.shape[-1]
    m = 0 if blocks is None else blocks[0].shape[1]
    neg = torch.finfo(q.dtype).min
    # Heads first, one zero row per (sample, head) for the empty slot N: gathers are then plain index_selects.
    rows = bsz * heads * (n + 1)
    qh = F.pad(q.permute(0, 2, 1, 3) * scale, (0, 0, 0, 1)).reshape(rows, d)  # the logit scale, folded into q
    kh = F.pad(k.permute(0, 2, 1, 3), (0, 0, 0, 1)).reshape(rows, d)
    vh = F.pad(v.permute(0, 2, 1, 3), (0, 0, 0, 1)).reshape(rows, dv)
    base = (torch.arange(bsz * heads, device=q.device) * (n + 1)).view(bsz, heads, 1, 1)
    if shared == 1:
        tile_tokens, window_tokens = tile_tokens.expand(bsz, -1, -1), window_tokens.expand(bsz, -1, -1)
    key_ok = window_tokens < n  # (B, T, Tk)
    if blocks is not None:
        kbar_t = blocks[0].permute(0, 2, 3, 1)  # (B, H, d, M)
        vbar = blocks[1].permute(0, 2, 1, 3)  # (B, H, M, d_v)
        nonempty = None if bool(blocks[2].all()) else blocks[2][:, None, None, None, :]  # (B, 1, 1, 1, M)
    per_tile = bsz * heads * (tq * (tk + m) + tk * (d + dv))
    chunk = max(1, min(n_tiles, max_elements // max(per_tile, 1)))
    outs = []
    for t0 in range(0, n_tiles, chunk):
        t1 = min(n_tiles, t0 + chunk)
        c = t1 - t0
        qi = (base + tile_tokens[:, None, t0:t1].reshape(bsz, 1, 1, c * tq)).reshape(-1)
        ki = (base + window_tokens[:, None, t0:t1].reshape(bsz, 1, 1, c * tk)).reshape(-1)
        qt = qh.index_select(0, qi).view(bsz, heads, c, tq, d)
        kw = kh.index_select(0, ki).view(bsz, heads, c, tk, d)
        vw = vh.index_select(0, ki).view(bsz, heads, c, tk, dv)
        s = torch.matmul(qt, kw.transpose(-1, -2))  # (B, H, c, Tq, Tk)
        allowed = static & key_ok[:, t0:t1, None, :]  # (B, c, Tq, Tk)
        s = s.masked_fill(~allowed[:, None], neg)
        if blocks is None:
            o = torch.matmul(torch.softmax(s, dim=-1), vw)  # (B, H, c, Tq, d_v)
        else:
            sb = torch.matmul(qt.view(bsz, heads, c * tq, d), kbar_t).view(bsz, heads, c, tq, m)
            hidden = None if distant is None else ~distant(t0, t1)[None, None]
            if nonempty is not None:
                hidden = ~nonempty if hidden is None else hidden | ~nonempty
            if hidden is not None:
                sb = sb.masked_fill(hidden, neg)
            # One softmax over both parts without concatenating them: a shared row maximum (a constant shift,
            # taken without gradient, which leaves the gradient exact) and a shared normaliser.
            with torch.no_grad():
                top = torch.maximum(s.amax(-1, keepdim=True), sb.amax(-1, keepdim=True))
            p, pb = torch.exp(s - top), torch.exp(sb - top)
            denom = p.sum(-1, keepdim=True) + pb.sum(-1, keepdim=True)
            o = torch.matmul(p, vw) + torch.matmul(pb.view(bsz, heads, c * tq, m), vbar).view(bsz, heads, c, tq, dv)
            o = o / denom
        outs.append(o.reshape(bsz, heads, c * tq, dv))
    o = outs[0] if len(outs) == 1 else torch.cat(outs, dim=2)  # (B, H, T * Tq, d_v)
    if shared == 1:
        o = o.index_select(2, token_slot[0])
    else:
        o = torch.gather(o, 2, token_slot[:, None, :, None].expand(bsz, heads, n, dv))
    return o.permute(0, 2, 1, 3)


def _gathered_local_global(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    neighbours: Callable[[int, int], tuple[torch.Tensor, torch.Tensor]],
    blocks: Blocks | None,
    distant: Callable[[int, int], torch.Tensor] | None,
    n_slots: int,
    scale: float,
    max_elements: int,
) -> torch.Tensor:
    """Joint softmax over gathered neighbour keys and block summaries, in chunks of queries (any sparsity).

    ``neighbours(s, e)`` gives, for queries ``s:e``, flat indices into the ``B * N`` tokens ``(B, c, K)`` and
    their validity; ``distant(s, e)`` the blocks each query may see, ``(B, c, M)``.
    """
    bsz, n, heads, d = q.shape
    dv = v.shape[-1]
    kf, vf = k.reshape(bsz * n, heads, d), v.reshape(bsz * n, heads, dv)
    m = 0 if blocks is None else blocks[0].shape[1]
    per_query = bsz * heads * (n_slots * (d + dv + 1) + m)
    chunk = max(1, min(n, max_elements // max(per_query, 1)))
    outs = []
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        qc = q[:, s:e]  # (B, c, H, d)
        idx, valid = neighbours(s, e)  # (B, c, K)
        kg, vg = kf[idx], vf[idx]  # (B, c, K, H, d)
        scores = torch.einsum("bchd,bckhd->bckh", qc, kg) * scale
        scores = scores.masked_fill(~valid.unsqueeze(-1), float("-inf"))  # the query itself is always valid
        if blocks is not None:
            kbar, _, nonempty = blocks
            sb = torch.einsum("bchd,bmhd->bcmh", qc, kbar) * scale  # (B, c, M, H)
            allowed = nonempty[:, None, :] if distant is None else distant(s, e) & nonempty[:, None, :]
            scores = torch.cat([scores, sb.masked_fill(~allowed.unsqueeze(-1), float("-inf"))], dim=2)
        p = torch.softmax(scores, dim=2)
        o = torch.einsum("bckh,bckhd->bchd", p[:, :, :n_slots], vg)
        if blocks is not None:
            o = o + torch.einsum("bcmh,bmhd->bchd", p[:, :, n_slots:], blocks[1])
        outs.append(o)
    return outs[0] if len(outs) == 1 else torch.cat(outs, dim=1)


def _covered_blocks(
    ends: list[tuple[torch.Tensor, torch.Tensor]], radius: int
) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """``f(points (..., D)) -> (..., M)``: is block c's box, per axis ``[lo_c, hi_c]``, inside the radius-r box.

    ``None`` when no block is small enough (on every axis at most ``2r + 1`` cells) to lie inside any box.
    """
    if not all(bool(((hi - lo) <= 2 * radius).any()) for lo, hi in ends):
        return None

    def f(pts: torch.Tensor) -> torch.Tensor:
        inside = None
        for a, (lo, hi) in enumerate(ends):
            cov = (pts[..., a, None] - radius <= lo) & (hi <= pts[..., a, None] + radius)  # (..., C_a)
            inside = cov if inside is None else (inside[..., :, None] & cov[..., None, :]).flatten(-2)
        return inside

    return f


def _block_ends(extent: list[int], size: int, device: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per axis, the first and last grid index of each block of edge ``size`` (the last one cut by the grid)."""
    out = []
    for s in extent:
        lo = torch.arange(-(-s // size), device=device) * size
        out.append((lo, torch.clamp(lo + size, max=s) - 1))
    return out


def _offsets(radius: int, device: Any) -> torch.Tensor:
    r = torch.arange(-radius, radius + 1, device=device)
    return torch.stack(torch.meshgrid(r, r, r, indexing="ij"), dim=-1).reshape(-1, 3)  # (K, 3)


# ------------------------------------------------------------------------------------------------ Pack3D


def pack3d_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    coords: torch.Tensor,
    local_radius: int = 1,
    block_size: int | None = 4,
    *,
    scale: float | None = None,
    method: str = "auto",
    tile: int | None = None,
    max_elements: int = _DEFAULT_MAX_ELEMENTS,
    grid_shape: tuple[int, int, int] | None = None,
) -> torch.Tensor:
    """Pack3D's local-global attention on already projected (and rotated) queries, keys and values.

    Computes :math:`o_n` of the module docstring: exact attention over the grid neighbourhood
    :math:`\\lVert g_m - g_n \\rVert_\\infty \\le r` and, in the same softmax, over the mean key/value summaries
    of the distant :math:`b^3` blocks. Rotate ``q`` and ``k`` with :func:`~geode.layers.pack3d.axial_rope_3d`
    first; the block means are then taken over rotated keys.

    Two evaluations give the same result:

    - ``"tiles"``: the tokens are scattered into a dense grid; each cube of :math:`t^3` query cells attends to
      the :math:`(t + 2r)^3` window around it with one matrix product and a fixed Chebyshev mask (FlexAttention-
      or NATTEN-style tiling with a halo). Cost and memory scale with the grid's bounding box.
    - ``"gather"``: the :math:`(2r+1)^3` neighbours of each token are looked up in the sorted keys of the
      coordinates and gathered; cost scales with :math:`N`, for sparse sets in large boxes.

    ``"auto"`` takes the tiles unless the bounding box holds more than 8 cells per token.

    Parameters
    ----------
    q, k : torch.Tensor
        Shape ``(B, N, H, d)``.
    v : torch.Tensor
        Shape ``(B, N, H, d_v)``.
    coords : torch.Tensor
        Distinct integer grid coordinates ``(B, N, 3)`` or ``(N, 3)``, entries >= 0. They need not fill a box
        (sparse sets and partly filled blocks are handled: a block's summary averages the tokens it holds).
    local_radius : int
        :math:`r \\ge 0`, the Chebyshev radius of the exact neighbourhood.
    block_size : int or None
        Block edge :math:`b \\ge 1`; ``None`` drops the global branch (pure 3-D neighbourhood attention). Blocks
        start at the origin; a grid extent that ``b`` does not divide leaves smaller blocks at the far faces.
    scale : float, optional
        Logit scale :math:`\\tau`; default :math:`1/\\sqrt{d}`.
    method : {"auto", "tiles", "gather"}
        Evaluation (above).
    tile : int, optional
        Query tile edge :math:`t` for ``"tiles"`` (default :math:`\\max(2, r + 1)`).
    max_elements : int
        Bound on the scores/gathered entries held at once; tiles or queries are processed in chunks.
    grid_shape : tuple of 3 int, optional
        The grid extent :math:`(S_z, S_y, S_x)`, which sets where the far-face blocks are cut. Default: each
        sample's own extent (its largest coordinate + 1 per axis), so that a sample's output never depends on
        the other samples of the batch (samples of different extents are evaluated in separate groups).

    Returns
    -------
    torch.Tensor
        Shape ``(B, N, H, d_v)``. NaN and inf in ``q``, ``k``, ``v`` propagate as in torch's own attention (no
        per-call scan: this runs inside every training step).
    """
    check_qkv(q, k, v, batched=True)
    bsz, n, heads, d = q.shape
    r = check_int("local_radius", local_radius, low=0)
    if block_size is not None:
        block_size = check_int("block_size", block_size, low=1)
    check_choice("method", method, ("auto", "tiles", "gather"))
    t = max(2, r + 1) if tile is None else check_int("tile", tile, low=1)
    max_elements = check_int("max_elements", max_elements, low=1)
    tau = 1.0 / math.sqrt(d) if scale is None else check_real("scale", scale, low=0.0, low_inclusive=False)
    g = check_coords(coords, bsz, n).to(q.device)
    if n == 0:
        return q.new_zeros(bsz, 0, heads, v.shape[-1])
    dev = q.device
    if grid_shape is not None:
        if len(grid_shape) != 3 or any(isinstance(e, bool) or not isinstance(e, int) or e < 1 for e in grid_shape):
            raise ValueError(f"grid_shape must be three positive ints (S_z, S_y, S_x); got {grid_shape!r}")
        ext = list(grid_shape)
        if bool((g >= torch.tensor(ext, device=dev)).any()):
            raise ValueError(f"coords must lie inside grid_shape {tuple(ext)}; got a coordinate beyond it")
    else:
        per_sample = g.amax(dim=1) + 1  # (B, 3): each sample's own extent
        if bsz > 1 and not bool((per_sample == per_sample[:1]).all()):
            # Samples of different extents: evaluate each group of equal extents on its own (batch independence).
            out = q.new_empty(bsz, n, heads, v.shape[-1])
            kinds, group = torch.unique(per_sample, dim=0, return_inverse=True)
            for i in range(kinds.shape[0]):
                idx = torch.nonzero(group == i).squeeze(1)
                out[idx] = pack3d_attention(
                    q[idx],
                    k[idx],
                    v[idx],
                    g[idx],
                    r,
                    block_size,
                    scale=tau,
                    method=method,
                    tile=tile,
                    max_elements=max_elements,
                    grid_shape=tuple(int(e) for e in kinds[i]),
                )
            return out
        ext = [int(e) for e in per_sample[0]]  # grid extent (S_z, S_y, S_x), the same for every sample

    blocks = covered = None
    if block_size is not None:
        cells = [-(-s // block_size) for s in ext]
        cell = g // block_size
        block_of = (cell[..., 0] * cells[1] + cell[..., 1]) * cells[2] + cell[..., 2]
        blocks = _block_summaries(k, v, block_of, cells[0] * cells[1] * cells[2])
        covered = _covered_blocks(_block_ends(ext, block_size, dev), r)

    n_tiles_axis = [-(-s // t) for s in ext]
    box = bsz * math.prod(nt * t + 2 * r for nt in n_tiles_axis)
    if method == "gather" or (method == "auto" and box > 8 * bsz * n + 4096):
        return _pack3d_gathered(q, k, v, g, ext, r, blocks, covered, tau, max_elements)

    # ---- tiles: cubes of t^3 query cells, each against the (t + 2r)^3 window around it
    shared = bool((g == g[:1]).all())
    gs = g[:1] if shared else g
    bs = gs.shape[0]
    tz, ty, tx = n_tiles_axis
    dz, dy, dx = tz * t + 2 * r, ty * t + 2 * r, tx * t + 2 * r
    w = t + 2 * r
    # table of the token at each cell of the r-padded box (n for none)
    bidx = torch.arange(bs, device=dev)[:, None]
    lin = (((bidx * dz + gs[..., 0] + r) * dy + gs[..., 1] + r) * dx + gs[..., 2] + r).reshape(-1)
    table = torch.full((bs * dz * dy * dx,), n, dtype=torch.int64, device=dev)
    table[lin] = torch.arange(n, device=dev).repeat(bs)
    table = table.view(bs, dz * dy * dx)
    origins = _offsets_box(1, dev, (tz, ty, tx)) * t  # (T, 3) first cell of each tile
    qi = _offsets_box(t, dev)  # (t^3, 3) query cell inside its tile
    ka = _offsets_box(w, dev) - r  # (w^3, 3) key cell relative to the tile origin

    def cell_ids(pts: torch.Tensor) -> torch.Tensor:  # unpadded coordinates -> flat cells of the padded box
        return ((pts[..., 0] + r) * dy + pts[..., 1] + r) * dx + pts[..., 2] + r

    tile_tokens = table[:, cell_ids(origins[:, None, :] + qi[None])]  # (B', T, t^3)
    window_tokens = table[:, cell_ids(origins[:, None, :] + ka[None])]  # (B', T, w^3)
    rel = ka[None, :, :] - qi[:, None, :]  # key - query
    static = (rel.abs() <= r).all(-1)  # (t^3, w^3): Chebyshev distance <= r
    tile_of = gs // t
    cell_in = gs % t
    token_slot = (
        ((tile_of[..., 0] * ty + tile_of[..., 1]) * tx + tile_of[..., 2]) * t**3
        + (cell_in[..., 0] * t + cell_in[..., 1]) * t
        + cell_in[..., 2]
    )

    distant = None
    if covered is not None:

        def distant(t0: int, t1: int) -> torch.Tensor:
            return ~covered(origins[t0:t1, None, :] + qi[None])  # (c, t^3, M)

    return _tiled_local_global(
        q, k, v, tile_tokens, window_tokens, static, token_slot, blocks, distant, tau, max_elements
    )


def _offsets_box(size: int, device: Any, shape: tuple[int, int, int] | None = None) -> torch.Tensor:
    """Raster list of the cells of a box (``size``^3 or ``shape``), shape ``(cells, 3)``."""
    dims = shape or (size, size, size)
    axes = [torch.arange(s, device=device) for s in dims]
    return torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1).reshape(-1, 3)


def _pack3d_gathered(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    ext: list[int],
    r: int,
    blocks: Blocks | None,
    covered: Callable[[torch.Tensor], torch.Tensor] | None,
    tau: float,
    max_elements: int,
) -> torch.Tensor:
    """The ``"gather"`` evaluation of :func:`pack3d_attention`: neighbours by binary search in sorted keys."""
    bsz = q.shape[0]
    dev = q.device
    padded = [s + 2 * r for s in ext]
    bidx = torch.arange(bsz, device=dev)[:, None]

    def key_of(c: torch.Tensor, b: torch.Tensor) -> torch.Tensor:  # shift by r: keys stay >= 0 and unique
        c = c + r
        return ((b * padded[0] + c[..., 0]) * padded[1] + c[..., 1]) * padded[2] + c[..., 2]

    keys = key_of(g, bidx).reshape(-1)
    sorted_keys, order = keys.sort()
    offs = _offsets(r, dev)

    def neighbours(s: int, e: int) -> tuple[torch.Tensor, torch.Tensor]:
        cand = g[:, s:e, None, :] + offs  # (B, c, K, 3)
        kq = key_of(cand, bidx[..., None])
        pos = torch.searchsorted(sorted_keys, kq.reshape(-1)).clamp(max=keys.numel() - 1).view_as(kq)
        hit = sorted_keys[pos] == kq
        return torch.where(hit, order[pos], torch.zeros_like(pos)), hit

    distant = None
    if covered is not None:

        def distant(s: int, e: int) -> torch.Tensor:
            return ~covered(g[:, s:e])

    return _gathered_local_global(q, k, v, neighbours, blocks, distant, offs.shape[0], tau, max_elements)


# ------------------------------------------------------------------------------------------------ 1-D baseline


def packed_sequence_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    window: int,
    block_len: int | None,
    *,
    scale: float | None = None,
    tile: int | None = None,
    max_elements: int = _DEFAULT_MAX_ELEMENTS,
) -> torch.Tensor:
    """The sequence-index local-global baseline: 1-D sliding window plus contiguous 1-D block summaries.

    The same joint softmax as :func:`pack3d_attention`, with geometry replaced by the packed index
    :math:`i = 0, \\dots, N-1`: exact keys :math:`|j - i| \\le w`, blocks :math:`\\{j : \\lfloor j / L \\rfloor
    = c\\}` (NSA-style compression of contiguous runs) summarised by the means of the (already rotated) keys
    and of the values, block :math:`c` dropped for query :math:`i` when the whole run lies in its window.
    Evaluated in tiles of ``tile`` queries against windows of ``tile + 2w`` keys.

    Parameters
    ----------
    q, k, v : torch.Tensor
        Shape ``(B, N, H, d)`` (``v`` may have another last size).
    window : int
        Half-width :math:`w \\ge 0` (``2w + 1`` exact keys).
    block_len : int or None
        Run length :math:`L \\ge 1`, or ``None`` for no global branch.
    scale : float, optional
        Logit scale; default :math:`1/\\sqrt{d}`.
    tile : int, optional
        Queries per tile (default :math:`\\max(4, w + 1)`).
    max_elements : int
        Bound on the scores held at once.

    Returns
    -------
    torch.Tensor
        Shape ``(B, N, H, d_v)``. NaN and inf in ``q``, ``k``, ``v`` propagate as in torch's own attention (no
        per-call scan: this runs inside every training step).
    """
    check_qkv(q, k, v, batched=True)
    bsz, n, heads, d = q.shape
    w = check_int("window", window, low=0)
    if block_len is not None:
        block_len = check_int("block_len", block_len, low=1)
    t = max(4, w + 1) if tile is None else check_int("tile", tile, low=1)
    max_elements = check_int("max_elements", max_elements, low=1)
    tau = 1.0 / math.sqrt(d) if scale is None else check_real("scale", scale, low=0.0, low_inclusive=False)
    if n == 0:
        return q.new_zeros(bsz, 0, heads, v.shape[-1])
    dev = q.device
    blocks = covered = None
    if block_len is not None:
        n_blocks = -(-n // block_len)
        blocks = _block_summaries(k, v, (torch.arange(n, device=dev) // block_len).expand(bsz, n), n_blocks)
        covered = _covered_blocks(_block_ends([n], block_len, dev), w)

    n_tiles = -(-n // t)
    span = t + 2 * w
    i = torch.arange(t, device=dev)
    a = torch.arange(span, device=dev)
    start = torch.arange(n_tiles, device=dev)[:, None] * t
    qpos = start + i  # (T, t)
    kpos = start - w + a  # (T, span)
    tile_tokens = torch.where(qpos < n, qpos, n)[None]
    window_tokens = torch.where((kpos >= 0) & (kpos < n), kpos, n)[None]
    static = (a[None, :] - i[:, None] - w).abs() <= w  # (t, span): |key - query| <= w
    token_slot = torch.arange(n, device=dev)[None]

    distant = None
    if covered is not None:

        def distant(t0: int, t1: int) -> torch.Tensor:
            return ~covered(qpos[t0:t1, :, None])  # (c, t, M)

    return _tiled_local_global(
        q, k, v, tile_tokens, window_tokens, static, token_slot, blocks, distant, tau, max_elements
    )
