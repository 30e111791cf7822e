r"""Self-speculative decoding by layer skipping, lossless under greedy decoding (paper ``spirit``).

The draft model is the target itself with a set :math:`S` of decoder layers skipped (their residual
update removed: :math:`h_{\ell+1} = h_\ell` for :math:`\ell \in S`). One *step* drafts :math:`k` tokens
greedily with the skipped model, then runs the full target once on the context plus the draft and accepts
the longest prefix on which the draft equals the target's argmax, plus the target's own next token:

.. math::

    a = \max\{j \le k : \hat x_i = \arg\max p_\theta(\cdot \mid x_{<i})\ \forall i \le j\},
    \qquad \text{emitted} = \hat x_{1..a},\ \arg\max p_\theta(\cdot \mid x_{\le a}).

Every emitted token is the target's greedy token, so the output equals plain greedy decoding token for
token (the tests check it), whatever :math:`S`; with :math:`S = \varnothing` every draft is accepted.

Cost model (the speed signal of the claim, deterministic on a shared CPU): a forward of the full target
costs 1 unit; a forward with :math:`|S|` of :math:`L` layers skipped costs
:math:`c_0 + (1 - c_0)(L - |S|)/L` with :math:`c_0` the layer-independent share (embedding, head,
framework overhead). Tokens per unit cost is the modeled throughput; plain greedy decoding has 1.

Inferred details (no public SPIRIT code): whole decoder layers are skipped, not attention and MLP
sub-layers separately as in SWIFT; the first and last layers are never skipped (as in SWIFT); no KV cache
(each forward re-reads the full context; the tiny models make this cheap, and the cost model is per forward).
Forwards run on the model's device (CUDA in the claim's full mode); token ids and argmaxes stay on the CPU.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from geode.core.validation import check_int, check_real

__all__ = ["DecodeStats", "greedy_decode", "self_speculative_decode", "skip_layers", "skippable_layers", "step_cost"]


def _layers(model: Any) -> Any:
    inner = getattr(model, "model", None)
    if inner is None or not hasattr(inner, "layers"):
        raise TypeError("model: expected a Hugging Face Llama-style causal LM with model.model.layers")
    return inner


def skippable_layers(model: Any) -> list[int]:
    """Indices of the layers that may be skipped: all but the first and the last."""
    n = len(_layers(model).layers)
    return list(range(1, n - 1))


@contextlib.contextmanager
def skip_layers(model: Any, skip: Sequence[int]) -> Iterator[Any]:
    """Context manager: inside it, ``model`` runs with the decoder layers in ``skip`` removed.

    SWIFT-style API (``with skip_layers(model, [2, 3]): model(ids)``). Raises ``ValueError`` naming
    ``skip`` when an index is out of range or repeated. An empty ``skip`` runs the full model.
    """
    import torch

    inner = _layers(model)
    layers = inner.layers
    n = len(layers)
    skip = [int(i) for i in skip]
    if len(set(skip)) != len(skip) or any(i < 0 or i >= n for i in skip):
        raise ValueError(f"skip: layer indices must be distinct and in [0, {n}); got {skip}")
    if not skip:
        yield model
        return
    drop = set(skip)
    inner.layers = torch.nn.ModuleList([m for i, m in enumerate(layers) if i not in drop])
    try:
        yield model
    finally:
        inner.layers = layers


def step_cost(n_layers: int, n_skipped: int, overhead: float = 0.1) -> float:
    """Cost of one forward with ``n_skipped`` of ``n_layers`` layers skipped, in full-forward units."""
    check_int("n_layers", n_layers, low=1)
    check_int("n_skipped", n_skipped, low=0, high=n_layers)
    check_real("overhead", overhead, low=0.0, high=1.0)
    return overhead + (1.0 - overhead) * (n_layers - n_skipped) / n_layers


@dataclass
class DecodeStats:
    """Counts of one decode: target forwards, draft forwards, accepted lengths per step, modeled cost.

    A plain record that the decoders fill in as they run: it stores what it is given without checking, and
    starts empty (no steps).
    """

    target_forwards: int = 0
    draft_forwards: int = 0
    accepted: list[int] = field(default_factory=list)
    drafted: int = 0
    cost: float = 0.0
    tokens: int = 0

    @property
    def speed(self) -> float:
        """Generated tokens per unit modeled cost (plain greedy: 1)."""
        return self.tokens / self.cost if self.cost > 0 else 0.0

    @property
    def acceptance(self) -> float:
        """Accepted draft tokens over drafted tokens."""
        return sum(self.accepted) / self.drafted if self.drafted else 1.0

    def __repr__(self) -> str:
        """A summary, not the per-step list (it stays in :attr:`accepted`)."""
        return (
            f"DecodeStats(tokens={self.tokens}, target_forwards={self.target_forwards}, "
            f"draft_forwards={self.draft_forwards}, acceptance={self.acceptance:.2f}, "
            f"speed={self.speed:.2f} (modelled))"
        )


def _argmax_all(model: Any, ids: Any) -> Any:
    import torch

    with torch.no_grad():  # ids are built on the CPU; the model may live on CUDA (full mode)
        dev = next(model.parameters()).device
        return model(input_ids=ids.to(dev), use_cache=False).logits[0].argmax(-1).cpu()


def greedy_decode(model: Any, prompt: Sequence[int], max_new: int, *, eos: int | None = None) -> list[int]:
    """Plain autoregressive greedy decoding (the lossless reference); returns the new tokens."""
    import torch

    max_new = check_int("max_new", max_new, low=1)
    ids = list(int(t) for t in prompt)
    if not ids:
        raise ValueError("prompt: must hold at least one token")
    out: list[int] = []
    model.eval()
    for _ in range(max_new):
        nxt = int(_argmax_all(model, torch.tensor([ids + out]))[-1])
        out.append(nxt)
        if eos is not None and nxt == eos:
            break
    return out


def self_speculative_decode(
    model: Any,
    prompt: Sequence[int],
    max_new: int,
    skip: Sequence[int],
    *,
    k: int = 4,
    eos: int | None = None,
    overhead: float = 0.1,
    draft_only: bool = False,
) -> tuple[list[int], DecodeStats]:
    """Greedy self-speculative decoding with the layers ``skip`` removed in the draft.

    Parameters
    ----------
    model : Llama-style HF causal LM
    prompt : sequence of int
    max_new : int
        Maximum new tokens (stops earlier at ``eos``).
    skip : sequence of int
        Layers skipped by the draft (empty: the draft is the full model and every draft token is accepted).
    k : int
        Draft length per step (>= 1).
    overhead : float
        Layer-independent share :math:`c_0` of a forward's cost.
    draft_only : bool
        Negative control: emit the draft without verification (not lossless).

    Returns
    -------
    tokens : list of int
    stats : DecodeStats
    """
    import torch

    max_new = check_int("max_new", max_new, low=1)
    k = check_int("k", k, low=1)
    n_layers = len(_layers(model).layers)
    ctx = [int(t) for t in prompt]
    if not ctx:
        raise ValueError("prompt: must hold at least one token")
    model.eval()
    st = DecodeStats()
    c_draft = step_cost(n_layers, len(skip), overhead)
    out: list[int] = []
    while len(out) < max_new and not (eos is not None and out and out[-1] == eos):
        kk = min(k, max_new - len(out))
        draft: list[int] = []
        with skip_layers(model, skip):
            for _ in range(kk):
                t = int(_argmax_all(model, torch.tensor([ctx + out + draft]))[-1])
                draft.append(t)
                st.draft_forwards += 1
                st.cost += c_draft
                if eos is not None and t == eos:
                    break
        if draft_only:
            out.extend(draft)
            continue
        pred = _argmax_all(model, torch.tensor([ctx + out + draft]))
        st.target_forwards += 1
        st.cost += 1.0
        base = len(ctx) + len(out) - 1
        a = 0
        while a < len(draft) and int(pred[base + a]) == draft[a]:
            a += 1
        st.accepted.append(a)
        st.drafted += len(draft)
        new = draft[:a] + [int(pred[base + a])]
        if eos is not None and eos in new:
            new = new[: new.index(eos) + 1]
        out.extend(new[: max_new - len(out)])
    st.tokens = len(out)
    return out, st
