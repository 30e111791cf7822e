"""Self-supervised and multimodal representation learning: the paper folders live below.

``geode.ssl.specalign`` (characteristic-function alignment of two frozen encoders) and ``geode.ssl.hamjepa``
(phase-space JEPA embeddings coupled by a learned Hamiltonian leapfrog predictor).
"""

from __future__ import annotations

from geode.ssl import hamjepa as _hamjepa
from geode.ssl import specalign as _specalign
from geode.ssl.hamjepa import *  # noqa: F403
from geode.ssl.specalign import *  # noqa: F403

__all__ = [*_hamjepa.__all__, *_specalign.__all__]
