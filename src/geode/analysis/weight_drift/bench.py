"""Benchmark of the weight-drift tools: what the paper's pieces cost on a training step.

Three cases, each one Adam step (forward, backward, update) of an MLP on a batch:

- QuantileReLU at 90% target sparsity (the per-unit batch quantile, a sort along the batch) against
  plain ReLU (the dense reference) and GELU (the strongest dense baseline of the claim);
- the same ReLU step with a :class:`SparsityMonitor` attached (the hooks the claim's sparsity readings use)
  against the step without hooks;
- clipped ReLU² (custom autograd with a clip mask) against plain ReLU².

Sizes: ``smoke`` MLP 64-64-64-10 on 64 rows; ``quick`` 64-256-256-256-10 on 512 rows; ``full``
1024-4096-4096-1024 on 4096 rows.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {
    "smoke": dict(n_in=64, hidden=(64, 64), rows=64),
    "quick": dict(n_in=64, hidden=(256, 256, 256), rows=512),
    "full": dict(n_in=1024, hidden=(4096, 4096), rows=4096),
}


def cases(size: str) -> list[BenchCase]:
    """One Adam step with the paper's activations / monitor against the dense baselines."""
    import torch

    from geode.analysis.weight_drift import SparsityMonitor
    from geode.analysis.weight_drift.experiment import make_net

    if size not in _SIZES:
        raise ValueError(f"size must be one of {sorted(_SIZES)}; got {size!r}")
    s = _SIZES[size]
    g = torch.Generator().manual_seed(0)
    x = torch.randn(s["rows"], s["n_in"], generator=g)
    y = torch.randint(0, 10, (s["rows"],), generator=g)

    def step_fn(activation: str, monitor: bool = False, **kw: Any) -> Any:
        net = make_net(activation, s["hidden"], 0, n_in=s["n_in"], **kw)
        opt = torch.optim.Adam(net.parameters(), lr=1e-4)

        def step() -> float:
            mon = SparsityMonitor(net) if monitor else None
            loss = torch.nn.functional.cross_entropy(net(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if mon is not None:
                mon.remove()
            return float(loss.detach())

        return step

    desc = f"MLP {s['n_in']}-{'-'.join(map(str, s['hidden']))}-10, {s['rows']} rows, one Adam step"
    return [
        BenchCase(
            f"QuantileReLU (90%) vs dense activations, {desc}",
            candidate=step_fn("quantile_relu", sparsity=0.9),
            baselines={"ReLU": step_fn("relu"), "GELU": step_fn("gelu")},
            differs={"*": "other activation functions (ReLU, GELU): another network output by design"},
        ),
        BenchCase(
            f"ReLU with SparsityMonitor hooks vs without, {desc}",
            candidate=step_fn("relu", monitor=True),
            baselines={"ReLU (no hooks)": step_fn("relu")},
        ),
        BenchCase(
            f"clipped ReLU² vs ReLU², {desc}",
            candidate=step_fn("clipped_relu2"),
            baselines={"ReLU²": step_fn("relu2")},
            differs={"*": "ReLU² without the clip is another activation by design"},
        ),
    ]
