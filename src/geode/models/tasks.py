r"""Synthetic token tasks for tiny causal language models: modular arithmetic, copy, reversal, classification.

Every task shares one vocabulary layout, so a single tiny LM can be pretrained on one task and adapted
to another:

==========  ==================================================================
token ids   meaning
==========  ==================================================================
0 .. 7      specials: ``PAD``, ``BOS``, ``SEP``, ``EOS``, ``EQ``, ``ADD``, ``SUB``, ``MUL``
8 .. 15     class tokens ``CLS0`` .. ``CLS7`` (the answers of :class:`KeywordClassification`)
16 ..       symbols (digits, residues, keywords): symbol ``j`` has id ``16 + j``
==========  ==================================================================

A task draws a :class:`TaskBatch` of fixed-length sequences: ``input_ids`` (n, seq_len) and
``labels`` (n, seq_len) in the Hugging Face convention: ``labels`` equals ``input_ids`` on the
answer positions and ``-100`` elsewhere, and the model shifts them internally, so the loss is the
next-token cross-entropy on the answer only,

.. math::

    \mathcal{L} = -\frac{1}{|\mathcal{A}|} \sum_{(i, t) \in \mathcal{A}} \log p_\theta(x_{i,t} \mid x_{i,<t}),

with :math:`\mathcal{A}` the answer positions. No sequence is padded. Every draw is a deterministic
function of its seed (numpy ``Generator``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_choice, check_int, check_probability

__all__ = [
    "CLASS_TOKEN0",
    "FIRST_SYMBOL",
    "SPECIAL_TOKENS",
    "Copy",
    "KeywordClassification",
    "ModularArithmetic",
    "Reversal",
    "SyntheticTask",
    "TaskBatch",
    "TokenMappedTask",
    "answer_accuracy",
    "tokenizer_token_map",
]

SPECIAL_TOKENS: dict[str, int] = {"PAD": 0, "BOS": 1, "SEP": 2, "EOS": 3, "EQ": 4, "ADD": 5, "SUB": 6, "MUL": 7}
"""Ids of the special tokens."""
CLASS_TOKEN0 = 8
"""Id of ``CLS0``; class ``k`` (``k < 8``) answers with token ``CLASS_TOKEN0 + k``."""
MAX_CLASSES = 8
FIRST_SYMBOL = 16
"""Id of symbol 0."""
IGNORE_INDEX = -100


class TaskBatch(NamedTuple):
    """A batch of task sequences.

    Attributes
    ----------
    input_ids : torch.LongTensor, shape (n, seq_len)
    labels : torch.LongTensor, shape (n, seq_len)
        ``input_ids`` on answer positions, ``-100`` elsewhere (Hugging Face causal-LM convention).
    targets : torch.LongTensor, shape (n,)
        A per-sequence target: the class for classification, the first answer token otherwise.
    """

    input_ids: Any
    labels: Any
    targets: Any


def _to_batch(ids: np.ndarray, answer_start: int, targets: np.ndarray) -> TaskBatch:
    import torch

    labels = np.full_like(ids, IGNORE_INDEX)
    labels[:, answer_start:] = ids[:, answer_start:]
    return TaskBatch(torch.from_numpy(ids.astype(np.int64)), torch.from_numpy(labels), torch.from_numpy(targets))


@dataclass(frozen=True)
class SyntheticTask:
    """Base class of the tasks: a vocabulary size, a sequence length and ``sample(n, seed)``."""

    n_symbols: int

    def __post_init__(self) -> None:
        check_int("n_symbols", self.n_symbols, low=2)

    @property
    def name(self) -> str:
        return type(self).__name__.lower()

    @property
    def vocab_size(self) -> int:
        """Size of the vocabulary the task's tokens live in (specials, class tokens and symbols)."""
        return FIRST_SYMBOL + self.n_symbols

    @property
    def seq_len(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def sample(self, n: int, seed: int | np.random.Generator) -> TaskBatch:  # pragma: no cover - abstract
        """Draw ``n`` sequences; the same seed gives the same batch."""
        raise NotImplementedError


@dataclass(frozen=True, init=False)
class ModularArithmetic(SyntheticTask):
    """``BOS a OP b EQ c EOS`` with ``c = a OP b mod p``; the answer is ``c EOS``.

    Parameters
    ----------
    p : int
        The modulus (>= 2); residues are symbols ``0 .. p-1``.
    op : {"add", "sub", "mul"}
    n_symbols : int, optional
        Size of the symbol range; defaults to ``p`` and must be at least ``p``.
    """

    p: int = 23
    op: str = "add"

    def __init__(self, p: int = 23, op: str = "add", n_symbols: int | None = None) -> None:
        check_int("p", p, low=2)
        check_choice("op", op, ("add", "sub", "mul"))
        n_symbols = p if n_symbols is None else check_int("n_symbols", n_symbols, low=p)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "n_symbols", n_symbols)

    @property
    def seq_len(self) -> int:
        return 7

    def sample(self, n: int, seed: int | np.random.Generator) -> TaskBatch:
        n = check_int("n", n, low=1)
        rng = as_generator(seed)
        a = rng.integers(0, self.p, n)
        b = rng.integers(0, self.p, n)
        c = {"add": a + b, "sub": a - b, "mul": a * b}[self.op] % self.p
        op = SPECIAL_TOKENS[self.op.upper()]
        s = SPECIAL_TOKENS
        ids = np.stack(
            [
                np.full(n, s["BOS"]),
                a + FIRST_SYMBOL,
                np.full(n, op),
                b + FIRST_SYMBOL,
                np.full(n, s["EQ"]),
                c + FIRST_SYMBOL,
                np.full(n, s["EOS"]),
            ],
            axis=1,
        )
        return _to_batch(ids, 5, c + FIRST_SYMBOL)


