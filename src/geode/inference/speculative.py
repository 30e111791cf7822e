r"""Speculative decoding core: draft trees, lossless tree verification (greedy and sampling), KV cache, statistics.

A *draft tree* holds a root (the last committed token, whose target distribution is not yet known) and
draft nodes; every node's token continues its parent's path. One decoding *iteration* runs the target once
on the tree's tokens with tree attention (each node sees the committed context and its own ancestors,
positions ``n_ctx - 1 + depth``), then walks the tree from the root:

* **greedy** (temperature 0): from node :math:`u` the target's token is :math:`t = \arg\max p_u`; if a child
  of :math:`u` carries :math:`t`, accept it and continue there, else stop and emit :math:`t` (the *bonus*
  token). Every emitted token is the target's argmax given the committed prefix, so the output equals
  greedy autoregressive decoding token for token.
* **sampling** (multi-candidate speculative sampling, SpecInfer / EAGLE): at node :math:`u` with target
  distribution :math:`p` and children :math:`c_1, \dots, c_m` visited in order,

  .. math::

      a_i = \min\Big(1, \frac{p_i(c_i)}{q_i(c_i)}\Big), \qquad
      p_{i+1} = \frac{\max(p_i - q_i, 0)}{\lVert \max(p_i - q_i, 0) \rVert_1}, \qquad p_1 = p,

  where :math:`q_i` is the proposal that produced :math:`c_i`. With i.i.d. proposals
  :math:`c_i \sim q` (``q_i = q``) this is SpecInfer's rule; with deterministic candidates (a top-k tree,
  what EAGLE-2/3 and SpecBlock build) the proposal is the point mass :math:`q_i = \delta_{c_i}`, so
  :math:`a_i = p_i(c_i)` and :math:`p_{i+1}` is :math:`p_i` with :math:`c_i` removed. If every child is
  rejected the bonus token is drawn from the last residual. Either way the emitted token is distributed
  exactly as :math:`p` (:func:`acceptance_probs` returns the outcome probabilities; the tests check
  :math:`\sum_i P(\text{accept } c_i)\,\delta_{c_i} + P(\text{reject all})\,p_{m+1} = p` and the joint
  law of whole emitted sequences by exact enumeration on a toy vocabulary).

KV cache: :class:`TargetSession` keeps a Hugging Face ``DynamicCache`` of the committed tokens except the
last one (the next tree's root); after verification it keeps the entries of the accepted path and drops
the rejected branches (a gather along the sequence axis of every layer). Tree attention is an additive 4-D
mask with explicit position ids; tested on HF Llama (the tiny LMs of :mod:`geode.models` and SmolLM2's
architecture), ``transformers`` 5.x ``DynamicCache`` (``cache.layers[i].keys``).

Devices: the session, :func:`speculative_decode` and :func:`autoregressive_decode` create their tensors on
the target's device (:func:`model_device`), so a CUDA target works as a CPU one does; drafters receive the
target feature on that device.

Not moved from :mod:`geode.inference.spirit`: its decoding is chain-only, cache-free and tied to layer
skipping; this module is the general core, and SPIRIT is left as it is.

Acceptance statistics (:class:`SpecStats`): the acceptance length :math:`\tau` (tokens emitted per target
forward, accepted draft tokens + 1), drafter calls and modeled drafter cost per iteration.

Cost model (:class:`SpecCostModel`; speed on a shared CPU is not representative of the GPU regime the
papers measure, so speed-ups are *modeled*): one target forward of the committed context plus a tree of
:math:`n` tokens costs :math:`1 + \kappa (n - 1)` target-forward units (batch-1 decoding is
memory-bound, extra query tokens are nearly free; :math:`\kappa = 0.004` by default, so a 16-node tree
costs 1.06); one drafter call (a batched forward of any number of tree nodes) with :math:`\ell` decoder
layers costs :math:`c_0 + \ell\, c_\ell`. Batch-1 decoding is memory-bound, so a forward costs about the
weights it reads; at the papers' deployment (Llama-3.1-8B, about 7.5 G weights without embeddings) a decoder
layer is about 218 M weights, :math:`c_\ell = 0.029`, and a drafter's LM head over a 32 k draft vocabulary
about 134 M, :math:`c_0 = 0.018` (a first guess :math:`c_0 = 0.01` was replaced by this derivation before
any claim run).
The modeled speed-up over autoregressive decoding (1 token per unit) is

.. math::

    S = \frac{\sum_t \tau_t}{\sum_t \big(1 + \kappa (n_t - 1) + C_{\text{draft},t}\big)}.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from geode.core.validation import check_array, check_int, check_real

__all__ = [
    "DraftTree",
    "Drafter",
    "SpecCostModel",
    "SpecStats",
    "TargetSession",
    "acceptance_probs",
    "autoregressive_decode",
    "check_budget",
    "check_vocab",
    "feature_layers",
    "model_device",
    "speculative_decode",
    "verify_greedy",
    "verify_sampling",
]


def check_budget(budget: Any, name: str = "budget") -> int:
    """Validate a draft budget (number of draft nodes per iteration): an int >= 1."""
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)):
        raise TypeError(f"{name}: draft budget must be an int >= 1; got {budget!r}")
    if int(budget) <= 0:
        raise ValueError(f"{name}: draft budget must be >= 1 (a tree needs at least one draft node); got {budget}")
    return int(budget)


def check_vocab(drafter_vocab: int, target_vocab: int) -> None:
    """Raise ``ValueError`` when the drafter's and the target's vocabularies differ (mismatched tokenizers)."""
    if int(drafter_vocab) != int(target_vocab):
        raise ValueError(
            f"drafter vocabulary ({drafter_vocab}) does not match the target's ({target_vocab}): drafter and target "
            "must share one tokenizer (map a reduced draft vocabulary to the target's ids before verification)"
        )


def feature_layers(n_layers: int) -> tuple[int, int, int]:
    """Indices into HF ``hidden_states`` of the low, middle and high layers a drafter conditions on (EAGLE-3)."""
    n_layers = check_int("n_layers", n_layers, low=1)
    return (1, max(1, n_layers // 2), n_layers)


# ---------------------------------------------------------------------------------------------- draft tree
@dataclass
class DraftTree:
    """A draft tree: node 0 is the root (the last committed token); nodes 1.. are draft tokens.

    ``proposals[i]`` is, optionally, the proposal distribution that produced node ``i``'s token (needed by
    sampling verification only for i.i.d. drafted children; None means a deterministic candidate).
    """

    tokens: list[int]
    parents: list[int] = field(default_factory=lambda: [-1])
    depths: list[int] = field(default_factory=lambda: [0])
    scores: list[float] = field(default_factory=lambda: [0.0])
    proposals: list[Any] = field(default_factory=lambda: [None])

    def __post_init__(self) -> None:
        n = len(self.tokens)
        if n == 0:
            raise ValueError("tokens must hold at least the root token")
        for name in ("parents", "depths", "scores", "proposals"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} must have one entry per node ({n}); got {len(getattr(self, name))}")
        if self.parents[0] != -1 or any(not 0 <= int(p) < i for i, p in enumerate(self.parents[1:], 1)):
            raise ValueError("parents must be -1 for the root and an earlier node's index for every other node")
        if any(math.isnan(float(x)) or float(x) == math.inf for x in self.scores):
            raise ValueError("scores must be path log-probabilities (not NaN nor +inf)")

    @classmethod
    def root(cls, token: int) -> DraftTree:
        """A tree holding only the root ``token``."""
        return cls(tokens=[int(token)])

    def add(self, parent: int, token: int, score: float = 0.0, proposal: Any = None) -> int:
        """Add a child of ``parent`` carrying ``token`` (``score``: its path log-probability); returns its index."""
        if not 0 <= parent < len(self.tokens):
            raise ValueError(f"parent: must index an existing node in [0, {len(self.tokens)}); got {parent}")
        self.tokens.append(int(token))
        self.parents.append(int(parent))
        self.depths.append(self.depths[parent] + 1)
        self.scores.append(float(score))
        self.proposals.append(proposal)
        return len(self.tokens) - 1

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def n_draft(self) -> int:
        """Draft nodes (all but the root)."""
        return len(self.tokens) - 1

    def children(self, node: int) -> list[int]:
        """Children of ``node`` in insertion order."""
        return [i for i, p in enumerate(self.parents) if p == node]

    def path(self, node: int) -> list[int]:
        """Node indices from the root to ``node`` inclusive."""
        out = []
        while node >= 0:
            out.append(node)
            node = self.parents[node]
        return out[::-1]

    def ancestor_mask(self) -> np.ndarray:
        """Boolean ``(n, n)`` matrix: entry ``(i, j)`` is True when ``j`` is ``i`` or one of its ancestors."""
        n = len(self.tokens)
        m = np.zeros((n, n), dtype=bool)
        for i in range(n):
            m[i] = m[self.parents[i]] if self.parents[i] >= 0 else False
            m[i, i] = True
        return m

    def max_depth(self) -> int:
        """Depth of the deepest node (0 for a root-only tree)."""
        return max(self.depths)


# ---------------------------------------------------------------------------------------------- verification
def verify_greedy(tree: DraftTree, target_argmax: Sequence[int]) -> tuple[list[int], int]:
    """Greedy tree verification: the accepted path (node indices from the root) and the bonus token.

    ``target_argmax[i]`` is the target's argmax next token after node ``i``'s path.
    """
    if len(target_argmax) != len(tree):
        raise ValueError(f"target_argmax: need one entry per tree node ({len(tree)}); got {len(target_argmax)}")
    node, path = 0, [0]
    while True:
        t = int(target_argmax[node])
        nxt = [c for c in tree.children(node) if tree.tokens[c] == t]
        if not nxt:
            return path, t
        node = nxt[0]
        path.append(node)


def acceptance_probs(
    p: np.ndarray, candidates: Sequence[int], proposals: Sequence[Any] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Outcome probabilities of multi-candidate speculative sampling at one node.

    Parameters
    ----------
    p : ndarray, shape (V,)
        Target distribution at the node.
    candidates : sequence of int
        The children's tokens, in visiting order.
    proposals : sequence of (ndarray or None), optional
        Proposal distribution of each candidate; None (or a None entry) means a deterministic candidate
        (point mass).

    Returns
    -------
    accept : ndarray, shape (m,)
        Probability that candidate ``i`` is the accepted one (given the candidates).
    residual : ndarray, shape (V,)
        Distribution of the bonus token when all are rejected (``p`` itself when ``m = 0``).
        ``accept.sum() + P(reject all) = 1``; the token emitted is distributed as ``p`` (tested).
    """
    r = check_array("p", p, ndim=1).copy()
    if np.any(r < -1e-12) or not np.isclose(r.sum(), 1.0, atol=1e-6):
        raise ValueError("p: must be a probability vector (1-D, non-negative, summing to 1)")
    r = np.clip(r, 0.0, None)
    r /= r.sum()
    m = len(candidates)
    for i, c in enumerate(candidates):
        if isinstance(c, bool) or not isinstance(c, numbers.Integral):
            raise TypeError(f"candidates[{i}] must be an integer token id; got {type(c).__name__} {c!r}")
        if not 0 <= int(c) < r.shape[0]:
            raise ValueError(f"candidates[{i}] = {int(c)} is not a token of p (vocabulary size {r.shape[0]})")
    props = list(proposals) if proposals is not None else [None] * m
    if len(props) != m:
        raise ValueError(f"proposals: need one per candidate ({m}); got {len(props)}")
    for i, q in enumerate(props):
        if q is not None:
            check_array(f"proposals[{i}]", q, shape=(r.shape[0],))
    accept = np.zeros(m)
    alive = 1.0
    for i, (c, q) in enumerate(zip(candidates, props)):
        if q is None:
            q = np.zeros_like(r)
            q[int(c)] = 1.0
        q = np.asarray(q, dtype=np.float64)
        qc = q[int(c)]
        a = 1.0 if qc <= 0 else min(1.0, r[int(c)] / qc)
        accept[i] = alive * a
        alive *= 1.0 - a
        if alive <= 1e-15:
            alive = 0.0
            break
        res = np.clip(r - q, 0.0, None)
        s = res.sum()
        r = res / s if s > 1e-15 else r
    return accept, r


