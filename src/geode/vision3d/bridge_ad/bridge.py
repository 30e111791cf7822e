"""Bridge-AD's alignment (GAPA + LVDA with progressive adversarial transfer), DANN, and the planning loss."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from geode.core import check_real
from geode.vision3d.bridge_ad.model import (
    DomainDiscriminator,
    coral_loss,
    grad_reverse,
    gram_structure,
    progressive_lambda,
)

__all__ = ["BridgeADAlignment", "DANNAlignment", "planning_loss"]


def planning_loss(out: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Supervised loss of :class:`VectorPlanner` on labelled scenes.

    L1 on waypoints (m) + L1 on the lane polyline / 5 + BCE on the drivable area (8 x 8, average-pooled mask)
    + BCE on leader presence + L1 on its distance / 10 and speed / 5 where a leader exists.
    """
    traj = (out["traj"] - batch["traj"]).abs().mean()
    lane = (out["lane"] - batch["lane"]).abs().mean() / 5.0
    road_t = F.avg_pool2d(batch["road"][:, None], 4).squeeze(1)
    road = F.binary_cross_entropy_with_logits(out["road"], road_t)
    present = batch["leader"][:, 0]
    pres = F.binary_cross_entropy_with_logits(out["leader"][:, 0], present)
    m = present.clamp_min(0)
    dist = (out["leader"][:, 1] - batch["leader"][:, 1]).abs() / 10 + (
        out["leader"][:, 2] - batch["leader"][:, 2]
    ).abs() / 5
    lead = (dist * m).sum() / m.sum().clamp_min(1.0)
    return traj + lane + road + pres + lead


