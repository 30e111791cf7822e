r"""Secure summation with pairwise additive masks (Bonawitz et al., CCS 2017), simulated in-process.

Each client :math:`i` encodes its vector in fixed point, :math:`\bar x_i = \operatorname{round}(2^f x_i)
\bmod 2^{64}`, and uploads

.. math::

    y_i = \bar x_i + \sum_{j > i} m_{ij} - \sum_{j < i} m_{ji} \pmod{2^{64}},

where :math:`m_{ij}` is a uniform vector in :math:`\mathbb Z_{2^{64}}^d` expanded by a PRG from a seed
that only clients :math:`i` and :math:`j` share (in the real protocol from a Diffie-Hellman key
agreement; here from a seed the simulation hands to the pair). Every mask is added once and
subtracted once, so the masks cancel *exactly* in integer arithmetic:
:math:`\sum_i y_i = \sum_i \bar x_i \pmod{2^{64}}`, and the server decodes the sum. With at least two
clients, each :math:`y_i` on its own is uniformly distributed whatever :math:`x_i` is: the server never
sees one client's vector, only the total.

What is simplified: no client dropouts (Bonawitz's secret-shared recovery of a dropped client's masks
is not simulated), no authentication, no differential-privacy noise. The fixed-point sum is exact up
to the rounding of each input to :math:`2^{-f}`; an input or a total outside :math:`\pm 2^{63-f}`
raises rather than wrapping around.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from geode.core.validation import check_array, check_int

__all__ = [
    "SecureSumResult",
    "client_mask",
    "decode_fixed_point",
    "encode_fixed_point",
    "pairwise_masks",
    "secure_sum",
]

_TWO63 = float(2**63)


def encode_fixed_point(x: Any, frac_bits: int = 24) -> np.ndarray:
    r"""Encode floats as :math:`\operatorname{round}(2^f x)` in two's complement ``uint64``.

    Elementwise on an array of any shape (an empty array gives an empty encoding). Raises ``ValueError``
    if :math:`|2^f x| \ge 2^{63}` (the value would wrap around) or ``x`` holds a NaN or an infinity.
    """
    frac_bits = check_int("frac_bits", frac_bits, low=0, high=62)
    a = check_array("x", x)
    scaled = np.round(a * float(2**frac_bits))
    if scaled.size and float(np.max(np.abs(scaled))) >= _TWO63:
        raise ValueError(
            f"x has magnitude up to {float(np.max(np.abs(a))):.3g}, too large for frac_bits={frac_bits} "
            f"(limit {2.0 ** (63 - frac_bits):.3g}); lower frac_bits"
        )
    return scaled.astype(np.int64).view(np.uint64)


def decode_fixed_point(u: Any, frac_bits: int = 24) -> np.ndarray:
    """Inverse of :func:`encode_fixed_point`: ``uint64`` two's complement to float64."""
    frac_bits = check_int("frac_bits", frac_bits, low=0, high=62)
    arr = np.asarray(u)
    if arr.dtype != np.uint64:
        raise TypeError(f"u must be a uint64 array; got dtype {arr.dtype}")
    return arr.view(np.int64).astype(np.float64) / float(2**frac_bits)


def _pair_seed(seed: int, i: int, j: int) -> np.random.SeedSequence:
    return np.random.SeedSequence([seed, 0x5EC5, i, j])


def _prg(seed: np.random.SeedSequence, dim: int) -> np.ndarray:
    return np.random.PCG64(seed).random_raw(dim).astype(np.uint64)


def client_mask(client_id: int, n_clients: int, dim: int, seed: int) -> np.ndarray:
    r"""Client ``client_id``'s net mask :math:`\sum_{j>i} m_{ij} - \sum_{j<i} m_{ji} \bmod 2^{64}`.

    It needs only the seeds of the pairs the client belongs to.
    """
    mask = np.zeros(dim, dtype=np.uint64)
    for j in range(n_clients):
        if j == client_id:
            continue
        m = _prg(_pair_seed(seed, min(client_id, j), max(client_id, j)), dim)
        if j > client_id:
            mask += m  # uint64 arithmetic wraps modulo 2^64
        else:
            mask -= m
    return mask


def pairwise_masks(n_clients: int, dim: int, seed: int = 0) -> np.ndarray:
    """All clients' net masks, shape ``(n_clients, dim)`` ``uint64``; they sum to 0 modulo :math:`2^{64}`."""
    n_clients = check_int("n_clients", n_clients, low=2)
    dim = check_int("dim", dim, low=1)
    seed = check_int("seed", seed, low=0)
    return np.stack([client_mask(i, n_clients, dim, seed) for i in range(n_clients)])


@dataclass
class SecureSumResult:
    """The outcome of :func:`secure_sum`.

    Attributes
    ----------
    total : ndarray of float64, shape (d,)
        The decoded sum of the clients' vectors (each rounded to :math:`2^{-f}`).
    server_view : ndarray of uint64, shape (n_clients, d)
        Everything the server received: the masked uploads :math:`y_i`. Nothing else leaves a client.
    frac_bits : int
        The fixed-point precision :math:`f`.
    """

    total: np.ndarray
    server_view: np.ndarray
    frac_bits: int


def secure_sum(vectors: Sequence[Any] | np.ndarray, *, seed: int = 0, frac_bits: int = 24) -> SecureSumResult:
    r"""Sum the clients' vectors so that the server sees only pairwise-masked uploads.

    Parameters
    ----------
    vectors : array_like, shape (n_clients, d)
        One float vector per client (e.g. flattened class moments), ``n_clients >= 2``.
    seed : int
        Seeds the pairwise mask PRGs (stands in for the pairwise key agreement).
    frac_bits : int
        Fixed-point fractional bits :math:`f` (resolution :math:`2^{-f}`, range :math:`\pm 2^{63-f}`).

    Returns
    -------
    SecureSumResult

    Raises
    ------
    ValueError
        Fewer than two clients (one client's upload would be its own statistics), NaN/inf values, or
        values or a total too large for ``frac_bits``.

    Examples
    --------
    >>> res = secure_sum([[1.0, 2.0], [3.0, -0.5], [0.25, 0.0]], seed=1)
    >>> res.total
    array([4.25, 1.5 ])
    """
    x = check_array("vectors", vectors, ndim=2)
    n, d = x.shape
    if n < 2:
        raise ValueError(f"vectors must hold at least 2 clients (with one, the server would see its data); got {n}")
    frac_bits = check_int("frac_bits", frac_bits, low=0, high=62)
    seed = check_int("seed", seed, low=0)
    bound = float(np.max(np.abs(x).sum(axis=0))) * float(2**frac_bits) if d else 0.0
    if bound >= _TWO63:
        raise ValueError(
            f"the sum of |vectors| reaches {bound / 2**frac_bits:.3g}, too large for frac_bits={frac_bits} "
            f"(limit {2.0 ** (63 - frac_bits):.3g}); lower frac_bits"
        )
    uploads = np.empty((n, d), dtype=np.uint64)
    for i in range(n):  # client side: encode, then add the net pairwise mask
        uploads[i] = encode_fixed_point(x[i], frac_bits) + client_mask(i, n, d, seed)
    total_u = np.zeros(d, dtype=np.uint64)
    for y in uploads:  # server side: sum the uploads modulo 2^64; the masks cancel
        total_u += y
    return SecureSumResult(decode_fixed_point(total_u, frac_bits), uploads, frac_bits)
