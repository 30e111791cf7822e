"""3D vision: stereo rectification, geometry-routed vision-language fusion, multi-view reconstruction and driving.

The paper folders live below; each paper's public names are re-exported here (ARCHITECTURE.md: public names):

* ``geode.vision3d.virtualrect``: online stereo rectification by a rectified virtual stereo camera (VirtualRect);
* ``geode.vision3d.lievlm``: Lie routing of visual semantics by 3D geometry (LieVLM);
* ``geode.vision3d.gard``: geometry-aware representation denoising for multi-view reconstruction (GARD);
* ``geode.vision3d.bridge_ad``: sim-to-real alignment of an end-to-end driving planner (Bridge-AD).

OpenCV (extra ``vision3d``) provides the classical baselines and is imported inside the functions that need it.
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
