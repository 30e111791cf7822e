"""A small point-cloud neural operator and the parameter-space UQ baselines (deep ensemble, MC dropout).

:class:`PointCloudOperator` maps a point cloud of per-point inputs ``(x, y, sdf, f)`` to the solution at
those points: a per-point encoder, a mean-pooled geometry code broadcast back to every point, and a
per-point decoder whose last hidden layer (``decoder.embedding``) is the operator's internal embedding.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.core.validation import check_array, check_int, check_real

__all__ = ["DeepEnsemble", "MCDropout", "PointCloudOperator", "train_operator"]


def check_clouds(name: str, x: Any, *, min_features: int = 1) -> np.ndarray:
    """Check a batch of point clouds ``(S >= 1, n >= 1, d_in >= min_features)``, finite; return it as float64."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    xa = check_array(name, x, ndim=3)
    if 0 in xa.shape[:2] or xa.shape[-1] < min_features:
        raise ValueError(f"{name} must have shape (S >= 1, n >= 1, d_in >= {min_features}); got {xa.shape}")
    return xa


class PointCloudOperator(nn.Module):
    """Point-cloud operator ``(B, n, d_in) -> (B, n)`` with a pooled geometry code.

    Parameters
    ----------
    d_in : int
        Inputs per point.
    width : int
        Hidden width (the embedding's dimension).
    dropout : float
        Dropout before the decoder's last two layers (0: none; > 0 for MC dropout).
    seed : int
        Seed of the initialisation.
    """

    def __init__(self, d_in: int = 4, width: int = 64, *, dropout: float = 0.0, seed: int = 0) -> None:
        super().__init__()
        d_in = check_int("d_in", d_in, low=1)
        width = check_int("width", width, low=2)
        p = check_real("dropout", dropout, low=0.0, high=1.0, high_inclusive=False)
        self.d_in = d_in
        torch.manual_seed(seed)
        self.encoder = nn.Sequential(nn.Linear(d_in, width), nn.GELU(), nn.Linear(width, width), nn.GELU())
        self.decoder = nn.Sequential(
            nn.Linear(2 * width + d_in, width),
            nn.GELU(),
            nn.Dropout(p),
            nn.Linear(width, width),
            nn.GELU(),
        )
        self.decoder.add_module("embedding", nn.Identity())  # the internal embedding h(x) REEF-GP reads
        self.drop = nn.Dropout(p)
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, n)`` predictions of ``x`` (B, n, d_in); an empty batch gives an empty output.

        Only the type and shape are checked (this runs at every training step): NaN propagates like torch's own
        layers (and, through the pooled code, to the whole cloud); ``train_operator`` and ``REEFGP`` check theirs.
        """
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch tensor (batch, points, d_in); got {type(x).__name__}")
        if x.ndim != 3 or x.shape[-1] != self.d_in:
            raise ValueError(f"x must have shape (batch, points, d_in={self.d_in}); got {tuple(x.shape)}")
        e = self.encoder(x)
        g = e.mean(1, keepdim=True).expand_as(e)  # geometry code of the whole cloud
        h = self.decoder(torch.cat([e, g, x], -1))
        return self.head(self.drop(h)).squeeze(-1)


def train_operator(
    model: nn.Module, x: Any, u: Any, *, steps: int = 800, batch: int = 16, lr: float = 3e-3, seed: int = 0
) -> float:
    """Train on ``x`` (S, n, d_in) -> ``u`` (S, n) by MSE with Adam and cosine decay; returns the CPU seconds."""
    steps = check_int("steps", steps, low=0)
    batch = check_int("batch", batch, low=1)
    lr = check_real("lr", lr, low=0.0, low_inclusive=False)
    xa = check_clouds("x", x)
    ua = check_array("u", u.detach().cpu().numpy() if isinstance(u, torch.Tensor) else u)
    if ua.shape != xa.shape[:2]:
        raise ValueError(f"u must have shape {xa.shape[:2]} (one value per point of x); got {ua.shape}")
    xt, ut = torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(u, dtype=torch.float32)
    t0 = time.process_time()
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(steps, 1))
    model.train()
    for _ in range(steps):
        i = torch.randint(0, len(xt), (min(batch, len(xt)),), generator=g)
        loss = ((model(xt[i]) - ut[i]) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
    model.eval()
    return time.process_time() - t0


class DeepEnsemble:
    """``M`` independently initialised operators; mean and spread of their predictions (Lakshminarayanan et al.)."""

    def __init__(self, members: list[nn.Module]) -> None:
        if not members:
            raise ValueError("members must hold at least one operator")
        self.members = members

    def predict(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation over the members, each ``(S, n)``."""
        check_clouds("x", x)
        xt = torch.as_tensor(x, dtype=torch.float32)
        with torch.no_grad():
            p = torch.stack([m.eval()(xt) for m in self.members]).double().numpy()
        return p.mean(0), p.std(0)


class MCDropout:
    """Monte Carlo dropout (Gal & Ghahramani): ``passes`` stochastic forward passes with dropout on."""

    def __init__(self, model: nn.Module, passes: int = 20, seed: int = 0) -> None:
        self.model = model
        self.passes = check_int("passes", passes, low=2)
        self.seed = seed

    def predict(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation over the passes, each ``(S, n)``."""
        check_clouds("x", x)
        xt = torch.as_tensor(x, dtype=torch.float32)
        torch.manual_seed(self.seed)
        self.model.train()
        with torch.no_grad():
            p = torch.stack([self.model(xt) for _ in range(self.passes)]).double().numpy()
        self.model.eval()
        return p.mean(0), p.std(0)
