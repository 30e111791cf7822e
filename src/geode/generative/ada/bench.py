"""Benchmark of ada: the alignment loop against the moment-matching fine-tune, same flow and step count.

Hot path: ``steps`` generator steps of :class:`~geode.generative.ada.ADA` (discriminator step + pathwise generator
step with the exact KL) against as many steps of :class:`~geode.generative.ada.MomentMatching` (no
discriminators), the strongest trained baseline. MaxEnt reweighting needs no training and is not timed.
Sizes: ``smoke`` 4 couplings width 16, 5 steps, batch 128; ``quick`` 8x48, 50 steps, batch 512 (the claim's
flow); ``full`` 12x128, 100 steps, batch 4096.
"""

from __future__ import annotations

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {"smoke": (4, 16, 5, 128), "quick": (8, 48, 50, 512), "full": (12, 128, 100, 4096)}


def cases(size: str) -> list[BenchCase]:
    """ADA steps vs moment-matching steps on the double-well toy."""
    import numpy as np

    from geode.generative.ada import ADA, DoubleWell, MomentMatching, fit_flow, toy_observables

    layers, hidden, steps, batch = _SIZES[size]
    rng = np.random.default_rng(0)
    base = fit_flow(DoubleWell().sample(2000, rng), steps=5, n_layers=layers, hidden=hidden)
    truth = DoubleWell(tilt=0.4, stiffness=2.0)
    obs = toy_observables()
    import torch

    x = torch.as_tensor(truth.sample(2000, rng))
    exp = {k: f(x).numpy() for k, f in obs.items()}
    return [
        BenchCase(
            f"{steps} alignment steps, RealNVP {layers}x{hidden}, batch {batch}, 2 observables",
            candidate=lambda: ADA(base, obs, batch=batch).fit(exp, steps=steps),
            baselines={"moment matching": lambda: MomentMatching(base, obs, batch=batch).fit(exp, steps=steps)},
            differs={"*": "moment matching is another alignment objective; each returns its own fitted flow"},
        )
    ]