def verify_sampling(tree: DraftTree, target_probs: np.ndarray, rng: np.random.Generator) -> tuple[list[int], int]:
    """Lossless sampling verification of a draft tree (recursive multi-candidate rejection sampling).

    ``target_probs[i]`` is the target's (temperature-scaled) next-token distribution after node ``i``.
    Returns the accepted path (node indices from the root) and the bonus token drawn from the target's
    residual. Node proposals (``tree.proposals``) select SpecInfer's i.i.d. rule or the deterministic one.
    """
    target_probs = check_array("target_probs", target_probs)
    if target_probs.ndim != 2 or target_probs.shape[0] != len(tree):
        raise ValueError(f"target_probs: need shape (n_nodes={len(tree)}, V); got {target_probs.shape}")
    if np.any(target_probs < -1e-12) or not np.allclose(target_probs.sum(1), 1.0, atol=1e-6):
        raise ValueError("target_probs: every row must be a probability vector (non-negative, summing to 1)")
    node, path = 0, [0]
    while True:
        kids = tree.children(node)
        accept, residual = acceptance_probs(
            target_probs[node], [tree.tokens[c] for c in kids], [tree.proposals[c] for c in kids]
        )
        u = rng.random()
        cum = np.cumsum(accept)
        hit = int(np.searchsorted(cum, u, side="right"))
        if hit < len(kids):
            node = kids[hit]
            path.append(node)
            continue
        return path, int(rng.choice(len(residual), p=residual))


