"""RL: successor representations under temporal abstraction (action repetition), exactly and with an FB learner.

What it shows (paper ``fb-abstraction``; everything is computed here, nothing is downloaded):

1. **Exact spectra** (``geode.rl``): on a grid world with random obstacles, the successor representation
   :math:`(I-\\gamma^kP_k)^{-1}` of the uniformly random policy that repeats each action ``k`` times, and FB's
   successor measure :math:`P_k(I-\\gamma^kP_k)^{-1}`: their effective rank and the relative error of their best
   rank-``d`` approximation, for ``k`` = 1, 2, 4, 8 and two discounts. The paper expects repetition to lower
   both (a low-pass filtered spectrum that fits FB's rank-``d`` bottleneck better); print what you get.
2. **Forward-backward learning**: an :class:`FBAgent` trained offline (:func:`train_fb`, AdamW in torch) on
   random transitions of a 2-D point mass with ``k`` = 1 and ``k`` = 4, then zero-shot goal reaching
   (:func:`goal_success`, the same primitive-step budget for both) against a random policy.

Run::

    python examples/rl.py           # under a minute on one CPU core
    python examples/rl.py --smoke   # the smallest size, a few seconds

Needs only the core install (numpy, torch).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

from geode.rl import PointMass, goal_success, grid_walk, sr_spectrum, successor_representation, train_fb

SIZES = {
    "smoke": {"grid": 10, "d": 8, "fb": dict(n_data=2000, updates=20, batch=64, hidden=32, z_dim=4), "n_goals": 40},
    "full": {
        "grid": 20,
        "d": 16,
        "fb": dict(n_data=20000, updates=1500, batch=256, hidden=128, z_dim=16),
        "n_goals": 200,
    },
}


def spectra_part(size: dict, seed: int) -> None:
    actions, cells = grid_walk(size["grid"], size["grid"], obstacles=0.1, seed=seed)  # P_a: up, down, left, right
    d = size["d"]
    print(f"Exact spectra: {size['grid']}x{size['grid']} grid, {len(cells)} free cells, rank d = {d}")
    print(f"  {'gamma':>5} {'k':>2}   SR: effective rank, rank-d error   FB successor measure: effective rank, error")
    for gamma in (0.9, 0.99):
        for k in (1, 2, 4, 8):
            sr = sr_spectrum(successor_representation(actions, gamma, k), d)
            m = sr_spectrum(successor_representation(actions, gamma, k, include_current=False), d)
            print(
                f"  {gamma:>5} {k:>2}   {sr['effective_rank']:8.1f} {sr['rank_d_error']:8.3f}"
                f"                    {m['effective_rank']:8.1f} {m['rank_d_error']:8.3f}"
            )


def fb_part(size: dict, seed: int) -> None:
    print(
        f"FB on a 2-D point mass, gamma 0.99 per primitive step, {size['fb']['updates']} updates; "
        f"goal success over {size['n_goals']} start/goal pairs (60 primitive steps)"
    )
    for k in (1, 4):
        env = PointMass(k=k)
        runs = []
        for s in (seed, seed + 1):
            agent = train_fb(env, 0.99, seed=s, lr=5e-4, **size["fb"])  # macro discount 0.99 ** k
            runs.append(goal_success(agent, env, size["n_goals"], seed=1000 + s))
        rand = goal_success(None, env, size["n_goals"], seed=1000 + seed)
        print(
            f"  k = {k}: FB {', '.join(f'{r:.3f}' for r in runs)} (seeds {seed}, {seed + 1}); random policy {rand:.3f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the smallest size (seconds)")
    parser.add_argument("--seed", type=int, default=0, help="seed of everything (default: 0)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    size = SIZES["smoke" if args.smoke else "full"]
    t0 = time.process_time()
    spectra_part(size, args.seed)
    fb_part(size, args.seed)
    print(f"done in {time.process_time() - t0:.0f} CPU s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
