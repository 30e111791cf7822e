"""Benchmark of SpecDrop: one training step of the 4-branch SpecDrop network against its baselines.

SpecDrop's fixed merge adds no parameters and only a gather of precomputed weights; the comparison is one
Adam step (forward, backward, update) on a batch, against No-Routing (the same branches, equal weights), the
learned softmax router with its balancing loss, and the dense MLP of matched parameters (the strongest
baseline on speed). Sizes: ``smoke`` the claim's network on 128 samples, ``quick`` width 256 per branch on
1024 samples, ``full`` K = 20 branches (the authors' CIFAR K) of width 512 on 4096 samples.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": (20, 16, 4, 128), "quick": (64, 256, 4, 1024), "full": (256, 512, 20, 4096)}


def cases(size: str) -> list[BenchCase]:
    """One Adam step of SpecDrop, No-Routing, the learned router and a dense MLP of matched parameters."""
    import torch

    from geode.layers.specdrop.module import SpecDropNet
    from geode.models import make_mlp

    d, h, k, b = _SIZES[size]
    n_out = 20
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(b, d, generator=gen)
    y = torch.randint(0, n_out, (b,), generator=gen)
    c = torch.randint(0, k, (b,), generator=gen)

    def step_of(routing: str | None) -> Any:
        torch.manual_seed(0)
        if routing is None:
            model: Any = make_mlp(d, [k * h], n_out, seed=0)
        else:
            model = SpecDropNet(d, h, n_out, k, k, routing, 0.7, 0.3)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def step() -> float:
            out = model(x) if routing in (None, "none", "learned") else model(x, c)
            loss = torch.nn.functional.cross_entropy(out, y)
            if routing == "learned":
                loss = loss + 0.01 * model.aux_loss()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return float(loss.detach())

        return step

    return [
        BenchCase(
            f"one Adam step, K={k} branches of width {h}, batch {b}",
            candidate=step_of("specdrop"),
            baselines={
                "dense MLP (matched parameters)": step_of(None),
                "No-Routing": step_of("none"),
                "learned router": step_of("learned"),
            },
            differs={"*": "other architectures (dense MLP, no routing, learned router) with their own weights"},
        )
    ]