# ---------------------------------------------------------------------------------------------- target + cache
def model_device(model: Any) -> Any:
    """The device of ``model``'s first parameter (CPU for a model without parameters)."""
    import torch

    p = next(iter(model.parameters()), None)
    return p.device if p is not None else torch.device("cpu")


def _forward(model: Any, ids: Any, cache: Any, mask: Any = None, pos: Any = None) -> Any:
    return model(
        input_ids=ids, cache=cache, use_cache=True, attention_mask=mask, position_ids=pos, output_hidden_states=True
    )


class TargetSession:
    """A target HF causal LM with a KV cache of the committed tokens, verifying draft trees.

    Parameters
    ----------
    model : transformers causal LM (Llama-style; must accept 4-D additive attention masks)
    prompt : sequence of int
        At least one token. The cache holds every committed token but the last, which is the next root.
    layers : tuple of int, optional
        ``hidden_states`` indices concatenated into the drafter's feature (default :func:`feature_layers`).
    """

    def __init__(self, model: Any, prompt: Sequence[int], layers: Sequence[int] | None = None) -> None:
        import torch
        from transformers import DynamicCache

        self.model = model
        self.device = model_device(model)
        self.tokens = [int(t) for t in prompt]
        if not self.tokens:
            raise ValueError("prompt: must hold at least one token")
        n_layers = int(model.config.num_hidden_layers)
        self.layers = tuple(layers) if layers is not None else feature_layers(n_layers)
        self.cache = DynamicCache()
        self.vocab_size = int(model.config.vocab_size)
        self.features = None  # target feature of the last cached position (None before any)
        if len(self.tokens) > 1:
            with torch.no_grad():
                out = _forward(model, torch.tensor([self.tokens[:-1]], device=self.device), self.cache)
            self.features = self._feat(out)[-1]

    def _feat(self, out: Any) -> Any:
        import torch

        return torch.cat([out.hidden_states[i][0] for i in self.layers], dim=-1)

    @property
    def n_cached(self) -> int:
        """Tokens in the KV cache (committed tokens but the last)."""
        return len(self.tokens) - 1

    def verify_forward(self, tree: DraftTree) -> tuple[Any, Any]:
        """Run the target on the tree's tokens (tree attention); returns logits ``(n, V)`` and features ``(n, F)``."""
        import torch

        if tree.tokens[0] != self.tokens[-1]:
            raise ValueError("tree: its root must be the last committed token")
        n, past = len(tree), self.n_cached
        allow = np.ones((n, past + n), dtype=bool)
        allow[:, past:] = tree.ancestor_mask()
        mask = torch.zeros(1, 1, n, past + n)
        mask[0, 0][torch.from_numpy(~allow)] = torch.finfo(torch.float32).min
        pos = torch.tensor([[past + d for d in tree.depths]], device=self.device)
        mask = mask.to(self.device)
        with torch.no_grad():
            out = _forward(self.model, torch.tensor([tree.tokens], device=self.device), self.cache, mask, pos)
        return out.logits[0], self._feat(out)

    def commit(self, tree: DraftTree, path: Sequence[int], bonus: int) -> None:
        """Keep the cache entries of the accepted ``path`` (root first), drop the rest, append the tokens."""
        import torch

        past = self.n_cached
        keep = torch.tensor(list(range(past)) + [past + i for i in path], device=self.device)
        for layer in self.cache.layers:
            layer.keys = layer.keys.index_select(2, keep)
            layer.values = layer.values.index_select(2, keep)
        self.tokens.extend(tree.tokens[i] for i in path[1:])
        self.tokens.append(int(bonus))


