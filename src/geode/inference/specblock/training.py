r"""Drafter training for a user's own target: regenerate data with the target, fit a drafter, evaluate it.

The three steps after building a drafter (:class:`~geode.inference.specblock.SpecBlockDrafter`, or the
:class:`~geode.inference.specblock.EagleDrafter` and :class:`~geode.inference.specblock.ParallelDrafter`
baselines) on a Hugging Face causal LM:

1. :func:`make_drafter_data`: the target continues every prompt by ``gen_len`` tokens (batched, with a KV
   cache) and records, at every position :math:`i`, its feature :math:`f_i` (low, middle and high hidden
   layers concatenated, EAGLE-3 style) and its next-token distribution :math:`P_{i+1}`;
2. :func:`train_drafter`: AdamW on random windows (:math:`f_i`, tokens :math:`x_{i+1..i+1+j}`, distributions
   :math:`P_{i+1..i+j}`) with :func:`~geode.inference.specblock.drafter_loss`;
3. :func:`evaluate_drafter`: lossless speculative decoding of held-out prompts, merged
   :class:`~geode.inference.speculative.SpecStats` (acceptance length :math:`\tau`, modelled speed-up).

**Prompts of unequal length** are left-padded to the longest, with an attention mask and position ids
counted from each prompt's first token, so every prompt is continued as it would be alone (up to float
rounding); :attr:`DrafterData.starts` records where each sequence's real tokens begin, the padded positions
hold zeros, and :func:`train_drafter` draws windows only inside the real tokens. Prompts of one length run
unpadded, exactly as before padding existed.

**Large vocabularies** (the claim's ``full`` mode: SmolLM2-135M, 49 152 tokens): dense soft labels of shape
``(N, T, V)`` would need tens of GB, so :func:`make_drafter_data` with ``top_k`` keeps only the target's
``top_k`` next-token probabilities per position, renormalised over those ``top_k`` tokens, and
:meth:`DrafterData.windows` scatters them into dense ``(B, J, V)`` labels per training batch (a deliberate
difference from the release, which distils the full distribution; with ``top_k = 64`` the dropped tail holds
little mass for a pretrained LM, and the top-1 token, which the valid-prefix mask and the rank labels use, is
always kept). The target runs in chunks of sequences there, on its own device (CUDA when the claim has it).

``verbose=True`` shows a rich progress bar (on stderr) for the generation and for training.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch

from geode.core.validation import check_int, check_positive, check_tensor
from geode.inference.specblock.drafters import drafter_loss
from geode.inference.speculative import SpecStats, feature_layers, model_device, speculative_decode

__all__ = ["DrafterData", "evaluate_drafter", "make_drafter_data", "train_drafter"]


class DrafterData:
    """Target-regenerated sequences with the target's features and next-token distributions (drafter data).

    ``feats`` (N, T, F): the target feature at every position; ``toks`` (N, T); ``probs`` (N, T, V): the
    target's next-token distribution at every position (``probs[:, t]`` predicts ``toks[:, t + 1]``).

    Sparse form (large vocabularies): ``probs`` is ``None`` and ``top_p``/``top_i`` (N, T, k) hold the
    renormalised top-k probabilities and their token ids; :meth:`windows` densifies them per batch.

    ``starts`` (N,): the first real position of every sequence (left padding before it; zeros when no
    sequence is padded).
    """

    def __init__(
        self,
        feats: torch.Tensor,
        toks: torch.Tensor,
        probs: torch.Tensor | None,
        *,
        top_p: torch.Tensor | None = None,
        top_i: torch.Tensor | None = None,
        vocab_size: int | None = None,
        starts: torch.Tensor | None = None,
    ) -> None:
        if probs is None and (top_p is None or top_i is None or vocab_size is None):
            raise ValueError("probs: give dense probs, or top_p, top_i and vocab_size")
        check_tensor("toks", toks, ndim=2)
        if toks.is_floating_point():
            raise TypeError(f"toks must hold integer token ids; got dtype {toks.dtype}")
        n, t = toks.shape[:2]
        check_tensor("feats", feats, ndim=3, floating=True)
        if tuple(feats.shape[:2]) != (n, t):
            raise ValueError(f"feats must have shape ({n}, {t}, F) like toks; got {tuple(feats.shape)}")
        named = {"probs": probs} if probs is not None else {"top_p": top_p, "top_i": top_i}
        for name, value in named.items():
            check_tensor(name, value, ndim=3, floating=name != "top_i")
            if tuple(value.shape[:2]) != (n, t):
                raise ValueError(f"{name} must have shape ({n}, {t}, *) like toks; got {tuple(value.shape)}")
        if starts is None:
            starts = torch.zeros(n, dtype=torch.long)
        starts = torch.as_tensor(starts, dtype=torch.long)
        if tuple(starts.shape) != (n,) or bool((starts < 0).any()) or bool((starts >= t).any()):
            raise ValueError(f"starts: expected {n} first positions in [0, {t}); got shape {tuple(starts.shape)}")
        self.feats, self.toks, self.probs = feats, toks, probs
        self.top_p, self.top_i, self.vocab_size = top_p, top_i, vocab_size
        self.starts = starts

    def __len__(self) -> int:
        return int(self.toks.shape[0])

    def __repr__(self) -> str:
        n, t = self.toks.shape[:2]
        kind = "dense" if self.probs is not None else f"top-{self.top_p.shape[-1]} sparse"  # type: ignore[union-attr]
        padded = int((self.starts > 0).sum())
        return f"DrafterData({n} sequences x {t} positions, {kind} labels, {padded} left-padded)"

    def windows(self, idx_n: np.ndarray, idx_t: np.ndarray, j: int, device: Any = None) -> tuple[torch.Tensor, ...]:
        """Windows at (sequence, start) pairs: feature f_i, tokens x_{i+1..i+1+j}, distributions P_{i+1..i+j}.

        The sparse form densifies on ``device`` (default the CPU); the dense form ignores ``device``.
        """
        n = torch.from_numpy(idx_n)
        t = torch.from_numpy(idx_t)
        r = torch.arange(j + 1)
        toks = self.toks[n.unsqueeze(1), t.unsqueeze(1) + 1 + r]
        if self.probs is None:
            at = (n.unsqueeze(1), t.unsqueeze(1) + 1 + r[:-1])
            vals, idx = self.top_p[at].to(device), self.top_i[at].to(device)  # type: ignore[index]
            probs = torch.zeros(*idx.shape[:2], int(self.vocab_size), dtype=vals.dtype, device=device)  # type: ignore[arg-type]
            probs.scatter_(-1, idx, vals)
            return self.feats[n, t], toks, probs
        probs = self.probs[n.unsqueeze(1), t.unsqueeze(1) + 1 + r[:-1]]
        return self.feats[n, t], toks, probs


# ------------------------------------------------------------------------------------------------ progress
@contextlib.contextmanager
def _progress(verbose: bool, label: str, total: int, *, loss: bool = False) -> Iterator[Any]:
    """A rich progress bar on stderr when ``verbose`` (``advance(n, loss=...)``), else a no-op."""
    if not verbose:
        yield lambda n=1, **kw: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    cols: list[Any] = [TextColumn(f"[bold]{label}[/]"), BarColumn(), MofNCompleteColumn()]
    if loss:
        cols.append(TextColumn("loss {task.fields[loss]}"))
    cols += [TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn()]
    with Progress(*cols, console=Console(stderr=True)) as bar:
        task = bar.add_task(label, total=total, loss="-")

        def advance(n: int = 1, **fields: Any) -> None:
            bar.update(task, advance=n, **fields)

        yield advance


# ------------------------------------------------------------------------------------------------ data
def _check_prompts(prompts: Any, vocab: int) -> list[list[int]]:
    """Prompts as lists of ints; every problem raises naming ``prompts`` or ``prompts[i]``."""
    if isinstance(prompts, (str, bytes)) or not hasattr(prompts, "__len__"):
        raise TypeError(f"prompts: expected a sequence of token-id sequences; got {type(prompts).__name__}")
    if isinstance(prompts, (torch.Tensor, np.ndarray)):
        prompts = prompts.tolist()
    if len(prompts) == 0:
        raise ValueError("prompts: give at least one prompt")
    out = []
    for i, p in enumerate(prompts):
        if isinstance(p, (torch.Tensor, np.ndarray)):
            p = p.tolist()
        if isinstance(p, (str, bytes)) or not isinstance(p, Sequence):
            raise TypeError(f"prompts[{i}]: expected a sequence of token ids; got {type(p).__name__}")
        if len(p) == 0:
            raise ValueError(f"prompts[{i}]: a prompt needs at least one token")
        ids = []
        for x in p:
            if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
                raise TypeError(f"prompts[{i}]: token ids must be integers; got {x!r}")
            if not 0 <= int(x) < vocab:
                raise ValueError(f"prompts[{i}]: token {int(x)} is outside the target's vocabulary of {vocab}")
            ids.append(int(x))
        out.append(ids)
    return out


def _left_pad(prompts: list[list[int]], pad_id: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded ``(N, L)`` ids and the ``(N,)`` first real positions."""
    width = max(len(p) for p in prompts)
    starts = torch.tensor([width - len(p) for p in prompts], dtype=torch.long)
    x = torch.tensor([[pad_id] * (width - len(p)) + p for p in prompts], device=device)
    return x, starts


