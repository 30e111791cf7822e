r"""Forward-backward representations with temporal abstraction: exact spectra of the successor representation.

Paper: Azad et al., "Spectral Alignment in Forward-Backward Representations via Temporal Abstraction"
(arXiv 2603.20103; slug ``fb-abstraction``). Temporal abstraction is action repetition ``k``: the SR over
macro steps :math:`(I-\gamma^kP^k)^{-1}` has a low-pass filtered spectrum, a lower effective rank, and so
fits the low-rank bottleneck :math:`M = FB^\top` of forward-backward representations better.

Built: the exact spectral analysis (:mod:`geode.rl.fb_abstraction.spectra`) and a small FB learner on a
2-D point mass with discrete actions and action repetition (:mod:`geode.rl.fb_abstraction.fb`:
:class:`PointMass`, :class:`FBAgent`, :func:`train_fb`, :func:`goal_success`).

**What the check found (quick mode, 3 seeds): not reproduced.** With the macro discount gamma^k the SR's
effective rank and rank-d error grow with k (gamma 0.99: effective rank 110 -> 240 from k = 1 to 8 on a
20x20 grid): the shorter horizon pushes the SR towards the identity faster than repetition filters the
high frequencies. FB on a 2-D point mass at gamma 0.99 reached the same zero-shot goal success with k = 4
as with k = 1 (0.36-0.43 against 0.38-0.44; k = 4 ahead in 1 of 3 seeds, by 0.01).

Examples
--------
>>> import numpy as np
>>> from geode.rl import FBAgent, PointMass, goal_success, grid_walk, sr_spectrum, successor_representation, train_fb
>>> actions, cells = grid_walk(8, 8)               # P_a of up, down, left, right on an 8 x 8 grid
>>> sr = successor_representation(actions, 0.9)    # (I - gamma P)^-1 of the uniformly random policy
>>> bool(np.allclose(sr @ (np.eye(64) - 0.9 * actions.mean(0)), np.eye(64)))
True
>>> ranks = {k: sr_spectrum(successor_representation(actions, 0.9, k=k), d=8)["effective_rank"] for k in (1, 4)}
>>> {k: round(r, 1) for k, r in ranks.items()}     # each action repeated k times, macro discount gamma^k
{1: 45.7, 4: 59.3}
>>> env = PointMass(k=4)                           # a 2-D point mass, each action repeated 4 times
>>> agent = train_fb(env, 0.99, n_data=512, updates=20, batch=64, seed=0, z_dim=8, hidden=32)
>>> isinstance(agent, FBAgent)
True
>>> z = agent.infer_z(np.array([[0.8, 0.8]]))      # the task vector of reaching (0.8, 0.8)
>>> tuple(z.shape), agent.act(np.array([[0.2, 0.2]]), z).shape
((1, 8), (1,))
>>> 0.0 <= goal_success(agent, env, n=16, seed=0) <= 1.0
True
"""

from __future__ import annotations

from geode.rl.fb_abstraction.fb import FBAgent, PointMass, goal_success, train_fb
from geode.rl.fb_abstraction.spectra import grid_walk, low_rank_error, sr_spectrum, successor_representation

__all__ = [
    "FBAgent",
    "PointMass",
    "goal_success",
    "grid_walk",
    "low_rank_error",
    "sr_spectrum",
    "successor_representation",
    "train_fb",
]
