"""Benchmark of MSA: comparing two networks on a manifold, against the extrinsic measures.

Every side compares the same two random two-layer tanh MLPs on ``n`` points of the claim's embedded 2-D
manifold, forward passes included. The candidate is exact MSA (pullback metrics of both networks by
batched Jacobians, then :func:`~geode.analysis.msa.msa_from_metrics`); the baselines are linear CKA
(the strongest and cheapest extrinsic measure), RSA (n x n RDMs) and MSA from samples (kNN regression on
the coordinates, no Jacobians). Sizes: ``smoke`` n = 200, width 64; ``quick`` n = 2,000, width 512;
``full`` n = 10,000, width 512.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": (200, 64), "quick": (2000, 512), "full": (10000, 512)}


def cases(size: str) -> list[BenchCase]:
    """Exact MSA vs linear CKA, RSA and sample MSA on two networks."""
    import numpy as np
    import torch

    from geode.analysis.msa import msa_distance, msa_from_metrics
    from geode.analysis.msa.experiment import _random_mlp, make_embedding
    from geode.analysis.pullback import pullback_metric
    from geode.analysis.similarity import linear_cka, rsa

    n, width = _SIZES[size]
    embed = make_embedding(0)
    z = torch.as_tensor(np.random.default_rng(0).uniform(-1, 1, size=(n, 2)))
    fa, fb = _random_mlp(20, width, 1), _random_mlp(20, width, 2)

    def a(zz: Any) -> Any:
        return fa(embed(zz))

    def b(zz: Any) -> Any:
        return fb(embed(zz))

    def reps() -> tuple[Any, Any]:
        with torch.no_grad():
            return a(z).numpy(), b(z).numpy()

    def exact() -> float:
        return float(msa_from_metrics(pullback_metric(a, z), pullback_metric(b, z)))

    def cka() -> float:
        return linear_cka(*reps())

    def rsa_() -> float:
        return rsa(*reps())

    def samples() -> float:
        return float(msa_distance(*reps(), z.numpy()))

    return [
        BenchCase(
            f"compare two tanh MLPs (width {width}) on {n} points of a 2-D manifold",
            candidate=exact,
            baselines={"linear CKA": cka, "RSA": rsa_, "MSA from samples": samples},
            differs={
                "*": (
                    "other similarity indices (CKA, RSA) and a Monte Carlo estimate of MSA from samples, not the "
                    "exact MSA"
                )
            },
        )
    ]
