"""A synthetic pose-drift benchmark: answer a question about semantics seen under a 3D camera pose.

A *world* (fixed per seed) has C object classes with canonical semantic vectors ``s_c`` (R^{3M}), an orthogonal
mixing ``Q`` (the 2D encoder's basis) and per-triplet drift rates ``kappa_m``. A *scene* has N objects seen by a
camera rotated by ``R = exp([theta u]_x)`` (random axis u, angle theta). The view-induced semantic drift is a
pose-dependent group action on semantic triplets: the visual token of object i is

    v_i = Q^T blockdiag_m( exp([kappa_m theta u]_x) ) (s_{c_i} + eps_i) + noise,

and its geometry token (what a geometry encoder such as VGGT provides) is ``g_i = (q(R), p_i) + noise``: the
camera rotation as a unit quaternion (w >= 0) and the object's 3D position in the camera frame. The question:
*the class of the object nearest to the camera*, so the answer needs the geometry (which object) and the
semantics under the pose (which class). Training and validation poses have ``theta <= 30`` degrees; test bins
run from mild to severe pose change (30-50, 50-70, 70-90 degrees).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from geode.core import check_real, sign_fixed_qr
from geode.vision3d.lievlm.router import AdditiveFusion, ConcatFusion, LieRouter, MLPFusion, so3_exp

__all__ = ["FUSIONS", "PoseDriftModel", "PoseDriftWorld", "make_pose_drift_world", "sample_pose_drift"]

FUSIONS = ("semantic", "additive", "concat", "mlp", "lie", "lie_unrouted")
"""Fusion kinds of :class:`PoseDriftModel`: no geometry, additive, extra tokens, MLP on [v, g], LieVLM, and
LieVLM with the group action disabled (the ablation)."""


@dataclass
class PoseDriftWorld:
    """The fixed part of the benchmark: class semantics, the encoder's mixing and the triplet drift rates."""

    protos: np.ndarray  # (C, 3M)
    mix: np.ndarray  # (3M, 3M) orthogonal Q
    rates: np.ndarray  # (M,) kappa_m
    n_objects: int
    class_noise: float
    token_noise: float
    geo_noise: float

    @property
    def d_vis(self) -> int:
        return self.protos.shape[1]

    @property
    def n_classes(self) -> int:
        return self.protos.shape[0]

    d_geo: int = 7


def make_pose_drift_world(
    seed: int,
    *,
    n_classes: int = 10,
    n_triplets: int = 8,
    n_objects: int = 3,
    class_noise: float = 0.3,
    token_noise: float = 0.1,
    geo_noise: float = 0.02,
) -> PoseDriftWorld:
    """A random world: class prototypes of norm ``sqrt(3M)``, a random orthogonal mixing, rates in [0.5, 1.5]."""
    for k, v in (("n_classes", n_classes), ("n_triplets", n_triplets), ("n_objects", n_objects)):
        if not isinstance(v, int) or v < 2:
            raise ValueError(f"{k} must be an int >= 2; got {v!r}")
    for k, v in (("class_noise", class_noise), ("token_noise", token_noise), ("geo_noise", geo_noise)):
        check_real(k, v, low=0.0)
    rng = np.random.default_rng(seed)
    d = 3 * n_triplets
    protos = rng.normal(size=(n_classes, d))
    protos *= math.sqrt(d) / np.linalg.norm(protos, axis=1, keepdims=True)
    mix, _ = sign_fixed_qr(rng.normal(size=(d, d)))  # Haar-random orthogonal mixing
    return PoseDriftWorld(
        protos, mix, rng.uniform(0.5, 1.5, n_triplets), n_objects, class_noise, token_noise, geo_noise
    )