class Drafter(Protocol):
    """What :func:`speculative_decode` needs of a drafter."""

    vocab_size: int

    def build_tree(self, feature: Any, token: int, budget: int) -> tuple[DraftTree, int, float]:
        """Draft from the target feature of the last verified position and the root token.

        Returns the tree, the number of drafter calls (batched forwards) and their modeled cost.
        """
        ...


# ---------------------------------------------------------------------------------------------- stats, cost
@dataclass(frozen=True)
class SpecCostModel:
    """Modeled costs in target-forward units (see the module docstring for the reasoning)."""

    layer_cost: float = 0.029  # c_l: one drafter decoder layer (218 M of 7.5 G weights)
    call_overhead: float = 0.018  # c_0: the drafter's LM head (32 k x 4096 weights)
    verify_token_cost: float = 0.004  # kappa: each extra tree token in the verification forward

    def __post_init__(self) -> None:
        for name in ("layer_cost", "call_overhead", "verify_token_cost"):
            check_real(name, getattr(self, name), low=0.0)

    def call(self, n_layers: int) -> float:
        """Cost of one drafter call with ``n_layers`` decoder layers."""
        return self.call_overhead + self.layer_cost * n_layers

    def verify(self, n_tree: int) -> float:
        """Cost of one verification forward of a tree of ``n_tree`` tokens (root included)."""
        return 1.0 + self.verify_token_cost * max(0, n_tree - 1)


