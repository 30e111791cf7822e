"""GARD: interpolated flow matching in a frozen reconstructor's feature space, with attention alignment.

Flow matching (the authors' ``transport.py``, linear ``ICPlan`` path, velocity prediction). With
:math:`z_{HQ}` the features of the clean views and :math:`z_{LQ}` those of the degraded views,

.. math::

    x_1 = z_{HQ}, \\qquad x_0 = \\sigma\\,\\varepsilon + z_{LQ}, \\qquad
    x_t = t\\,x_1 + (1 - t)\\,x_0, \\qquad u_t = \\frac{dx_t}{dt} = x_1 - x_0,

with :math:`\\sigma` = ``noise_lvl`` (0.3). The denoiser sees :math:`x_t + z_{LQ}` ("double conditioning",
``training_lq_cond: true``) and regresses :math:`u_t`; with probability ``cond_drop`` (0.1) a scene's
conditioning is dropped (:math:`x_0 = \\varepsilon`, no added :math:`z_{LQ}`). Times are logit-normal(0, 1)
with the SD3 shift :math:`t \\mapsto s t / (1 + (s - 1) t)`. Restoration integrates
:math:`\\dot x = v_\\theta(x + z_{LQ}, t)` from :math:`x_0 = \\sigma \\varepsilon + z_{LQ}` with Euler steps
from :math:`t = 0` to 1, then the frozen reconstructor's late layers give depth and the decoder gives RGB.

Attention alignment (``attn_align``, lambda = 1): at one global block, the head-averaged attention of the
tokens of view i restricted to the tokens of view j and renormalised, :math:`A_{ij}(p, \\cdot)`, is matched
by cross-entropy to :math:`T_{ij}(p, q) = \\mathrm{softmax}_q(-\\lVert X_i(p) - X_j(q)\\rVert / (\\tau \\bar d))`,
where :math:`X` are the world points of the patch centres unprojected from the reconstructor's depth of the
*clean* views (``da3_point_cloud``), :math:`\\bar d` the scene's median depth and :math:`\\tau` = 0.01; a
row counts only where the nearest-point match is cycle-consistent within ``cycle_threshold`` patches
(Chebyshev), the authors' ``visibility_mask: cycle_consistency`` with threshold 1.5.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from geode.core import check_int, check_real
from geode.core.validation import check_finite, check_tensor
from geode.vision3d.gard.model import FeatureDecoder, GARDDenoiser, MultiViewReconstructor, check_views

__all__ = [
    "GARDRestorer",
    "attention_alignment_loss",
    "correspondence_targets",
    "euler_flow",
    "flow_interpolant",
    "patch_points",
    "sample_flow_times",
]


def flow_interpolant(x0: torch.Tensor, x1: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The linear path :math:`x_t = t x_1 + (1 - t) x_0` and its velocity :math:`u_t = x_1 - x_0`.

    ``t`` has one entry per leading-axis element of ``x0``/``x1`` (or is a scalar). A per-step function: types and
    shapes are checked, values are not (NaN propagates like torch's own layers).
    """
    check_tensor("x0", x0, finite=False)
    check_tensor("x1", x1, finite=False)
    if x0.shape != x1.shape:
        raise ValueError(f"x0 and x1 must have the same shape; got {tuple(x0.shape)} and {tuple(x1.shape)}")
    t = torch.as_tensor(t, dtype=x0.dtype)
    if t.ndim == 0:
        t = t.expand(x0.shape[0])
    if t.shape != (x0.shape[0],):
        raise ValueError(f"t must be a scalar or have shape ({x0.shape[0]},); got {tuple(t.shape)}")
    tt = t.reshape(-1, *([1] * (x0.ndim - 1)))
    return tt * x1 + (1 - tt) * x0, x1 - x0


def sample_flow_times(
    n: int,
    generator: torch.Generator | None = None,
    *,
    mu: float = 0.0,
    sigma: float = 1.0,
    shift: float = 1.0,
    device: Any = None,
) -> torch.Tensor:
    """Logit-normal flow times in (0, 1) with the resolution shift ``t -> s t / (1 + (s - 1) t)`` (s >= 1)."""
    n = check_int("n", n, low=1)
    check_real("mu", mu)
    sigma = check_real("sigma", sigma, low=0.0, low_inclusive=False)
    shift = check_real("shift", shift, low=1.0)
    t = torch.sigmoid(mu + sigma * torch.randn(n, generator=generator, device=device)).clamp(0.0, 1 - 1e-3)
    return shift * t / (1 + (shift - 1) * t)