def _continue(
    target: Any, x: torch.Tensor, starts: torch.Tensor, gen_len: int, temperature: float, g: torch.Generator,
    advance: Any,
) -> Any:  # fmt: skip
    """Continue the rows of ``x`` by ``gen_len`` tokens; return (sequences, the full forward's output).

    Unpadded rows run exactly as plain batched generation; padded rows carry an attention mask and
    position ids counted from their first real token.
    """
    from transformers import DynamicCache

    dev = x.device
    padded = bool(starts.any())
    kw: dict[str, Any] = {}
    if padded:
        mask = (torch.arange(x.shape[1]).unsqueeze(0) >= starts.unsqueeze(1)).long().to(dev)
        pos = (mask.cumsum(-1) - 1).clamp_min(0)
        kw = {"attention_mask": mask, "position_ids": pos}
    cache = DynamicCache()
    seqs, inp = x, x
    for _ in range(gen_len):
        lg = target(input_ids=inp, cache=cache, use_cache=True, **kw).logits[:, -1].float()
        if temperature == 0:
            nxt = lg.argmax(-1, keepdim=True)
        else:
            pr = torch.softmax(lg / temperature, -1).cpu()
            nxt = torch.multinomial(pr, 1, generator=g).to(dev)
        seqs = torch.cat([seqs, nxt], 1)
        inp = nxt
        if padded:
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
            kw = {"attention_mask": mask, "position_ids": kw["position_ids"][:, -1:] + 1}
        advance(1)
    if padded:
        full = {"attention_mask": mask, "position_ids": (mask.cumsum(-1) - 1).clamp_min(0)}
    else:
        full = {}
    del cache
    return seqs, target(input_ids=seqs, output_hidden_states=True, **full)


