"""Set-up of the claim check: an addition task, two different in-process BPE tokenizers, tiny LMs, and the
SFT / ULD / BLDA student trainers with greedy exact-match evaluation.

Experiment helpers only (not re-exported by the field): the components are in ``projection`` and ``loss``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from geode.llm.bytedistill.loss import blda_from_byte_probs, uld_loss
from geode.llm.bytedistill.projection import BytePath, ByteVocab, byte_distributions

METHODS = ("sft", "uld", "blda")


# ----------------------------------------------------------------------------------------------- task
def addition_problems(n_max: int, seed: int) -> np.ndarray:
    """All pairs (a, b) with ``0 <= a, b < n_max`` in a seeded random order: shape (n_max**2, 2)."""
    a, b = np.meshgrid(np.arange(n_max), np.arange(n_max), indexing="ij")
    pairs = np.stack([a.ravel(), b.ravel()], 1)
    return pairs[np.random.default_rng(seed).permutation(len(pairs))]


def prompt_text(a: int, b: int) -> str:
    return f"{a}+{b}="


def answer_text(a: int, b: int) -> str:
    return f"{a + b}\n"


# ------------------------------------------------------------------------------------------ tokenizers
def train_bpe(texts: list[str], vocab_size: int, *, kind: str) -> Any:
    """A byte-level BPE trained in-process (``tokenizers``), lossless on any text.

    ``kind="regex"``: GPT-2's pre-tokenizer (digit runs, punctuation and newlines are separate pieces), the
    teacher's. ``kind="prompt"``: pieces are cut only after ``=`` (so merges span ``+`` and join digits with
    ``+`` and the newline), the student's: the two tokenizers segment the same text differently.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    if kind == "regex":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    elif kind == "digits":
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Digits(individual_digits=True),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
            ]
        )
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex("="), behavior="merged_with_previous"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


@dataclass
class Side:
    """One model's tokenizer view: the byte vocabulary plus a BOS id appended after the tokenizer's ids."""

    vocab: ByteVocab  # includes the BOS id (no bytes)
    bos: int

    @classmethod
    def from_tokenizer(cls, tok: Any, *, bos: int | None = None) -> Side:
        """The tokenizer's byte vocabulary; ``bos=None`` appends a new BOS id, else uses the given special id."""
        from geode.llm.bytedistill.projection import tokenizer_vocab_bytes

        tb = tokenizer_vocab_bytes(tok)
        if bos is None:
            return cls(ByteVocab([*tb, b""], tokenizer=tok), len(tb))
        return cls(ByteVocab(tb, tokenizer=tok), int(bos))

    @property
    def model_vocab(self) -> int:
        return self.vocab.size

    def encode(self, text: str) -> list[int]:
        return self.vocab.encode(text).token_ids.tolist()


@dataclass
class Example:
    """One problem as seen by one side: its path, the answer's first token and byte."""

    ids: list[int]
    path: BytePath
    answer_token: int  # index of the first answer token in ``ids``
    answer_byte: int  # byte offset of the answer


def make_example(side: Side, a: int, b: int, *, inner: str = "renormalize") -> Example:
    p, ans = prompt_text(a, b), answer_text(a, b)
    path = side.vocab.encode(p + ans, inner=inner)
    cut = len(p.encode())
    k = int(np.searchsorted(path.offsets, cut))
    if path.offsets[k] != cut:
        raise ValueError(f"the prompt {p!r} does not end on a token boundary of this tokenizer")
    return Example(path.token_ids.tolist(), path, k, cut)


# -------------------------------------------------------------------------------------------- models
def _batch_ids(side: Side, exs: list[Example]) -> Any:
    import torch

    T = max(len(e.ids) for e in exs) + 1
    out = torch.full((len(exs), T), side.bos, dtype=torch.long)
    for i, e in enumerate(exs):
        out[i, 1 : 1 + len(e.ids)] = torch.tensor(e.ids)
    return out


def step_logits(model: Any, side: Side, exs: list[Example]) -> Any:
    """Logits (B, T, V) with ``[i, k]`` predicting token ``k`` of example ``i`` (input ``[BOS] + ids``)."""
    return model(input_ids=_batch_ids(side, exs).to(model.device)).logits[:, :-1]


def answer_ce(logits: Any, exs: list[Example]) -> Any:
    """Mean token cross-entropy over the answer tokens of the batch."""
    import torch

    rows, tgt = [], []
    for i, e in enumerate(exs):
        for k in range(e.answer_token, len(e.ids)):
            rows.append((i, k))
            tgt.append(e.ids[k])
    idx = torch.tensor(rows)
    return torch.nn.functional.cross_entropy(logits[idx[:, 0], idx[:, 1]], torch.tensor(tgt, device=logits.device))


