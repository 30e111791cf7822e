"""Benchmark of PoLAR-VBLL: inference against a MAP head (one backbone pass each) and a 10-pass sampler.

PoLAR-VBLL's predictive is one pass through the adapted backbone and a Monte Carlo average over the
Gaussian logits of the last layer (256 draws of a (n, K) matrix: no further backbone pass). The
strongest baseline is the same backbone with a deterministic linear (MAP) head; for scale, a
sampling-based Bayesian adapter (BLoB / MC-dropout style) that needs 10 backbone passes is timed too.
Sizes: ``smoke`` a 1-layer d=32 Llama, 32 sequences; ``quick`` the claim's tiny Llama (d=128, 2 layers,
PoLAR r=8 on every projection), 256 sequences of 15 tokens; ``full`` the same with 1,024 sequences.
"""

from __future__ import annotations

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": (32, 1, 2, 32), "quick": (128, 2, 4, 256), "full": (128, 2, 4, 1024)}


def cases(size: str) -> list[BenchCase]:
    """PoLAR-VBLL prediction vs PoLAR-MAP prediction and a 10-pass sampling baseline."""
    import torch
    from torch import nn

    from geode.adapters import inject_adapters
    from geode.adapters.polar_vbll import PoLARLinear, VBLLClassifier, predict_proba
    from geode.core.random import torch_generator
    from geode.models.tasks import KeywordClassification
    from geode.models.tiny_lm import build_tiny_lm

    d, layers, heads, n = _SIZES[size]
    task = KeywordClassification()
    model = build_tiny_lm(task.vocab_size, d_model=d, n_layers=layers, n_heads=heads, n_kv_heads=heads // 2, seed=0)
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    inject_adapters(model, targets, lambda lin: PoLARLinear(lin, 8, 16, generator=torch_generator(0)))
    x = task.sample(n, 1).input_ids[:, :-1]
    vbll = VBLLClassifier(d, 6, generator=torch_generator(2))
    lin = nn.Linear(d, 6)

    def polar_vbll() -> torch.Tensor:
        return predict_proba(model, vbll, x, n_samples=256, generator=torch_generator(3))

    def polar_map() -> torch.Tensor:
        return predict_proba(model, lin, x)

    def ten_passes() -> torch.Tensor:
        return torch.stack([predict_proba(model, lin, x) for _ in range(10)]).mean(0)

    return [
        BenchCase(
            f"predictive on {n} sequences, Llama d={d} x {layers} layer(s), PoLAR r=8",
            candidate=polar_vbll,
            baselines={"PoLAR-MAP (one pass, linear head)": polar_map, "10-pass sampling": ten_passes},
            differs={
                "*": (
                    "other predictive methods: PoLAR-MAP's point prediction and a 10-pass Monte Carlo average, "
                    "not the candidate's closed-form VBLL predictive"
                )
            },
        )
    ]
