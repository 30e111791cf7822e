"""Benchmark of RISE: one client's local training with the geometry regularisers against the plain and FedDecorr ones.

Case 1: one :class:`~geode.federated.rise.GeometryClient` ``fit`` (MLP, one local epoch) with RISE's two losses
against the same client with plain cross-entropy (FedAvg's client) and with FedDecorr's penalty (the
strongest regularised baseline in the claim's runs). Case 2: forward + backward of the regularisers alone on
one batch of features, RISE (BLSC + MRGA) against FedDecorr's :math:`\\|\\mathrm{corr}(Z)\\|_F^2`.

Sizes: ``smoke`` 256 examples, 64-64-32-10, batch 32 of 32-d features; ``quick`` 2,048 examples,
64-256-128-10, batch 256 of 128-d; ``full`` 8,192 examples, 256-1024-512-100, batch 512 of 512-d.
"""

from __future__ import annotations

import numpy as np
import torch

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {
    "smoke": (256, 64, (64, 32), 10, 32),
    "quick": (2048, 64, (256, 128), 10, 256),
    "full": (8192, 256, (1024, 512), 100, 512),
}


def cases(size: str) -> list[BenchCase]:
    """A RISE client round vs FedAvg's and FedDecorr's; the regularisers' step vs FedDecorr's."""
    from geode.federated.rise import GeometryClient, aggregate_geometry, client_feature_stats, feddecorr_loss

    n, d_in, hidden, c, bs = _SIZES[size]
    rng = np.random.default_rng(0)
    y = rng.integers(0, c, n)
    x = (rng.normal(size=(c, d_in))[y] + rng.normal(size=(n, d_in))).astype(np.float32)
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    d = d_in
    for h in hidden:
        layers += [torch.nn.Linear(d, h), torch.nn.ReLU()]
        d = h
    model = torch.nn.Sequential(*layers, torch.nn.Linear(d, c))
    with torch.no_grad():
        z = model[:-1](torch.as_tensor(x)).numpy()
    geom = aggregate_geometry([client_feature_stats(z, y, c)], rank=min(32, d))
    client = GeometryClient(model, x, y, geometry=geom, lr=0.01, batch_size=bs)
    init = client.get_parameters()
    zb = torch.as_tensor(z[:bs]).requires_grad_(True)
    yb = torch.as_tensor(y[:bs])

    def rise_step() -> None:
        (client.blsc(zb) + client.mrga(zb, yb)).backward()

    def decorr_step() -> None:
        feddecorr_loss(zb).backward()

    return [
        BenchCase(
            f"one client round, {n} examples, MLP {d_in}-{'-'.join(map(str, hidden))}-{c}, batch {bs}",
            candidate=lambda: client.fit(init, {"rise-blsc": 1.0, "rise-mrga": 1.0}),
            baselines={
                "FedAvg client (cross-entropy)": lambda: client.fit(init, {}),
                "FedDecorr client": lambda: client.fit(init, {"feddecorr-beta": 1.0}),
            },
            differs={
                "*": "other client objectives (cross-entropy, FedDecorr): other local updates and metrics by design"
            },
        ),
        BenchCase(
            f"regulariser forward+backward, {bs}x{d} features, {c} classes",
            candidate=rise_step,
            baselines={"FedDecorr loss": decorr_step},
            differs={"*": "the timed step returns nothing to compare (another regulariser by design)"},
        ),
    ]