def euler_flow(
    velocity: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], x0: torch.Tensor, steps: int
) -> torch.Tensor:
    """Integrate x' = v(x, t) from t = 0 to 1 with ``steps`` Euler steps; returns x at t = 1.

    ``x0`` is a tensor of any shape whose first axis is the batch (``t`` has one entry per batch element; an empty
    batch gives an empty result). Its values are not checked: NaN propagates like torch's own layers.
    """
    check_tensor("x0", x0, finite=False, nonempty=False)
    if not callable(velocity):
        raise TypeError(f"velocity must be callable v(x, t); got {type(velocity).__name__}")
    if x0.ndim == 0:
        raise ValueError("x0 must have a batch axis; got a 0-d tensor")
    steps = check_int("steps", steps, low=1)
    x = x0
    dt = 1.0 / steps
    for k in range(steps):
        t = torch.full((x0.shape[0],), k * dt, dtype=x0.dtype, device=x0.device)
        x = x + dt * velocity(x, t)
    return x


def patch_points(depth: torch.Tensor, cam_x: torch.Tensor, focal: float, patch: int) -> torch.Tensor:
    """World points ``(B, V, N, 3)`` of patch centres, from per-pixel depth of laterally translated cameras.

    Each patch's point is the centre ray of the patch at the patch's mean depth; camera ``j`` of scene ``b``
    sits at ``(cam_x[b, j], 0, 0)`` looking along +z (the scene generator's rig). ``depth`` and ``cam_x`` must be
    finite, ``focal`` a finite number > 0 and ``patch`` an int >= 1 that divides H and W.
    """
    check_tensor("depth", depth, ndim=4, floating=True)
    b, v, h, w = depth.shape
    check_tensor("cam_x", cam_x, shape=(b, v))
    check_real("focal", focal, low=0.0, low_inclusive=False)
    patch = check_int("patch", patch, low=1)
    if h % patch or w % patch:
        raise ValueError(f"patch {patch} must divide the depth map's H and W; got {(h, w)}")
    return _patch_points(depth, cam_x, focal, patch)


