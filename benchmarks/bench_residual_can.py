"""Benchmark: one PINN training step (Allen-Cahn, 256 collocation points, float64) per architecture.

The hot path of the ResidualCAN check is a PINN step: forward, two autograd derivatives with
``create_graph``, the loss and the backward through all of it. The first block times ResidualCAN against
its strongest baselines (SiLU MLP, SIREN) and its own ablations; the second times a stacked ensemble of
four ResidualCAN PINNs (one vectorised step) against four separate steps.

Run with ``OMP_NUM_THREADS=1 python benchmarks/bench_residual_can.py``. Ratios > 1: the first-named is faster.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from geode.core import speed_ratio  # noqa: E402
from geode.sciml.pinn import AllenCahn1D, MSELoss, StackedProblems, derivatives  # noqa: E402
from geode.sciml.residual_can import CauchyLoss, make_architecture  # noqa: E402

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)


def pinn_step(model: torch.nn.Module, problem, loss, ensemble: int | None = None):
    x = problem.problems[0].collocation(256) if isinstance(problem, StackedProblems) else problem.collocation(256)
    if ensemble is not None:
        x = x.unsqueeze(0).expand(ensemble, -1, -1).clone()
    x.requires_grad_(True)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        u = model(x)
        grad, lap = derivatives(u, x)
        r = problem.residual(x, u, grad, lap)
        total = loss(torch.zeros_like(r), r) * (1 if ensemble is None else ensemble)
        total.backward()
        opt.step()
        return total

    return step


def fmt(r: dict[str, float]) -> str:
    return f"{r['speedup']:6.2f}x  ({r['candidate_s'] * 1e3:7.2f} ms vs {r['baseline_s'] * 1e3:7.2f} ms)"


def main() -> None:
    problem = AllenCahn1D(0.1)
    rescan = pinn_step(make_architecture("ResidualCAN", seed=0), problem, MSELoss())
    print("one Adam step of an Allen-Cahn PINN, 256 points, float64 (ratio > 1: ResidualCAN is faster)")
    for name in ("SiLU-MLP", "SIREN", "CauchyAct-MLP", "ResidualCAN-RBF", "Fourier-MLP"):
        r = speed_ratio(rescan, pinn_step(make_architecture(name, seed=0), problem, MSELoss()), repeats=9)
        print(f"   ResidualCAN vs {name:<16} {fmt(r)}")
    r = speed_ratio(pinn_step(make_architecture("ResidualCAN", seed=0), problem, CauchyLoss(1.0)), rescan, repeats=9)
    print(f"   Cauchy loss vs MSE (ResidualCAN)  {fmt(r)}")

    E = 4
    stacked = make_architecture("ResidualCAN", ensemble=E, seed=0)
    problems = StackedProblems([AllenCahn1D(e) for e in (1.0, 0.5, 0.2, 0.1)])
    one = pinn_step(stacked, problems, MSELoss(), ensemble=E)
    loop_steps = [
        pinn_step(make_architecture("ResidualCAN", seed=s), AllenCahn1D(e), MSELoss())
        for s, e in enumerate((1.0, 0.5, 0.2, 0.1))
    ]

    def loop() -> None:
        for s in loop_steps:
            s()

    r = speed_ratio(one, loop, repeats=9)
    print(f"{E} ResidualCAN PINNs (eps 1, 0.5, 0.2, 0.1): one stacked step vs {E} separate steps: {fmt(r)}")


if __name__ == "__main__":
    main()
