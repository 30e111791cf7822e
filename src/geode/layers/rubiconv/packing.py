"""Random packings with realistic document-length mixes, for the tests, the claim check and the benchmark.

Pretraining pipelines fill a context of :math:`N` tokens with whole documents drawn from a heavy-tailed
length distribution and cut the last one (and any document longer than the context) to fit. We model three
mixes (our choice; the paper's data were not available):

``"short"``
    chat turns and code snippets: lognormal lengths, median 64, :math:`\\sigma = 0.8`.
``"mixed"``
    many short and a few long documents (web text): with probability 0.9 lognormal (median 256,
    :math:`\\sigma = 1`), with probability 0.1 log-uniform on :math:`[2^{11}, \\min(2^{15}, N/4)]` (both ends
    at most :math:`N/4`). The cap keeps "a few long documents" true at every :math:`N`: without it a 16k row
    was often filled by one or two long documents (issue 19), which is the "long" mix, not this one.
``"long"``
    books and long code files: log-uniform on :math:`[2^{12}, 2^{16}]`.
"""

from __future__ import annotations

import numpy as np
import torch

from geode.core import as_generator, check_choice, check_int

__all__ = ["MIXES", "cu_seqlens_from_lengths", "sample_document_lengths"]

MIXES: tuple[str, ...] = ("short", "mixed", "long")


def _draw(mix: str, size: int, rng: np.random.Generator, total: int) -> np.ndarray:
    if mix == "short":
        return rng.lognormal(np.log(64.0), 0.8, size)
    if mix == "mixed":
        body = rng.lognormal(np.log(256.0), 1.0, size)
        hi = min(15.0, np.log2(max(total / 4.0, 1.0)))
        tail = np.exp2(rng.uniform(min(11.0, hi), hi, size))
        return np.where(rng.random(size) < 0.1, tail, body)
    return np.exp2(rng.uniform(12.0, 16.0, size))


def sample_document_lengths(total: int, mix: str = "mixed", seed: int | np.random.Generator | None = 0) -> np.ndarray:
    """Lengths of the documents packed into one row of ``total`` tokens.

    Documents are drawn i.i.d. from the ``mix`` (see the module docstring), rounded up to at least one
    token, and appended until the row is full; the last one is cut to fit, so the lengths sum to ``total``.

    Parameters
    ----------
    total : int
        Packed length :math:`N \\ge 1`.
    mix : {"short", "mixed", "long"}
        Length distribution.
    seed : int or numpy Generator
        Randomness.

    Returns
    -------
    numpy.ndarray
        ``int64`` lengths, all :math:`\\ge 1`, summing to ``total``.

    Examples
    --------
    >>> lengths = sample_document_lengths(4096, "mixed", seed=0)
    >>> int(lengths.sum()), bool(lengths.min() >= 1)
    (4096, True)
    """
    total = check_int("total", total, low=1)
    check_choice("mix", mix, MIXES)
    rng = as_generator(seed)
    out: list[int] = []
    filled = 0
    while filled < total:
        draws = np.maximum(1, np.round(_draw(mix, 256, rng, total))).astype(np.int64)
        for n in draws.tolist():
            n = min(n, total - filled)
            out.append(n)
            filled += n
            if filled == total:
                break
    return np.asarray(out, dtype=np.int64)


def cu_seqlens_from_lengths(lengths: np.ndarray | list[int] | torch.Tensor) -> torch.Tensor:
    """Cumulative offsets :math:`(0, n_1, n_1 + n_2, \\dots)` as an ``int64`` tensor (FlashAttention varlen).

    ``lengths`` must hold whole, non-negative numbers (a float such as ``3.0`` is accepted; ``1.5``, NaN and
    inf are refused, never truncated). An empty ``lengths`` (no documents) gives ``[0]``.

    Examples
    --------
    >>> cu_seqlens_from_lengths([3, 1, 2]).tolist()
    [0, 3, 4, 6]
    """
    if isinstance(lengths, torch.Tensor):
        lengths = lengths.detach().cpu().numpy()
    try:
        arr = np.asarray(lengths)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"lengths must be a 1-D sequence of whole numbers; got {type(lengths).__name__}") from exc
    if arr.ndim != 1:
        raise ValueError(f"lengths must be 1-D; got shape {arr.shape}")
    if arr.size and not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"lengths must hold whole numbers; got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"lengths must be whole numbers; got {float(arr[i]):g} at index {i}")
    n = torch.as_tensor(arr.astype(np.int64))
    if bool((n < 0).any()):
        i = int(torch.nonzero(n < 0)[0, 0])
        raise ValueError(f"lengths must be non-negative; got {int(n[i])} at index {i}")
    return torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(n, 0)])
