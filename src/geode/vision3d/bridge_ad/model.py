"""Bridge-AD's parts: gradient reversal, the progressive schedule, GAPA and LVDA losses, a VAD-lite planner.

The planner (:class:`VectorPlanner`) reads a bird's-eye raster with a small CNN, predicts explicit geometry (a
drivable-area map and the ego lane's centreline polyline) and the nearest agent ahead (presence, distance,
speed), encodes these vectors with one attention layer over lane-point, agent and ego tokens (the
vector-conditioned context), and regresses 6 waypoints from the image feature and the vector context.

Alignment terms (all take source and target outputs of the same planner):

- DANN (the appearance-level baseline): a domain discriminator on the global image feature through a gradient
  reversal layer (GRL);
- GAPA, explicit geometry: a discriminator through a GRL on the predicted geometry (drivable area, lane
  polyline), plus consistency of the target's geometry under photometric augmentation;
- GAPA, implicit structure: CORAL between the domains' spatial self-similarity (Gram) matrices of the feature
  map, so that structure, not appearance, is matched;
- LVDA: a conditional discriminator (CDAN-style) on the outer product of the vector context and the planned
  trajectory through a GRL, plus structural alignment of the mean agent-map attention matrices;
- progressive adversarial transfer: GRL coefficient :math:`\\lambda(p) = 2 / (1 + e^{-10 p}) - 1` over training
  progress ``p``, with the decision terms starting only after the perception terms (``decision_start``).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from geode.core import check_real
from geode.core.validation import check_tensor

__all__ = [
    "DomainDiscriminator",
    "GradientReversal",
    "VectorPlanner",
    "coral_loss",
    "grad_reverse",
    "gram_structure",
    "progressive_lambda",
]


class GradientReversal(torch.autograd.Function):
    """Identity forward; multiplies the incoming gradient by ``-lambda`` backward (Ganin & Lempitsky 2015)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, lam: float) -> torch.Tensor:
        ctx.lam = lam
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return -ctx.lam * grad, None


def grad_reverse(x: torch.Tensor, lam: float = 1.0) -> torch.Tensor:
    """Gradient reversal: ``x`` forward, ``-lam * grad`` backward (``lam >= 0``).

    ``x`` may have any shape (an empty tensor gives an empty output); a per-step layer, it checks only that ``x``
    is a tensor: NaN propagates like torch's own layers.
    """
    check_tensor("x", x, finite=False, nonempty=False)
    lam = check_real("lam", lam, low=0.0)
    return GradientReversal.apply(x, lam)


def progressive_lambda(p: float, gamma: float = 10.0) -> float:
    """The DANN/progressive schedule 2 / (1 + exp(−γ p)) − 1 for training progress ``p`` in [0, 1]."""
    p = check_real("p", p, low=0.0, high=1.0)
    gamma = check_real("gamma", gamma, low=0.0)
    return 2.0 / (1.0 + math.exp(-gamma * p)) - 1.0


def coral_loss(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """CORAL: squared Frobenius distance of the two feature covariances over ``4 d^2`` (Sun & Saenko 2016).

    A per-step loss: shapes are checked, values are not (NaN propagates like torch's own layers).
    """
    check_tensor("a", a, ndim=2, finite=False, nonempty=False)
    check_tensor("b", b, ndim=2, finite=False, nonempty=False)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b must be (n, d) with the same d; got {tuple(a.shape)} and {tuple(b.shape)}")
    for name, x in (("a", a), ("b", b)):
        if x.shape[0] < 2:
            raise ValueError(f"{name} needs at least 2 samples (coral_loss); got shape {tuple(x.shape)}")
    d = a.shape[1]
    ca, cb = torch.cov(a.T), torch.cov(b.T)
    return (ca - cb).pow(2).sum() / (4 * d * d)


def gram_structure(feat: torch.Tensor) -> torch.Tensor:
    """Spatial self-similarity of a feature map: cosine similarities of all position pairs, ``(B, P, P)``.

    Invariant to a per-channel-consistent rescaling of the features, it describes *where* similar content
    lies (scene structure) rather than what it looks like. A per-step function: shapes are checked, values are
    not (NaN propagates like torch's own layers).
    """
    check_tensor("feat", feat, finite=False)
    if feat.ndim != 4:
        raise ValueError(f"feat must be (B, C, H, W); got {tuple(feat.shape)}")
    f = nn.functional.normalize(feat.flatten(2), dim=1)  # (B, C, P), unit vector per position
    return f.transpose(1, 2) @ f


class DomainDiscriminator(nn.Module):
    """MLP domain classifier (logit: source 0, target 1)."""

    def __init__(self, dim: int, hidden: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.flatten(1)).squeeze(-1)


class _VectorContext(nn.Module):
    """One attention layer over lane-point, leader and ego tokens; returns the ego token and the attention."""

    def __init__(self, dim: int = 32, n_lane: int = 8) -> None:
        super().__init__()
        self.lane = nn.Linear(2, dim)
        self.leader = nn.Linear(3, dim)
        self.ego = nn.Linear(1, dim)
        self.kind = nn.Parameter(0.1 * torch.randn(3, dim))
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.ReLU())
        self.register_buffer("lane_y", torch.linspace(2.0, 26.0, n_lane) / 10.0)

    def forward(self, lane: torch.Tensor, leader: torch.Tensor, ego_speed: torch.Tensor) -> tuple[torch.Tensor, ...]:
        b = lane.shape[0]
        pts = torch.stack([lane / 5.0, self.lane_y.expand(b, -1)], -1)
        tok = torch.cat(
            [
                self.lane(pts) + self.kind[0],
                (self.leader(leader) + self.kind[1])[:, None],
                (self.ego(ego_speed[:, None] / 10.0) + self.kind[2])[:, None],
            ],
            1,
        )
        q, k, v = self.qkv(tok).chunk(3, -1)
        attn = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(q.shape[-1]), -1)  # (B, T, T) agent-map relations
        h = self.out(tok + attn @ v)
        return h[:, -1], attn


