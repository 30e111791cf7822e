"""Benchmark of Bridge-AD: one training step (forward, backward, Adam) against DANN and source-only.

All sides run the same planner on the same source batch; DANN adds a target batch and a discriminator on the
global feature; Bridge-AD adds the target batch, its photometrically augmented copy, two discriminators
(geometry and the CDAN-style decision map), CORAL on Gram matrices and the relation term (late in training,
progress 0.8, so that every term is active). Sizes: batch 8 (``smoke``), 32 (``quick``), 128 (``full``).
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": 8, "quick": 32, "full": 128}


def cases(size: str) -> list[BenchCase]:
    """One training step of Bridge-AD, DANN and source-only."""
    import torch

    from geode.vision3d.bridge_ad import BridgeADAlignment, DANNAlignment, VectorPlanner, planning_loss
    from geode.vision3d.bridge_ad.driving import generate_driving

    b = _SIZES[size]
    keys = ("image", "road", "lane", "leader", "ego_speed", "traj")
    src = {k: torch.tensor(v) for k, v in generate_driving(b, "sim", seed=0).items() if k in keys}
    tgt = {k: torch.tensor(v) for k, v in generate_driving(b, "real", seed=1).items() if k in keys}
    torch.manual_seed(0)
    planner = VectorPlanner()
    bridge, dann = BridgeADAlignment(), DANNAlignment()

    def make(kind: str) -> Any:
        mods = [planner] + ([bridge] if kind == "bridge" else [dann] if kind == "dann" else [])
        opt = torch.optim.Adam([p for m in mods for p in m.parameters()], lr=1e-3)

        def step() -> float:
            out_s = planner(src["image"], src["ego_speed"])
            loss = planning_loss(out_s, src)
            if kind != "source":
                out_t = planner(tgt["image"], tgt["ego_speed"])
                if kind == "dann":
                    loss = loss + dann(out_s, out_t, 0.8)["loss"]
                else:
                    aug = (tgt["image"] * 0.9 + 0.02).clamp(0, 1)
                    loss = loss + bridge(out_s, out_t, planner(aug, tgt["ego_speed"]), 0.8)["loss"]
            opt.zero_grad()
            loss.backward()
            opt.step()
            return float(loss.detach())

        return step

    return [
        BenchCase(
            f"one training step, batch {b} source (+ {b} target), 32x32 rasters",
            candidate=make("bridge"),
            baselines={"DANN": make("dann"), "source-only": make("source")},
            differs={"*": "other training objectives (DANN, source-only) by design"},
        )
    ]
