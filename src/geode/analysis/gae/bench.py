"""Benchmark of GAE: the closed-form realignment against fine-tuning and the decoder refit.

Every side adapts the same trained TopK dictionary to the same unlabeled OOD sample (the claim check's
60-degree rotation). The candidate is :class:`GAE` in the release's default ("theory") mode; the
baselines are fine-tuning the dictionary with Adam (1,000 steps at quick size, the claim's budget; the
training-based baseline the paper compares with) and the unconstrained closed-form decoder refit (the
strongest cheap baseline), plus our direct-rotation GAE with its refit. Sizes: ``smoke`` d = 32 with 64
features, ``quick`` the claim's d = 64 with 256 features and 2,000 samples, ``full`` GPT-2-small width
(d = 768, 24,576 features, 8,192 samples; meant for a GPU).
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {
    "smoke": dict(d=32, m=64, k_active=8, n=500, steps=30, sae_steps=50, topk=4),
    "quick": dict(d=64, m=256, k_active=24, n=2000, steps=1000, sae_steps=300, topk=8),
    "full": dict(d=768, m=24576, k_active=128, n=8192, steps=1000, sae_steps=200, topk=32),
}


def cases(size: str) -> list[BenchCase]:
    """GAE (theory) vs fine-tuning, the decoder refit and our direct GAE, on one OOD sample."""
    from geode.analysis.gae import GAE, planted_features, refit_decoder, sample_activations
    from geode.analysis.sae import train_sae

    c = _SIZES[size]
    pf = planted_features(0, d=c["d"], m=max(c["m"] // 4, 4 * c["k_active"]), k_active=c["k_active"])
    x_id = sample_activations(pf, 4 * c["n"], 1)
    x_ood = sample_activations(pf, c["n"], 2, theta_deg=60.0, scale=1.25)
    sae = train_sae(x_id, c["m"], activation="topk", k=c["topk"], steps=c["sae_steps"], batch_size=256, seed=0)

    def gae_theory() -> Any:
        return GAE().fit(sae, x_ood).adapted_

    def gae_direct() -> Any:
        return GAE(mode="direct", ridge=1.0).fit(sae, x_ood, X_id=x_id[: c["n"]]).adapted_

    def finetune() -> Any:
        return train_sae(x_ood, init=sae, steps=c["steps"], batch_size=256, lr=1e-3, seed=1)

    def refit() -> Any:
        return refit_decoder(sae, x_ood, ridge=1.0)

    return [
        BenchCase(
            f"adapt a TopK dictionary (d={c['d']}, {c['m']} features) to {c['n']} OOD activations",
            candidate=gae_theory,
            baselines={
                f"fine-tune ({c['steps']} Adam steps)": finetune,
                "decoder refit (closed form)": refit,
                "GAE ours (direct rotation + refit)": gae_direct,
            },
            differs={
                "*": (
                    "other ways to adapt the dictionary (fine-tuning, decoder refit); each returns its own "
                    "adapted model"
                )
            },
        )
    ]
