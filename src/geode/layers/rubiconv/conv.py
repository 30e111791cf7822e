"""Boundary-respecting causal long convolution on packed sequences, and the baselines it is measured against.

The operation. A packed row :math:`x \\in \\mathbb{R}^{N \\times D}` holds documents
:math:`[c_{d-1}, c_d)` (``cu_seqlens``, FlashAttention varlen convention); a per-channel causal filter
:math:`k \\in \\mathbb{R}^{D \\times L}` is shared by all documents. For a token :math:`t` of document
:math:`d(t)` starting at :math:`b(t) = c_{d(t)-1}`,

.. math::

    y_{t,c} = \\sum_{s = \\max(b(t),\\, t - L + 1)}^{t} k_{c,\\, t-s}\\; x_{s,c}
    \\qquad\\text{(Eq. 1: causal, and blind to every other document)}.

A single FFT over the whole row computes :math:`\\sum_{s = t-L+1}^{t}` instead and so *leaks* the end of the
previous documents into every document's start (:func:`single_fft_conv` shows it).

The algorithm (:func:`packed_long_conv`, ours: the paper's method section was not available).

1. **Exact FFT size per document.** A document of length :math:`n` only ever sees the first
   :math:`m = \\min(n, L)` taps, and its causal outputs are exact under a circular convolution of any size
   :math:`F \\ge n + m - 1` (Eq. 2): output :math:`t < n` wraps onto lag :math:`F + t - j \\ge n` only for taps
   :math:`j \\ge F - n + 1 \\ge m`, which are zero after truncation.
2. **Length buckets.** Each document is assigned the smallest FFT-friendly size
   :math:`F \\in \\{2^a\\}_{a \\ge 3} \\cup \\{3 \\cdot 2^a\\}_{a \\ge 2}` with :math:`F \\ge n + \\min(n, L) - 1`
   (:func:`fft_size`); consecutive sizes are at most 1.5x apart, so a document is padded to at most 1.5x its
   exact linear-convolution length, and a pack with longest document :math:`n_{\\max}` has at most
   :math:`2 \\log_2 (2 n_{\\max})` buckets. A bucket's kernel is truncated to
   :math:`K_b = \\min(L, \\max_{d \\in b} n_d)` taps; Eq. 2 holds for every row since
   :math:`n_d + K_b - 1 \\le n^* + \\min(n^*, L) - 1 \\le F_b` for the bucket's longest document :math:`n^*`.
3. **Batched FFTs over tiles of whole documents.** Each bucket is one batch of rows (one document per row,
   zero-padded to :math:`F_b`), transformed by one rFFT, multiplied by the truncated kernel's spectrum and
   transformed back; rows never mix, so no document can see another. Tokens reach their rows by one
   indexed read (whole rows of :math:`D` values, slot -> token or an appended zero) and return by one indexed
   write. On the CPU a bucket is cut into tiles of whole documents of at most ``tile_elements`` values so
   that the working set stays in cache, and a document too long to share a tile is transformed in place
   without any copy; elsewhere a bucket is one tile. The Python loop runs over buckets and tiles, whose
   number is :math:`O(\\log n_{\\max} + N B D / \\text{tile\\_elements})`, never over documents.
4. **Backward.** An explicit backward reuses the bucketing (Eqs. 3-4 in :class:`_PackedLongConv`): the input
   gradient is the anti-causal correlation with the kernel (the conjugate spectrum), the kernel gradient the
   per-bucket sum over rows of :math:`G \\overline{X}`; spectra are recomputed, not stored.

Cost: :math:`O(\\sum_d n_d \\log n_d)` FFT work, the per-document loop's FFT sizes exactly; index traffic
:math:`O(N D)`. The padded-batch workaround (:func:`padded_batch_conv`) instead pays
:math:`O(M\\, n_{\\max} \\log n_{\\max})` for :math:`M` documents, and document-masked attention
:math:`O(\\sum_d n_d^2)`. Plain torch, deterministic, on any device ``torch.fft`` supports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from geode.layers.attention import check_cu_seqlens, document_ids

__all__ = [
    "PackedConvPlan",
    "fft_size",
    "packed_long_conv",
    "padded_batch_conv",
    "per_document_conv",
    "per_document_conv_loop",
    "plan_packed_conv",
    "single_fft_conv",
]

_MIN_FFT = 8
# {8, 12, 16, 24, 32, 48, ...}: powers of two and three times powers of two, consecutive ones <= 1.5x apart.
_SIZES = torch.tensor(sorted({2**a for a in range(3, 40)} | {3 * 2**a for a in range(2, 39)}))


def fft_size(n: int) -> int:
    """Smallest FFT size of the form :math:`2^a` or :math:`3 \\cdot 2^a` (at least 8) that is :math:`\\ge n`.

    Examples
    --------
    >>> [fft_size(n) for n in (1, 9, 13, 100, 1000)]
    [8, 12, 16, 128, 1024]
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int; got {n!r}")
    return int(_SIZES[torch.searchsorted(_SIZES, torch.tensor(n))])


