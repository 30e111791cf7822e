r"""The synthetic agreement language, a 2-layer transformer, and the checkpoint-series driver.

*Language* (research notes, made concrete here; inferred): a sequence is
``BOS subj d_1 ... d_m verb``. ``subj`` is one of ``n_nouns`` singular or ``n_nouns`` plural nouns (number
drawn fairly); each distractor slot holds one of ``n_distractors`` filler words, except that with
probability ``p_attractor`` one slot (uniform) holds a noun of the *opposite* number (an attractor); the
verb is one of ``n_lemmas`` lemmas drawn uniformly, in the form agreeing with the subject's number. The
model is trained on the next-token loss over every position.

*Behaviour* :math:`B`: the mean minimal-pair probability of the agreeing form at the verb-prediction
position, :math:`p(v_{\text{correct}}) / (p(v_{\text{correct}}) + p(v_{\text{wrong}}))` for the sequence's
lemma (0.5 at chance).

*Concept*: subject number, probed at the verb-prediction position (the last distractor token).

:func:`engagement_series` is the checkpoint-series driver: at each checkpoint and layer it records the
engagement :math:`E` (the AGOP over every position of the evaluation sequences against the probe
subspace), the same with the AGOP restricted to the verb-prediction position, the principal-angle
alignment, the engagement of a fixed random direction and of a probe fitted to shuffled labels (negative
controls), the AGOP trace (gradient-norm baseline), the probe's validation accuracy and :math:`B`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from geode.analysis.agop_engagement.engagement import (
    agop,
    concept_subspace,
    engagement,
    next_token_loss,
    subspace_alignment,
)
from geode.core.validation import check_int, check_probability

__all__ = [
    "AgreementLanguage",
    "Series",
    "TinyTransformer",
    "engagement_series",
    "make_sets",
    "measure_series",
    "train_checkpoints",
]


@dataclass(frozen=True)
class AgreementLanguage:
    """Subject-verb agreement with distractors and attractors (see the module docstring)."""

    n_nouns: int = 8
    n_lemmas: int = 4
    n_distractors: int = 16
    n_slots: int = 4
    p_attractor: float = 0.5

    def __post_init__(self) -> None:
        for name in ("n_nouns", "n_lemmas", "n_distractors", "n_slots"):
            check_int(name, getattr(self, name), low=1)
        check_probability("p_attractor", self.p_attractor)

    @property
    def vocab_size(self) -> int:
        return 1 + 2 * self.n_nouns + 2 * self.n_lemmas + self.n_distractors

    @property
    def length(self) -> int:
        return 2 + self.n_slots + 1

    def verb_id(self, lemma: np.ndarray, plural: np.ndarray) -> np.ndarray:
        return 1 + 2 * self.n_nouns + 2 * lemma + plural

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ids (n, length), plural (n,), lemma (n,))``."""
        n = check_int("n", n, low=1)
        plural = rng.integers(0, 2, n)
        subj = 1 + plural * self.n_nouns + rng.integers(0, self.n_nouns, n)
        base = 1 + 2 * self.n_nouns + 2 * self.n_lemmas
        slots = base + rng.integers(0, self.n_distractors, (n, self.n_slots))
        att = rng.random(n) < self.p_attractor
        where = rng.integers(0, self.n_slots, n)
        att_noun = 1 + (1 - plural) * self.n_nouns + rng.integers(0, self.n_nouns, n)
        slots[att, where[att]] = att_noun[att]
        lemma = rng.integers(0, self.n_lemmas, n)
        ids = np.concatenate([np.zeros((n, 1), int), subj[:, None], slots, self.verb_id(lemma, plural)[:, None]], 1)
        return ids, plural, lemma


def _torch_modules() -> Any:
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Block(nn.Module):
        """Pre-LN transformer block; its output is the residual stream."""

        def __init__(self, d: int, heads: int) -> None:
            super().__init__()
            self.heads = heads
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
            return x + self.mlp(self.ln2(x))

    return torch, nn, Block


def _check_ids(ids: Any, vocab_size: int, length: int) -> None:
    import torch

    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"ids must be a torch tensor of token ids; got {type(ids).__name__}")
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(f"ids must be an integer tensor of token ids; got {ids.dtype}")
    if ids.ndim != 2 or ids.shape[1] > length:
        raise ValueError(f"ids must have shape (batch, T) with T <= {length}; got shape {tuple(ids.shape)}")
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(
            f"ids must lie in [0, {vocab_size - 1}] (vocab_size); got values in [{int(ids.min())}, {int(ids.max())}]"
        )