@dataclass(frozen=True)
class Copy(SyntheticTask):
    """``BOS x_1 .. x_L SEP x_1 .. x_L EOS`` over ``n_symbols`` symbols; the answer is the copy and ``EOS``.

    Parameters
    ----------
    length : int
        Number of symbols ``L`` to copy (>= 1).
    n_symbols : int
        Alphabet size (>= 2).
    """

    n_symbols: int = 16
    length: int = 6

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("length", self.length, low=1)

    @property
    def seq_len(self) -> int:
        return 2 * self.length + 3

    def _answer(self, x: np.ndarray) -> np.ndarray:
        return x

    def sample(self, n: int, seed: int | np.random.Generator) -> TaskBatch:
        n = check_int("n", n, low=1)
        rng = as_generator(seed)
        x = rng.integers(0, self.n_symbols, (n, self.length)) + FIRST_SYMBOL
        y = self._answer(x)
        s = SPECIAL_TOKENS
        ids = np.concatenate(
            [np.full((n, 1), s["BOS"]), x, np.full((n, 1), s["SEP"]), y, np.full((n, 1), s["EOS"])], axis=1
        )
        return _to_batch(ids, self.length + 2, y[:, 0].copy())


@dataclass(frozen=True)
class Reversal(Copy):
    """``BOS x_1 .. x_L SEP x_L .. x_1 EOS``: like :class:`Copy` with the answer reversed."""

    def _answer(self, x: np.ndarray) -> np.ndarray:
        return x[:, ::-1].copy()