def _fft_sizes(need: torch.Tensor) -> torch.Tensor:
    return _SIZES[torch.searchsorted(_SIZES, need)]


@dataclass(frozen=True)
class PackedConvPlan:
    """The bucketing of :func:`packed_long_conv` for one packing and one kernel length.

    It depends only on ``cu_seqlens`` and the kernel length, so a model whose layers all see the same
    packing may build it once with :func:`plan_packed_conv` and pass it to every layer.

    Documents are sorted by FFT size (stable, so by position within a size); bucket :math:`b` holds the
    documents of size :math:`F_b`, one per row, in that order.

    Attributes
    ----------
    total : int
        Packed length :math:`N`.
    kernel_len : int
        Kernel length :math:`L` the plan was built for.
    cu_seqlens : torch.Tensor
        The validated offsets (CPU, ``int64``).
    sizes, rows, taps : tuple of int
        Per bucket: FFT size :math:`F_b`, number of documents, and kernel taps
        :math:`K_b = \\min(L, \\max_{d \\in b} n_d)`.
    first_row : tuple of int
        Per bucket: index of its first document in the sorted order.
    perm : torch.Tensor
        ``int64`` ``(N,)``: token indices in sorted-document order (bucket by bucket, row by row).
    loc : torch.Tensor
        ``int64`` ``(N,)``: for ``perm[i]``, its slot ``row * F_b + position`` inside its bucket.
    row_offset : torch.Tensor
        ``int64`` ``(M' + 1,)``: where each sorted (non-empty) document starts in ``perm``.
    """

    total: int
    kernel_len: int
    cu_seqlens: torch.Tensor
    sizes: tuple[int, ...]
    rows: tuple[int, ...]
    taps: tuple[int, ...]
    first_row: tuple[int, ...]
    perm: torch.Tensor
    loc: torch.Tensor
    row_offset: torch.Tensor

    def __post_init__(self) -> None:
        nb = len(self.sizes)
        for name in ("rows", "taps", "first_row"):
            if len(getattr(self, name)) != nb:
                raise ValueError(
                    f"{name} must have one entry per bucket like sizes ({nb}); got {len(getattr(self, name))} "
                    "(build the plan with plan_packed_conv)"
                )
        if self.total > 0 and nb == 0:
            raise ValueError(f"sizes must hold at least one bucket for total={self.total} tokens; got none")

    @property
    def buffer_len(self) -> int:
        """FFT length per channel, :math:`\\sum_b \\text{rows}_b F_b` (at most 1.5x the per-document optimum)."""
        return sum(r * f for r, f in zip(self.rows, self.sizes))

    def to(self, device: torch.device | str) -> PackedConvPlan:
        """The plan with its token indices (``perm``, ``loc``) on ``device``; offsets stay on the CPU."""
        if self.perm.device == torch.device(device):
            return self
        return replace(self, perm=self.perm.to(device), loc=self.loc.to(device))


