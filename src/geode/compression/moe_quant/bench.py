"""Benchmark of MoE quantisation: the adapter path's cost at inference.

One forward of the MoE LM (batch x seq tokens) with MXFP4 experts plus load-aware low-rank adapters (the
method's inference path) against the same model with plain MXFP4 experts (no adapters) and the full-precision
model. The quantisation is simulated (dequantised weights, as in the claim), so the ratios measure the adapter
path's overhead, not the W4A8 kernel speed-up the paper reports on a GPU (future work). Loads are random
(a Dirichlet draw) and the ranks their load-aware allocation with 4 ranks per expert on average.
Sizes: ``smoke`` d=64, ``quick`` d=128 (2 layers, 8 experts, 8x64 tokens), ``full`` d=512.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase, relative_error_at_most

__all__ = ["cases"]

_SIZES = {
    "smoke": dict(d_model=64, n_layers=1, d_ff=64, n_experts=4, batch=4, seq=32, rank=2),
    "quick": dict(d_model=128, n_layers=2, d_ff=128, n_experts=8, batch=8, seq=64, rank=4),
    "full": dict(d_model=512, n_layers=4, d_ff=512, n_experts=16, batch=16, seq=256, rank=16),
}


def cases(size: str) -> list[BenchCase]:
    """One forward per side."""
    import torch

    from geode.compression.moe_quant import MoELM, allocate_ranks, expert_error_spectra, mxfp4_moe

    s = _SIZES[size]
    model = MoELM(
        96,
        d_model=s["d_model"],
        n_layers=s["n_layers"],
        d_ff=s["d_ff"],
        n_experts=s["n_experts"],
        max_positions=s["seq"],
        seed=0,
    )
    model.eval()
    g = torch.Generator().manual_seed(0)
    loads = torch.distributions.Dirichlet(torch.ones(s["n_experts"])).sample((s["n_layers"],))
    spectra = expert_error_spectra(model)
    ranks = [allocate_ranks(spectra[li], loads[li], s["rank"] * s["n_experts"]) for li in range(s["n_layers"])]
    la = mxfp4_moe(model, ranks)
    plain = mxfp4_moe(model)
    x = torch.randint(0, 96, (s["batch"], s["seq"]), generator=g)

    def fwd(m: Any) -> Any:
        def f() -> Any:
            with torch.no_grad():
                return m(x)

        return f

    return [
        BenchCase(
            f"forward, MoE LM d={s['d_model']} x {s['n_layers']} layers, {s['n_experts']} experts top-2, "
            f"{s['batch']}x{s['seq']} tokens: MXFP4 + load-aware adapters",
            candidate=fwd(la),
            baselines={"MXFP4, no adapters": fwd(plain), "full precision": fwd(model)},
            compare=relative_error_at_most(
                0.5
            ),  # the same forward up to MXFP4's quantisation error and the adapters' correction
        )
    ]