def TinyTransformer(
    vocab_size: int, length: int, *, d: int = 64, n_layers: int = 2, heads: int = 2, seed: int = 0
) -> Any:
    """A causal pre-LN transformer (learned positions, untied unembedding); layers are ``blocks.<i>``.

    Parameters
    ----------
    vocab_size, length : int
        Vocabulary and the longest sequence.
    d, n_layers, heads : int
        Width (divisible by ``heads``), depth, attention heads.
    seed : int
        Seed of the initialisation (the global torch RNG is restored afterwards).
    """
    torch, nn, Block = _torch_modules()
    vocab_size = check_int("vocab_size", vocab_size, low=1)
    length = check_int("length", length, low=1)
    d = check_int("d", d, low=1)
    heads = check_int("heads", heads, low=1)
    if d % heads:
        raise ValueError(f"d ({d}) must be divisible by heads ({heads})")

    class _TinyTransformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab_size, d)
            self.pos = nn.Parameter(0.02 * torch.randn(length, d))
            self.blocks = nn.ModuleList(Block(d, heads) for _ in range(check_int("n_layers", n_layers, low=1)))
            self.ln_f = nn.LayerNorm(d)
            self.unembed = nn.Linear(d, vocab_size, bias=False)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            """Logits ``(B, T, vocab_size)`` of token ids ``(B, T)``.

            Ids are integers in ``[0, vocab_size)`` and ``T <= length``.
            """
            _check_ids(ids, vocab_size, length)
            x = self.embed(ids) + self.pos[: ids.shape[1]]
            for blk in self.blocks:
                x = blk(x)
            return self.unembed(self.ln_f(x))

    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = _TinyTransformer()
    finally:
        torch.random.set_rng_state(state)
    return model


@dataclass
class Series:
    """Per-checkpoint records of :func:`train_series` (arrays over checkpoints; per-layer dicts)."""

    steps: list[int]
    behaviour: np.ndarray
    layers: list[str]
    e: dict[str, np.ndarray] = field(default_factory=dict)
    e_verb: dict[str, np.ndarray] = field(default_factory=dict)
    align: dict[str, np.ndarray] = field(default_factory=dict)
    e_random: dict[str, np.ndarray] = field(default_factory=dict)
    e_shuffled: dict[str, np.ndarray] = field(default_factory=dict)
    grad_norm: dict[str, np.ndarray] = field(default_factory=dict)
    probe_acc: dict[str, np.ndarray] = field(default_factory=dict)
    shuffled_acc: dict[str, np.ndarray] = field(default_factory=dict)


def behaviour(model: Any, ids: Any, plural: np.ndarray, lemma: np.ndarray, lang: AgreementLanguage) -> float:
    """Mean minimal-pair probability of the agreeing verb form at the verb-prediction position."""
    import torch

    with torch.no_grad():
        logp = torch.log_softmax(model(ids)[:, -2].double(), -1).numpy()
    rows = np.arange(len(plural))
    good = logp[rows, lang.verb_id(lemma, plural)]
    bad = logp[rows, lang.verb_id(lemma, 1 - plural)]
    return float(np.mean(1.0 / (1.0 + np.exp(bad - good))))


def _features(model: Any, ids: Any, layer: int) -> np.ndarray:
    import torch

    store: dict[str, Any] = {}
    h = model.blocks[layer].register_forward_hook(lambda _m, _i, o: store.__setitem__("h", o))
    try:
        with torch.no_grad():
            model(ids)
    finally:
        h.remove()
    return store["h"][:, -2].double().numpy()


def engagement_series(
    model: Any,
    lang: AgreementLanguage,
    eval_set: tuple[Any, np.ndarray, np.ndarray],
    probe_set: tuple[Any, np.ndarray, np.ndarray],
    *,
    C: dict[str, float],
    C_shuffled: dict[str, float],
    seed: int,
) -> dict[str, Any]:
    """Measurements of one checkpoint for every block (see the module docstring)."""
    ids_e, plural_e, lemma_e = eval_set
    ids_p, plural_p, _ = probe_set
    n_tr = len(plural_p) // 2
    shuffled = shuffled_labels(plural_p, seed)
    out: dict[str, Any] = {"behaviour": behaviour(model, ids_e, plural_e, lemma_e, lang)}
    d = model.embed.embedding_dim
    rand_dir = np.random.default_rng(80_000 + seed).standard_normal((d, 1))
    for i in range(len(model.blocks)):
        name = f"blocks.{i}"
        feats = _features(model, ids_p, i)
        u, probe = concept_subspace(feats[:n_tr], plural_p[:n_tr], 1, C=C[name], return_probe=True)
        u_s, probe_s = concept_subspace(feats[:n_tr], shuffled[:n_tr], 1, C=C_shuffled[name], return_probe=True)
        g_all = agop(model, ids_e, name)
        g_verb = agop(model, ids_e, name, positions=-2)
        out[name] = dict(
            e=engagement(g_all, u),
            e_verb=engagement(g_verb, u),
            align=subspace_alignment(g_all, u),
            e_random=engagement(g_all, rand_dir),
            e_shuffled=engagement(g_all, u_s),
            grad_norm=float(np.trace(g_all.numpy())),
            probe_acc=float(probe.score(feats[n_tr:], plural_p[n_tr:])),
            shuffled_acc=float(probe_s.score(feats[n_tr:], shuffled[n_tr:])),
        )
    return out


