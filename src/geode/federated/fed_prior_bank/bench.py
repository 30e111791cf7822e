"""Benchmark of the prior bank: one episode's adaptation against Distribution Calibration, and the secure sum.

Hot paths: (1) every N-way K-shot episode retrieves priors, applies MAP shrinkage, samples features and
fits the episode's logistic regression; the strongest baseline, Distribution Calibration as published,
calibrates per support example and samples 750 features per class (the headline, 1-shot; a 5-shot case
follows). (2) On the server, class moments arrive through the pairwise-masked secure sum instead of a
plain sum. Sizes: ``smoke`` d=8, 60 samples per class; ``quick`` the claim's d=32 and 300/750 samples;
``full`` d=128.
"""

from __future__ import annotations

import numpy as np

from geode.claims.bench import BenchCase, assert_same_output

__all__ = ["cases"]

_SIZES = {"smoke": (8, 60, 60), "quick": (32, 300, 750), "full": (128, 300, 750)}


def cases(size: str) -> list[BenchCase]:
    """Episode fit of PriorBank vs DC (1- and 5-shot); secure sum vs plain sum of the class moments."""
    from geode.federated import secure_sum
    from geode.federated.fed_prior_bank import (
        DistributionCalibration,
        PriorBank,
        PriorBankClassifier,
        class_moments,
        embed_phrases,
        pack_moments,
    )

    d, n_pb, n_dc = _SIZES[size]
    rng = np.random.default_rng(0)
    n_base, n_way = 16, 5
    names = [f"attack family {i // 3} variant {i}" for i in range(n_base)]
    emb, _ = embed_phrases(names, "hashing")
    means = np.abs(rng.normal(size=(n_base, d))) * 3
    covs = np.stack([np.eye(d) + 0.1 * np.ones((d, d)) for _ in range(n_base)])
    bank = PriorBank(names, emb, means, covs, np.full(n_base, 200.0))
    q_emb, _ = embed_phrases([f"attack family {i} variant new" for i in range(n_way)], "hashing")
    out = []
    for shot in (1, 5):
        xs = np.abs(np.repeat(means[:n_way], shot, axis=0) + rng.normal(size=(n_way * shot, d)))
        ys = np.repeat(np.arange(n_way), shot)
        out.append(
            BenchCase(
                f"{n_way}-way {shot}-shot episode fit, d={d}",
                candidate=lambda xs=xs, ys=ys: PriorBankClassifier(bank, n_samples=n_pb, seed=0).fit(xs, ys, q_emb),
                baselines={
                    "Distribution Calibration": lambda xs=xs, ys=ys: DistributionCalibration(
                        bank, n_samples=n_dc, seed=0
                    ).fit(xs, ys)
                },
                differs={"*": "Distribution Calibration is another few-shot classifier by design"},
            )
        )
    vecs = []
    for _ in range(8):
        z = np.abs(rng.normal(size=(600, d)))
        y = rng.integers(0, n_base, size=600)
        vecs.append(pack_moments(class_moments(z, y, n_base)))
    v = np.stack(vecs)
    out.append(
        BenchCase(
            f"class-moment aggregation, 8 clients x {v.shape[1]} values",
            candidate=lambda: secure_sum(v, seed=0, frac_bits=20),
            baselines={"plain sum (no privacy)": lambda: v.sum(axis=0)},
            compare=lambda ours, plain: assert_same_output(ours.total, plain, rtol=0, atol=1e-4),
        )
    )
    return out
