r"""SPHQuant: 8-D weight vectors as signs, a quantised radius and a positive unit direction from a small codebook.

Each row of a weight :math:`W \in \mathbb{R}^{n_{out} \times n_{in}}` is cut into 8-D vectors :math:`w`.
A vector is written in spherical form

.. math::

    w = \rho\; s \odot u, \qquad s = \operatorname{sgn}(w) \in \{\pm 1\}^8, \qquad
    u \in S^7 \cap \mathbb{R}_{\ge 0}^8 ,

and stored as 8 sign bits, the index :math:`j` of the codeword :math:`c_j` of a codebook of
:math:`K = 2^{k}` positive unit vectors closest in angle to :math:`|w|`, and a radius code of
:math:`b_\rho` bits on a uniform grid :math:`\hat\rho = \Delta_g\, r`, :math:`r \in \{0, \dots, 2^{b_\rho}-1\}`,
with one 16-bit scale :math:`\Delta_g = \max_{g} \rho / (2^{b_\rho} - 1)` per group of ``group_size``
weights. Reconstruction: :math:`\hat w = \hat\rho\; s \odot c_j`. An outlier only inflates its vector's
radius; the direction stays bounded, so the codebook is not stretched by it. Bits per weight:

.. math::

    \text{bpw} = \frac{8 + k + b_\rho}{8} + \frac{16}{\text{group\_size}},

(3.125 at :math:`k + b_\rho = 16`, ``group_size=128``: the README's W3 budget), the codebook itself
(:math:`K \times 8` 16-bit numbers, shared by the whole model) amortised as in the paper and reported
separately.

The codebook is fitted by spherical k-means on the directions of the model's weights and then
fine-tuned in hyperspherical angles :math:`\varphi \in [0, \pi/2]^7`,

.. math::

    c_1 = \cos\varphi_1,\quad c_i = \cos\varphi_i \prod_{l<i} \sin\varphi_l\ (2 \le i \le 7),\quad
    c_8 = \prod_{l \le 7} \sin\varphi_l ,

which keeps every codeword on the unit sphere and, with :math:`\varphi` projected back to the box, in the
positive orthant. Fine-tuning minimises the summed relative layer-output error
:math:`\sum_\ell \operatorname{tr}(\Delta_\ell H_\ell \Delta_\ell^\top) / \operatorname{tr}(W_\ell H_\ell W_\ell^\top)`
on calibration Hessians :math:`H_\ell \propto X_\ell^\top X_\ell` with Adam over the angles and the group
scales (the discrete codes fixed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import torch
from torch import nn

from geode.compression._checks import check_bias, check_input
from geode.compression.quant import fitting_group_size, output_error, replace_linears
from geode.core.validation import check_int, check_positive, check_tensor

__all__ = [
    "SPHCodebook",
    "SPHCodes",
    "SPHLinear",
    "angles_to_vectors",
    "sph_bits_per_weight",
    "sph_decode",
    "sph_encode",
    "spherical_kmeans",
    "sphquant_model",
    "vectors_to_angles",
]

_DIM = 8  # the vector length of the paper


def angles_to_vectors(phi: torch.Tensor) -> torch.Tensor:
    """Hyperspherical angles (..., 7) to unit vectors (..., 8); positive when ``phi`` lies in [0, pi/2].

    Elementwise, and run at every fine-tuning step: the shape is checked, the values are not (NaN propagates like
    torch's own ops); an empty batch gives an empty output.
    """
    check_tensor("phi", phi, finite=False, nonempty=False, floating=True)
    if phi.ndim < 1 or phi.shape[-1] != _DIM - 1:
        raise ValueError(f"phi must have last dimension {_DIM - 1}; got {tuple(phi.shape)}")
    sin, cos = torch.sin(phi), torch.cos(phi)
    ones = torch.ones_like(phi[..., :1])
    prefix = torch.cumprod(torch.cat([ones, sin], dim=-1), dim=-1)  # prod_{l<i} sin(phi_l), i = 1..8
    return prefix * torch.cat([cos, ones], dim=-1)


def vectors_to_angles(c: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`angles_to_vectors` for unit vectors (..., 8): angles in [0, pi/2] for positive ``c``.

    Elementwise: the shape is checked, the values are not (a NaN or inf gives NaN or meaningless angles, like torch's
    own ``atan2``); an empty batch gives an empty output.
    """
    check_tensor("c", c, finite=False, nonempty=False, floating=True)
    if c.ndim < 1 or c.shape[-1] != _DIM:
        raise ValueError(f"c must have last dimension {_DIM}; got {tuple(c.shape)}")
    # tail norms ||c_{i+1:}|| for i = 1..7
    tail = torch.sqrt(torch.flip(torch.cumsum(torch.flip(c**2, [-1]), dim=-1), [-1]))[..., 1:]
    phi = torch.atan2(tail, c[..., :-1])
    # the last angle carries the sign of c_8 (atan2 of the pair)
    return torch.cat([phi[..., :-1], torch.atan2(c[..., -1:], c[..., -2:-1])], dim=-1)


def spherical_kmeans(directions: torch.Tensor, n_codes: int, *, iters: int = 20, seed: int = 0) -> torch.Tensor:
    """Spherical k-means (cosine assignment, normalised means) of unit vectors ``directions`` (N, 8).

    Initialised from ``n_codes`` distinct random rows; an emptied cluster is re-seeded with the point of
    the worst fit. Positive inputs give positive centres. Returns (n_codes, 8) unit vectors.
    """
    n_codes = check_int("n_codes", n_codes, low=1)
    check_tensor("directions", directions, floating=True)
    if directions.ndim != 2 or directions.shape[1] != _DIM:
        raise ValueError(f"directions must have shape (N, {_DIM}); got {tuple(directions.shape)}")
    if directions.shape[0] < n_codes:
        raise ValueError(f"n_codes={n_codes} exceeds the number of directions {directions.shape[0]}")
    g = torch.Generator().manual_seed(int(seed))
    u = directions.float()
    cent = u[torch.randperm(u.shape[0], generator=g)[:n_codes]].clone()
    for _ in range(int(iters)):
        sim = u @ cent.T
        best, idx = sim.max(dim=1)
        sums = torch.zeros_like(cent).index_add_(0, idx, u)
        counts = torch.bincount(idx, minlength=n_codes)
        empty = torch.nonzero(counts == 0).flatten()
        if len(empty):
            worst = torch.argsort(best)[: len(empty)]
            sums[empty] = u[worst]
        cent = sums / sums.norm(dim=1, keepdim=True).clamp_min(1e-12)
    return cent


class SPHCodebook(nn.Module):
    """A codebook of ``2^bits`` positive unit 8-D directions parameterised by angles in [0, pi/2]^7.

    Parameters
    ----------
    vectors : Tensor, shape (K, 8)
        Positive unit vectors (normalised and clamped to the orthant on entry).
    """

    def __init__(self, vectors: torch.Tensor) -> None:
        super().__init__()
        check_tensor("vectors", vectors, floating=True)
        if vectors.ndim != 2 or vectors.shape[1] != _DIM:
            raise ValueError(f"vectors must have shape (K, {_DIM}); got {tuple(vectors.shape)}")
        v = vectors.detach().float().clamp_min(0.0)
        v = v / v.norm(dim=1, keepdim=True).clamp_min(1e-12)
        self.angles = nn.Parameter(vectors_to_angles(v).clamp(0.0, math.pi / 2))

    @classmethod
    def fit(cls, directions: torch.Tensor, bits: int, *, iters: int = 20, seed: int = 0) -> SPHCodebook:
        """Spherical k-means with ``2^bits`` codes on positive unit ``directions`` (N, 8)."""
        bits = check_int("bits", bits, low=1, high=16)
        return cls(spherical_kmeans(directions, 2**bits, iters=iters, seed=seed))

    @property
    def size(self) -> int:
        return int(self.angles.shape[0])

    def vectors(self) -> torch.Tensor:
        """The codewords (K, 8): unit norm by construction, differentiable in the angles."""
        return angles_to_vectors(self.angles)

    @torch.no_grad()
    def project_(self) -> None:
        """Clamp the angles to [0, pi/2] (the positive orthant) after an optimiser step."""
        self.angles.clamp_(0.0, math.pi / 2)


class SPHCodes(NamedTuple):
    """The discrete part of a SPHQuant weight and its group scales.

    ``signs`` (n_out, n_in/8) uint8 (bit ``i`` set when coordinate ``i`` is negative), ``index`` and
    ``radius`` (n_out, n_in/8) int64, ``scales`` (n_out, n_in/group_size) float.
    """

    signs: torch.Tensor
    index: torch.Tensor
    radius: torch.Tensor
    scales: torch.Tensor


def _sign_lut() -> torch.Tensor:
    b = torch.arange(256).unsqueeze(1)
    return 1.0 - 2.0 * ((b >> torch.arange(_DIM)) & 1).float()  # (256, 8) of +-1


_SIGNS = _sign_lut()


def _check_shape(n_in: int, group_size: int) -> None:
    if n_in % _DIM:
        raise ValueError(f"the input dimension {n_in} must be a multiple of {_DIM} (pad the columns with zeros)")
    if group_size % _DIM or n_in % group_size:
        raise ValueError(
            f"group_size must be a multiple of {_DIM} dividing the input dimension {n_in}; got {group_size} "
            "(pad the columns with zeros)"
        )


def sph_encode(
    weight: torch.Tensor, codebook: torch.Tensor, *, radius_bits: int = 8, group_size: int = 128
) -> SPHCodes:
    r"""Encode a weight (n_out, n_in) with codewords ``codebook`` (K, 8).

    The codeword is the one of largest cosine with :math:`|w|`; the radius is the least-squares length
    along it, :math:`\rho = \langle |w|, c_j \rangle` (equal to :math:`\|w\|` when the direction is exact);
    the group scale is :math:`\max_g \rho / (2^{b_\rho} - 1)`.
    """
    check_tensor("weight", weight, ndim=2, floating=True)
    _check_codebook(codebook, finite=True)
    radius_bits = check_int("radius_bits", radius_bits, low=1, high=16)
    group_size = check_int("group_size", group_size, low=1)
    n_out, n_in = weight.shape
    _check_shape(n_in, group_size)
    w = weight.detach().float().reshape(n_out, -1, _DIM)
    neg = (w < 0).long()
    signs = (neg << torch.arange(_DIM)).sum(-1).to(torch.uint8)
    a = w.abs()
    cb = codebook.detach().float()
    rho = torch.empty(a.shape[:2])
    index = torch.empty(a.shape[:2], dtype=torch.long)
    rows = max(1, 2**22 // max(1, a.shape[1] * cb.shape[0]))  # bound the (rows, nv, K) projection to ~16 MB
    for i in range(0, n_out, rows):
        rho[i : i + rows], index[i : i + rows] = (a[i : i + rows] @ cb.T).max(dim=-1)
    vpg = group_size // _DIM
    qmax = 2**radius_bits - 1
    scales = (rho.reshape(n_out, -1, vpg).amax(-1) / qmax).clamp_min(1e-12)
    radius = torch.round(rho / scales.repeat_interleave(vpg, dim=1)).clamp(0, qmax).long()
    return SPHCodes(signs, index, radius, scales)


def _check_codebook(codebook: Any, *, finite: bool) -> None:
    check_tensor("codebook", codebook, finite=finite, floating=True)
    if codebook.ndim != 2 or codebook.shape[1] != _DIM:
        raise ValueError(f"codebook must have shape (K, {_DIM}); got {tuple(codebook.shape)}")


def _check_codes(codes: Any) -> None:
    if not isinstance(codes, SPHCodes):
        raise TypeError(f"codes must be SPHCodes (from sph_encode); got {type(codes).__name__}")
    for name in ("signs", "index", "radius", "scales"):
        check_tensor(f"codes.{name}", getattr(codes, name), ndim=2, finite=False)
    if not codes.signs.shape == codes.index.shape == codes.radius.shape:
        raise ValueError("codes.signs, codes.index and codes.radius must have the same shape (n_out, n_in / 8)")
    if codes.scales.shape[0] != codes.index.shape[0] or codes.index.shape[1] % codes.scales.shape[1]:
        raise ValueError("codes.scales must have shape (n_out, n_groups) with n_groups dividing n_in / 8")


def sph_decode(codes: SPHCodes, codebook: torch.Tensor) -> torch.Tensor:
    """The float weight :math:`\\Delta_g r\\, s \\odot c_j` (n_out, n_in); differentiable in codebook and scales.

    Run at every fine-tuning step: the types and shapes of ``codes`` and ``codebook`` are checked, their values are
    not (a NaN in ``codebook`` or ``codes.scales`` propagates like torch's own ops).
    """
    _check_codes(codes)
    _check_codebook(codebook, finite=False)
    n_out, nv = codes.index.shape
    vpg = nv // codes.scales.shape[1]
    rho = codes.radius.to(codebook.dtype) * codes.scales.to(codebook.dtype).repeat_interleave(vpg, dim=1)
    sgn = _SIGNS.to(codebook.dtype)[codes.signs.long()]  # (n_out, nv, 8)
    return (rho.unsqueeze(-1) * sgn * codebook[codes.index]).reshape(n_out, nv * _DIM)


def sph_bits_per_weight(direction_bits: int, radius_bits: int, group_size: int) -> float:
    """:math:`(8 + k + b_\\rho)/8 + 16/\\text{group\\_size}` (the codebook excluded)."""
    return (_DIM + direction_bits + radius_bits) / _DIM + 16.0 / group_size


def _column_major(t: torch.Tensor) -> torch.Tensor:
    """``t`` (n_out, nv) with the same values, stored with the second axis outermost (``t.T`` contiguous)."""
    return t.T.contiguous().T


def _half_patterns() -> torch.Tensor:
    """(2, 16, 8): row ``(h, t)`` holds the signs of nibble ``t`` on coordinates ``4h..4h+3``, zero elsewhere."""
    pat = 1.0 - 2.0 * ((torch.arange(16).unsqueeze(1) >> torch.arange(4)) & 1).float()
    out = torch.zeros(2, 16, _DIM)
    out[0, :, :4], out[1, :, 4:] = pat, pat
    return out


_HALF_PATTERNS = _half_patterns()
_LOOKUP_MAX_ROWS = 4  # rows up to which SPHLinear.forward decodes inside the product (measured break-even 5-6)
_TABLE_CHUNK = 2**17  # table numbers built and read per chunk of input blocks (512 KiB in float32: stays in cache)


def _code_dtype(bits: int) -> torch.dtype:
    # 9..16 bits are stored in int16 (two's-complement wrap; the mask in ``codes`` undoes it)
    return torch.uint8 if bits <= 8 else torch.int16 if bits <= 16 else torch.int32


class SPHLinear(nn.Module):
    """A linear layer stored in the SPHQuant format; a few rows decode inside the product, more rows dequantise.

    Storage per 8 weights: one sign byte and one joint code ``index << radius_bits | radius`` of
    ``direction_bits + radius_bits`` bits (``uint8`` up to 8 bits, ``int16`` up to 16, else ``int32``: exact
    at the budgets 8 and 16 bits of the README's W2 and W3), plus one 16-bit scale per group. The codebook
    (K, 8) is a buffer that layers of one model may share. The sign and code buffers have shape
    (n_out, n_in / 8) and are stored column-major (``signs.T`` contiguous) for the table path of
    :meth:`forward`; torch reference implementations on CPU (the paper's fused GPU kernel is future work).

    Parameters
    ----------
    codes : SPHCodes
    codebook : Tensor, shape (K, 8)
    direction_bits, radius_bits : int
    bias : Tensor or None
    """

    def __init__(
        self, codes: SPHCodes, codebook: torch.Tensor, *, direction_bits: int, radius_bits: int, bias: Any = None
    ) -> None:
        super().__init__()
        self.direction_bits = check_int("direction_bits", direction_bits, low=1, high=16)
        self.radius_bits = check_int("radius_bits", radius_bits, low=1, high=16)
        _check_codes(codes)
        check_tensor("codes.scales", codes.scales, floating=True)
        _check_codebook(codebook, finite=True)
        check_bias(bias, codes.index.shape[0])
        if codebook.shape != (2**self.direction_bits, _DIM):
            raise ValueError(
                f"codebook must have shape ({2**self.direction_bits}, {_DIM}); got {tuple(codebook.shape)}"
            )
        n_out, nv = codes.index.shape
        if codes.index.numel() and (int(codes.index.min()) < 0 or int(codes.index.max()) >= 2**self.direction_bits):
            raise ValueError(f"codes.index must lie in [0, {2**self.direction_bits - 1}]")
        if codes.radius.numel() and (int(codes.radius.min()) < 0 or int(codes.radius.max()) >= 2**self.radius_bits):
            raise ValueError(f"codes.radius must lie in [0, {2**self.radius_bits - 1}]")
        self.out_features, self.in_features = int(n_out), int(nv * _DIM)
        self.group_size = self.in_features // int(codes.scales.shape[1])
        joint = (codes.index << self.radius_bits) | codes.radius
        # both code buffers keep their (n_out, n_in / 8) shape but are stored column by column (8-blocks of the
        # input outermost): the table look-ups of the batch-1 product then walk one input block at a time
        self.register_buffer("signs", _column_major(codes.signs.to(torch.uint8)))
        self.register_buffer("code", _column_major(joint.to(_code_dtype(self.direction_bits + self.radius_bits))))
        self.register_buffer("scales", codes.scales.detach().to(torch.float16))
        self.register_buffer("codebook", codebook.detach().float())
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    def codes(self) -> SPHCodes:
        joint = self.code.long() & ((1 << (self.direction_bits + self.radius_bits)) - 1)
        return SPHCodes(self.signs, joint >> self.radius_bits, joint & ((1 << self.radius_bits) - 1), self.scales)

    def dequantize(self) -> torch.Tensor:
        """The float32 weight (n_out, n_in)."""
        c = self.codes()
        return sph_decode(SPHCodes(c.signs, c.index, c.radius, c.scales.float()), self.codebook)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r"""``x W^T + b``; ``x`` is checked for shape only (NaN propagates like torch's).

        Two paths compute the same product (equal up to float rounding):

        - **decode inside the product** (a few rows, no gradient needed; see :meth:`uses_lookup`): the weight
          is never materialised. For input block :math:`v` (coordinates :math:`8v..8v+7`) and each half
          :math:`h` of it (coordinates 0-3 or 4-7, one nibble :math:`t` of the sign byte) a table of the 16
          sign patterns times every codeword,

          .. math::

              T[v, h, t, j] = \sum_{i<4} \sigma_i(t)\, c_{j,4h+i}\, x_{8v+4h+i},\qquad
              \sigma_i(t) = 1 - 2\,\mathrm{bit}_i(t),

          (:math:`2 \cdot 16 \cdot K` numbers per block, one small matmul), then per weight vector two
          look-ups and the radius, :math:`z_{o,v} = r_{o,v}\,(T[v,0,t_{lo},j] + T[v,1,t_{hi},j])`, and the
          group scales folded last, :math:`y_o = \sum_g \Delta_{o,g} \sum_{v \in g} z_{o,v}`. The flat
          table indices are computed per call from the stored sign bytes and joint codes with integer shifts
          and masks (int16 / int32, never stored); the table is built and read in chunks of input blocks
          that stay in cache (``_TABLE_CHUNK`` numbers). Accumulation in float32 (float64 for float64 input);
          the result is cast to ``x.dtype``.
        - **dequantise then multiply** (otherwise: more rows, or autograd through ``x``, the codebook, the
          scales or the bias): :meth:`dequantize` and ``nn.functional.linear``, differentiable as before.
        """
        check_input("x", x, self.in_features)
        if self.uses_lookup(x):
            return self._lookup_forward(x)
        w = self.dequantize().to(x.dtype)
        return nn.functional.linear(x, w, None if self.bias is None else self.bias.to(x.dtype))

    def uses_lookup(self, x: torch.Tensor) -> bool:
        """Whether :meth:`forward` takes the table path for ``x``.

        Yes when ``x`` has between 1 and ``_LOOKUP_MAX_ROWS`` (4) rows, the codebook has at most
        ``out_features`` codewords, and no gradient is wanted (autograd off, or none of ``x``, codebook, scales
        and bias requires one). The tables cost ``32 K`` numbers per input block and row, the look-ups two per
        weight vector and row, while dequantise-then-multiply decodes once for all rows: on one CPU thread the
        table path is 3-4x faster at one row of the 1024 x 1024 bench weight (``k = 8``) and breaks even at
        5-6 rows; with ``K > out_features`` the tables outgrow the weight (e.g. 128 x 128 at ``k = 8``) and
        dequantising is faster. Fine-tuning through the layer keeps :meth:`dequantize`'s autograd graph.
        """
        rows = x.numel() // max(1, self.in_features)
        if not 1 <= rows <= _LOOKUP_MAX_ROWS or self.codebook.shape[0] > self.out_features:
            return False
        if torch.is_grad_enabled():
            tensors = (x, self.codebook, self.scales, self.bias)
            if any(t is not None and t.requires_grad for t in tensors):
                return False
        return True

    def _lookup_forward(self, x: torch.Tensor) -> torch.Tensor:
        """The table path of :meth:`forward` (see there); float32 accumulation (float64 for float64 input)."""
        dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
        n_out, nv = self.out_features, self.in_features // _DIM
        k, rb = self.direction_bits, self.radius_bits
        n_codes, dev = 1 << k, self.code.device
        lead = x.shape[:-1]
        xv = x.reshape(-1, nv, 1, 1, _DIM).to(dtype)
        rows = xv.shape[0]
        vc = max(1, min(nv, _TABLE_CHUNK // (32 * n_codes * rows)))  # input blocks per chunk
        while nv % vc:  # equal chunks, so that a row's offset in the chunk's table is one table size
            vc -= 1
        n_chunks, table_size = nv // vc, vc * 32 * n_codes
        code_t, sign_t = self.code.T, self.signs.T  # (nv, n_out) and contiguous: the storage is column-major
        # flat index in a chunk's table (vc, 2, 16, K): ((32 v_local + 16 h + t) << k) + j, with t the nibble h of the
        # sign byte and j the codeword. With s' = s | 256: (s' & 0x00f) << k = t_lo << k and
        # (s' & 0x1f0) << (k - 4) = (16 + t_hi) << k; that part and j in int16 while it fits (k <= 10)
        small = torch.int16 if k <= 10 else torch.int32
        j = ((code_t >> rb) & (n_codes - 1)).to(small)
        s = (sign_t.to(small) | 256).unsqueeze(1)
        masked = s & torch.tensor([0x00F, 0x1F0], dtype=small, device=dev).view(1, 2, 1)
        if k >= 4:
            nib = masked << torch.tensor([k, k - 4], dtype=small, device=dev).view(1, 2, 1)
        else:
            nib = (masked >> torch.tensor([0, 4], dtype=small, device=dev).view(1, 2, 1)) << k
        vbase = (torch.arange(nv, dtype=torch.int32, device=dev) % vc * (32 << k)).view(nv, 1, 1)
        idx = (nib | j.unsqueeze(1)) + vbase  # (nv, 2, n_out) int32
        if rows > 1:
            row_offset = torch.arange(rows, dtype=torch.int32, device=dev) * table_size
            idx = idx.unsqueeze(0) + row_offset.view(rows, 1, 1, 1)
        # chunk-major index (n_chunks, rows * vc * 2 * n_out) and signed inputs (n_chunks, rows * vc * 32, 8): the 16
        # sign patterns of each half-block of x, zero on the other half
        idx = idx.reshape(rows, n_chunks, vc * 2 * n_out).transpose(0, 1).reshape(n_chunks, -1)
        signed = (_HALF_PATTERNS.to(dev, dtype) * xv).reshape(rows, n_chunks, vc * 32, _DIM).transpose(0, 1)
        signed = signed.reshape(n_chunks, rows * vc * 32, _DIM)
        book_t = self.codebook.to(dtype).T
        table = torch.empty(rows * vc * 32, n_codes, dtype=dtype, device=dev)  # reused: stays in cache
        got = torch.empty(n_chunks, rows * vc * 2 * n_out, dtype=dtype, device=dev)
        for c in range(n_chunks):
            torch.mm(signed[c], book_t, out=table)
            torch.index_select(table.view(-1), 0, idx[c], out=got[c])
        got = got.view(n_chunks, rows, vc, 2, n_out).transpose(0, 1).reshape(rows, nv, 2, n_out)
        radius = (code_t & ((1 << rb) - 1)).to(dtype)
        z = (got[:, :, 0] + got[:, :, 1]) * radius  # (rows, nv, n_out)
        n_groups = self.scales.shape[1]
        y = (z.reshape(rows, n_groups, nv // n_groups, n_out).sum(2) * self.scales.T.to(dtype)).sum(1)
        if self.bias is not None:
            y = y + self.bias.to(dtype)
        return y.to(x.dtype).reshape(*lead, n_out)

    def bits_per_weight(self) -> float:
        """Nominal bits per weight of the format (codebook excluded)."""
        return sph_bits_per_weight(self.direction_bits, self.radius_bits, self.group_size)

    def storage_bytes(self) -> int:
        """Bytes actually held: signs, joint codes (in their integer dtype), scales and bias (codebook excluded)."""
        n = sum(t.numel() * t.element_size() for t in (self.signs, self.code, self.scales))
        if self.bias is not None:
            n += self.bias.numel() * self.bias.element_size()
        return int(n)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, direction_bits={self.direction_bits}, "
            f"radius_bits={self.radius_bits}, group_size={self.group_size}"
        )


def _fit_book(layers: Mapping[str, nn.Linear], bits: int, iters: int, max_points: int, seed: int) -> SPHCodebook:
    """Spherical k-means on the positive directions of all the layers' 8-D vectors (a random subset)."""
    dirs = []
    for lin in layers.values():
        v = lin.weight.detach().float().abs().reshape(-1, _DIM)
        nrm = v.norm(dim=1)
        dirs.append(v[nrm > 0] / nrm[nrm > 0].unsqueeze(1))
    u = torch.cat(dirs)
    g = torch.Generator().manual_seed(int(seed))
    if u.shape[0] > max_points:
        u = u[torch.randperm(u.shape[0], generator=g)[:max_points]]
    return SPHCodebook.fit(u, bits, iters=iters, seed=seed)


def sphquant_model(
    model: nn.Module,
    hessians: Mapping[str, torch.Tensor],
    names: Sequence[str],
    *,
    direction_bits: int = 8,
    radius_bits: int = 8,
    group_size: int = 128,
    finetune_steps: int = 100,
    lr: float = 1e-2,
    kmeans_iters: int = 15,
    max_kmeans_points: int = 16384,
    codebook: torch.Tensor | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Quantise the named linear layers of ``model`` in place with one shared SPHQuant codebook.

    Steps: (1) spherical k-means of :math:`2^k` codes on the directions of all the layers' 8-D vectors
    (a random subset of ``max_kmeans_points`` when there are more); (2) encode every layer
    (:func:`sph_encode`); (3) ``finetune_steps`` Adam steps (learning rate ``lr``) on the angles and the
    log group scales, minimising the summed relative output error under ``hessians`` with the discrete codes
    fixed (``finetune_steps=0``: no fine-tuning); (4) replace each layer by :class:`SPHLinear`.
    A given ``codebook`` (``2^direction_bits`` x 8 positive vectors) replaces step (1).

    Returns
    -------
    dict
        ``codebook`` (the :class:`SPHCodebook`), ``error_before`` / ``error_after`` (summed relative output
        error before and after fine-tuning), ``bits_per_weight``, ``codebook_bits``.
    """
    direction_bits = check_int("direction_bits", direction_bits, low=1, high=16)
    radius_bits = check_int("radius_bits", radius_bits, low=1, high=16)
    group_size = check_int("group_size", group_size, low=_DIM)
    finetune_steps = check_int("finetune_steps", finetune_steps, low=0)
    check_positive("lr", lr)
    if not names:
        raise ValueError("names must list at least one linear layer")
    layers = {n: model.get_submodule(n) for n in names}
    for n, lin in layers.items():
        if not isinstance(lin, nn.Linear):
            raise TypeError(f"{n} is not an nn.Linear")
        if lin.in_features % _DIM:
            raise ValueError(
                f"layer {n!r} has in_features={lin.in_features}, not a multiple of {_DIM} (SPHQuant's vector "
                "length): leave it out of names"
            )
        if n not in hessians:
            raise ValueError(f"hessians has no entry for {n}")
    for n, lin in layers.items():
        if lin.in_features % group_size or group_size % _DIM:
            fit = fitting_group_size([m.in_features for m in layers.values()], group_size, multiple=_DIM)
            raise ValueError(
                f"layer {n!r} has in_features={lin.in_features}, which group_size={group_size} does not divide "
                f"(or it is not a multiple of {_DIM}): pass group_size={fit}, the largest multiple of {_DIM} up to "
                f"{group_size} that divides every layer's input dimension"
            )
    if codebook is not None:
        if codebook.shape != (2**direction_bits, _DIM):
            raise ValueError(f"codebook must have shape ({2**direction_bits}, {_DIM}); got {tuple(codebook.shape)}")
        book = SPHCodebook(codebook)
    else:
        book = _fit_book(layers, direction_bits, kmeans_iters, max_kmeans_points, seed)
    W = {n: lin.weight.detach().float() for n, lin in layers.items()}
    H = {n: hessians[n].float() for n in names}
    codes = {
        n: sph_encode(W[n], book.vectors().detach(), radius_bits=radius_bits, group_size=group_size) for n in names
    }
    log_s = {n: nn.Parameter(torch.log(codes[n].scales.float())) for n in names}

    def total_error() -> torch.Tensor:
        cb = book.vectors()
        return sum(
            output_error(W[n], sph_decode(codes[n]._replace(scales=torch.exp(log_s[n])), cb), H[n]) for n in names
        )

    with torch.no_grad():
        before = float(total_error())
    if finetune_steps:
        opt = torch.optim.Adam([book.angles, *log_s.values()], lr=lr)
        for _ in range(finetune_steps):
            opt.zero_grad(set_to_none=True)
            loss = total_error()
            loss.backward()
            opt.step()
            book.project_()
    with torch.no_grad():
        after = float(total_error())
    cb = book.vectors().detach()

    def build(name: str, lin: nn.Linear) -> nn.Module:
        c = codes[name]._replace(scales=torch.exp(log_s[name]).detach())
        return SPHLinear(c, cb, direction_bits=direction_bits, radius_bits=radius_bits, bias=lin.bias)

    replace_linears(model, build, names)
    return {
        "codebook": book,
        "error_before": before,
        "error_after": after,
        "bits_per_weight": sph_bits_per_weight(direction_bits, radius_bits, group_size),
        "codebook_bits": int(cb.numel() * 16),
    }
