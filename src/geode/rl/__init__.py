r"""Reinforcement learning: successor representations and their spectra.

The paper folders live below (``geode.rl.fb_abstraction``); each re-exports its public names here.

Papers and their names
----------------------
Every paper's public names are importable from the field (``from geode.rl import FBAgent``) and from the
paper's package (``from geode.rl.fb_abstraction import FBAgent``); ``geode show <slug>`` prints the same with
an example.

``fb-abstraction``: forward-backward representations with temporal abstraction (action repetition)::

    from geode.rl import (FBAgent, PointMass, goal_success, grid_walk, low_rank_error, sr_spectrum,
                          successor_representation, train_fb)

* ``successor_representation``: the exact SR :math:`(I-\gamma^kP^k)^{-1}` of a macro step of ``k`` steps (or FB's
  successor measure);
* ``sr_spectrum``, ``low_rank_error``: effective rank and rank-``d`` errors of an SR;
* ``grid_walk``: per-action transition matrices of a grid world;
* ``FBAgent``: a forward-backward representation learner for discrete actions; ``train_fb``: train it offline;
* ``PointMass``: a 2-D point mass with repeated actions; ``goal_success``: zero-shot goal reaching.
"""

from __future__ import annotations

from geode.rl import fb_abstraction as _fb_abstraction
from geode.rl.fb_abstraction import *  # noqa: F403

__all__ = [*_fb_abstraction.__all__]