class VectorPlanner(nn.Module):
    """A VAD-lite end-to-end planner: raster -> geometry and agent vectors -> vector context -> 6 waypoints.

    ``forward(image (B, 3, 32, 32), ego_speed (B,))`` returns a dict: ``feat`` (B, 32, 4, 4) feature map,
    ``h`` (B, 64) global feature, ``road`` (B, 8, 8) drivable-area logits, ``lane`` (B, 8) centreline x (m),
    ``leader`` (B, 3) (presence logit, distance m, speed m/s), ``ctx`` (B, 32) vector context,
    ``ctx_attn`` (B, 10, 10) its attention, ``traj`` (B, 6, 2) waypoints (m).
    """

    def __init__(self, width: int = 32, ctx_dim: int = 32) -> None:
        super().__init__()
        w = width
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, w, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(w, w, 3, stride=2, padding=1),
            nn.ReLU(),
        )
        self.down = nn.Sequential(nn.Conv2d(w, w, 3, stride=2, padding=1), nn.ReLU())
        self.road_head = nn.Conv2d(w, 1, 1)
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(w * 16, 64), nn.ReLU())
        self.lane_head = nn.Linear(64, 8)
        self.leader_head = nn.Linear(64, 3)
        self.context = _VectorContext(ctx_dim)
        self.plan = nn.Sequential(nn.Linear(64 + ctx_dim + 1, 64), nn.ReLU(), nn.Linear(64, 12))

    def forward(self, image: torch.Tensor, ego_speed: torch.Tensor) -> dict[str, torch.Tensor]:
        if image.ndim != 4 or image.shape[1:] != (3, 32, 32):
            raise ValueError(f"image must have shape (B, 3, 32, 32); got {tuple(image.shape)}")
        if ego_speed.shape != (image.shape[0],):
            raise ValueError(f"ego_speed must have shape ({image.shape[0]},); got {tuple(ego_speed.shape)}")
        mid = self.stem(image)
        feat = self.down(mid)
        h = self.fc(feat)
        lane = 5.0 * self.lane_head(h)
        lead = self.leader_head(h)
        leader = torch.stack([lead[:, 0], 10.0 * lead[:, 1] + 15.0, 5.0 * lead[:, 2] + 5.0], -1)
        vec_leader = torch.stack([torch.sigmoid(leader[:, 0]), leader[:, 1] / 10.0, leader[:, 2] / 10.0], -1)
        ctx, attn = self.context(lane, vec_leader, ego_speed)
        raw = self.plan(torch.cat([h, ctx, ego_speed[:, None] / 10.0], -1)).reshape(-1, 6, 2)
        ts = torch.arange(1, 7, dtype=image.dtype) * 0.5
        base_y = ego_speed[:, None] * ts  # constant speed straight ahead, the residual's origin
        traj = torch.stack([2.0 * raw[..., 0], base_y + 3.0 * raw[..., 1]], -1)
        return {
            "feat": feat,
            "h": h,
            "road": self.road_head(mid).squeeze(1),
            "lane": lane,
            "leader": leader,
            "ctx": ctx,
            "ctx_attn": attn,
            "traj": traj,
        }
