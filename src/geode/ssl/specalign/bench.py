"""Benchmark of SpecAlign: one training step of InfoNCE + SpecAlign against InfoNCE + RBF-MMD (strongest cost peer).

Both sides run a full step (forward, backward, Adam) of two linear projectors on the same paired batch and
the same unpaired batches; SpecAlign's cost is O(B M k) for M queries, RBF-MMD's O(B^2 k).
Sizes: ``smoke`` B=64, ``quick`` B=256, ``full`` B=4096 (where the quadratic MMD cost shows).
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": (64, 50), "quick": (256, 200), "full": (4096, 1000)}


def cases(size: str) -> list[BenchCase]:
    """One step of InfoNCE + SpecAlign, InfoNCE + RBF-MMD and InfoNCE alone."""
    import torch

    from geode.ssl.specalign import SpecAlignLoss, info_nce, rbf_mmd2

    b, n = _SIZES[size]
    g = torch.Generator().manual_seed(0)
    xp, yp = torch.randn(n, 64, generator=g), torch.randn(n, 48, generator=g)
    xu, yu = torch.randn(b, 64, generator=g), torch.randn(b, 48, generator=g)

    def make(kind: str) -> Any:
        def step() -> float:
            torch.manual_seed(0)
            f, h = torch.nn.Linear(64, 32), torch.nn.Linear(48, 32)
            params = [*f.parameters(), *h.parameters()]
            spec = SpecAlignLoss(32, n_queries=64) if kind == "spec" else None
            opt = torch.optim.Adam(params + (list(spec.parameters()) if spec else []), lr=1e-3)
            loss = info_nce(f(xp), h(yp))
            za = torch.nn.functional.normalize(f(xu), dim=1)
            zb = torch.nn.functional.normalize(h(yu), dim=1)
            if kind == "spec":
                loss = loss + spec(za, zb)
            elif kind == "mmd":
                loss = loss + rbf_mmd2(za, zb, bandwidth=0.5)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return float(loss.detach())

        return step

    return [
        BenchCase(
            f"one step, {n} pairs + {b} unpaired per modality, linear projectors to 32",
            candidate=make("spec"),
            baselines={"InfoNCE + RBF-MMD": make("mmd"), "InfoNCE alone": make("nce")},
            differs={"*": "other alignment losses (InfoNCE + MMD, InfoNCE alone) by design"},
        )
    ]
