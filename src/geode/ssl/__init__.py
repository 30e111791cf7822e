"""Self-supervised and multimodal representation learning: the paper folders live below (``geode.ssl.specalign``)."""

from __future__ import annotations

from geode.ssl import specalign as _specalign
from geode.ssl.specalign import *  # noqa: F403

__all__ = [*_specalign.__all__]