@dataclass
class SpecStats:
    """Acceptance statistics of speculative decoding; one entry per iteration.

    Its ``repr`` is a summary: iterations, tokens, the mean acceptance length :math:`\\tau`, the modelled
    speed-up (:attr:`speedup`), drafter calls and drafting cost per iteration. A plain record that
    :func:`speculative_decode` fills in: it stores what it is given without checking, and starts empty.
    """

    accepted: list[int] = field(default_factory=list)  # accepted draft tokens (tau - 1)
    tree_sizes: list[int] = field(default_factory=list)  # draft nodes
    calls: list[int] = field(default_factory=list)  # drafter calls
    draft_cost: list[float] = field(default_factory=list)  # modeled drafter cost
    verify_cost: list[float] = field(default_factory=list)
    tokens: int = 0

    def merge(self, other: SpecStats) -> SpecStats:
        """In place: append ``other``'s iterations; returns self."""
        for name in ("accepted", "tree_sizes", "calls", "draft_cost", "verify_cost"):
            getattr(self, name).extend(getattr(other, name))
        self.tokens += other.tokens
        return self

    @property
    def iterations(self) -> int:
        return len(self.accepted)

    @property
    def acceptance_length(self) -> float:
        """Mean tokens emitted per target forward, :math:`\\tau` (accepted + bonus)."""
        return float(np.mean(self.accepted)) + 1.0 if self.accepted else 0.0

    @property
    def calls_per_iteration(self) -> float:
        return float(np.mean(self.calls)) if self.calls else 0.0

    @property
    def draft_cost_per_iteration(self) -> float:
        return float(np.mean(self.draft_cost)) if self.draft_cost else 0.0

    @property
    def speedup(self) -> float:
        """Modeled speed-up over autoregressive decoding: emitted tokens over modeled cost."""
        cost = float(np.sum(self.verify_cost) + np.sum(self.draft_cost))
        return float(np.sum(self.accepted) + len(self.accepted)) / cost if cost > 0 else 0.0

    def __repr__(self) -> str:
        """A summary, not the per-iteration lists (they stay in the attributes)."""
        return (
            f"SpecStats(iterations={self.iterations}, tokens={self.tokens}, "
            f"acceptance_length={self.acceptance_length:.2f}, speedup={self.speedup:.2f} (modelled), "
            f"calls_per_iteration={self.calls_per_iteration:.2f}, "
            f"draft_cost_per_iteration={self.draft_cost_per_iteration:.3f})"
        )


