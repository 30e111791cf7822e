"""Packed (varlen) sequences and document-masked attention, the baseline every packed-sequence layer meets.

A *packed* sequence concatenates documents of lengths :math:`n_1, \\dots, n_M` into one row of
:math:`N = \\sum_d n_d` tokens. As in FlashAttention's varlen API the boundaries are given by the cumulative
offsets ``cu_seqlens`` :math:`= (c_0, \\dots, c_M)` with :math:`c_0 = 0`, :math:`c_d = c_{d-1} + n_d` and
:math:`c_M = N`; document :math:`d` occupies tokens :math:`c_{d-1} \\le t < c_d`.

This module holds what packed-sequence layers share:

- :func:`check_cu_seqlens` validates the offsets (and names the argument when they are wrong);
- :func:`document_ids` maps every token to its document;
- :func:`document_masked_attention`, causal softmax attention restricted to each document, computed
  block-sparsely (only the query/key tiles that meet the block-diagonal causal mask are evaluated), which
  is what FlexAttention with a document ``BlockMask`` or ``flash_attn_varlen_func`` compute on a GPU;
- :func:`dense_document_masked_attention`, the same thing with a dense :math:`N \\times N` mask
  (the textbook reference; memory :math:`O(N^2)`, small inputs only).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import torch

from geode.core import check_int, check_real

__all__ = [
    "check_cu_seqlens",
    "check_qkv",
    "dense_document_masked_attention",
    "document_ids",
    "document_masked_attention",
]


def check_cu_seqlens(cu_seqlens: Any, total: int, *, name: str = "cu_seqlens") -> torch.Tensor:
    """Validate cumulative document offsets and return them as a CPU ``int64`` tensor.

    Parameters
    ----------
    cu_seqlens : 1-D integer tensor or sequence of int
        Offsets :math:`0 = c_0 \\le c_1 \\le \\dots \\le c_M = N` (FlashAttention varlen convention).
        Repeated offsets (empty documents) are allowed; decreasing ones are not.
    total : int
        The packed length :math:`N` the offsets must end at.
    name : str
        Argument name used in error messages.

    Returns
    -------
    torch.Tensor
        ``int64`` tensor of shape ``(M + 1,)`` on the CPU.

    Raises
    ------
    TypeError
        If the offsets are not integers.
    ValueError
        If they are not 1-D with at least two entries, do not start at 0, decrease, or do not end at ``total``.

    Examples
    --------
    >>> check_cu_seqlens([0, 3, 5], 5).tolist()
    [0, 3, 5]
    """
    if isinstance(cu_seqlens, torch.Tensor):
        if cu_seqlens.dtype.is_floating_point or cu_seqlens.dtype.is_complex or cu_seqlens.dtype == torch.bool:
            raise TypeError(f"{name} must hold integers (torch.int32 or torch.int64); got dtype {cu_seqlens.dtype}")
        cu = cu_seqlens.detach().to("cpu", torch.int64)
    else:
        try:
            seq = list(cu_seqlens)
        except TypeError:
            raise TypeError(
                f"{name} must be a 1-D integer tensor or a sequence of int; got {type(cu_seqlens).__name__}"
            ) from None
        for v in seq:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise TypeError(f"{name} must hold integers; got {type(v).__name__} {v!r}")
        cu = torch.tensor([int(v) for v in seq], dtype=torch.int64)
    if cu.ndim != 1 or cu.numel() < 2:
        raise ValueError(
            f"{name} must be 1-D with at least 2 entries (0 and the total length); got shape {tuple(cu.shape)}"
        )
    if int(cu[0]) != 0:
        raise ValueError(f"{name} must start at 0; got {int(cu[0])}")
    steps = cu[1:] - cu[:-1]
    if bool((steps < 0).any()):
        i = int(torch.nonzero(steps < 0)[0, 0])
        raise ValueError(
            f"{name} must be non-decreasing (cumulative document offsets); "
            f"got {name}[{i}]={int(cu[i])} > {name}[{i + 1}]={int(cu[i + 1])}"
        )
    if int(cu[-1]) != total:
        raise ValueError(f"{name} must end at the packed length {total}; got {int(cu[-1])}")
    return cu


def document_ids(cu_seqlens: torch.Tensor) -> torch.Tensor:
    """Document index of every token: ``ids[t] = d`` for :math:`c_d \\le t < c_{d+1}`.

    Parameters
    ----------
    cu_seqlens : torch.Tensor
        Validated ``int64`` offsets of shape ``(M + 1,)`` (see :func:`check_cu_seqlens`).

    Returns
    -------
    torch.Tensor
        ``int64`` tensor of shape ``(N,)`` on the device of ``cu_seqlens``.

    Examples
    --------
    >>> document_ids(torch.tensor([0, 2, 2, 5])).tolist()
    [0, 0, 2, 2, 2]
    """
    lengths = cu_seqlens[1:] - cu_seqlens[:-1]
    return torch.repeat_interleave(torch.arange(lengths.numel(), device=cu_seqlens.device), lengths)


def check_qkv(q: Any, k: Any, v: Any, *, batched: bool = False) -> None:
    """Check attention inputs: floating torch tensors of one dtype, ``q``/``k`` alike, ``v`` with their leading shape.

    Shapes are (tokens, heads, head_dim) or (batch, tokens, heads, head_dim); ``batched=True`` requires the latter.
    """
    for nm, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{nm} must be a torch.Tensor; got {type(t).__name__}")
        if not t.dtype.is_floating_point:
            raise TypeError(f"{nm} must be a floating-point tensor; got dtype {t.dtype}")
        if t.ndim not in ((4,) if batched else (3, 4)):
            want = "" if batched else "(tokens, heads, head_dim) or "
            shape = tuple(t.shape)
            raise ValueError(f"{nm} must have shape {want}(batch, tokens, heads, head_dim); got shape {shape}")
    if q.shape != k.shape or q.shape[:-1] != v.shape[:-1]:
        raise ValueError(
            f"q and k must have the same shape and v the same leading shape; got q {tuple(q.shape)}, "
            f"k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"q, k and v must share one dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    if k.device != q.device or v.device != q.device:
        raise ValueError(f"q, k and v must be on one device; got {q.device}, {k.device}, {v.device}")


def dense_document_masked_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens: Sequence[int] | torch.Tensor,
    *,
    causal: bool = True,
    scale: float | None = None,
) -> torch.Tensor:
    """Document-masked softmax attention with a dense :math:`N \\times N` mask (reference; :math:`O(N^2)` memory).

    .. math::

        o_t = \\sum_{s \\in \\mathcal{A}(t)} \\frac{\\exp(\\tau\\, q_t^\\top k_s)}
              {\\sum_{s' \\in \\mathcal{A}(t)} \\exp(\\tau\\, q_t^\\top k_{s'})}\\, v_s,
        \\qquad \\mathcal{A}(t) = \\{s : \\mathrm{doc}(s) = \\mathrm{doc}(t),\\ s \\le t \\text{ if causal}\\},

    per head, with :math:`\\tau` = ``scale`` (default :math:`1/\\sqrt{\\text{head\\_dim}}`).
    Same parameters and result as :func:`document_masked_attention`. NaN and inf in the inputs propagate to the
    output as in torch's own attention (no per-call scan: this runs inside every training step).
    """
    check_qkv(q, k, v)
    n = q.shape[-3]
    cu = check_cu_seqlens(cu_seqlens, n)
    tau = 1.0 / math.sqrt(q.shape[-1]) if scale is None else check_real("scale", scale, low=0.0, low_inclusive=False)
    ids = document_ids(cu).to(q.device)
    mask = ids[:, None] == ids[None, :]
    if causal:
        mask = mask & torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
    s = torch.einsum("...thd,...shd->...hts", q, k) * tau
    s = s.masked_fill(~mask, float("-inf"))
    return torch.einsum("...hts,...shd->...thd", torch.softmax(s, dim=-1), v)


def document_masked_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens: Sequence[int] | torch.Tensor,
    *,
    causal: bool = True,
    scale: float | None = None,
    block_size: int = 128,
    max_scores: int = 2**24,
) -> torch.Tensor:
    """Causal softmax attention inside each document of a packed sequence, evaluated block-sparsely.

    Computes, per head,

    .. math::

        o_t = \\sum_{s \\in \\mathcal{A}(t)} \\operatorname{softmax}_{s \\in \\mathcal{A}(t)}
              \\big(\\tau\\, q_t^\\top k_s\\big)\\, v_s,
        \\qquad \\mathcal{A}(t) = \\{s : \\mathrm{doc}(s) = \\mathrm{doc}(t),\\ s \\le t \\text{ if causal}\\},

    i.e. attention with the block-diagonal (causal) document mask, at cost
    :math:`O(\\sum_d n_d^2\\, h)` rather than :math:`O(N^2 h)`. The packed row is cut into tiles of
    ``block_size`` tokens; only the (query tile, key tile) pairs that share a document (and lie on or below
    the diagonal when causal) are evaluated, the same tile skipping as FlexAttention's document
    ``BlockMask``. Each query tile's softmax is exact: its row maximum and normaliser are reduced over all its
    key tiles before the values are summed. The row maximum is a constant shift and is taken without
    gradient, which leaves the gradient exact.

    Parameters
    ----------
    q, k : torch.Tensor
        Queries and keys, shape ``(N, H, h)`` or ``(B, N, H, h)``.
    v : torch.Tensor
        Values, shape ``(N, H, h_v)`` or ``(B, N, H, h_v)``.
    cu_seqlens : 1-D integer tensor or sequence of int
        Document offsets :math:`0 = c_0 \\le \\dots \\le c_M = N` (see :func:`check_cu_seqlens`); one packing
        shared by the whole batch.
    causal : bool
        Restrict to keys at or before the query (default ``True``).
    scale : float, optional
        Logit scale :math:`\\tau`; default :math:`1/\\sqrt{h}`.
    block_size : int
        Tile length (default 128).
    max_scores : int
        Attention scores held at once (default :math:`2^{24}`): tile pairs are evaluated in rounds of whole
        query tiles of at most ``max_scores // (B * H * block_size**2)`` pairs (at least one query tile).

    Returns
    -------
    torch.Tensor
        Shape ``(N, H, h_v)`` or ``(B, N, H, h_v)``, dtype of ``q``.

    NaN and inf in the inputs propagate to the output as in torch's own attention (no per-call scan: this runs
    inside every training step).

    Examples
    --------
    >>> q = torch.randn(5, 1, 4)
    >>> out = document_masked_attention(q, q, q, [0, 2, 5], block_size=2)
    >>> torch.allclose(out[0], q[0])  # the first token of a document attends only to itself
    True
    """
    check_qkv(q, k, v)
    block_size = check_int("block_size", block_size, low=1)
    max_scores = check_int("max_scores", max_scores, low=1)
    n = q.shape[-3]
    cu = check_cu_seqlens(cu_seqlens, n)
    tau = 1.0 / math.sqrt(q.shape[-1]) if scale is None else check_real("scale", scale, low=0.0, low_inclusive=False)
    batched = q.ndim == 4
    if not batched:
        q, k, v = q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0)
    bsz, _, heads, hd = q.shape
    hv = v.shape[-1]
    if n == 0:
        o = q.new_zeros(bsz, 0, heads, hv)
        return o if batched else o[0]
    T = block_size
    nb = max(1, -(-n // T))
    pad = nb * T - n
    dev = q.device

    # Token -> document, padding tokens get document -1 (they never match a real one).
    ids = torch.cat([document_ids(cu), torch.full((pad,), -1, dtype=torch.int64)])
    ids_blocks = ids.view(nb, T)
    real = ids_blocks >= 0
    big = torch.iinfo(torch.int64).max
    first = torch.where(real, ids_blocks, big).amin(1)  # first document in each tile
    last = ids_blocks.amax(1)  # last document in each tile (-1 for an all-padding tile)
    # Tiles are ordered, so key tile j < query tile i shares a document iff last[j] >= first[i].
    jmin = torch.searchsorted(last.contiguous(), first.clamp(max=int(last.max()) + 1).contiguous())
    if causal:
        jmax = torch.arange(nb)
    else:  # symmetric: the last key tile holding query tile i's last document
        jmax = torch.searchsorted(first.contiguous(), torch.where(last >= 0, last, big).contiguous(), right=True) - 1
    counts = (jmax - jmin + 1).clamp(min=0)
    counts = torch.where(last >= 0, counts, torch.zeros_like(counts))
    qi_all = torch.repeat_interleave(torch.arange(nb), counts)
    offs = torch.cumsum(counts, 0) - counts
    kj_all = jmin[qi_all] + torch.arange(qi_all.numel()) - offs[qi_all]

    def tiles(t: torch.Tensor, width: int) -> torch.Tensor:  # (B, N, H, w) -> (nb, B, H, T, w)
        t = torch.nn.functional.pad(t, (0, 0, 0, 0, 0, pad))
        return t.view(bsz, nb, T, heads, width).permute(1, 0, 3, 2, 4)

    qt, kt, vt = tiles(q, hd), tiles(k, hd), tiles(v, hv)
    ids_dev = ids_blocks.to(dev)
    pos = torch.arange(nb * T, device=dev).view(nb, T)
    max_pairs = max(1, max_scores // (bsz * heads * T * T))
    outs = []

    # Rounds of whole query tiles, each with at most max_pairs tile pairs (a larger single tile is kept whole).
    ends = torch.cumsum(counts, 0)
    start_tile = 0
    while start_tile < nb:
        base = int(ends[start_tile - 1]) if start_tile > 0 else 0
        stop_tile = int(torch.searchsorted(ends, torch.tensor(base + max_pairs), right=True))
        stop_tile = max(stop_tile, start_tile + 1)
        lo, hi = base, int(ends[stop_tile - 1])
        n_round = stop_tile - start_tile
        if hi == lo:  # unreachable for n > 0 (every tile holds a token that sees itself); kept for safety
            outs.append(q.new_zeros(n_round, bsz, heads, T, hv))
        else:
            qi = qi_all[lo:hi].to(dev)
            kj = kj_all[lo:hi].to(dev)
            s = torch.matmul(qt[qi], kt[kj].transpose(-1, -2)) * tau  # (P, B, H, T, T)
            allowed = ids_dev[qi][:, :, None] == ids_dev[kj][:, None, :]
            allowed = allowed & (ids_dev[qi] >= 0)[:, :, None]
            if causal:
                allowed = allowed & (pos[kj][:, None, :] <= pos[qi][:, :, None])
            allowed = allowed[:, None, None]  # (P, 1, 1, T, T)
            s = s.masked_fill(~allowed, float("-inf"))
            local = qi - start_tile  # query tile index inside this round
            with torch.no_grad():  # row maxima: a constant shift, exact gradient without it
                m = s.new_full((n_round, *s.shape[1:-1]), float("-inf"))
                m = m.scatter_reduce(
                    0, local.view(-1, 1, 1, 1).expand(-1, *s.shape[1:-1]), s.amax(-1), reduce="amax", include_self=True
                )
                m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
            p = torch.exp(s - m[local][..., None])  # masked entries give exp(-inf) = 0
            denom = s.new_zeros(n_round, *s.shape[1:-1]).index_add(0, local, p.sum(-1))
            num = s.new_zeros(n_round, bsz, heads, T, hv).index_add(0, local, torch.matmul(p, vt[kj]))
            # Rows of padding tokens have denom 0: give them 0 output instead of NaN.
            outs.append(num / torch.where(denom > 0, denom, torch.ones_like(denom))[..., None])
        start_tile = stop_tile

    o = torch.cat(outs, 0).permute(1, 0, 3, 2, 4).reshape(bsz, nb * T, heads, hv)[:, :n]
    return o if batched else o[0]
