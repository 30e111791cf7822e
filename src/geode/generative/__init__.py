"""Generative modelling: flow matching and diffusion papers.

The paper folders live below (``geode.generative.fm_tube_lipschitz``); each re-exports its public names here.
"""

from __future__ import annotations

from geode.generative import ada as _ada
from geode.generative import camel as _camel
from geode.generative import fm_tube_lipschitz as _fm_tube_lipschitz
from geode.generative.ada import *  # noqa: F403
from geode.generative.camel import *  # noqa: F403
from geode.generative.fm_tube_lipschitz import *  # noqa: F403

__all__: list[str] = []
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_ada.__all__, *_camel.__all__, *_fm_tube_lipschitz.__all__]
