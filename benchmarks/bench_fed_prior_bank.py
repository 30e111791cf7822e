"""Benchmark: the prior bank's per-episode adaptation against Distribution Calibration, and the price of secure sums.

Hot paths of the fed-prior-bank method: (1) on a client, every N-way K-shot episode retrieves priors,
applies MAP shrinkage, samples features and fits the episode's logistic regression; its strongest
baseline, Distribution Calibration, does the same per support example (so K times per class).
(2) On the server, class moments arrive through the pairwise-masked secure sum instead of a plain sum.
Run with ``OMP_NUM_THREADS=1 python benchmarks/bench_fed_prior_bank.py``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from geode.core import speed_ratio  # noqa: E402
from geode.federated import secure_sum  # noqa: E402
from geode.federated.fed_prior_bank import (  # noqa: E402
    DistributionCalibration,
    PriorBank,
    PriorBankClassifier,
    class_moments,
    embed_phrases,
    pack_moments,
)


def main() -> None:
    rng = np.random.default_rng(0)
    d, n_base, n_way = 32, 16, 5
    names = [f"attack family {i // 3} variant {i}" for i in range(n_base)]
    emb, _ = embed_phrases(names, "hashing")
    means = rng.normal(size=(n_base, d)) * 3
    covs = np.stack([np.eye(d) + 0.1 * np.ones((d, d)) for _ in range(n_base)])
    bank = PriorBank(names, emb, means, covs, np.full(n_base, 200.0))
    q_emb, _ = embed_phrases([f"attack family {i} variant new" for i in range(n_way)], "hashing")
    print(f"episode adaptation + classifier fit, {n_way}-way, d={d}, 300 sampled features per class")
    for shot in (1, 5):
        xs = np.repeat(means[:n_way], shot, axis=0) + rng.normal(size=(n_way * shot, d))
        ys = np.repeat(np.arange(n_way), shot)
        r = speed_ratio(
            lambda xs=xs, ys=ys: PriorBankClassifier(bank, seed=0).fit(xs, ys, q_emb),
            lambda xs=xs, ys=ys: DistributionCalibration(bank, seed=0).fit(xs, ys),
            repeats=5,
        )
        print(
            f"  {shot}-shot: PriorBank {r['candidate_s'] * 1e3:.1f} ms, DC {r['baseline_s'] * 1e3:.1f} ms "
            f"-> speedup {r['speedup']:.2f}x"
        )

    n_clients = 8
    vecs = []
    for _ in range(n_clients):
        z = np.abs(rng.normal(size=(600, d)))
        y = rng.integers(0, n_base, size=600)
        vecs.append(pack_moments(class_moments(z, y, n_base)))
    vecs = np.stack(vecs)
    r = speed_ratio(lambda: secure_sum(vecs, seed=0, frac_bits=20), lambda: vecs.sum(axis=0), repeats=5)
    print(
        f"moment aggregation, {n_clients} clients x {vecs.shape[1]} values: "
        f"secure sum {r['candidate_s'] * 1e3:.1f} ms, plain sum {r['baseline_s'] * 1e3:.3f} ms "
        f"-> the masks cost {1 / r['speedup']:.0f}x a plain sum"
    )


if __name__ == "__main__":
    main()