def sample_pose_drift(
    world: PoseDriftWorld, n: int, angle_deg: tuple[float, float], seed: int
) -> dict[str, torch.Tensor]:
    """``n`` scenes with camera rotation angles uniform in ``angle_deg``; tokens ``v`` (n, N, 3M), ``g`` (n, N, 7).

    Returns a dict with ``v``, ``g``, ``y`` (the class of the nearest object) and ``angle`` (degrees).
    """
    if isinstance(angle_deg, (str, bytes)) or not hasattr(angle_deg, "__len__") or len(angle_deg) != 2:
        raise ValueError(f"angle_deg must be a (lo, hi) pair with 0 <= lo <= hi <= 180; got {angle_deg!r}")
    lo, hi = angle_deg
    if not 0 <= lo <= hi <= 180:
        raise ValueError(f"angle_deg must be (lo, hi) with 0 <= lo <= hi <= 180; got {angle_deg!r}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1; got {n!r}")
    rng = np.random.default_rng(seed)
    N, M = world.n_objects, world.rates.shape[0]
    cls = rng.integers(0, world.n_classes, (n, N))
    s = world.protos[cls] + world.class_noise * rng.normal(size=(n, N, 3 * M))
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    theta = np.deg2rad(rng.uniform(lo, hi, n))
    w = torch.tensor(theta[:, None, None] * world.rates[None, :, None] * axis[:, None, :])  # (n, M, 3)
    Rm = so3_exp(w).numpy()  # per-triplet drift rotations
    drifted = np.einsum("bmij,bkmj->bkmi", Rm, s.reshape(n, N, M, 3)).reshape(n, N, 3 * M)
    v = drifted @ world.mix + world.token_noise * rng.normal(size=(n, N, 3 * M))  # Q^T x, row-vector form
    quat = np.c_[np.cos(theta / 2), np.sin(theta / 2)[:, None] * axis]  # w >= 0 for theta <= 180
    pos = np.stack([rng.uniform(-3, 3, (n, N)), rng.uniform(-2, 2, (n, N)), rng.uniform(2, 12, (n, N))], -1)
    g = np.concatenate([np.repeat(quat[:, None, :], N, 1), pos / 4.0], -1)
    g = g + world.geo_noise * rng.normal(size=g.shape)
    nearest = np.argmin(np.linalg.norm(pos, axis=-1), axis=1)
    y = cls[np.arange(n), nearest]
    f32 = torch.float32
    return {
        "v": torch.tensor(v, dtype=f32),
        "g": torch.tensor(g, dtype=f32),
        "y": torch.tensor(y),
        "angle": torch.tensor(np.rad2deg(theta), dtype=f32),
    }


class PoseDriftModel(nn.Module):
    """A fusion block followed by a small transformer "language head" that answers from a query token.

    Parameters
    ----------
    fusion : str
        One of :data:`FUSIONS`.
    d_vis, d_geo, n_classes, n_objects : int
    n_triplets, n_generators, hidden : int
        Sizes of the fusion blocks (the Lie router's M and E).
    layers, heads, d_ff : int
        Size of the transformer head (pre-norm, no dropout).
    """

    def __init__(
        self,
        fusion: str,
        d_vis: int,
        d_geo: int,
        n_classes: int,
        n_objects: int,
        *,
        n_triplets: int = 8,
        n_generators: int = 4,
        hidden: int = 64,
        layers: int = 2,
        heads: int = 4,
        d_ff: int = 96,
    ) -> None:
        super().__init__()
        if fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {FUSIONS}; got {fusion!r}")
        self.kind = fusion
        if fusion in ("lie", "lie_unrouted"):
            self.fusion = LieRouter(d_vis, d_geo, n_triplets, n_generators, hidden, routed=fusion == "lie")
        elif fusion == "additive":
            self.fusion = AdditiveFusion(d_vis, d_geo, hidden)
        elif fusion == "mlp":
            self.fusion = MLPFusion(d_vis, d_geo, hidden)
        elif fusion == "concat":
            self.fusion = ConcatFusion(d_vis, d_geo, hidden)
        else:
            self.fusion = None
        self.slot = nn.Parameter(0.02 * torch.randn(n_objects, d_vis))  # which object a token belongs to
        self.kind_emb = nn.Parameter(0.02 * torch.randn(2, d_vis))  # visual / geometry token
        self.query = nn.Parameter(0.02 * torch.randn(1, 1, d_vis))
        layer = nn.TransformerEncoderLayer(d_vis, heads, d_ff, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_vis)
        self.head = nn.Linear(d_vis, n_classes)

    def forward(self, v: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        n = v.shape[1]
        if self.fusion is None:
            tok = v + self.slot[:n] + self.kind_emb[0]
        elif self.kind == "concat":
            both = self.fusion(v, g)
            tok = both + torch.cat([self.slot[:n] + self.kind_emb[0], self.slot[:n] + self.kind_emb[1]], 0)
        else:
            tok = self.fusion(v, g) + self.slot[:n] + self.kind_emb[0]
        x = torch.cat([self.query.expand(v.shape[0], -1, -1), tok], 1)
        return self.head(self.norm(self.encoder(x)[:, 0]))