def train_teacher(model: Any, side: Side, exs: list[Example], *, steps: int, batch: int, lr: float, seed: int) -> None:
    import torch

    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50) * max(0.05, 1 - s / steps))
    model.train()
    for _ in range(steps):
        b = [exs[i] for i in rng.integers(0, len(exs), batch)]
        loss = answer_ce(step_logits(model, side, b), b)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()


@dataclass
class TeacherTargets:
    """What the student's distillation losses need from the teacher, per training example."""

    byte_probs: list[Any]  # (answer bytes, 256) next-byte distributions
    token_probs: list[Any]  # (answer tokens, V_teacher) token distributions (ULD)


def teacher_targets(
    model: Any, side: Side, exs: list[Example], *, temperature: float = 1.0, chunk: int = 256
) -> TeacherTargets:
    """Teacher byte and token distributions on the answer of every example (computed once, off-policy)."""
    import torch

    model.eval()
    bp, tp = [], []
    with torch.no_grad():
        for s in range(0, len(exs), chunk):
            part = exs[s : s + chunk]
            lg = step_logits(model, side, part) / temperature
            probs = byte_distributions(lg, [e.path for e in part], side.vocab)
            off = 0
            for i, e in enumerate(part):
                bp.append(probs[off + e.answer_byte : off + e.path.n_bytes].float().cpu())
                tp.append(torch.softmax(lg[i, e.answer_token : len(e.ids)], -1).cpu())
                off += e.path.n_bytes
    model.train()
    return TeacherTargets(bp, tp)


def train_student(
    model: Any,
    side: Side,
    exs: list[Example],
    targets: TeacherTargets | None,
    *,
    method: str,
    steps: int,
    batch: int,
    lr: float,
    kd_weight: float,
    temperature: float,
    seed: int,
    ce_weight: float = 1.0,
) -> list[float]:
    """Train a student with SFT (answer CE), CE + kd_weight * ULD, or CE + kd_weight * BLDA; returns losses.

    ``ce_weight`` scales the cross-entropy term (0 with a distillation method: distillation alone).
    """
    import torch

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 20) * max(0.05, 1 - s / steps))
    model.train()
    losses = []
    for _ in range(steps):
        pick = rng.integers(0, len(exs), batch)
        b = [exs[i] for i in pick]
        lg = step_logits(model, side, b)
        loss = ce_weight * answer_ce(lg, b)
        if method == "uld":
            s_rows, t_rows = [], []
            for i, (j, e) in enumerate(zip(pick, b)):
                tpj = targets.token_probs[j]
                n = min(len(e.ids) - e.answer_token, tpj.shape[0])  # ULD: index alignment, truncated
                s_rows.append(lg[i, e.answer_token : e.answer_token + n])
                t_rows.append(tpj[:n])
            loss = loss + kd_weight * uld_loss(
                torch.cat(t_rows).to(lg.device), torch.cat(s_rows), temperature=temperature
            )
        elif method == "blda":
            slog = byte_distributions(lg / temperature, [e.path for e in b], side.vocab, log=True)
            mask = np.concatenate([np.arange(e.path.n_bytes) >= e.answer_byte for e in b])
            t = torch.zeros(len(mask), 256, dtype=torch.float64)
            t[torch.from_numpy(mask)] = torch.cat([targets.byte_probs[j] for j in pick]).double()
            kd = (
                blda_from_byte_probs(t.to(slog.device), slog, mask=torch.from_numpy(mask).to(slog.device))
                * temperature**2
            )
            loss = loss + kd_weight * kd
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    return losses


def greedy_exact_match(model: Any, side: Side, pairs: np.ndarray, *, max_new: int = 6) -> float:
    """Fraction of problems whose greedy continuation of ``a+b=`` decodes to exactly ``(a+b)`` then a newline."""
    import torch

    model.eval()
    prompts = [side.encode(prompt_text(int(a), int(b))) for a, b in pairs]
    want = [answer_text(int(a), int(b)).encode() for a, b in pairs]
    by_len: dict[int, list[int]] = {}
    for i, p in enumerate(prompts):
        by_len.setdefault(len(p), []).append(i)
    correct = 0
    tb = side.vocab.token_bytes
    with torch.no_grad():
        for idx in by_len.values():
            ids = torch.tensor([[side.bos, *prompts[i]] for i in idx], device=model.device)
            out = [b""] * len(idx)
            done = np.zeros(len(idx), dtype=bool)
            for _ in range(max_new):
                lg = model(input_ids=ids).logits[:, -1]
                lg[:, side.bos] = -torch.inf
                nxt = lg.argmax(-1)
                for r, t in enumerate(nxt.tolist()):
                    if not done[r]:
                        out[r] += tb[t]
                        done[r] = b"\n" in out[r]
                if done.all():
                    break
                ids = torch.cat([ids, nxt[:, None]], 1)
            for r, i in enumerate(idx):
                got = out[r].split(b"\n")[0] + b"\n" if b"\n" in out[r] else out[r]
                correct += got == want[i]
    model.train()
    return correct / len(pairs)
