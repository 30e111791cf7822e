r"""Forward-backward (FB) representations on a 2-D point mass with action repetition.

:class:`PointMass`: states in :math:`[0,1]^2`, five discrete actions (stay, +-x, +-y) of length ``step``,
Gaussian noise ``noise`` per primitive step, clipped to the box. A macro action repeats one action ``k``
times. :class:`FBAgent` learns :math:`M^{\pi_z}(s, a, s') \approx F(s, a, z)^\top B(s')` with the FB loss
(Touati & Ollivier 2021; Meta Motivo's form), target networks updated by Polyak averaging,

.. math::

    \mathcal{L} = \tfrac12\,\mathrm{mean}_{i\ne j}(M_{ij} - \gamma \bar M_{ij})^2 - \mathrm{mean}_i\,M_{ii}
    + \lambda\big(-\mathrm{mean}\,\mathrm{diag}(BB^\top) + \tfrac12\,\mathrm{mean}_{i\ne j}(BB^\top)_{ij}^2\big),

:math:`M = F(s,a,z)B(s')^\top`, :math:`\bar M = \bar F(s', \pi_z(s'), z)\bar B(s')^\top` over the batch,
:math:`\pi_z(s) = \arg\max_a F(s,a,z)^\top z`. The discount per macro step is :math:`\gamma^k`.

Inferred details (no authors' code): discrete actions (F outputs one d-vector per action, so the policy is
an argmax, no actor network); ``z`` is drawn on the :math:`\sqrt d`-sphere for half the batch and is
:math:`\sqrt d\,B(g)/\|B(g)\|` of a random data state ``g`` for the other half; offline data are macro
transitions from uniformly random states and actions (``n`` of them); goal reaching uses
:math:`z = \sqrt d\, B(g)/\|B(g)\|`, a fixed budget of primitive steps, success when within ``radius``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from geode.core.validation import check_array, check_int, check_positive, check_real, check_tensor
from geode.rl.fb_abstraction.spectra import _check_discount, _check_k

__all__ = ["FBAgent", "PointMass", "goal_success", "train_fb"]

_DIRS = np.array([[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])


def _check_actions(name: str, a: Any, n: int, n_actions: int, rows_of: str) -> None:
    """Raise unless ``a`` (numpy or torch) holds ``n`` integer actions in ``[0, n_actions)``."""
    arr = a.detach().cpu().numpy() if hasattr(a, "detach") else np.asarray(a)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold integer actions; got dtype {arr.dtype}")
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), one action per row of {rows_of}; got {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= n_actions):
        raise ValueError(f"{name} must lie in [0, {n_actions}); got values in [{arr.min()}, {arr.max()}]")


def _check_batch(name: str, x: Any, width: int, rows: int | None = None) -> None:
    """Raise unless ``x`` (a tensor or array-like) is a finite (rows, width) batch with at least one row."""
    shape = (rows, width)
    if hasattr(x, "detach"):
        check_tensor(name, x, shape=shape, floating=True)
    else:
        arr = check_array(name, x, shape=shape)
        if arr.shape[0] == 0:
            raise ValueError(f"{name} must have at least one row; got shape {arr.shape}")


@dataclass
class PointMass:
    """A 2-D point mass in the unit box with five discrete actions, repeated ``k`` times per macro step."""

    k: int = 1
    step: float = 0.05
    noise: float = 0.01

    def __post_init__(self) -> None:
        self.k = _check_k(self.k)
        self.step = check_positive("step", self.step)
        self.noise = check_real("noise", self.noise, low=0.0)

    n_actions = 5

    def macro_step(self, s: np.ndarray, a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Repeat action ``a`` (ints in [0, 5), shape (n,)) ``k`` times from finite states ``s`` (shape (n, 2)).

        An empty batch (n = 0) gives an empty batch of states.
        """
        s = check_array("s", s, shape=(None, 2))
        _check_actions("a", a, s.shape[0], self.n_actions, "s")
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
        for _ in range(self.k):
            s = np.clip(s + self.step * _DIRS[a] + self.noise * rng.normal(size=s.shape), 0.0, 1.0)
        return s

    def dataset(self, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``n`` (>= 1) offline macro transitions from uniform random states and actions (``seed`` >= 0)."""
        n = check_int("n", n, low=1)
        seed = check_int("seed", seed, low=0)
        rng = np.random.default_rng(seed)
        s = rng.uniform(size=(n, 2))
        a = rng.integers(0, self.n_actions, size=n)
        return s, a, self.macro_step(s, a, rng)


class FBAgent:
    """Forward-backward representation learner for discrete actions (see the module docstring)."""

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        z_dim: int = 16,
        discount: float = 0.99,
        ortho_coef: float = 1.0,
        tau: float = 0.01,
        lr: float = 3e-4,
        hidden: int = 128,
        seed: int = 0,
    ) -> None:
        import copy

        import torch

        from geode.models import make_mlp

        self.discount = _check_discount(discount)
        self.obs_dim = obs_dim = check_int("obs_dim", obs_dim, low=1)
        n_actions = check_int("n_actions", n_actions, low=1)
        z_dim = check_int("z_dim", z_dim, low=1)
        ortho_coef = check_real("ortho_coef", ortho_coef, low=0.0)
        tau = check_real("tau", tau, low=0.0, high=1.0)
        lr = check_real("lr", lr, low=0.0)
        hidden = check_int("hidden", hidden, low=1)
        seed = check_int("seed", seed, low=0)
        self.d, self.n_actions, self.ortho, self.tau = int(z_dim), int(n_actions), float(ortho_coef), float(tau)
        self.F = make_mlp(obs_dim + self.d, [hidden, hidden], self.n_actions * self.d, seed=seed)
        self.B = make_mlp(obs_dim, [hidden, hidden], self.d, seed=seed + 1)
        self.F_t, self.B_t = copy.deepcopy(self.F), copy.deepcopy(self.B)
        self.opt = torch.optim.Adam([*self.F.parameters(), *self.B.parameters()], lr=lr)
        self.gen = torch.Generator().manual_seed(seed + 2)

    def _f(self, net: Any, s: Any, z: Any) -> Any:
        import torch

        return net(torch.cat([s, z], -1)).view(-1, self.n_actions, self.d)

    def _sphere(self, n: int) -> Any:
        import torch

        z = torch.randn(n, self.d, generator=self.gen)
        return z * (self.d**0.5) / z.norm(dim=-1, keepdim=True)

    def update(self, s: Any, a: Any, s2: Any, goals: Any) -> float:
        """One FB step on a batch (torch tensors); ``goals`` are data states mixed into ``z``.

        ``s``, ``s2``, ``goals``: finite float tensors of shape (n, obs_dim) with n >= 2 (the loss averages over
        off-diagonal pairs); ``a``: integer actions of shape (n,) in ``[0, n_actions)``.
        """
        import torch

        check_tensor("s", s, shape=(None, self.obs_dim), floating=True)
        n = s.shape[0]
        if n < 2:
            raise ValueError(f"s must hold at least 2 transitions (the FB loss uses off-diagonal pairs); got {n}")
        check_tensor("a", a, nonempty=False)
        _check_actions("a", a, n, self.n_actions, "s")
        check_tensor("s2", s2, shape=(n, self.obs_dim), floating=True)
        check_tensor("goals", goals, shape=(n, self.obs_dim), floating=True)
        dtype = next(self.B.parameters()).dtype
        for name, x in (("s", s), ("s2", s2), ("goals", goals)):
            if x.dtype != dtype:
                raise TypeError(f"{name} must have the networks' dtype {dtype}; got {x.dtype}")
        z = self._sphere(n)
        with torch.no_grad():
            bg = self.B(goals)
            zg = bg * (self.d**0.5) / bg.norm(dim=-1, keepdim=True).clamp_min(1e-8)
            mix = (torch.rand(n, 1, generator=self.gen) < 0.5).float()
            z = mix * zg + (1 - mix) * z
            f2 = self._f(self.F_t, s2, z)
            a2 = torch.einsum("nad,nd->na", f2, z).argmax(-1)
            target = f2[torch.arange(n), a2] @ self.B_t(s2).T
        f = self._f(self.F, s, z)[torch.arange(n), a]
        b = self.B(s2)
        m = f @ b.T
        off = 1 - torch.eye(n)
        diff = m - self.discount * target
        fb = 0.5 * (diff.pow(2) * off).sum() / (n * (n - 1)) - torch.diagonal(m).mean()
        cov = b @ b.T
        orth = -torch.diagonal(cov).mean() + 0.5 * (cov.pow(2) * off).sum() / (n * (n - 1))
        loss = fb + self.ortho * orth
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        with torch.no_grad():
            for net, tgt in ((self.F, self.F_t), (self.B, self.B_t)):
                for p, q in zip(net.parameters(), tgt.parameters(), strict=True):
                    q.lerp_(p, self.tau)
        return float(loss.detach())

    def infer_z(self, goal: Any) -> Any:
        """Goal-reaching task vector :math:`\\sqrt d\\,B(g)/\\|B(g)\\|` (goal: finite, shape (n, obs_dim), n >= 1)."""
        import torch

        _check_batch("goal", goal, self.obs_dim)

        with torch.no_grad():
            b = self.B(torch.as_tensor(goal, dtype=torch.float32))
            return b * (self.d**0.5) / b.norm(dim=-1, keepdim=True).clamp_min(1e-8)

    def act(self, obs: Any, z: Any) -> np.ndarray:
        """Greedy action :math:`\\arg\\max_a F(s,a,z)^\\top z`.

        ``obs``: finite, shape (n, obs_dim), n >= 1; ``z``: finite task vectors of shape (n, z_dim).
        """
        import torch

        _check_batch("obs", obs, self.obs_dim)
        _check_batch("z", z, self.d, rows=len(obs))
        z = torch.as_tensor(z, dtype=torch.float32)
        with torch.no_grad():
            f = self._f(self.F, torch.as_tensor(obs, dtype=torch.float32), z)
            return torch.einsum("nad,nd->na", f, z).argmax(-1).numpy()


def train_fb(env: PointMass, discount: float, *, n_data: int, updates: int, batch: int, seed: int, **kw: Any) -> Any:
    """Train an :class:`FBAgent` offline on ``env``'s macro transitions; discount ``discount ** env.k``.

    ``discount`` in (0, 1); ``n_data`` >= 1, ``updates`` >= 0, ``batch`` >= 2 and ``seed`` >= 0 integers; ``kw``
    go to :class:`FBAgent` (which checks them).
    """
    import torch

    if not isinstance(env, PointMass):
        raise TypeError(f"env must be a PointMass; got {type(env).__name__}")
    discount = _check_discount(discount)
    n_data = check_int("n_data", n_data, low=1)
    updates = check_int("updates", updates, low=0)
    batch = check_int("batch", batch, low=2)
    seed = check_int("seed", seed, low=0)

    torch.manual_seed(seed)
    s, a, s2 = env.dataset(n_data, seed)
    ts, ta, ts2 = (torch.as_tensor(x, dtype=torch.float32) for x in (s, a, s2))
    ta = ta.long()
    agent = FBAgent(2, env.n_actions, discount=discount**env.k, seed=seed, **kw)
    g = torch.Generator().manual_seed(seed + 7)
    for _ in range(updates):
        i = torch.randint(0, n_data, (batch,), generator=g)
        j = torch.randint(0, n_data, (batch,), generator=g)
        agent.update(ts[i], ta[i], ts2[i], ts2[j])
    return agent


def goal_success(agent: Any, env: PointMass, n: int, seed: int, budget: int = 60, radius: float = 0.075) -> float:
    """Share of ``n`` random start/goal pairs reached within ``budget`` primitive steps (``budget // k`` macro).

    ``agent``: an :class:`FBAgent` or ``None`` (the uniformly random policy); ``n`` >= 1, ``seed`` >= 0 and
    ``budget`` >= 0 integers; ``radius`` > 0.
    """
    if agent is not None and not isinstance(agent, FBAgent):
        raise TypeError(f"agent must be an FBAgent or None; got {type(agent).__name__}")
    if not isinstance(env, PointMass):
        raise TypeError(f"env must be a PointMass; got {type(env).__name__}")
    n = check_int("n", n, low=1)
    seed = check_int("seed", seed, low=0)
    budget = check_int("budget", budget, low=0)
    radius = check_positive("radius", radius)
    rng = np.random.default_rng(seed)
    s, g = rng.uniform(size=(n, 2)), rng.uniform(size=(n, 2))
    z = None if agent is None else agent.infer_z(g)
    hit = np.linalg.norm(s - g, axis=1) < radius
    for _ in range(budget // env.k):
        a = rng.integers(0, env.n_actions, size=n) if agent is None else agent.act(s, z)
        s = env.macro_step(s, a, rng)
        hit |= np.linalg.norm(s - g, axis=1) < radius
    return float(hit.mean())