def _patch_points(depth: torch.Tensor, cam_x: torch.Tensor, focal: float, patch: int) -> torch.Tensor:
    """:func:`patch_points` without the checks (the training step's caller has validated its inputs)."""
    b, v, h, w = depth.shape
    if cam_x.shape != (b, v):
        raise ValueError(f"cam_x must have shape ({b}, {v}); got {tuple(cam_x.shape)}")
    d = depth.reshape(b, v, h // patch, patch, w // patch, patch).mean((3, 5)).reshape(b, v, -1)
    gy, gx = torch.meshgrid(
        (torch.arange(h // patch, dtype=depth.dtype) + 0.5) * patch - h / 2,
        (torch.arange(w // patch, dtype=depth.dtype) + 0.5) * patch - w / 2,
        indexing="ij",
    )
    x = gx.reshape(1, 1, -1) / focal * d + cam_x[..., None]
    y = gy.reshape(1, 1, -1) / focal * d
    return torch.stack([x, y, d], dim=-1)


def correspondence_targets(
    points: torch.Tensor, grid: tuple[int, int], *, tau: float = 0.01, cycle_threshold: float = 1.5
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-view attention targets from point clouds, with a cycle-consistency visibility mask.

    Parameters
    ----------
    points : tensor (B, V, N, 3)
        World points of the patch centres of every view.
    grid : (int, int)
        The patch grid ``(h, w)`` with ``h w = N``.
    tau : float
        Temperature on the distance divided by the scene's median depth.
    cycle_threshold : float
        A match p -> q -> p' is visible if the Chebyshev patch distance of p and p' is at most this.

    Returns
    -------
    targets : tensor (B, V, V, N, N)
        ``targets[b, i, j, p]`` a distribution over the patches q of view j (diagonal i = j unused).
    mask : tensor (B, V, V, N) of bool
        Rows that count (cycle-consistent and i != j).
    """
    check_tensor("points", points, shape=(None, None, None, 3), floating=True)
    if not isinstance(grid, (tuple, list)) or len(grid) != 2:
        raise ValueError(f"grid must be a pair (h, w) of ints; got {grid!r}")
    grid = (check_int("grid[0]", grid[0], low=1), check_int("grid[1]", grid[1], low=1))
    if grid[0] * grid[1] != points.shape[2]:
        raise ValueError(f"grid {grid} does not hold the {points.shape[2]} patches of points")
    tau = check_real("tau", tau, low=0.0, low_inclusive=False)
    cycle_threshold = check_real("cycle_threshold", cycle_threshold, low=0.0)
    return _correspondence_targets(points, grid, tau, cycle_threshold)


def _correspondence_targets(
    points: torch.Tensor, grid: tuple[int, int], tau: float, cycle_threshold: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`correspondence_targets` without the checks (the training step's caller has validated its inputs)."""
    b, v, n, _ = points.shape
    if grid[0] * grid[1] != n:
        raise ValueError(f"grid {grid} does not hold {n} patches")
    scale = points[..., 2].flatten(1).median(dim=1).values.clamp_min(1e-6)  # (B,)
    dist = torch.cdist(points.unsqueeze(2).expand(b, v, v, n, 3), points.unsqueeze(1).expand(b, v, v, n, 3))
    dist = dist / scale.reshape(b, 1, 1, 1, 1)  # dist[b, i, j, p, q] = |X_i(p) - X_j(q)| / median depth
    targets = torch.softmax(-dist / tau, dim=-1)
    fwd = dist.argmin(-1)  # (B, V, V, N): p -> q
    back = dist.transpose(1, 2).argmin(-1)  # (B, V(j), V(i), N): q -> p'
    pback = torch.gather(back.transpose(1, 2), -1, fwd)  # p -> q -> p'
    p = torch.arange(n)
    cheb = torch.maximum((pback // grid[1] - p // grid[1]).abs(), (pback % grid[1] - p % grid[1]).abs())
    mask = (cheb <= cycle_threshold) & ~torch.eye(v, dtype=torch.bool).reshape(1, v, v, 1)
    return targets, mask


def attention_alignment_loss(
    attention: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor, n_views: int, eps: float = 1e-8
) -> torch.Tensor:
    """Cross-entropy between renormalised cross-view attention blocks and correspondence targets.

    ``attention`` is ``(B, V N, V N)`` (head-averaged, rows of the queries); the block of query view i and key
    view j is renormalised over its keys and scored against ``targets[:, i, j]`` on the rows of ``mask``.
    Returns 0 when no row counts. A per-step loss: types and shapes are checked, values are not (NaN propagates
    like torch's own layers).
    """
    n_views = check_int("n_views", n_views, low=1)
    check_tensor("attention", attention, ndim=3, finite=False)
    b, length, _ = attention.shape
    if attention.shape[2] != length or length % n_views:
        raise ValueError(f"attention must be (B, V N, V N) with V = n_views = {n_views}; got {tuple(attention.shape)}")
    n = length // n_views
    check_tensor("targets", targets, shape=(b, n_views, n_views, n, n), finite=False)
    check_tensor("mask", mask, shape=(b, n_views, n_views, n), finite=False)
    check_real("eps", eps, low=0.0)
    if length % n_views:
        raise ValueError(f"attention length {length} is not a multiple of n_views {n_views}")
    n = length // n_views
    a = attention.reshape(b, n_views, n, n_views, n).permute(0, 1, 3, 2, 4)  # (B, i, j, p, q)
    a = a / (a.sum(-1, keepdim=True) + eps)
    ce = -(targets * torch.log(a + eps)).sum(-1)  # (B, i, j, p)
    m = mask.to(ce.dtype)
    return (ce * m).sum() / m.sum().clamp_min(1.0)


class GARDRestorer(nn.Module):
    """Geometry-aware representation denoising: restore degraded views in a frozen reconstructor's features.

    Parameters
    ----------
    reconstructor : MultiViewReconstructor
        Frozen on construction (``requires_grad_(False)``, ``eval()``); its early layers give the features,
        its late layers and head the depth. No gradient ever reaches it.
    denoiser : GARDDenoiser
        The velocity network (cross-view attention for GARD, local only for the latent-restorer baseline).
    decoder : FeatureDecoder, optional
        Frozen decoder from features to RGB (for the restored images).
    noise_lvl : float
        :math:`\\sigma` of :math:`x_0 = \\sigma \\varepsilon + z_{LQ}` (authors: 0.3).
    steps : int
        Euler steps at restoration (authors: 50; our default 10, enough for these small features).
    align_weight : float
        lambda of the attention-alignment loss (authors: 1.0; 0 disables it).
    align_tau, cycle_threshold : float
        Target temperature and cycle-consistency threshold (authors: 0.01 and 1.5).
    cond_drop : float
        Probability of dropping a scene's LQ conditioning in training (authors: 0.1).
    time_shift : float
        SD3 resolution shift of the training times (authors' formula sqrt(N D / 4096) is < 1 at our size,
        so 1).
    """

    def __init__(
        self,
        reconstructor: MultiViewReconstructor,
        denoiser: GARDDenoiser,
        decoder: FeatureDecoder | None = None,
        *,
        noise_lvl: float = 0.3,
        steps: int = 10,
        align_weight: float = 1.0,
        align_tau: float = 0.01,
        cycle_threshold: float = 1.5,
        cond_drop: float = 0.1,
        time_shift: float = 1.0,
    ) -> None:
        super().__init__()
        if not isinstance(reconstructor, MultiViewReconstructor):
            raise TypeError(f"reconstructor must be a MultiViewReconstructor; got {type(reconstructor).__name__}")
        if not isinstance(denoiser, GARDDenoiser):
            raise TypeError(f"denoiser must be a GARDDenoiser; got {type(denoiser).__name__}")
        if denoiser.dim != reconstructor.dim:
            raise ValueError(f"denoiser.dim ({denoiser.dim}) must equal the reconstructor's ({reconstructor.dim})")
        self.noise_lvl = check_real("noise_lvl", noise_lvl, low=0.0)
        self.steps = check_int("steps", steps, low=1)
        self.align_weight = check_real("align_weight", align_weight, low=0.0)
        self.align_tau = check_real("align_tau", align_tau, low=0.0, low_inclusive=False)
        self.cycle_threshold = check_real("cycle_threshold", cycle_threshold, low=0.0)
        self.cond_drop = check_real("cond_drop", cond_drop, low=0.0, high=1.0)
        self.time_shift = check_real("time_shift", time_shift, low=1.0)
        if self.align_weight > 0 and denoiser.align_layer is None:
            raise ValueError("align_weight > 0 needs a denoiser with cross-view attention (an align_layer)")
        self.reconstructor = reconstructor.requires_grad_(False).eval()
        self.decoder = decoder.requires_grad_(False).eval() if decoder is not None else None
        self.denoiser = denoiser

    def train(self, mode: bool = True) -> GARDRestorer:
        super().train(mode)
        self.reconstructor.eval()  # frozen modules stay in eval mode
        if self.decoder is not None:
            self.decoder.eval()
        return self

    def trainable_parameters(self) -> list[nn.Parameter]:
        """The denoiser's parameters: the only ones GARD trains."""
        return list(self.denoiser.parameters())

    @torch.no_grad()
    def encode(self, images: Any) -> torch.Tensor:
        """Frozen features ``(B, V, N, D)`` of multi-view images."""
        return self.reconstructor.features(images)

    @torch.no_grad()
    def alignment_targets(self, clean: Any, cam_x: Any, focal: float) -> tuple[torch.Tensor, torch.Tensor]:
        """Targets and mask of the alignment loss from the frozen reconstructor's depth of the clean views."""
        hq = check_views(clean, name="clean", patch=self.patch)
        cam = torch.as_tensor(cam_x, dtype=hq.dtype)
        pts = _patch_points(
            self.reconstructor(hq), cam, check_real("focal", focal, low=0.0, low_inclusive=False), self.patch
        )
        h, w = self.reconstructor.image_size
        return _correspondence_targets(pts, (h // self.patch, w // self.patch), self.align_tau, self.cycle_threshold)

    def loss(
        self,
        clean: Any,
        degraded: Any,
        *,
        cam_x: Any = None,
        focal: float | None = None,
        generator: torch.Generator | None = None,
    ) -> dict[str, torch.Tensor]:
        """Flow-matching loss (+ alignment) on a batch of clean/degraded multi-view scenes.

        ``cam_x`` ``(B, V)`` and ``focal`` place the cameras for the alignment targets (needed when
        ``align_weight > 0``). Returns ``{"loss", "flow", "align"}``.
        """
        hq = check_views(clean, name="clean", patch=self.patch)
        lq = check_views(degraded, name="degraded", patch=self.patch)
        if hq.shape != lq.shape:
            raise ValueError(f"clean and degraded must have the same shape; got {tuple(hq.shape)}, {tuple(lq.shape)}")
        tgt = mask = None
        if self.align_weight > 0:
            if cam_x is None or focal is None:
                raise ValueError("cam_x and focal are required for the alignment loss (align_weight > 0)")
            tgt, mask = self.alignment_targets(hq, cam_x, focal)
        return self.loss_from_features(self.encode(hq), self.encode(lq), tgt, mask, generator=generator)

    def loss_from_features(
        self,
        z_hq: torch.Tensor,
        z_lq: torch.Tensor,
        targets: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        *,
        generator: torch.Generator | None = None,
    ) -> dict[str, torch.Tensor]:
        """The same loss from precomputed frozen features (and alignment targets), for cached training sets."""
        if z_hq.shape != z_lq.shape or z_hq.ndim != 4:
            raise ValueError(f"z_hq and z_lq must both be (B, V, N, D); got {tuple(z_hq.shape)}, {tuple(z_lq.shape)}")
        b, v = z_hq.shape[:2]
        keep = (
            (torch.rand(b, generator=generator, device=z_hq.device) >= self.cond_drop)
            .to(z_hq.dtype)
            .reshape(b, 1, 1, 1)
        )
        zc = z_lq * keep
        eps = torch.randn(z_hq.shape, generator=generator, device=z_hq.device)
        x0 = eps * (1 - keep * (1 - self.noise_lvl)) + zc  # conditioned: noise_lvl * eps + z_LQ; dropped: eps
        t = sample_flow_times(b, generator, shift=self.time_shift, device=z_hq.device)
        xt, ut = flow_interpolant(x0, z_hq, t)
        want_align = self.align_weight > 0
        pred = self.denoiser(xt + zc, t, keep_attention=want_align)  # double conditioning
        flow = (pred - ut).pow(2).mean()
        align = torch.zeros((), dtype=flow.dtype)
        if want_align:
            if targets is None or mask is None:
                raise ValueError("targets and mask are required for the alignment loss (align_weight > 0)")
            align = attention_alignment_loss(self.denoiser.alignment_attention(), targets, mask, v)
        return {"loss": flow + self.align_weight * align, "flow": flow, "align": align}

    @property
    def patch(self) -> int:
        return self.reconstructor.patch

    @torch.no_grad()
    def restore_features(self, degraded: Any, generator: torch.Generator | None = None) -> torch.Tensor:
        """Restored feature tokens ``(B, V, N, D)``: Euler integration of the learned flow from the LQ features."""
        lq = check_views(degraded, name="degraded", patch=self.patch)
        if lq.shape[0] == 0:
            raise ValueError(f"degraded must hold at least one scene; got shape {tuple(lq.shape)}")
        check_finite("degraded", lq)
        zc = self.reconstructor.features(lq)
        x0 = (
            self.noise_lvl * torch.randn(zc.shape, generator=generator, device=zc.device) + zc
            if self.noise_lvl > 0
            else zc
        )
        return euler_flow(lambda x, t: self.denoiser(x + zc, t), x0, self.steps)

    @torch.no_grad()
    def restore(self, degraded: Any, generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
        """Restore degraded views: ``{"features", "depth", "rgb"}`` (``rgb`` only with a decoder)."""
        z = self.restore_features(degraded, generator)
        out = {"features": z, "depth": self.reconstructor.depth_from_features(z)}
        if self.decoder is not None:
            out["rgb"] = self.decoder(z)
        return out