def plan_packed_conv(cu_seqlens: Sequence[int] | torch.Tensor, total: int, kernel_len: int) -> PackedConvPlan:
    """Bucket the documents of a packing by exact FFT size (vectorised; no loop over documents).

    Parameters
    ----------
    cu_seqlens : 1-D integer tensor or sequence of int
        Document offsets :math:`0 = c_0 \\le \\dots \\le c_M = N`.
    total : int
        Packed length :math:`N`.
    kernel_len : int
        Filter length :math:`L \\ge 1`.

    Returns
    -------
    PackedConvPlan
        Document :math:`d` goes to the bucket of size :math:`F = ` :func:`fft_size`
        :math:`(n_d + \\min(n_d, L) - 1)` (Eq. 2); empty documents get no row.
    """
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
        raise ValueError(f"total must be a non-negative int; got {total!r}")
    if isinstance(kernel_len, bool) or not isinstance(kernel_len, int) or kernel_len < 1:
        raise ValueError(f"kernel_len must be an int >= 1; got {kernel_len!r}")
    cu = check_cu_seqlens(cu_seqlens, total)
    lengths = cu[1:] - cu[:-1]
    need = lengths + torch.clamp(lengths, max=kernel_len) - 1  # Eq. 2
    size_doc = _fft_sizes(need.clamp(min=0))
    nonempty = torch.nonzero(lengths > 0).squeeze(1)
    order = nonempty[torch.argsort(size_doc[nonempty], stable=True)]  # sorted non-empty documents
    sizes_sorted, len_sorted = size_doc[order], lengths[order]
    bucket_sizes, counts = torch.unique_consecutive(sizes_sorted, return_counts=True)
    first = torch.cumsum(counts, 0) - counts
    bucket_of = torch.repeat_interleave(torch.arange(counts.numel()), counts)
    rank = torch.arange(order.numel()) - first[bucket_of]  # row inside the bucket
    longest = torch.zeros_like(bucket_sizes).scatter_reduce(
        0, bucket_of, len_sorted, reduce="amax", include_self=False
    )
    row_offset = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(len_sorted, 0)])
    # Token i of the sorted order belongs to sorted document j at local position p.
    j = torch.repeat_interleave(torch.arange(order.numel()), len_sorted)
    p = torch.arange(total) - row_offset[j]
    perm = cu[order][j] + p
    loc = rank[j] * sizes_sorted[j] + p
    return PackedConvPlan(
        total=total,
        kernel_len=kernel_len,
        cu_seqlens=cu,
        sizes=tuple(int(f) for f in bucket_sizes),
        rows=tuple(int(r) for r in counts),
        taps=tuple(min(kernel_len, int(m)) for m in longest),
        first_row=tuple(int(f) for f in first),
        perm=perm,
        loc=loc,
        row_offset=row_offset,
    )


