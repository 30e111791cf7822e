"""Uncertainty: conformal abstention, post-hoc GPs on neural-operator features, diffusion-path OOD detection.

The paper folders live below (``geode.uncertainty.conformal_abstention``, ...); each re-exports its public
names here. The expected calibration error shared with other fields is :func:`geode.core.expected_calibration_error`.
"""

from __future__ import annotations

from geode.uncertainty import conformal_abstention as _conformal_abstention
from geode.uncertainty import reef_gp as _reef_gp
from geode.uncertainty import ufcod as _ufcod
from geode.uncertainty.conformal_abstention import *  # noqa: F403
from geode.uncertainty.reef_gp import *  # noqa: F403
from geode.uncertainty.ufcod import *  # noqa: F403

__all__: list[str] = []
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_conformal_abstention.__all__, *_reef_gp.__all__, *_ufcod.__all__]
