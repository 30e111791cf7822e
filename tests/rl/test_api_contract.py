"""geode.rl's public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import numpy as np
import pytest

import geode.rl as rl

torch = pytest.importorskip("torch")


def _sr():
    actions, _ = rl.grid_walk(2, 3)
    return rl.successor_representation(actions, 0.9)


def _agent():
    return rl.FBAgent(2, 5, z_dim=4, hidden=8, seed=0)


def _obs(n=3, seed=0):
    return np.random.default_rng(seed).uniform(size=(n, 2))


def _z(n=3):
    return _agent().infer_z(_obs(n, seed=1))


# main methods of the classes, as wrappers whose parameters carry the method's own argument names
def _agent_update(s, a, s2, goals):
    return _agent().update(s, a, s2, goals)


def _agent_infer_z(goal):
    return _agent().infer_z(goal)


def _agent_act(obs, z):
    return _agent().act(obs, z)


def _env_macro_step(s, a, rng):
    return rl.PointMass(k=2).macro_step(s, a, rng)


def _env_dataset(n, seed):
    return rl.PointMass(k=2).dataset(n, seed)


def _batch(n=4):
    g = torch.Generator().manual_seed(0)
    return (
        torch.rand(n, 2, generator=g),
        torch.arange(n) % 5,
        torch.rand(n, 2, generator=g),
        torch.rand(n, 2, generator=g),
    )


METHODS = {
    "FBAgent.update": _agent_update,
    "FBAgent.infer_z": _agent_infer_z,
    "FBAgent.act": _agent_act,
    "PointMass.macro_step": _env_macro_step,
    "PointMass.dataset": _env_dataset,
}

CALLS = {  # -> (args, kwargs), built fresh each time
    "FBAgent": lambda: (
        (2, 5),
        {"z_dim": 4, "discount": 0.9, "ortho_coef": 1.0, "tau": 0.01, "lr": 3e-4, "hidden": 8, "seed": 0},
    ),
    "FBAgent.update": lambda: (_batch(), {}),
    "FBAgent.infer_z": lambda: ((_obs(),), {}),
    "FBAgent.act": lambda: ((_obs(), _z()), {}),
    "PointMass": lambda: ((2, 0.05, 0.01), {}),
    "PointMass.macro_step": lambda: ((_obs(), np.array([0, 1, 4]), np.random.default_rng(0)), {}),
    "PointMass.dataset": lambda: ((4, 0), {}),
    "goal_success": lambda: ((_agent(), rl.PointMass(k=2), 3, 0), {"budget": 4, "radius": 0.075}),
    "grid_walk": lambda: ((2, 3), {"obstacles": 0.1, "seed": 0}),
    "low_rank_error": lambda: ((_sr(), 2), {}),
    "sr_spectrum": lambda: ((_sr(), 2), {"rewards": np.random.default_rng(0).normal(size=(6, 2))}),
    "successor_representation": lambda: ((rl.grid_walk(2, 3)[0], 0.9, 2), {}),
    "train_fb": lambda: (
        (rl.PointMass(k=2), 0.9),
        {"n_data": 8, "updates": 1, "batch": 4, "seed": 0, "z_dim": 4, "hidden": 8},
    ),
}
NOT_CALLED: dict[str, str] = {}
OK: dict[str, dict[tuple[str, str], str]] = {}


PACKAGE = rl


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []
