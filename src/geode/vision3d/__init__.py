"""3D vision: stereo rectification, geometry-routed vision-language fusion, multi-view reconstruction and driving.

The paper folders live below; each paper's public names are re-exported here (ARCHITECTURE.md: public names):

* ``geode.vision3d.virtualrect``: online stereo rectification by a rectified virtual stereo camera (VirtualRect);
* ``geode.vision3d.lievlm``: Lie routing of visual semantics by 3D geometry (LieVLM);
* ``geode.vision3d.gard``: geometry-aware representation denoising for multi-view reconstruction (GARD);
* ``geode.vision3d.bridge_ad``: sim-to-real alignment of an end-to-end driving planner (Bridge-AD).

OpenCV (extra ``vision3d``) provides the classical baselines and is imported inside the functions that need it.

Papers and their names
----------------------
Each paper's public names, importable from this package (``geode show <slug>`` prints the same with an example).

``bridge-ad``: Bridge-AD, sim-to-real alignment of an end-to-end driving planner::

    from geode.vision3d import (DRIVING_DOMAINS, BridgeADAlignment, DANNAlignment, DomainDiscriminator,
                                GradientReversal, VectorPlanner, collision_rate, coral_loss, generate_driving,
                                grad_reverse, gram_structure, planning_loss, progressive_lambda,
                                trajectory_collides, trajectory_l2)

- ``BridgeADAlignment``: the five alignment terms (GAPA geometry and structure, LVDA decisions) on planner outputs.
- ``DANNAlignment``: the DANN baseline on the global image feature.
- ``VectorPlanner``: a VAD-lite end-to-end planner (raster to geometry, agents, vector context, waypoints).
- ``planning_loss``: its supervised loss on labelled scenes.
- ``grad_reverse``, ``GradientReversal``: gradient reversal; ``progressive_lambda``: its progressive schedule.
- ``DomainDiscriminator``: an MLP domain classifier.
- ``coral_loss``, ``gram_structure``: CORAL, and the spatial self-similarity it compares.
- ``generate_driving``: procedural driving scenes of a domain; ``DRIVING_DOMAINS``: ``("sim", "real")``.
- ``trajectory_l2``, ``trajectory_collides``, ``collision_rate``: the planning metrics.

``gard``: GARD, geometry-aware denoising in a frozen multi-view reconstructor's feature space::

    from geode.vision3d import (DEGRADATIONS, FeatureDecoder, GARDDenoiser, GARDRestorer, MultiViewReconstructor,
                                PixelRestorer, attention_alignment_loss, correspondence_targets, degrade_views,
                                euler_flow, flow_interpolant, patch_points, render_multiview_scenes,
                                sample_flow_times)

- ``GARDRestorer``: the restorer (flow-matching + alignment loss, Euler restoration to features, depth and RGB).
- ``GARDDenoiser``: its velocity network with alternating per-view and cross-view attention.
- ``MultiViewReconstructor``: a small frozen multi-view depth reconstructor (the stand-in for Depth Anything 3).
- ``FeatureDecoder``: features back to RGB; ``PixelRestorer``: the pixel-space baseline.
- ``flow_interpolant``, ``sample_flow_times``, ``euler_flow``: the flow-matching pieces.
- ``patch_points``, ``correspondence_targets``, ``attention_alignment_loss``: the geometric attention alignment.
- ``render_multiview_scenes``, ``degrade_views``: procedural scenes and their degradations (``DEGRADATIONS``).

``lievlm``: LieVLM, Lie routing of visual semantics by 3D geometry::

    from geode.vision3d import (FUSIONS, AdditiveFusion, ConcatFusion, LieRouter, MLPFusion, PoseDriftModel,
                                PoseDriftWorld, make_pose_drift_world, sample_pose_drift, so3_exp, so3_hat)

- ``LieRouter``: the LieVLM block (geometry-conditioned SO(3) actions on semantic triplets, routed fusion).
- ``AdditiveFusion``, ``ConcatFusion``, ``MLPFusion``: the geometry-fusion baselines.
- ``so3_exp``, ``so3_hat``: the exponential map of so(3) and the hat operator.
- ``PoseDriftModel``: a fusion block with a small answer head; ``FUSIONS``: its fusion kinds.
- ``make_pose_drift_world``, ``PoseDriftWorld``, ``sample_pose_drift``: the synthetic pose-drift benchmark.

``virtualrect``: VirtualRect, online stereo rectification by a rectified virtual stereo camera::

    from geode.vision3d import (MIN_MATCHES, StereoRectification, StereoScene, VirtualRect,
                                essential_rectification, hartley_rectification, rectification_coverage,
                                render_stereo_scene, rotation_from_vector, sample_matches, vertical_errors,
                                virtual_stereo_camera)

- ``VirtualRect``: robust estimation of the drifted rig from matches, then its virtual-camera rectification.
- ``StereoRectification``: a rectification (homographies, R1, R2, K_rect, Q; ``rectify_points``, ``remap``).
- ``virtual_stereo_camera``: the full-coverage virtual stereo camera of a known rig.
- ``hartley_rectification``, ``essential_rectification``: the OpenCV baselines (need the ``vision3d`` extra).
- ``vertical_errors``, ``rectification_coverage``: row error of matches; whole-image coverage and distortion.
- ``render_stereo_scene``, ``StereoScene``, ``sample_matches``: procedural stereo scenes with drift and matches.
- ``rotation_from_vector``: Rodrigues' rotation matrix; ``MIN_MATCHES``: the fewest matches VirtualRect accepts.
"""

from __future__ import annotations

from geode.vision3d import bridge_ad as _bridge_ad
from geode.vision3d import gard as _gard
from geode.vision3d import lievlm as _lievlm
from geode.vision3d import virtualrect as _virtualrect
from geode.vision3d.bridge_ad import *  # noqa: F403
from geode.vision3d.gard import *  # noqa: F403
from geode.vision3d.lievlm import *  # noqa: F403
from geode.vision3d.virtualrect import *  # noqa: F403

__all__: list[str] = [*_bridge_ad.__all__, *_gard.__all__, *_lievlm.__all__, *_virtualrect.__all__]
