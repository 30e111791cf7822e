"""Benchmark of COMPOSE: one training step (stage-2 loss, backward, AdamW) of the dual-graph model vs text only.

The candidate conditions the decoder on an 8-node citation graph and a 7-node formal graph (two GNNs, bridge,
fusion, cross-attention over 15 context vectors); the baselines are the text-only model (the same decoder
cross-attending to the anchor's single node) and the citation-graph-only model. Sizes are those of the claim
check: paper nodes 32-d, theorem nodes 21-d, claims of 7 tokens, decoder d=64 (``full``: d=128, batch 256).
A ratio below 1 is the cost of the second graph and the fusion.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": (8, 64), "quick": (64, 64), "full": (256, 128)}


def cases(size: str) -> list[BenchCase]:
    """One stage-2 training step of the dual-graph, text-only and citation-graph-only models."""
    import numpy as np
    import torch

    from geode.llm.compose.model import ComposeModel, batch_graphs

    b, d = _SIZES[size]
    rng = np.random.default_rng(0)

    def graphs(n: int, width: int) -> Any:
        xs = [rng.normal(size=(n, width)).astype(np.float32) for _ in range(b)]
        es = [np.array([(0, i) for i in range(1, n)] + [(i, i + 1) for i in range(1, n - 1)]) for _ in range(b)]
        return batch_graphs(xs, es)

    paper, formal = graphs(8, 32), graphs(7, 21)
    root = batch_graphs([paper.x[i, :1].numpy() for i in range(b)], [np.zeros((0, 2)) for _ in range(b)])
    tok = torch.as_tensor(rng.integers(3, 60, size=(b, 7)))
    tok[:, 0] = 1

    def make(use_formal: bool, text_only: bool) -> Any:
        torch.manual_seed(0)
        model = ComposeModel(32, 21, 64, use_formal=use_formal, formal_struct_dim=43, d_model=d, max_len=8)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        pg = root if text_only else paper
        fg = formal if use_formal else None

        def step() -> float:
            loss, _ = model.loss(tok, pg, fg, stage=2)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return float(loss.detach())

        return step

    return [
        BenchCase(
            f"one training step, batch {b}, 8 paper + 7 theorem nodes, decoder d={d}",
            candidate=make(True, False),
            baselines={"text only": make(False, True), "citation graph only": make(False, False)},
            differs={"*": "other inputs by design (text only, citation graph only)"},
        )
    ]