# ---------------------------------------------------------------------------------------------- decoding
def _probs(logits: Any, temperature: float) -> np.ndarray:
    import torch

    p = torch.softmax(logits.double() / temperature, dim=-1).cpu().numpy()
    return p / p.sum(-1, keepdims=True)


def speculative_decode(
    target: Any,
    drafter: Drafter,
    prompt: Sequence[int],
    max_new: int,
    *,
    budget: int = 16,
    temperature: float = 0.0,
    seed: int | np.random.Generator = 0,
    eos: int | None = None,
    cost: SpecCostModel | None = None,
) -> tuple[list[int], SpecStats]:
    """Speculative decoding of ``max_new`` tokens with a tree drafter; lossless for the target.

    Parameters
    ----------
    target : HF causal LM
    drafter : Drafter
        Builds a draft tree of at most ``budget`` draft nodes from the target feature and the root token.
    prompt : sequence of int
        At least two tokens (the drafter conditions on the target feature of the last cached position).
    max_new : int
    budget : int
        Draft nodes per iteration, the verification budget (>= 1).
    temperature : float
        0 for greedy verification, > 0 for sampling verification of the temperature-scaled target.
    seed : int or Generator
        Randomness of sampling verification.
    eos : int, optional
        Stop after emitting it.
    cost : SpecCostModel, optional

    Returns
    -------
    tokens : list of int
        The new tokens (at most ``max_new``).
    stats : SpecStats
    """
    import torch

    max_new = check_int("max_new", max_new, low=1)
    budget = check_budget(budget)
    check_real("temperature", temperature, low=0.0)
    check_vocab(drafter.vocab_size, target.config.vocab_size)
    if len(prompt) < 2:
        raise ValueError("prompt: speculative decoding needs at least two prompt tokens")
    rng = np.random.default_rng(seed)
    cm = cost or SpecCostModel()
    target.eval()
    sess = TargetSession(target, list(prompt)[:-1] + [int(prompt[-1])])
    st = SpecStats()
    start = len(sess.tokens)
    # the first root: the prompt's last token; its target feature is that of the position before it
    feat = sess.features
    while len(sess.tokens) - start < max_new:
        with torch.no_grad():
            tree, calls, dcost = drafter.build_tree(feat, sess.tokens[-1], budget)
        if tree.n_draft > budget:
            raise RuntimeError(f"drafter built {tree.n_draft} draft nodes over the budget {budget}")
        logits, feats = sess.verify_forward(tree)
        if temperature == 0:
            path, bonus = verify_greedy(tree, logits.argmax(-1).tolist())
        else:
            path, bonus = verify_sampling(tree, _probs(logits, temperature), rng)
        sess.commit(tree, path, bonus)
        feat = feats[path[-1]]
        st.accepted.append(len(path) - 1)
        st.tree_sizes.append(tree.n_draft)
        st.calls.append(int(calls))
        st.draft_cost.append(float(dcost))
        st.verify_cost.append(cm.verify(len(tree)))
        if eos is not None and eos in sess.tokens[start:]:
            break
    new = sess.tokens[start:]
    if eos is not None and eos in new:
        new = new[: new.index(eos) + 1]
    new = new[:max_new]
    st.tokens = len(new)
    return new, st


def autoregressive_decode(
    target: Any,
    prompt: Sequence[int],
    max_new: int,
    *,
    temperature: float = 0.0,
    seed: int | np.random.Generator = 0,
    eos: int | None = None,
) -> list[int]:
    """Autoregressive decoding with a KV cache (the reference speculative decoding must reproduce)."""
    import torch
    from transformers import DynamicCache

    max_new = check_int("max_new", max_new, low=1)
    check_real("temperature", temperature, low=0.0)
    ids = [int(t) for t in prompt]
    if not ids:
        raise ValueError("prompt: must hold at least one token")
    rng = np.random.default_rng(seed)
    target.eval()
    cache = DynamicCache()
    dev = model_device(target)
    out: list[int] = []
    x = torch.tensor([ids], device=dev)
    for _ in range(max_new):
        with torch.no_grad():
            logits = target(input_ids=x, cache=cache, use_cache=True).logits[0, -1]
        if temperature == 0:
            t = int(logits.argmax())
        else:
            p = _probs(logits, temperature)
            t = int(rng.choice(len(p), p=p))
        out.append(t)
        if eos is not None and t == eos:
            break
        x = torch.tensor([[t]], device=dev)
    return out