def _bce_domains(d: nn.Module, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    la, lb = d(a), d(b)
    return 0.5 * (
        F.binary_cross_entropy_with_logits(la, torch.zeros_like(la))
        + F.binary_cross_entropy_with_logits(lb, torch.ones_like(lb))
    )


class DANNAlignment(nn.Module):
    """DANN on the planner's global image feature ``h``: a discriminator behind a GRL with lambda(p).

    ``forward(src, tgt, progress)`` takes the planner outputs of a source and a target batch and returns
    ``{"loss", "adv"}``; the discriminator's accuracy is in ``last_accuracy``.
    """

    def __init__(self, dim: int = 64, gamma: float = 10.0) -> None:
        super().__init__()
        self.disc = DomainDiscriminator(dim)
        self.gamma = check_real("gamma", gamma, low=0.0)
        self.last_accuracy = float("nan")

    def forward(self, src: dict[str, torch.Tensor], tgt: dict[str, torch.Tensor], progress: float) -> dict[str, Any]:
        lam = progressive_lambda(progress, self.gamma)
        a, b = grad_reverse(src["h"], lam), grad_reverse(tgt["h"], lam)
        adv = _bce_domains(self.disc, a, b)
        with torch.no_grad():
            self.last_accuracy = 0.5 * float(
                (self.disc(src["h"]) < 0).float().mean() + (self.disc(tgt["h"]) > 0).float().mean()
            )
        return {"loss": adv, "adv": adv}


def _geometry(out: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.cat([torch.sigmoid(out["road"]).flatten(1), out["lane"] / 5.0], 1)


def _decision(out: dict[str, torch.Tensor]) -> torch.Tensor:
    traj = out["traj"].flatten(1) / 10.0
    return (out["ctx"][:, :, None] * traj[:, None, :]).flatten(1)  # CDAN multilinear map h_ctx (x) a


class BridgeADAlignment(nn.Module):
    """Bridge-AD: geometry-aware perception alignment (GAPA) and vector-space decision alignment (LVDA).

    Parameters
    ----------
    ctx_dim : int
        Width of the planner's vector context.
    weights : dict, optional
        Weights of the five terms, keys ``geo_adv``, ``geo_cons``, ``structure``, ``decision_adv``,
        ``relation`` (default 1 each).
    decision_start : float
        Training progress at which the decision terms start (perception first); their schedule restarts there.
    gamma : float
        Steepness of the progressive GRL schedule.
    shuffle_domains : bool
        Negative control: every term that compares the domains sees a random split of the pooled batch
        instead of source vs target (the consistency term then uses a random half too).

    Notes
    -----
    ``forward(src, tgt, tgt_aug, progress)`` takes the planner outputs on a source batch, a target batch and
    the photometrically augmented target batch (the same scenes) and returns the total and every term.
    With ``shuffle_domains`` pass ``src_aug`` too, so that the random "target" half has its augmented views.
    """

    TERMS = ("geo_adv", "geo_cons", "structure", "decision_adv", "relation")

    def __init__(
        self,
        ctx_dim: int = 32,
        weights: dict[str, float] | None = None,
        decision_start: float = 0.3,
        gamma: float = 10.0,
        shuffle_domains: bool = False,
    ) -> None:
        super().__init__()
        w = {k: 1.0 for k in self.TERMS}
        for k, v in (weights or {}).items():
            if k not in w:
                raise ValueError(f"weights: unknown term {k!r}; terms are {', '.join(self.TERMS)}")
            w[k] = check_real(f"weights[{k!r}]", v, low=0.0)
        self.weights = w
        self.decision_start = check_real("decision_start", decision_start, low=0.0, high=1.0, high_inclusive=False)
        self.gamma = check_real("gamma", gamma, low=0.0)
        self.shuffle_domains = bool(shuffle_domains)
        self.d_geo = DomainDiscriminator(64 + 8)
        self.d_dec = DomainDiscriminator(ctx_dim * 12)

    def _split(self, src: dict, tgt: dict, src_aug: dict | None, tgt_aug: dict, generator: Any) -> tuple:
        keys = ("feat", "h", "road", "lane", "ctx", "ctx_attn", "traj")
        pool = {k: torch.cat([src[k], tgt[k]]) for k in keys}
        pool_aug = {k: torch.cat([src_aug[k], tgt_aug[k]]) for k in ("road", "lane")}
        n = src["h"].shape[0]
        perm = torch.randperm(pool["h"].shape[0], generator=generator)
        a, b = perm[:n], perm[n:]
        return (
            {k: v[a] for k, v in pool.items()},
            {k: v[b] for k, v in pool.items()},
            {k: v[b] for k, v in pool_aug.items()},
        )

    def forward(
        self,
        src: dict[str, torch.Tensor],
        tgt: dict[str, torch.Tensor],
        tgt_aug: dict[str, torch.Tensor],
        progress: float,
        *,
        src_aug: dict[str, torch.Tensor] | None = None,
        generator: torch.Generator | None = None,
    ) -> dict[str, torch.Tensor]:
        progress = check_real("progress", progress, low=0.0, high=1.0)
        if self.shuffle_domains:
            if src_aug is None:
                raise ValueError("shuffle_domains needs src_aug (augmented source outputs)")
            src, tgt, tgt_aug = self._split(src, tgt, src_aug, tgt_aug, generator)
        lam_p = progressive_lambda(progress, self.gamma)
        pd = max(0.0, (progress - self.decision_start) / (1.0 - self.decision_start))
        lam_d = progressive_lambda(pd, self.gamma) if progress >= self.decision_start else 0.0
        terms: dict[str, torch.Tensor] = {}
        # GAPA (a): explicit geometry, adversarial + consistency under target augmentation
        terms["geo_adv"] = _bce_domains(
            self.d_geo, grad_reverse(_geometry(src), lam_p), grad_reverse(_geometry(tgt), lam_p)
        )
        terms["geo_cons"] = lam_p * (_geometry(tgt) - _geometry(tgt_aug)).abs().mean()
        # GAPA (b): implicit structure, CORAL on spatial self-similarity matrices
        terms["structure"] = lam_p * coral_loss(
            gram_structure(src["feat"]).flatten(1), gram_structure(tgt["feat"]).flatten(1)
        )
        # LVDA: conditional adversarial alignment of p(action | vector context) + relation structure
        if lam_d > 0:
            terms["decision_adv"] = _bce_domains(
                self.d_dec, grad_reverse(_decision(src), lam_d), grad_reverse(_decision(tgt), lam_d)
            )
            terms["relation"] = lam_d * (src["ctx_attn"].mean(0) - tgt["ctx_attn"].mean(0)).pow(2).sum()
        else:
            zero = src["h"].sum() * 0.0
            terms["decision_adv"] = zero
            terms["relation"] = zero
        terms["loss"] = sum(self.weights[k] * terms[k] for k in self.TERMS)
        return terms
