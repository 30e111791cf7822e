"""Benchmark: GAE's closed-form realignment against fine-tuning the dictionary with Adam (its strongest baseline).

Both adapt a TopK SAE (d = 64, 256 features) trained on ID activations to 2,000 unlabeled OOD activations
(the planted 60-degree rotation of the claim check). GAE is an eigendecomposition, a d x d rotation and
one ridge solve; fine-tuning runs 1,000 Adam steps (the claim's quick setting). The held-out OOD FVU of
both is printed beside the time. Run with ``OMP_NUM_THREADS=1 python benchmarks/bench_gae.py``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from geode.analysis import fvu, train_sae  # noqa: E402
from geode.analysis.gae import GAE, planted_features, sample_activations  # noqa: E402
from geode.core import speed_ratio  # noqa: E402

torch.set_num_threads(1)


def main() -> None:
    pf = planted_features(0)
    x_id = sample_activations(pf, 20_000, 1)
    x_ood = sample_activations(pf, 2_000, 2, theta_deg=60.0, scale=1.25)
    x_test = sample_activations(pf, 4_000, 3, theta_deg=60.0, scale=1.25)
    sae = train_sae(x_id, 256, activation="topk", k=8, steps=2000, seed=0)

    def gae():
        return GAE().fit(sae, x_ood, X_id=x_id[:2000]).adapted_

    def finetune():
        return train_sae(x_ood, init=sae, steps=1000, seed=1)

    f_gae, f_ft = fvu(gae(), x_test), fvu(finetune(), x_test)
    r = speed_ratio(gae, finetune, repeats=3, warmup=0)
    print("adapting a TopK SAE (64 -> 256) to 2,000 OOD activations, 60-degree rotation (speedup > 1: GAE faster)")
    print(
        f"  GAE vs Adam fine-tuning (1,000 steps): speedup {r['speedup']:7.1f}x  "
        f"(GAE {r['candidate_s'] * 1e3:.1f} ms, fine-tune {r['baseline_s'] * 1e3:.0f} ms); "
        f"held-out OOD FVU: unadapted {fvu(sae, x_test):.3f}, "
        f"GAE {f_gae:.3f}, fine-tuned {f_ft:.3f}"
    )


if __name__ == "__main__":
    main()
