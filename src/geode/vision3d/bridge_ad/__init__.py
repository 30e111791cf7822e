"""Bridge-AD: sim-to-real domain adaptation of an end-to-end planner by aligning perception and decisions.

Paper: *Bridge-AD* (NeurIPS 2026; neither the paper's text beyond its abstract nor code could be found, see
``shared/papers/bridge-ad.md``). Claim: jointly aligning perception through explicit geometry and implicit
structure (GAPA) and decisions through vector-conditioned policy distributions (LVDA), with progressive
adversarial transfer, transfers a simulation-trained driving policy to real data better than appearance-level
alignment, with lower trajectory L2 and collision rate on the target domain.

Components: the toy driving world (:func:`generate_driving`: lanes, agents, IDM expert trajectories, flat "sim"
and textured, pitched "real" rasters; :func:`trajectory_l2`, :func:`trajectory_collides`,
:func:`collision_rate`), the VAD-lite :class:`VectorPlanner`, gradient reversal (:func:`grad_reverse`,
:class:`GradientReversal`), the progressive schedule :func:`progressive_lambda`, :func:`coral_loss`,
:func:`gram_structure`, :class:`DomainDiscriminator`, :class:`BridgeADAlignment` (GAPA + LVDA) and the baseline
:class:`DANNAlignment`, and the supervised :func:`planning_loss`.

Everything below the abstract is inferred (the paper is silent, or unread):

- the planner: a 4-layer CNN on a 32 x 32 bird's-eye raster (nuScenes cameras and a BEV encoder are out of
  reach), heads for the drivable area (8 x 8), the ego lane's centreline (8 points) and the nearest agent ahead
  (presence, distance, speed: the agent's speed is drawn as a trail behind it), one attention layer over
  lane-point, agent and ego tokens (the vector-space context) and an MLP to 6 waypoints, a residual on
  driving straight at the current speed;
- GAPA explicit geometry: an adversarial discriminator on the predicted drivable area and lane polyline through
  a GRL, and L1 consistency of the target's geometry under photometric augmentation; GAPA implicit structure:
  CORAL between the domains' spatial cosine self-similarity (Gram) matrices of the last feature map;
- LVDA: a CDAN-style discriminator on the outer product of the vector context and the planned trajectory, and
  the squared distance of the domains' mean attention (agent-map relation) matrices;
- progressive transfer: GRL coefficient 2 / (1 + exp(-10 p)) - 1, the same ramp on the non-adversarial terms,
  decision terms starting at 30% of training with their own ramp (perception first);
- one weight for all five terms (tuned), each term at unit weight inside it;
- the target domain shifts appearance (textures, colour cast, noise, blur, shadows, faint markings), geometry
  (a camera-pitch warp of the raster rows) and behaviour (denser and slower agents), the three kinds of gap
  the abstract names; target labels are never used in training except by the supervised-on-target ceiling.

There is no official code to differ from; the nuScenes split, VAD/UniAD backbones and their metrics' exact
definitions (L2 at 1/2/3 s is the error at that time here, UniAD's convention) are replaced as above.

Examples
--------
One training step of sim-to-real transfer: the planner is supervised on labelled simulation scenes, and
Bridge-AD's five alignment terms use the unlabelled real scenes and a photometrically augmented copy of them:

>>> import torch
>>> from geode.vision3d import BridgeADAlignment, VectorPlanner, generate_driving, planning_loss, trajectory_l2
>>> _ = torch.manual_seed(0)
>>> def scenes(domain, seed):
...     return {k: torch.from_numpy(v) for k, v in generate_driving(16, domain, seed=seed).items()}
>>> sim, real = scenes("sim", 0), scenes("real", 1)
>>> sim["image"].shape, sim["traj"].shape
(torch.Size([16, 3, 32, 32]), torch.Size([16, 6, 2]))
>>> planner, bridge = VectorPlanner(), BridgeADAlignment()
>>> opt = torch.optim.AdamW([*planner.parameters(), *bridge.parameters()], lr=1e-3)
>>> out_sim = planner(sim["image"], sim["ego_speed"])
>>> out_real = planner(real["image"], real["ego_speed"])
>>> out_aug = planner((0.8 * real["image"] + 0.1).clamp(0, 1), real["ego_speed"])
>>> terms = bridge(out_sim, out_real, out_aug, progress=0.5)
>>> sorted(terms)
['decision_adv', 'geo_adv', 'geo_cons', 'loss', 'relation', 'structure']
>>> loss = planning_loss(out_sim, sim) + terms["loss"]  # the real scenes' labels are never used
>>> opt.zero_grad()
>>> loss.backward()
>>> opt.step()
>>> sorted(trajectory_l2(out_real["traj"].detach().numpy(), real["traj"].numpy()))
['l2', 'l2_1s', 'l2_2s', 'l2_3s']
"""

from __future__ import annotations

from geode.vision3d.bridge_ad.bridge import BridgeADAlignment, DANNAlignment, planning_loss
from geode.vision3d.bridge_ad.driving import (
    DRIVING_DOMAINS,
    collision_rate,
    generate_driving,
    trajectory_collides,
    trajectory_l2,
)
from geode.vision3d.bridge_ad.model import (
    DomainDiscriminator,
    GradientReversal,
    VectorPlanner,
    coral_loss,
    grad_reverse,
    gram_structure,
    progressive_lambda,
)

__all__ = [
    "DRIVING_DOMAINS",
    "BridgeADAlignment",
    "DANNAlignment",
    "DomainDiscriminator",
    "GradientReversal",
    "VectorPlanner",
    "collision_rate",
    "coral_loss",
    "generate_driving",
    "grad_reverse",
    "gram_structure",
    "planning_loss",
    "progressive_lambda",
    "trajectory_collides",
    "trajectory_l2",
]