def make_drafter_data(
    target: Any,
    prompts: Sequence[Sequence[int]],
    gen_len: int,
    *,
    temperature: float = 0.0,
    seed: int = 0,
    top_k: int | None = None,
    chunk: int = 64,
    pad_id: int | None = None,
    verbose: bool = False,
) -> DrafterData:
    """Let the target continue every prompt by ``gen_len`` tokens (batched, KV cache), then record its features.

    Parameters
    ----------
    target : HF causal LM (Llama-style, ``transformers`` 5.x)
        The model the drafter will serve.
    prompts : sequence of sequences of int
        Token ids; prompts of unequal length are left-padded (see the module docstring).
    gen_len : int
        New tokens per prompt (the training windows lie in the prompt and these tokens).
    temperature : float
        0 regenerates greedily (the decoding the claim evaluates); > 0 samples from the target.
    seed : int
        Seed of the sampling.
    top_k : int, optional
        Store the soft labels sparsely (top-``top_k`` renormalised), for large vocabularies; the target then
        runs on ``chunk`` sequences at a time, on its own device, and the stored data live on the CPU.
    chunk : int
        Sequences per target forward with ``top_k``.
    pad_id : int, optional
        Token id put in the padded positions (masked, never trained on); default the target's
        ``pad_token_id``, else 0.
    verbose : bool
        Show a progress bar (stderr).

    Returns
    -------
    DrafterData
        ``toks`` of shape ``(len(prompts), max prompt length + gen_len)``; ``starts`` where each begins.
    """
    gen_len = check_int("gen_len", gen_len, low=1)
    vocab = int(target.config.vocab_size)
    ps = _check_prompts(prompts, vocab)
    if pad_id is None:
        pad_id = getattr(target.config, "pad_token_id", None) or 0
    pad_id = check_int("pad_id", pad_id, low=0, high=vocab - 1)
    if top_k is not None:
        return _make_sparse_data(
            target, ps, gen_len, temperature, seed, check_int("top_k", top_k, low=1), chunk, pad_id, verbose
        )
    x, starts = _left_pad(ps, pad_id, None)
    g = torch.Generator().manual_seed(int(seed))
    with torch.no_grad(), _progress(verbose, "make_drafter_data", gen_len) as advance:
        seqs, out = _continue(target, x, starts, gen_len, temperature, g, advance)
    layers = feature_layers(int(target.config.num_hidden_layers))
    feats = torch.cat([out.hidden_states[i] for i in layers], dim=-1)
    probs = torch.softmax(out.logits.float(), -1)
    if starts.any():
        pad = torch.arange(seqs.shape[1]).unsqueeze(0) < starts.unsqueeze(1)
        feats, probs = feats.masked_fill(pad[..., None], 0.0), probs.masked_fill(pad[..., None], 0.0)
    return DrafterData(feats, seqs, probs, starts=starts)


