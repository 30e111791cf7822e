"""GARD: geometry-aware representation denoising, diffusion restoration in a frozen reconstructor's features.

Paper: *Geometry-Aware Representation Denoising for 3D reconstruction* (arXiv 2605.26230, KAIST and Samsung;
code ``cvlab-kaist/GARD``). Claim: restoring degraded multi-view images by flow matching in the feature space of
a frozen feed-forward 3D reconstructor (Depth Anything 3), with cross-view attention aligned to geometric
correspondences, recovers scene geometry better than pixel-space or view-by-view latent restoration, and a
decoder turns the restored features back into RGB.

Components: :class:`MultiViewReconstructor` (the small frozen stand-in for DA3, alternating local/global
attention), :class:`GARDDenoiser` (the DiT-lite velocity network), :class:`GARDRestorer` (training loss and
Euler restoration), :class:`FeatureDecoder`, the pixel-space baseline :class:`PixelRestorer`, the flow
functions (:func:`flow_interpolant`, :func:`sample_flow_times`, :func:`euler_flow`), the alignment loss
(:func:`patch_points`, :func:`correspondence_targets`, :func:`attention_alignment_loss`), and the procedural
scenes and degradations (:func:`render_multiview_scenes`, :func:`degrade_views`).

Followed from the authors' code (``src/gard/GARD.py``, ``RAE/src/stage2/transport/transport.py``,
``run_configs/train/train_GARD.yaml``): the linear interpolant with velocity prediction; the starting point
x0 = 0.3 eps + z_LQ; the LQ features added again to the denoiser's input ("double conditioning"), in training and
at every Euler step; conditioning dropped with probability 0.1; logit-normal(0, 1) times with the SD3 shift;
alternating local (even blocks) and global (odd blocks) attention; AdaLN-zero blocks and a zero-initialised
output layer (an untrained denoiser predicts zero velocity); QK-norm; the alignment loss with weight 1 on the
head-averaged attention of one global block, targets from the reconstructor's own point clouds of the clean
views with temperature 0.01 and a cycle-consistency mask of threshold 1.5 patches; Euler integration; AdamW
betas (0.9, 0.95), gradient clipping 1, a constant-then-linear-decay schedule to 0.1x.

Deliberate differences (scale and availability):

- DA3-GIANT is replaced by a 4-block width-32 ViT trained in-process on procedural scenes (DA3 weights are not
  offline); we restore its block-2 tokens (DA3: layer 17 of 40); it predicts depth only, no camera pose, so the
  alignment targets unproject its depth with the generator's cameras (DA3 uses its own predicted poses).
- The DDT encoder-decoder (depths [8, 6], widths [1536, 3072], RoPE, SwiGLU, RMSNorm) becomes 4 AdaLN blocks of
  width 32 with a learned per-patch positional embedding shared by the views (so global attention stays
  equivariant to view order, as the authors' "no-diff" positions in global blocks), GELU MLPs and LayerNorm.
- No cls token, no EMA, no classifier-free guidance at sampling (the release's default is off too), 10 Euler
  steps instead of 50; the time shift is 1 (the authors' sqrt(N D / 4096) is below 1 at our size and their code
  requires >= 1).
- The alignment block is the first global block (index 1 of 4; authors: 9 of 14); the target is a softmax over
  point distances divided by the scene's median depth (the release's exact distance normalisation is in code
  we could not read).
- Degradations: noise, motion blur (kernels of 4-9 px at 24 x 32 instead of 50-300 px at 504 px), JPEG-like
  block-DCT quantisation and low light, one kind per scene.

Inferred (the paper is silent): the size of everything above, the pixel-space baseline (a per-view patch
transformer of the denoiser's width and depth plus a 3x3 refiner, trained by regression, standing for
Restormer), and the latent baseline (our flow matching in the same features, local attention only, no
alignment, standing for view-by-view latent restoration).

Examples
--------
Restoration in the feature space of a frozen multi-view reconstructor (untrained here, pre-trained on clean
views in practice); only the denoiser trains, on the flow-matching loss plus the attention-alignment loss whose
targets come from the reconstructor's own depth of the clean views:

>>> import torch
>>> from geode.vision3d import (
...     GARDDenoiser, GARDRestorer, MultiViewReconstructor, degrade_views, render_multiview_scenes)
>>> _ = torch.manual_seed(0)
>>> scenes = render_multiview_scenes(4, n_views=3, seed=0)
>>> clean = torch.from_numpy(scenes["images"])
>>> degraded = torch.from_numpy(degrade_views(scenes["images"], "noise", seed=0)[0])
>>> clean.shape
torch.Size([4, 3, 3, 24, 32])
>>> recon = MultiViewReconstructor(dim=32, heads=2)
>>> gard = GARDRestorer(recon, GARDDenoiser(dim=32, n_tokens=recon.n_tokens, hidden=32, heads=2))
>>> any(p.requires_grad for p in recon.parameters())
False
>>> opt = torch.optim.AdamW(gard.trainable_parameters(), lr=1e-3)
>>> losses = gard.loss(clean, degraded, cam_x=scenes["cam_x"], focal=float(scenes["focal"]))
>>> sorted(losses)
['align', 'flow', 'loss']
>>> opt.zero_grad()
>>> losses["loss"].backward()
>>> opt.step()

Restoring integrates the learned flow from the degraded views' features, then reads depth from them:

>>> out = gard.restore(degraded, generator=torch.Generator().manual_seed(0))
>>> out["features"].shape, out["depth"].shape
(torch.Size([4, 3, 48, 32]), torch.Size([4, 3, 24, 32]))
"""

from __future__ import annotations

from geode.vision3d.gard.model import FeatureDecoder, GARDDenoiser, MultiViewReconstructor, PixelRestorer
from geode.vision3d.gard.restorer import (
    GARDRestorer,
    attention_alignment_loss,
    correspondence_targets,
    euler_flow,
    flow_interpolant,
    patch_points,
    sample_flow_times,
)
from geode.vision3d.gard.scenes import DEGRADATIONS, degrade_views, render_multiview_scenes

__all__ = [
    "DEGRADATIONS",
    "FeatureDecoder",
    "GARDDenoiser",
    "GARDRestorer",
    "MultiViewReconstructor",
    "PixelRestorer",
    "attention_alignment_loss",
    "correspondence_targets",
    "degrade_views",
    "euler_flow",
    "flow_interpolant",
    "patch_points",
    "render_multiview_scenes",
    "sample_flow_times",
]
