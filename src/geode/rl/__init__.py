"""Reinforcement learning: successor representations and their spectra.

The paper folders live below (``geode.rl.fb_abstraction``); each re-exports its public names here.
"""

from __future__ import annotations

from geode.rl import fb_abstraction as _fb_abstraction
from geode.rl.fb_abstraction import *  # noqa: F403

__all__ = [*_fb_abstraction.__all__]