def _make_sparse_data(
    target: Any,
    prompts: list[list[int]],
    gen_len: int,
    temperature: float,
    seed: int,
    top_k: int,
    chunk: int,
    pad_id: int,
    verbose: bool,
) -> DrafterData:
    chunk = check_int("chunk", chunk, low=1)
    dev = model_device(target)
    g = torch.Generator().manual_seed(int(seed))
    layers = feature_layers(int(target.config.num_hidden_layers))
    x_all, starts = _left_pad(prompts, pad_id, None)  # one width for every chunk
    feats, toks, top_p, top_i = [], [], [], []
    n_chunks = -(-len(prompts) // chunk)
    with _progress(verbose, "make_drafter_data", n_chunks * gen_len) as advance:
        for c0 in range(0, len(prompts), chunk):
            s = starts[c0 : c0 + chunk]
            cut = int(s.min())  # a chunk without padding runs exactly as unpadded batched generation
            x = x_all[c0 : c0 + chunk, cut:].to(dev)
            with torch.no_grad():
                seqs, out = _continue(target, x, s - cut, gen_len, temperature, g, advance)
                top = torch.softmax(out.logits.float(), -1).topk(min(top_k, out.logits.shape[-1]), dim=-1)
            f = torch.cat([out.hidden_states[i] for i in layers], dim=-1).float().cpu()
            tp = (top.values / top.values.sum(-1, keepdim=True)).cpu()
            ti = top.indices.cpu()
            seqs = seqs.cpu()
            if cut or s.any():
                pad = torch.arange(seqs.shape[1]).unsqueeze(0) < (s - cut).unsqueeze(1)
                f, tp = f.masked_fill(pad[..., None], 0.0), tp.masked_fill(pad[..., None], 0.0)
                if cut:  # back to the common width
                    f = torch.nn.functional.pad(f, (0, 0, cut, 0))
                    tp = torch.nn.functional.pad(tp, (0, 0, cut, 0))
                    ti = torch.nn.functional.pad(ti, (0, 0, cut, 0))
                    seqs = torch.nn.functional.pad(seqs, (cut, 0), value=pad_id)
            feats.append(f)
            toks.append(seqs)
            top_p.append(tp)
            top_i.append(ti)
            del out
    return DrafterData(
        torch.cat(feats),
        torch.cat(toks),
        None,
        top_p=torch.cat(top_p),
        top_i=torch.cat(top_i),
        vocab_size=int(target.config.vocab_size),
        starts=starts,
    )


# ------------------------------------------------------------------------------------------------ training
def train_drafter(
    drafter: torch.nn.Module,
    data: DrafterData,
    *,
    steps: int,
    lr: float,
    batch: int = 64,
    j: int = 8,
    seed: int = 0,
    verbose: bool = False,
    **loss_kw: Any,
) -> list[float]:
    """AdamW on random windows of ``data`` (``j`` future positions each); returns the loss of every step.

    Parameters
    ----------
    drafter : SpecBlockDrafter, EagleDrafter or ParallelDrafter
        Trained in place (its frozen token embedding excluded), then set to eval mode.
    data : DrafterData
        From :func:`make_drafter_data`; windows start only at real (unpadded) positions.
    steps : int
        Optimiser steps (0 leaves the drafter as it is).
    lr : float
        AdamW learning rate (no weight decay; gradient norm clipped at 1).
    batch : int
        Windows per step.
    j : int
        Future positions per window (every sequence needs at least ``j + 3`` real tokens).
    seed : int
        Seed of the window draws and of the loss's multi-block sampling.
    verbose : bool
        Show a progress bar with the running loss (stderr).
    **loss_kw
        Passed to :func:`~geode.inference.specblock.drafter_loss` (e.g. ``chain_mask=False``).
    """
    steps = check_int("steps", steps, low=0)
    check_positive("lr", lr)
    batch = check_int("batch", batch, low=1)
    j = check_int("j", j, low=1)
    rng = np.random.default_rng([seed, 23])
    gen = torch.Generator().manual_seed(int(seed))
    params = [p for p in drafter.parameters() if p.requires_grad]
    dev = params[0].device if params else torch.device("cpu")
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    n, t = data.toks.shape
    starts = data.starts.numpy()
    real = t - starts
    if int(real.min()) < j + 3:
        i = int(np.argmin(real))
        raise ValueError(
            f"data: sequence {i} has {int(real[i])} tokens, too short for windows of j={j} positions (it needs "
            f"j + 3); use a smaller j or a larger gen_len in make_drafter_data"
        )
    padded = bool(starts.any())
    drafter.train()
    losses: list[float] = []
    with _progress(verbose, "train_drafter", steps, loss=True) as advance:
        for _ in range(steps):
            ni = rng.integers(0, n, size=batch)
            if padded:  # windows begin at a real token: f_i of a real position
                ti = rng.integers(starts[ni], t - j - 1)
            else:  # (the draws of unpadded data, unchanged)
                ti = rng.integers(0, t - j - 1, size=batch)
            feat, toks, probs = (x.to(dev) for x in data.windows(ni, ti, j, device=dev))
            loss = drafter_loss(drafter, feat, toks, probs, generator=gen, **loss_kw)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            losses.append(float(loss.detach()))
            advance(1, loss=f"{np.mean(losses[-20:]):.3f}")
    drafter.eval()
    return losses


def evaluate_drafter(
    target: Any,
    drafter: Any,
    prompts: Sequence[Sequence[int]],
    max_new: int,
    budget: int,
    *,
    temperature: float = 0.0,
    seed: int = 0,
) -> tuple[SpecStats, list[list[int]]]:
    """Speculative decoding of every prompt; the merged statistics and the outputs.

    Prompt ``i`` decodes with the seed ``[seed, i]`` (sampling verification only); each needs at least two
    tokens. Greedy (``temperature=0``) outputs equal the target's greedy decoding token for token.
    """
    if isinstance(prompts, (str, bytes)) or not hasattr(prompts, "__len__"):
        raise TypeError(f"prompts: expected a sequence of token-id sequences; got {type(prompts).__name__}")
    if len(prompts) == 0:
        raise ValueError("prompts: give at least one prompt")
    st = SpecStats()
    outs = []
    for i, p in enumerate(prompts):
        out, s = speculative_decode(
            target, drafter, p, max_new, budget=budget, temperature=temperature, seed=[seed, i]
        )
        st.merge(s)
        outs.append(out)
    return st, outs