def checkpoint_steps(steps: int, n: int) -> list[int]:
    """``n`` checkpoint steps from 0 to ``steps``, log-spaced (as Pythia's early checkpoints), unique."""
    steps = check_int("steps", steps, low=1)
    n = check_int("n", n, low=2)
    out = sorted({0, *np.unique(np.round(np.geomspace(1, steps, n - 1)).astype(int)).tolist()})
    k = 1
    while len(out) < n and k < steps:  # fill to n with the smallest unused steps
        if k not in out:
            out.append(k)
            out.sort()
        k += 1
    return out[:n]


def train_checkpoints(
    lang: AgreementLanguage,
    *,
    seed: int,
    steps: int,
    n_checkpoints: int,
    lr: float,
    batch: int = 64,
    d: int = 64,
    n_layers: int = 2,
    heads: int = 2,
    weight_decay: float = 0.01,
) -> tuple[Any, list[int], list[dict[str, Any]], float]:
    """Train :class:`TinyTransformer` with AdamW on fresh batches; ``(model, steps, state_dicts, last_loss)``."""
    import copy

    import torch

    data_rng = np.random.default_rng(10_000 + seed)
    model = TinyTransformer(lang.vocab_size, lang.length, d=d, n_layers=n_layers, heads=heads, seed=seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    ckpts = checkpoint_steps(steps, n_checkpoints)
    states: list[dict[str, Any]] = []
    loss_v = float("nan")
    for step in range(steps + 1):
        if step in ckpts:
            states.append(copy.deepcopy(model.state_dict()))
        if step == steps:
            break
        ids = torch.as_tensor(lang.sample(batch, data_rng)[0])
        loss = next_token_loss(model(ids), ids) / (ids.shape[0] * (ids.shape[1] - 1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_v = float(loss.detach())
    return model, ckpts, states, loss_v


def measure_series(
    model: Any,
    ckpts: list[int],
    states: list[dict[str, Any]],
    lang: AgreementLanguage,
    eval_set: tuple[Any, np.ndarray, np.ndarray],
    probe_set: tuple[Any, np.ndarray, np.ndarray],
    *,
    C: dict[str, float],
    C_shuffled: dict[str, float],
    seed: int,
) -> Series:
    """Load each checkpoint into ``model`` and record :func:`engagement_series` (``C`` per layer name)."""
    layers = [f"blocks.{i}" for i in range(len(model.blocks))]
    recs = []
    for st in states:
        model.load_state_dict(st)
        recs.append(engagement_series(model, lang, eval_set, probe_set, C=C, C_shuffled=C_shuffled, seed=seed))
    s = Series(list(ckpts), np.array([r["behaviour"] for r in recs]), layers)
    for key in ("e", "e_verb", "align", "e_random", "e_shuffled", "grad_norm", "probe_acc", "shuffled_acc"):
        getattr(s, key).update({lay: np.array([r[lay][key] for r in recs]) for lay in layers})
    return s


def make_sets(lang: AgreementLanguage, n_eval: int, n_probe: int, seed: int) -> tuple[Any, Any]:
    """Evaluation sequences (AGOP and behaviour) and probe sequences (first half train, second validation)."""
    import torch

    rng = np.random.default_rng(seed)
    ev = lang.sample(n_eval, rng)
    pr = lang.sample(n_probe, rng)
    return (torch.as_tensor(ev[0]), ev[1], ev[2]), (torch.as_tensor(pr[0]), pr[1], pr[2])


def shuffled_labels(labels: np.ndarray, seed: int) -> np.ndarray:
    """The negative control's probe labels: a fixed permutation of ``labels``."""
    return np.random.default_rng(90_000 + seed).permutation(labels)