def _check_inputs(x: Any, kernel: Any) -> tuple[int, int, int]:
    """Validate ``x`` and ``kernel``; return ``(N, D, L)``."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor; got {type(x).__name__}")
    if not isinstance(kernel, torch.Tensor):
        raise TypeError(f"kernel must be a torch.Tensor; got {type(kernel).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"x must be a real floating-point tensor; got dtype {x.dtype}")
    if x.ndim not in (2, 3):
        raise ValueError(f"x must have shape (tokens, channels) or (batch, tokens, channels); got {tuple(x.shape)}")
    if kernel.dtype != x.dtype:
        raise TypeError(f"kernel dtype {kernel.dtype} does not match x dtype {x.dtype}; cast one of them")
    if kernel.device != x.device:
        raise ValueError(f"kernel is on {kernel.device} but x is on {x.device}")
    n, d = x.shape[-2], x.shape[-1]
    if kernel.ndim != 2 or kernel.shape[0] != d:
        hint = " (did you pass it as (length, channels)?)" if kernel.ndim == 2 and kernel.shape[1] == d else ""
        raise ValueError(
            f"kernel must have shape (channels, length) = ({d}, L), x having {d} channels; "
            f"got {tuple(kernel.shape)}{hint}"
        )
    length = kernel.shape[1]
    if length < 1:
        raise ValueError("kernel must have at least one tap (length >= 1)")
    if length > max(n, 1):
        raise ValueError(
            f"kernel length {length} exceeds the packed length {n}: taps beyond the pack never touch a token; "
            f"truncate the kernel to at most {max(n, 1)} taps"
        )
    return n, d, length


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    # torch.fft has no CPU half kernels (and CUDA ones only for powers of two): compute in float32.
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


# (bucket, first row, rows, first token in perm, last token + 1, start of the document in x if rows == 1 else -1)
_Tile = tuple[int, int, int, int, int, int]


def _tiles(plan: PackedConvPlan, channels: int, tile_elements: int | None) -> list[_Tile]:
    """Cut every bucket into tiles of whole rows holding at most ``tile_elements`` values (at least one row)."""
    out: list[_Tile] = []
    off = plan.row_offset.tolist()
    starts = plan.perm.cpu()[plan.row_offset[:-1]].tolist()  # first token of each sorted document
    for b, (f, rows, r0) in enumerate(zip(plan.sizes, plan.rows, plan.first_row)):
        step = rows if tile_elements is None else max(1, tile_elements // (channels * f))
        for a in range(0, rows, step):
            z = min(rows, a + step)
            out.append((b, a, z - a, off[r0 + a], off[r0 + z], starts[r0 + a] if z - a == 1 else -1))
    return out


def _spectra(kernel: torch.Tensor, plan: PackedConvPlan) -> list[torch.Tensor]:
    """Per bucket, the rFFT of the kernel truncated to :math:`K_b` taps at size :math:`F_b`: ``(D, F_b // 2 + 1)``."""
    return [torch.fft.rfft(kernel[:, :t], n=f, dim=-1) for f, t in zip(plan.sizes, plan.taps)]


def _tile_spectrum(x: torch.Tensor, plan: PackedConvPlan, tile: _Tile) -> tuple[torch.Tensor, torch.Tensor | None]:
    """rFFT of one tile of ``x`` (``(B, N, D)``): ``(B, D, rows, F // 2 + 1)``, and the tile's token slots.

    A one-row tile is a contiguous document, transformed in place (no gather). A multi-row tile is gathered
    token-major (whole rows of ``D`` values, the cheap direction) into a zero-padded ``(B, rows * F, D)``
    buffer with one index read (slot -> token, or an appended zero row), then transposed in cache so that
    the FFTs run along the contiguous axis.
    """
    b, a, rows, lo, hi, s = tile
    f = plan.sizes[b]
    if rows == 1:
        return torch.fft.rfft(x[:, s : s + hi - lo, :].transpose(1, 2), n=f, dim=-1).unsqueeze(2), None
    count = hi - lo
    slots = plan.loc[lo:hi] - a * f
    src = torch.full((rows * f,), count, dtype=torch.int64, device=x.device)
    src[slots] = torch.arange(count, device=x.device)
    xs = x.index_select(1, plan.perm[lo:hi])  # (B, count, D)
    xs = torch.cat([xs, xs.new_zeros(xs.shape[0], 1, xs.shape[2])], dim=1)
    buf = xs.index_select(1, src).transpose(1, 2).contiguous().view(xs.shape[0], xs.shape[2], rows, f)
    return torch.fft.rfft(buf, dim=-1), slots


def _tile_write(out: torch.Tensor, spec: torch.Tensor, plan: PackedConvPlan, tile: _Tile, slots: torch.Tensor | None):
    """Inverse rFFT of a tile's product spectrum and write its token outputs into ``out`` (``(B, N, D)``)."""
    b, a, rows, lo, hi, s = tile
    f = plan.sizes[b]
    y = torch.fft.irfft(spec, n=f, dim=-1)  # (B, D, rows, F)
    if slots is None:
        out[:, s : s + hi - lo, :] = y[:, :, 0, : hi - lo].transpose(1, 2)
    else:
        vals = y.reshape(*y.shape[:2], rows * f).transpose(1, 2).contiguous().index_select(1, slots)
        out.index_copy_(1, plan.perm[lo:hi], vals)


def _apply(x: torch.Tensor, spectra: list[torch.Tensor], plan: PackedConvPlan, tiles: list[_Tile]) -> torch.Tensor:
    """Bucketed circular convolution of ``x`` (``(B, N, D)``) with per-bucket kernel ``spectra``."""
    out = torch.empty_like(x)
    for tile in tiles:
        spec, slots = _tile_spectrum(x, plan, tile)
        _tile_write(out, spec.mul_(spectra[tile[0]].unsqueeze(1)), plan, tile, slots)
    return out


class _PackedLongConv(torch.autograd.Function):
    """Eq. 1 with an explicit backward that reuses the forward's bucketing.

    With :math:`G` the per-row rFFT of the output gradient and :math:`X`, :math:`K` those of the input and the
    truncated kernel (all at the bucket's size :math:`F_b \\ge n + K_b - 1`):

    - :math:`\\partial \\mathcal{L}/\\partial x = \\mathrm{irFFT}(G\\, \\overline{K})`, the anti-causal
      correlation :math:`\\sum_{t \\ge s} k_{t-s}\\, g_t` inside the document (Eq. 3; the wrapped terms hit
      taps :math:`\\ge K_b`, which are zero);
    - :math:`\\partial \\mathcal{L}/\\partial k_{c,j} = \\mathrm{irFFT}\\big(\\sum_{\\text{rows, batch}} G\\,
      \\overline{X}\\big)_j` for :math:`j < K_b` (Eq. 4; the wrapped terms read the zero padding), summed over
      buckets; taps no document reaches get gradient 0.

    The kernel's per-bucket spectra (:math:`D \\sum_b F_b / 2` values, small next to the input) are kept from the
    forward; the input's spectra are recomputed in the backward rather than stored (memory :math:`O(N D)`), and
    the kernel gradient's spectrum is accumulated one bucket at a time.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, kernel: torch.Tensor, plan: PackedConvPlan, tiles: list[_Tile]):
        spectra = _spectra(kernel, plan)
        ctx.save_for_backward(x, kernel)
        ctx.plan, ctx.tiles, ctx.spectra = plan, tiles, spectra
        return _apply(x, spectra, plan, tiles)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad: torch.Tensor):
        x, kernel = ctx.saved_tensors
        plan, tiles, spectra = ctx.plan, ctx.tiles, ctx.spectra  # the kernel's spectra, kept from the forward
        grad = grad.contiguous()
        need_x, need_k = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        grad_x = torch.empty_like(x) if need_x else None
        grad_k = torch.zeros_like(kernel) if need_k else None
        acc = None
        for i, tile in enumerate(tiles):
            b = tile[0]
            spec_g, slots = _tile_spectrum(grad, plan, tile)
            if need_k:
                spec_x, _ = _tile_spectrum(x, plan, tile)
                cross = spec_x.conj_physical_().mul_(spec_g).sum(dim=(0, 2))  # Eq. 4, summed over batch and rows
                acc = cross if acc is None else acc.add_(cross)
                if i + 1 == len(tiles) or tiles[i + 1][0] != b:  # the bucket's last tile: its taps are done
                    t = plan.taps[b]
                    grad_k[:, :t] += torch.fft.irfft(acc, n=plan.sizes[b], dim=-1)[:, :t]
                    acc = None
            if need_x:
                _tile_write(grad_x, spec_g.mul_(spectra[b].conj().unsqueeze(1)), plan, tile, slots)  # Eq. 3
        return grad_x, grad_k, None, None


def packed_long_conv(
    x: torch.Tensor,
    kernel: torch.Tensor,
    cu_seqlens: Sequence[int] | torch.Tensor,
    *,
    plan: PackedConvPlan | None = None,
    tile_elements: int | None | str = "auto",
) -> torch.Tensor:
    """Causal long convolution of every document of a packed sequence, with no leakage across documents.

    Computes Eq. 1 of the module docstring,

    .. math::

        y_{t,c} = \\sum_{s = \\max(b(t),\\, t - L + 1)}^{t} k_{c,\\, t-s}\\, x_{s,c},

    where :math:`b(t)` is the first token of :math:`t`'s document, by length-bucketed batched FFTs (see the
    module docstring). Exact up to floating-point rounding, differentiable in ``x`` and ``kernel`` (an
    explicit backward, Eqs. 3-4; first-order gradients only), deterministic.

    Parameters
    ----------
    x : torch.Tensor
        Packed input, shape ``(N, D)`` or ``(B, N, D)`` (one packing shared by the batch), real floating
        dtype. ``float16``/``bfloat16`` are computed in ``float32`` and returned in the input dtype.
    kernel : torch.Tensor
        Per-channel causal filter :math:`k`, shape ``(D, L)`` with :math:`1 \\le L \\le N`, same dtype and
        device as ``x``; tap :math:`j` multiplies the input :math:`j` steps back.
    cu_seqlens : 1-D integer tensor or sequence of int
        Document offsets :math:`0 = c_0 \\le c_1 \\le \\dots \\le c_M = N` (empty documents allowed).
    plan : PackedConvPlan, optional
        A plan from :func:`plan_packed_conv` for the same ``cu_seqlens``, ``N`` and ``L`` (saves rebuilding it
        in every layer).
    tile_elements : int, None or "auto"
        Values per batched FFT tile. Buckets are processed in tiles of whole rows (documents) of at most this
        many values, so that a tile stays in cache; a document too long for a shared tile is its own tile and is
        transformed in place. ``None`` processes each bucket in one batch (best where kernel launches are
        expensive, e.g. on a GPU). ``"auto"`` (default): :math:`2^{17}` on the CPU, ``None`` elsewhere.

    Returns
    -------
    torch.Tensor
        ``y`` with the shape and dtype of ``x``.

    Raises
    ------
    TypeError
        Non-tensor inputs, non-floating ``x``, ``kernel`` dtype different from ``x``'s, non-integer offsets.
    ValueError
        Bad shapes, ``L > N``, offsets that do not start at 0, decrease or do not end at ``N``, a plan built for
        another packing or kernel length.

    NaN and inf in ``x`` and ``kernel`` propagate to the output as in torch's own convolutions (no per-call scan:
    this runs inside every training step).

    Examples
    --------
    >>> x = torch.ones(5, 1)
    >>> k = torch.ones(1, 5)  # running sum
    >>> packed_long_conv(x, k, [0, 2, 5])[:, 0].tolist()
    [1.0, 2.0, 1.0, 2.0, 3.0]
    """
    n, _, length = _check_inputs(x, kernel)
    if tile_elements == "auto":
        tile_elements = 2**17 if x.device.type == "cpu" else None
    elif tile_elements is not None:
        if isinstance(tile_elements, bool) or not isinstance(tile_elements, int) or tile_elements < 1:
            raise ValueError(f"tile_elements must be a positive int, None or 'auto'; got {tile_elements!r}")
    if plan is None:
        plan = plan_packed_conv(cu_seqlens, n, length)
    else:
        if not isinstance(plan, PackedConvPlan):
            raise TypeError(f"plan must be a PackedConvPlan; got {type(plan).__name__}")
        cu = check_cu_seqlens(cu_seqlens, n)
        if plan.total != n or plan.kernel_len != length or not torch.equal(plan.cu_seqlens, cu):
            raise ValueError(
                f"plan was built for N={plan.total}, L={plan.kernel_len} and other offsets; "
                f"got N={n}, L={length}: rebuild it with plan_packed_conv"
            )
    if n == 0:
        return x.clone()
    cdt = _compute_dtype(x.dtype)
    x3 = x.to(cdt)
    x3 = (x3.unsqueeze(0) if x.ndim == 2 else x3).contiguous()
    tiles = _tiles(plan, x3.shape[0] * x3.shape[2], tile_elements)
    y = _PackedLongConv.apply(x3, kernel.to(cdt), plan.to(x.device), tiles)
    return (y[0] if x.ndim == 2 else y).to(x.dtype)


# ----------------------------------------------------------------------------------------------------------
# Baselines: the per-document loop (the reference, and the loop with its own backward), the padded batch, and
# the single leaky FFT.
# ----------------------------------------------------------------------------------------------------------


def per_document_conv(x: torch.Tensor, kernel: torch.Tensor, cu_seqlens: Sequence[int] | torch.Tensor) -> torch.Tensor:
    """Reference for Eq. 1: a Python loop over documents, one exact-size FFT convolution each.

    Document :math:`d` of length :math:`n` is convolved with the kernel truncated to :math:`\\min(n, L)` taps
    by an rFFT of size :func:`fft_size` :math:`(n + \\min(n, L) - 1)`. Obviously correct, and the cost
    optimum of FFT work, but one launch sequence per document. Same parameters and result as
    :func:`packed_long_conv`.

    NaN and inf in ``x`` and ``kernel`` propagate to the output as in torch's own convolutions (no per-call scan:
    this runs inside every training step).
    """
    n, _, length = _check_inputs(x, kernel)
    cu = check_cu_seqlens(cu_seqlens, n).tolist()
    cdt = _compute_dtype(x.dtype)
    xt = x.to(cdt).transpose(-1, -2)
    k = kernel.to(cdt)
    outs = []
    for s, e in zip(cu[:-1], cu[1:]):
        m = e - s
        if m == 0:
            continue
        taps = min(length, m)
        f = fft_size(m + taps - 1)
        spec = torch.fft.rfft(xt[..., s:e], n=f, dim=-1) * torch.fft.rfft(k[:, :taps], n=f, dim=-1)
        outs.append(torch.fft.irfft(spec, n=f, dim=-1)[..., :m])
    y = torch.cat(outs, dim=-1) if outs else xt.clone()
    return y.transpose(-1, -2).to(x.dtype)


class _PerDocumentLoop(torch.autograd.Function):
    """The per-document FFT loop with a hand-written backward (Eqs. 3-4 of :class:`_PackedLongConv`, per document).

    Forward and backward loop over documents; each gradient is written into one preallocated full-size output
    (no autograd graph of slices, whose backward would materialise a full-size gradient per document). Like
    :func:`packed_long_conv`, only ``x`` and ``kernel`` are saved and the spectra are recomputed.
    """

    @staticmethod
    def forward(ctx: Any, xt: torch.Tensor, kernel: torch.Tensor, docs: list[tuple[int, int, int, int]]):
        ctx.save_for_backward(xt, kernel)
        ctx.docs = docs
        out = torch.empty_like(xt)
        for s, e, taps, f in docs:
            spec = torch.fft.rfft(xt[..., s:e], n=f, dim=-1) * torch.fft.rfft(kernel[:, :taps], n=f, dim=-1)
            out[..., s:e] = torch.fft.irfft(spec, n=f, dim=-1)[..., : e - s]
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad: torch.Tensor):
        xt, kernel = ctx.saved_tensors
        need_x, need_k = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        grad_x = torch.empty_like(xt) if need_x else None  # every token is in one non-empty document
        grad_k = torch.zeros_like(kernel) if need_k else None
        lead = tuple(range(xt.ndim - 2))  # batch dimensions, summed for the kernel gradient
        for s, e, taps, f in ctx.docs:
            spec_g = torch.fft.rfft(grad[..., s:e], n=f, dim=-1)
            if need_x:  # Eq. 3: anti-causal correlation with the kernel
                spec_k = torch.fft.rfft(kernel[:, :taps], n=f, dim=-1)
                grad_x[..., s:e] = torch.fft.irfft(spec_g * spec_k.conj(), n=f, dim=-1)[..., : e - s]
            if need_k:  # Eq. 4: correlation of the output gradient with the input, summed over the batch
                cross = spec_g * torch.fft.rfft(xt[..., s:e], n=f, dim=-1).conj()
                if lead:
                    cross = cross.sum(dim=lead)
                grad_k[:, :taps] += torch.fft.irfft(cross, n=f, dim=-1)[:, :taps]
        return grad_x, grad_k, None


def per_document_conv_loop(
    x: torch.Tensor, kernel: torch.Tensor, cu_seqlens: Sequence[int] | torch.Tensor
) -> torch.Tensor:
    """The per-document FFT loop of :func:`per_document_conv` with a hand-written backward: the fair speed baseline.

    Same forward as :func:`per_document_conv` (one exact-size rFFT convolution per document, Eq. 1), but
    differentiated by an explicit backward that loops over the documents again: the input gradient is the
    anti-causal correlation with the kernel (Eq. 3), the kernel gradient the correlation of the output gradient
    with the input (Eq. 4), each written into one preallocated full-size tensor. Autograd through
    :func:`per_document_conv`'s slices instead builds a full-size gradient per document, :math:`O(M N D)` for
    :math:`M` documents; this loop's backward costs the FFT work of about two forwards, so it is the strongest
    loop to time :func:`packed_long_conv` against. Same parameters and result (values and first-order
    gradients) as :func:`packed_long_conv`.

    NaN and inf in ``x`` and ``kernel`` propagate to the output as in torch's own convolutions (no per-call scan:
    this runs inside every training step).
    """
    n, _, length = _check_inputs(x, kernel)
    cu = check_cu_seqlens(cu_seqlens, n).tolist()
    docs = []
    for s, e in zip(cu[:-1], cu[1:]):
        if e > s:
            taps = min(length, e - s)
            docs.append((s, e, taps, fft_size(e - s + taps - 1)))
    cdt = _compute_dtype(x.dtype)
    xt = x.to(cdt).transpose(-1, -2)  # a view: each document's slice is copied once, into its FFT's padding
    y = _PerDocumentLoop.apply(xt, kernel.to(cdt), docs)
    return y.transpose(-1, -2).to(x.dtype)


def padded_batch_conv(x: torch.Tensor, kernel: torch.Tensor, cu_seqlens: Sequence[int] | torch.Tensor) -> torch.Tensor:
    """The padded-batch workaround: unpack to ``(M, n_max)``, one batched FFT convolution, repack.

    Every document is zero-padded to the longest one, :math:`n_{\\max}`, and all are convolved by one
    batched rFFT of size :func:`fft_size` :math:`(n_{\\max} + \\min(n_{\\max}, L) - 1)` (the same exact-size rule
    as :func:`packed_long_conv`, so the two differ only in the bucketing). Exact, but the work is
    :math:`O(M\\, n_{\\max} \\log n_{\\max})` however short most documents are. Same parameters and result as
    :func:`packed_long_conv`; unpacking and repacking are vectorised index copies.

    NaN and inf in ``x`` and ``kernel`` propagate to the output as in torch's own convolutions (no per-call scan:
    this runs inside every training step).
    """
    n, _, length = _check_inputs(x, kernel)
    cu = check_cu_seqlens(cu_seqlens, n)
    if n == 0:
        return x.clone()
    lengths = cu[1:] - cu[:-1]
    n_docs, n_max = lengths.numel(), int(lengths.max())
    doc = document_ids(cu)
    dst = (doc * n_max + torch.arange(n) - cu[doc]).to(x.device)
    taps = min(length, n_max)
    f = fft_size(n_max + taps - 1)
    cdt = _compute_dtype(x.dtype)
    xt = x.to(cdt).transpose(-1, -2)
    lead = xt.shape[:-1]
    padded = xt.new_zeros(*lead, n_docs * n_max).index_copy(-1, dst, xt).reshape(*lead, n_docs, n_max)
    spec = torch.fft.rfft(padded, n=f, dim=-1) * torch.fft.rfft(kernel.to(cdt)[:, :taps], n=f, dim=-1).unsqueeze(-2)
    y = torch.fft.irfft(spec, n=f, dim=-1)[..., :n_max].reshape(*lead, n_docs * n_max).index_select(-1, dst)
    return y.transpose(-1, -2).to(x.dtype)


def single_fft_conv(x: torch.Tensor, kernel: torch.Tensor, cu_seqlens: Sequence[int] | torch.Tensor) -> torch.Tensor:
    """One causal FFT convolution over the whole packed row, ignoring the documents. **It leaks.**

    Computes :math:`y_{t,c} = \\sum_{s=\\max(0, t-L+1)}^{t} k_{c,t-s} x_{s,c}`: the start of every document
    sees the end of the documents before it. Correct only for a single document; kept as the naive
    baseline whose leakage the tests and the claim measure. ``cu_seqlens`` is validated and otherwise
    ignored.

    NaN and inf in ``x`` and ``kernel`` propagate to the output as in torch's own convolutions (no per-call scan:
    this runs inside every training step).
    """
    n, _, length = _check_inputs(x, kernel)
    check_cu_seqlens(cu_seqlens, n)
    if n == 0:
        return x.clone()
    cdt = _compute_dtype(x.dtype)
    f = fft_size(n + length - 1)
    spec = torch.fft.rfft(x.to(cdt).transpose(-1, -2), n=f, dim=-1) * torch.fft.rfft(kernel.to(cdt), n=f, dim=-1)
    return torch.fft.irfft(spec, n=f, dim=-1)[..., :n].transpose(-1, -2).to(x.dtype)
