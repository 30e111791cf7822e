"""Benchmark of ResidualCAN: one Adam step of a 1-D Allen-Cahn PINN (second derivatives included).

ResidualCAN against every baseline architecture of the claim (SiLU-MLP, the Cauchy-activation MLP alone,
the Gaussian-RBF-node ablation, SIREN, the Fourier-feature MLP), float64, ``n`` collocation points (64 in
``smoke``, 256 in ``quick``, 1024 in ``full``). The ratios are what :data:`STEP_COST` fixes for the claim's
equal-wall-clock protocol (ResidualCAN is the slowest per step; the audit measured 0.45x vs SiLU-MLP).
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_N = {"smoke": 64, "quick": 256, "full": 1024}


def cases(size: str) -> list[BenchCase]:
    """One PINN Adam step of ResidualCAN vs each baseline architecture."""
    import torch

    from geode.sciml.pinn import AllenCahn1D, MSELoss, derivatives
    from geode.sciml.residual_can.experiment import ARCHITECTURES, make_architecture

    prob = AllenCahn1D(1.0)
    n = _N[size]
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        x = prob.collocation(n).requires_grad_(True)
        x_bd = prob.boundary()
        u_bd = prob.exact(x_bd)
        loss_fn = MSELoss()

        def step_of(name: str) -> Any:
            model = make_architecture(name, seed=0)
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)

            def step() -> Any:
                opt.zero_grad(set_to_none=True)
                u = model(x)
                grad, lap = derivatives(u, x)
                r = prob.residual(x, u, grad, lap)
                loss = loss_fn(torch.zeros_like(r), r) + loss_fn(u_bd, model(x_bd))
                loss.backward()
                opt.step()
                return loss

            return step

        steps = {a: step_of(a) for a in ARCHITECTURES}
    finally:
        torch.set_default_dtype(previous)
    return [
        BenchCase(
            f"one Adam step, 1-D Allen-Cahn PINN, {n} collocation points, float64",
            candidate=steps["ResidualCAN"],
            baselines={a: s for a, s in steps.items() if a != "ResidualCAN"},
            differs={"*": "other PINN architectures with their own weights: other losses by design"},
        )
    ]
