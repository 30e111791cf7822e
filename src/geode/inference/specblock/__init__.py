"""SpecBlock: block-iterative speculative drafting (paper ``specblock``, Shi et al., arXiv 2605.07243).

Claim: a drafter that produces K dependent positions per forward (a *block*), carries path dependence with
a layer-wise shift inside a block and hidden-state inheritance across blocks, allocates branching with a
co-trained rank head and is trained with a valid-prefix loss mask, beats an EAGLE-3-style autoregressive
drafter in speculative-decoding speed-up (+8-13 %) at 44-52 % of its drafting cost; a cost-aware bandit
updating the drafter at deployment extends the lead.

* :mod:`~geode.inference.specblock.drafters`: :class:`SpecBlockDrafter`, the EAGLE-like
  :class:`EagleDrafter` and Medusa-like :class:`ParallelDrafter` baselines, tree construction within a
  verification budget (:func:`prune_tree`), and the training loss :func:`drafter_loss` (valid-prefix mask,
  multi-block training-time test, rank loss);
* :mod:`~geode.inference.specblock.bandit`: :class:`CostAwareBandit`, deployment-time update decisions;
* :mod:`~geode.inference.specblock.training`: drafter training for your own target: :func:`make_drafter_data`
  (the target regenerates continuations of your prompts, of any lengths, and records its features and
  next-token distributions; :class:`DrafterData`), :func:`train_drafter` (AdamW on the drafter loss, with
  ``verbose=True`` progress) and :func:`evaluate_drafter` (lossless speculative decoding, merged statistics);
* :mod:`~geode.inference.specblock.experiment`: the claim's test bed (a char-level tiny Llama target on
  CPython's documentation; in ``full`` mode the pretrained SmolLM2-135M-Instruct on the same text, with
  sparse top-k soft labels).

The speculative-decoding core (draft trees, lossless greedy and sampling tree verification, KV cache,
acceptance statistics, the cost model) is field-level: :mod:`geode.inference.speculative`.

Inferred details and deliberate differences from the authors' code (``shiweijiezero/SpecBlock``), each
also stated where it is implemented:

* decoder layers are residual MLP blocks with causal attention across one block's slots, not Llama layers
  attending over the context (the target feature summarises it); width = the target's;
* within a block, slots see no drafted tokens (one input token per block, as in the release's training);
  slot 0's shift input is zeros; the shift projections start at the identity on the slot's own state;
* no reduced draft vocabulary (``d2t``); the token embedding is copied from the target and frozen, the LM
  head initialised from the target's and trained;
* rank head hidden width 64 (release: 256); one training phase with the rank loss from the start (the
  release warms up with single blocks first); 2 training-time-test blocks (release: 3); the rank loss keeps
  the release's four components (rank chain mask, frequency reweighting, asymmetric ordinal smoothing,
  distance weight);
* tree construction: each round expands at most ``beam`` pending block starts in one batched call, for
  at most ``max_blocks`` rounds, then every drafter's tree is cut to the budget by path log-probability
  (EAGLE-2's reranking); the root block always keeps its top-1 slot-0 token;
* the cost-aware bandit is not in the release; its form (UCB on the saving per token, update iff the
  bound times the remaining tokens exceeds the update cost) is ours;
* speed-ups are modeled by :class:`geode.inference.speculative.SpecCostModel` (weights read per call at
  the paper's Llama-3.1-8B scale), not measured on the CPU.

Examples
--------
>>> import torch
>>> from geode.inference import SpecBlockDrafter, autoregressive_decode, make_drafter_data, speculative_decode
>>> from geode.inference import train_drafter
>>> from geode.models import build_tiny_lm
>>> _ = torch.manual_seed(0)
>>> target = build_tiny_lm(32, d_model=32, n_layers=2, seed=0).eval()   # any Llama-style HF causal LM
>>> data = make_drafter_data(target, [[1, 2, 3], [4, 5, 6, 7, 8]], gen_len=24)   # prompts of any lengths
>>> data
DrafterData(2 sequences x 29 positions, dense labels, 1 left-padded)
>>> drafter = SpecBlockDrafter(target, k=4)                            # blocks of K = 4 dependent positions
>>> losses = train_drafter(drafter, data, steps=20, lr=3e-3, batch=8)  # verbose=True shows progress
>>> out, stats = speculative_decode(target, drafter, [1, 2, 3], 16, budget=8)
>>> out == autoregressive_decode(target, [1, 2, 3], 16)               # lossless: the target's greedy output
True
>>> stats                                                             # doctest: +ELLIPSIS
SpecStats(iterations=..., tokens=16, acceptance_length=..., speedup=... (modelled), ...)
"""

from __future__ import annotations

from geode.inference.specblock.bandit import CostAwareBandit
from geode.inference.specblock.drafters import (
    BRANCH_WIDTHS,
    EagleDrafter,
    ParallelDrafter,
    SpecBlockDrafter,
    drafter_loss,
    prune_tree,
    rank_buckets,
    rank_features,
)
from geode.inference.specblock.training import DrafterData, evaluate_drafter, make_drafter_data, train_drafter

__all__ = [
    "BRANCH_WIDTHS",
    "CostAwareBandit",
    "DrafterData",
    "EagleDrafter",
    "ParallelDrafter",
    "SpecBlockDrafter",
    "drafter_loss",
    "evaluate_drafter",
    "make_drafter_data",
    "prune_tree",
    "rank_buckets",
    "rank_features",
    "train_drafter",
]