@dataclass(frozen=True)
class KeywordClassification(SyntheticTask):
    r"""Classify a sequence by which class's keywords it holds; ``BOS x_1 .. x_L SEP CLS_y``.

    Class :math:`k` owns a set :math:`C_k` of ``keywords_per_class`` symbols; the other symbols of
    the alphabet (or those given by ``noise_symbols``) are noise. A sequence of class :math:`y` is
    drawn position by position: with probability ``p_true`` a keyword of :math:`C_y`, with
    probability ``p_other`` a keyword of a uniformly chosen other class, else a noise symbol. The
    label is the generating class, so the Bayes classifier is not always right (overlapping
    keyword counts): the task has genuine aleatoric uncertainty, which is what a calibration study
    needs. A covariate-shifted (out-of-distribution) version of the same task keeps the classes
    and keywords and changes ``p_true``/``p_other``/``noise_symbols``.

    Parameters
    ----------
    n_classes : int
        Number of classes, 2 .. 8.
    length : int
        Number of symbols per sequence.
    n_symbols : int
        Alphabet size.
    keywords : tuple of tuple of int, optional
        The keyword symbols of each class (disjoint); by default classes take consecutive blocks of
        ``keywords_per_class`` symbols starting at ``keyword_offset``.
    keywords_per_class : int
    keyword_offset : int
    p_true, p_other : float
        Per-position probabilities of a keyword of the true class and of another class.
    noise_symbols : tuple of int, optional
        The symbols noise positions draw from; default: every symbol that is no keyword.
    """

    n_symbols: int = 64
    n_classes: int = 6
    length: int = 12
    keywords: tuple[tuple[int, ...], ...] | None = None
    keywords_per_class: int = 3
    keyword_offset: int = 0
    p_true: float = 0.3
    p_other: float = 0.1
    noise_symbols: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("n_classes", self.n_classes, low=2, high=MAX_CLASSES)
        check_int("length", self.length, low=1)
        check_int("keywords_per_class", self.keywords_per_class, low=1)
        check_int("keyword_offset", self.keyword_offset, low=0)
        pt = check_probability("p_true", self.p_true)
        po = check_probability("p_other", self.p_other)
        if pt + po > 1.0:
            raise ValueError(f"p_true + p_other must be <= 1; got {pt} + {po}")
        kw = self.class_keywords
        if len(kw) != self.n_classes:
            raise ValueError(f"keywords must list one tuple per class ({self.n_classes}); got {len(kw)}")
        flat = [s for group in kw for s in group]
        if any(not 0 <= s < self.n_symbols for s in flat):
            raise ValueError(f"keywords must be symbols in [0, n_symbols={self.n_symbols}); got {kw}")
        if len(set(flat)) != len(flat) or any(len(g) == 0 for g in kw):
            raise ValueError(f"keywords of different classes must be disjoint and non-empty; got {kw}")
        noise = self.noise_pool
        if len(noise) == 0 and pt + po < 1.0:
            raise ValueError("no noise symbols are left: pass noise_symbols or a larger n_symbols")
        if any(not 0 <= s < self.n_symbols for s in noise):
            raise ValueError(f"noise_symbols must be symbols in [0, n_symbols={self.n_symbols})")

    @property
    def class_keywords(self) -> tuple[tuple[int, ...], ...]:
        """The keyword symbols of each class."""
        if self.keywords is not None:
            return tuple(tuple(int(s) for s in g) for g in self.keywords)
        k, o = self.keywords_per_class, self.keyword_offset
        return tuple(tuple(range(o + c * k, o + (c + 1) * k)) for c in range(self.n_classes))

    @property
    def noise_pool(self) -> tuple[int, ...]:
        """The symbols noise positions are drawn from."""
        if self.noise_symbols is not None:
            return tuple(int(s) for s in self.noise_symbols)
        used = {s for g in self.class_keywords for s in g}
        return tuple(s for s in range(self.n_symbols) if s not in used)

    @property
    def seq_len(self) -> int:
        return self.length + 3

    def sample(self, n: int, seed: int | np.random.Generator) -> TaskBatch:
        n = check_int("n", n, low=1)
        rng = as_generator(seed)
        kw = np.array(self.class_keywords, dtype=np.int64) if len({len(g) for g in self.class_keywords}) == 1 else None
        y = rng.integers(0, self.n_classes, n)
        u = rng.random((n, self.length))
        other = (y[:, None] + rng.integers(1, self.n_classes, (n, self.length))) % self.n_classes
        cls = np.where(u < self.p_true, y[:, None], other)
        if kw is not None:
            pick = rng.integers(0, kw.shape[1], (n, self.length))
            key = kw[cls, pick]
        else:  # ragged keyword sets
            sizes = np.array([len(g) for g in self.class_keywords])
            pick = np.floor(rng.random((n, self.length)) * sizes[cls]).astype(np.int64)
            flat = np.concatenate([np.asarray(g) for g in self.class_keywords])
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            key = flat[starts[cls] + pick]
        pool = np.asarray(self.noise_pool, dtype=np.int64)
        noise = pool[rng.integers(0, len(pool), (n, self.length))] if len(pool) else key
        x = np.where(u < self.p_true + self.p_other, key, noise) + FIRST_SYMBOL
        s = SPECIAL_TOKENS
        ids = np.concatenate(
            [np.full((n, 1), s["BOS"]), x, np.full((n, 1), s["SEP"]), (y + CLASS_TOKEN0)[:, None]], axis=1
        )
        return _to_batch(ids, self.length + 2, y)


def answer_accuracy(logits: Any, labels: Any) -> float:
    """Fraction of sequences whose every answer token is predicted correctly (greedy, teacher forcing).

    Parameters
    ----------
    logits : torch.Tensor, shape (n, seq_len, vocab)
        The model's logits on the batch's ``input_ids``.
    labels : torch.LongTensor, shape (n, seq_len)
        The batch's labels (``-100`` off the answer).
    """
    import torch

    if logits.ndim != 3 or labels.shape != logits.shape[:2]:
        raise ValueError(
            f"logits must be (n, seq_len, vocab) matching labels {tuple(labels.shape)}; got {tuple(logits.shape)}"
        )
    pred = logits[:, :-1].argmax(-1)
    tgt = labels[:, 1:]
    mask = tgt != IGNORE_INDEX
    ok = ((pred == tgt) | ~mask).all(dim=1)
    return float(ok.to(torch.float64).mean())


