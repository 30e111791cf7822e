"""LieVLM: Lie routing of visual semantics by 3D geometry.

Paper: *LieVLM: Lie routing of semantics by 3D geometry* (NeurIPS 2026; the paper itself was not found, notes
``shared/papers/lievlm.md``). Claim: treating geometry as an operator on hidden semantics (latent rotation states
and routing coefficients from geometry tokens, triplet-wise Lie group actions on projected 2D semantics, routed
fusion of the semantic, 3D-context and Lie-routed paths) improves view robustness, especially under severe pose
change, and beats additive geometry fusion.

What we built: :class:`LieRouter` (the block, an ``nn.Module``), :func:`so3_exp` / :func:`so3_hat` (Rodrigues'
exponential map, exact and differentiable at the identity), the baselines :class:`AdditiveFusion` (VG-LLM-style),
:class:`ConcatFusion` (geometry as extra tokens) and :class:`MLPFusion`, and the synthetic pose-drift benchmark
(:func:`make_pose_drift_world`, :func:`sample_pose_drift`, :class:`PoseDriftModel`).

Inferred (the paper's text is unavailable; every item is our choice):

- Rotation states: ``w_m = sum_e a_e(h) A_{e,m}``, a linear combination of E learnable so(3) generators per
  triplet with coefficients from the geometry MLP. The notes' reading used softmax coefficients; we use
  unconstrained ones because a softmax confines ``w`` to the convex hull of the generators, which bounds the
  rotation angle the block can express (the algebra is a vector space, so a linear combination is the natural
  coordinate chart).
- Routing coefficients: one sigmoid per triplet, interpolating between the rotated and the unrotated triplet.
- Fusion gates: a softmax over the three paths per token from an MLP on ``[v, g]``; the output projection
  ``W_o`` is zero-initialised (identity block at start, "preserves pretrained visual-language semantics").
- The MLLM is replaced by a 2-layer transformer head; VGGT geometry tokens by (camera quaternion, 3D position).
- No ``roma`` dependency: Rodrigues' formula in torch, with Taylor branches near zero.
"""

from __future__ import annotations

from geode.vision3d.lievlm.benchmark import (
    FUSIONS,
    PoseDriftModel,
    PoseDriftWorld,
    make_pose_drift_world,
    sample_pose_drift,
)
from geode.vision3d.lievlm.router import AdditiveFusion, ConcatFusion, LieRouter, MLPFusion, so3_exp, so3_hat

__all__ = [
    "FUSIONS",
    "AdditiveFusion",
    "ConcatFusion",
    "LieRouter",
    "MLPFusion",
    "PoseDriftModel",
    "PoseDriftWorld",
    "make_pose_drift_world",
    "sample_pose_drift",
    "so3_exp",
    "so3_hat",
]
