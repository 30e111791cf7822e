"""Benchmark of MDA: one merge of K = 8 fine-tuned copies, against the merging baselines.

Two cases, each building everything inside the timed call so the peak memory covers the SVDs and the
optimiser state:

* the data-free stage (:func:`geode.ensembles.mda.mda_tensor` on every tensor: K truncated SVDs and two
  polar factors per matrix) against TIES and task arithmetic;
* the full merge with data (aligned task vectors, layer-wise coefficients, Cayley rotations, entropy + ETF
  loss, the same number of Adam steps) against layer-wise AdaMerging, the strongest baseline of the claim.

Sizes: ``smoke`` MLP 64-128-64 (the claim's backbone), ``quick`` 256-512-256, ``full`` 1024-2048-1024.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": (64, 128, 64, 5), "quick": (256, 512, 256, 20), "full": (1024, 2048, 1024, 50)}


def cases(size: str) -> list[BenchCase]:
    """Data-free MDA vs TIES / task arithmetic, and MDA with data vs AdaMerging, K = 8."""
    import copy

    import torch

    from geode.ensembles.mda import MDA
    from geode.ensembles.merging import LayerwiseMerger, task_arithmetic, task_vectors, ties_merge

    d_in, hidden, feat, steps = _SIZES[size]
    k = 8
    torch.manual_seed(0)
    base = torch.nn.Sequential(
        torch.nn.Linear(d_in, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, feat), torch.nn.ReLU()
    )
    fts = []
    for _ in range(k):
        m = copy.deepcopy(base)
        with torch.no_grad():
            for p in m.parameters():
                p.add_(0.02 * torch.randn_like(p))
        fts.append(m)
    heads = [torch.nn.Linear(feat, 10) for _ in range(k)]
    data = [torch.randn(128, d_in) for _ in range(k)]
    base_sd = {n: v.detach() for n, v in base.state_dict().items()}

    def ada() -> Any:
        return LayerwiseMerger(init=0.3, lr=1e-2, steps=steps).fit(base, base_sd, task_vectors(base, fts), heads, data)

    return [
        BenchCase(
            f"data-free merge of K={k} copies of MLP {d_in}-{hidden}-{feat}",
            candidate=lambda: MDA(lam=1.0).merge(base, fts),
            baselines={
                "TIES": lambda: ties_merge(base, fts, 0.2, 1.0),
                "task arithmetic": lambda: task_arithmetic(base, fts, 0.3),
            },
            differs={
                "*": (
                    "other merging methods (TIES, task arithmetic); they return a state dict, the candidate a "
                    "merged model"
                )
            },
        ),
        BenchCase(
            f"merge with data ({steps} Adam steps, 128 unlabeled inputs per task), K={k}, MLP {d_in}-{hidden}-{feat}",
            candidate=lambda: MDA(lam=0.5, steps=steps).merge(base, fts, data=data, heads=heads),
            baselines={"AdaMerging (layer-wise)": ada},
            differs={
                "*": (
                    "AdaMerging learns other merge coefficients; it returns a state dict, the candidate a merged model"
                )
            },
        ),
    ]