class TokenMappedTask:
    """A task whose token ids are mapped into another vocabulary (e.g. a real tokenizer's), id by id.

    ``TokenMappedTask(task, token_map)`` samples like ``task`` and replaces every id ``i`` by
    ``token_map[i]`` in ``input_ids`` and ``labels`` (``-100`` stays); ``targets`` keep the task's own
    meaning (classes, or the mapped first answer token). Use :func:`tokenizer_token_map` to build a
    map onto single-token strings of a Hugging Face tokenizer, so a pretrained LM such as SmolLM2
    can be adapted to the synthetic tasks.

    Parameters
    ----------
    task : SyntheticTask
    token_map : sequence of int
        One target id per id of ``task``'s vocabulary (length ``task.vocab_size``), all distinct.
    """

    def __init__(self, task: SyntheticTask, token_map: Any) -> None:
        if not isinstance(task, SyntheticTask):
            raise TypeError(f"task must be a SyntheticTask; got {type(task).__name__}")
        m = np.asarray(token_map, dtype=np.int64)
        if m.shape != (task.vocab_size,):
            raise ValueError(f"token_map must have one id per task token ({task.vocab_size}); got shape {m.shape}")
        if m.min() < 0 or len(np.unique(m)) != len(m):
            raise ValueError("token_map must hold distinct non-negative ids")
        self.task = task
        self.token_map = m

    @property
    def vocab_size(self) -> int:
        return int(self.token_map.max()) + 1

    @property
    def seq_len(self) -> int:
        return self.task.seq_len

    def sample(self, n: int, seed: int | np.random.Generator) -> TaskBatch:
        import torch

        b = self.task.sample(n, seed)
        lut = torch.from_numpy(self.token_map)
        labels = torch.where(b.labels == IGNORE_INDEX, b.labels, lut[b.labels.clamp_min(0)])
        targets = b.targets if isinstance(self.task, KeywordClassification) else lut[b.targets]
        return TaskBatch(lut[b.input_ids], labels, targets)


def tokenizer_token_map(tokenizer: Any, vocab_size: int) -> np.ndarray:
    """Map the synthetic vocabulary onto distinct single tokens of a Hugging Face tokenizer.

    Specials go to readable single-token strings (``BOS`` to the tokenizer's BOS or EOS token,
    ``SEP`` to ``" ->"``-like separators, ``EOS`` to its EOS token, ``EQ``/``ADD``/``SUB``/``MUL``
    to ``" ="``, ``" +"``, ``" -"``, ``" *"`` when those are single tokens); class tokens and symbols
    to single-token strings such as ``" A"`` .. ``" Z"``, ``" a"`` .. ``" z"``, ``" 0"`` .. ``" 9"`` and
    short words, in that order. Raises ``ValueError`` when the tokenizer has too few such tokens.
    """
    vocab_size = check_int("vocab_size", vocab_size, low=FIRST_SYMBOL + 1)

    def single(text: str) -> int | None:
        ids = tokenizer.encode(text, add_special_tokens=False)
        return int(ids[0]) if len(ids) == 1 else None

    used: set[int] = set()
    out: list[int] = []

    def take(candidates: list[Any]) -> None:
        for c in candidates:
            tid = c if isinstance(c, int) else (single(c) if isinstance(c, str) else None)
            if tid is not None and tid not in used:
                used.add(tid)
                out.append(tid)
                return
        raise ValueError(f"the tokenizer has no unused single token among {candidates!r}")

    bos, eos, pad = tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id
    take([pad, " ", "  "])  # PAD (never used in sequences)
    take([bos, eos, "\n"])  # BOS
    take([" ->", " :", ":", " |"])  # SEP
    take([eos, ".", "\n\n"])  # EOS
    for text in (" =", " +", " -", " *"):
        take([text, text.strip()])
    words = [f" {c}" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"] + [f" {c}" for c in "abcdefghijklmnopqrstuvwxyz"]
    words += [f" {d}" for d in range(10)] + [f"{d}" for d in range(10)]
    words += [
        " the",
        " cat",
        " dog",
        " red",
        " blue",
        " sun",
        " tree",
        " car",
        " book",
        " fish",
        " bird",
        " hat",
        " cup",
        " box",
        " key",
        " map",
        " pen",
        " egg",
        " ice",
        " sea",
        " sky",
        " day",
        " war",
        " toy",
    ]
    for w in words:
        if len(out) == vocab_size:
            break
        tid = single(w)
        if tid is not None and tid not in used:
            used.add(tid)
            out.append(tid)
    tid = 1000  # then plain alphabetic tokens of the vocabulary, in id order
    while len(out) < vocab_size and tid < len(tokenizer):
        if tid not in used and tokenizer.decode([tid]).strip().isalpha():
            used.add(tid)
            out.append(tid)
        tid += 1
    if len(out) < vocab_size:
        raise ValueError(f"vocab_size {vocab_size} needs more single tokens than the tokenizer offers ({len(out)})")
    return np.asarray(out, dtype=np.int64)
