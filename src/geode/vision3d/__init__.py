"""3D vision: stereo rectification, geometry-routed vision-language fusion, multi-view reconstruction and driving.

The paper folders live below; each paper's public names are re-exported here (ARCHITECTURE.md: public names).
Papers: GARD (:mod:`geode.vision3d.gard`, geometry-aware representation denoising).
Papers: Bridge-AD (:mod:`geode.vision3d.bridge_ad`, sim-to-real alignment of an end-to-end planner).
OpenCV (extra ``vision3d``) provides the classical baselines and is imported inside the functions that need it.
"""

from __future__ import annotations

from geode.vision3d import bridge_ad as _bridge_ad
from geode.vision3d import gard as _gard
from geode.vision3d.bridge_ad import *  # noqa: F403
from geode.vision3d.gard import *  # noqa: F403

__all__: list[str] = []
__all__ += [*_gard.__all__]
__all__ += [*_bridge_ad.__all__]
