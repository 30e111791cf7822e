"""3D vision: stereo rectification, geometry-routed vision-language fusion, multi-view reconstruction and driving.

The paper folders live below; each paper's public names are re-exported here (ARCHITECTURE.md: public names).
OpenCV (extra ``vision3d``) provides the classical baselines and is imported inside the functions that need it.
"""

from __future__ import annotations

__all__: list[str] = []
