r"""COMPOSE: dual-graph conditioning for grounded future mathematical claim generation.

Paper: "COMPOSE: dual-graph future mathematical claim generation" (Busbib & Werman, arXiv 2605.30333; code
``david-busbib/COMPOSE``, whose data are not released).

**Claim (checked by** ``geode reproduce compose`` **).** Conditioning a claim generator on both an anchor
paper's citation graph and its aligned formal theorem-dependency graph retrieves the true future claim better
than conditioning on either graph alone (the paper: H@10 0.750 vs 0.510 formal-graph only and 0.075
paper-graph only).

**Components.** :class:`ComposeModel` (two :class:`GraphEncoder` s over :class:`SimpleGNN`, a
:class:`BridgeProjection`, type embeddings, the zero-initialised bidirectional :class:`FusionCrossAttention`,
graph dropout, attention pooling, and a :class:`GraphConditionedDecoder` with ``tanh``-gated cross-attention;
``loss`` implements stage 1 and stage 2, ``generate`` greedy decoding), :func:`batch_graphs` /
:class:`GraphBatch`, :func:`info_nce`; the synthetic universe (:func:`generate_universe`,
:func:`claim_pool`, :func:`oracle_claim`, :func:`tfidf_svd`) and retrieval metrics (:class:`ClaimRetriever`,
:func:`recall_at_k`, :func:`mean_reciprocal_rank`).

**Inferred (the paper's text is not available to us beyond its abstract and the release).** The whole
synthetic universe and its claim template; TF-IDF + SVD embeddings instead of E5 / DeepSeek-Math; a 2-layer
from-scratch decoder (d=64) instead of DeepSeek-Math-7B with LoRA; one learning rate for all parameter groups
(the release uses group-specific rates); retrieval ties broken in expectation over a random order.

**Deliberate differences from the authors' code** (details in :mod:`geode.llm.compose.model`): a
``tanh(g)``, ``g = 0`` decoder gate (the release: ``sigmoid(g)`` = 0.5 with Q/O copied from pretrained
self-attention), so the model equals the decoder alone at initialisation; cross-attention in every decoder
layer; no LoRA; loss weights 0.1 / 0.05 of the release's docstring rather than the 0.5 / 0.2 constants of its
training loop, without its graph-margin and generated-text alignment terms; the cross InfoNCE pairs the pooled
citation-graph and formal-graph encodings of an anchor; stage 1 without the link-prediction term; a learned
root embedding marks each graph's root; the release's ``gf_only`` ablation script zeroes all graph context
(``--no_graph``), ours keeps the formal graph.

**What the check found (quick mode, 3 seeds): reproduced**, in a universe designed to need both graphs.
Test recall@10 of COMPOSE 0.729 / 0.667 / 0.896 against 0.094 / 0.135 / 0.073 with the citation graph only and
0.083 / 0.073 / 0.167 with the formal graph only (95% bounds of the margins +0.41 and +0.54); shuffling either
graph at test time drops COMPOSE to the single-graph level (the negative controls fail). But the strongest
baseline is both graphs **without** fusion (concatenation, 0.896 / 0.875 / 0.927), above COMPOSE in every
seed: the zero-initialised fusion did not help at this scale, unlike the paper's ablation (0.195 without
fusion). Stage 1 matters (0.292 / 0.167 / 0.031 without it). Details and floors: ``claim.py``.

Examples
--------
Condition a claim decoder on an anchor's citation graph (node width 8) and its formal dependency graph (width
6); edges ``(u, v)`` read "u cites / depends on v".

>>> import torch
>>> from geode.llm import ComposeModel, batch_graphs
>>> g = torch.Generator().manual_seed(0)
>>> paper = batch_graphs([torch.randn(3, 8, generator=g), torch.randn(2, 8, generator=g)],
...                      [[(0, 1), (0, 2)], [(0, 1)]])
>>> formal = batch_graphs([torch.randn(2, 6, generator=g), torch.randn(4, 6, generator=g)],
...                       [[(0, 1)], [(0, 1), (1, 2), (1, 3)]])
>>> _ = torch.manual_seed(0)
>>> model = ComposeModel(8, 6, vocab_size=12, d_model=32, struct_dim=16, formal_struct_dim=18, fusion_heads=4,
...                      max_len=8)
>>> claims = torch.tensor([[1, 5, 6, 7, 2], [1, 8, 9, 2, 0]])  # BOS claim EOS, padded with 0
>>> model.eval()(claims, paper, formal).shape  # next-token logits
torch.Size([2, 5, 12])

The decoder's cross-attention gates start at ``tanh(0) = 0``: at initialisation the model is the decoder alone,
whatever the graphs say.

>>> other = batch_graphs([torch.zeros(1, 8), torch.zeros(1, 8)], [[], []])
>>> torch.equal(model(claims, paper, formal), model(claims, other, formal))
True
>>> opt = torch.optim.AdamW(model.train().parameters(), lr=3e-3)
>>> for _ in range(12):  # stage 2: cross-entropy + InfoNCE terms
...     loss, parts = model.loss(claims, paper, formal)
...     opt.zero_grad()
...     loss.backward()
...     opt.step()
>>> sorted(parts), parts["ce"] < 1.0
(['ce', 'contrastive', 'cross', 'total'], True)
>>> model.eval().generate(paper, formal, bos=1, eos=2, max_new=6).shape[0]
2
"""

from __future__ import annotations

from geode.llm.compose.model import (
    BridgeProjection,
    ComposeModel,
    FusionCrossAttention,
    GraphBatch,
    GraphConditionedDecoder,
    GraphEncoder,
    SimpleGNN,
    batch_graphs,
    info_nce,
)
from geode.llm.compose.retrieval import ClaimRetriever, mean_reciprocal_rank, rank_counts, recall_at_k
from geode.llm.compose.universe import Anchor, MathUniverse, claim_pool, generate_universe, oracle_claim, tfidf_svd

__all__ = [
    "Anchor",
    "BridgeProjection",
    "ClaimRetriever",
    "ComposeModel",
    "FusionCrossAttention",
    "GraphBatch",
    "GraphConditionedDecoder",
    "GraphEncoder",
    "MathUniverse",
    "SimpleGNN",
    "batch_graphs",
    "claim_pool",
    "generate_universe",
    "info_nce",
    "mean_reciprocal_rank",
    "oracle_claim",
    "rank_counts",
    "recall_at_k",
    "tfidf_svd",
]
