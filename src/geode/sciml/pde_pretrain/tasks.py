"""The pre-training and downstream tasks on meshes, and a small trainer that records error-vs-epoch curves.

Node features share one layout of :data:`N_FEATURES` = 10 columns, so a pre-trained encoder's input layer is
reused as is: ``[p (3), n (3), c (4)]`` with the vertex position p, the outward unit normal n and four
condition channels c:

- *geometry pre-training* (steady regime): c = 0; targets are the intrinsic descriptors of
  :func:`descriptor_targets` (log-HKS at 8 times, mean and Gaussian curvature), z-scored per channel;
- *screened Poisson* (steady downstream): :math:`(L + \\alpha M) u = M \\langle n, w\\rangle` for a random unit
  direction w; c = (w, <n, w>), the target is u;
- *heat* (transient pre-training, generated online) and *Fisher-KPP* (transient downstream): a one-step
  surrogate :math:`u_n \\mapsto u_{n+1}`; c = (u_n, kappa / KAPPA_SCALE, r / R_SCALE, 0) and the target is the
  increment :math:`(u_{n+1} - u_n) / \\text{INCREMENT_SCALE}`. Heat is Fisher-KPP with r = 0, so the transient
  head is kept at fine-tuning (same output quantity); the steady head is replaced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from geode.core import as_generator, check_int, check_real
from geode.core.validation import check_tensor
from geode.sciml.pde_pretrain.mesh import Mesh, curvature, heat_kernel_signature
from geode.sciml.pde_pretrain.model import GraphBatch, collate
from geode.sciml.pde_pretrain.solvers import fisher_kpp_rollout, random_smooth_field, screened_poisson

__all__ = [
    "HKS_TIMES",
    "N_FEATURES",
    "HeatStream",
    "descriptor_targets",
    "fit_curve",
    "kpp_dataset",
    "kpp_pairs",
    "node_features",
    "poisson_dataset",
    "relative_errors",
    "rollout",
]

N_FEATURES = 10
"""Columns of :func:`node_features`: position (3), normal (3) and 4 task-condition channels, shared by all tasks."""
HKS_TIMES = tuple(np.geomspace(0.01, 4.0, 8))  # fixed for all shapes (unit-sized): t in [4 ln10 / lam_max, ~ 2/lam_2]
"""The 8 heat-kernel-signature times of the pretext targets (:func:`descriptor_targets`), log-spaced 0.01-4."""
KAPPA_SCALE, R_SCALE, INCREMENT_SCALE = 0.04, 1.5, 0.05


def _check_range(name: str, value: Any, *, low: float, low_inclusive: bool = True) -> None:
    """``value`` must be a finite ``(lo, hi)`` pair with ``low <= lo <= hi`` (``low < lo`` unless inclusive)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        raise TypeError(f"{name} must be a (low, high) pair of numbers; got {type(value).__name__} {value!r}")
    if len(value) != 2:
        raise ValueError(f"{name} must be a (low, high) pair of numbers; got {len(value)} values")
    lo = check_real(f"{name}[0]", value[0], low=low, low_inclusive=low_inclusive)
    check_real(f"{name}[1]", value[1], low=lo)


def _check_meshes(meshes: Sequence[Mesh]) -> None:
    if len(meshes) == 0:
        raise ValueError("meshes is empty: the data set needs at least one geometry")


def node_features(mesh: Mesh, cond: Any = None) -> np.ndarray:
    """``[p, n, c]`` of shape ``(n, 10)``; ``cond`` is ``(n, 4)``, ``(4,)`` (broadcast) or None (zeros)."""
    c = np.zeros((mesh.n_vertices, 4))
    if cond is not None:
        c = c + np.asarray(cond, dtype=float)
    return np.concatenate([mesh.vertices, mesh.normals, c], 1)


def descriptor_targets(mesh: Mesh, times: Sequence[float] = HKS_TIMES) -> np.ndarray:
    """Per-vertex intrinsic descriptors ``(n, len(times) + 2)``: log-HKS at ``times``, mean and Gaussian curvature."""
    h, k = curvature(mesh)
    return np.concatenate([heat_kernel_signature(mesh, times, log=True), h[:, None], k[:, None]], 1)


def poisson_dataset(meshes: Sequence[Mesh], seed: Any, *, alpha: float = 2.0) -> list[tuple[np.ndarray, np.ndarray]]:
    """One screened-Poisson sample per mesh: ``(features (n, 10), u (n,))`` with a random unit direction w."""
    _check_meshes(meshes)
    rng = as_generator(seed)
    a = check_real("alpha", alpha, low=0.0, low_inclusive=False)
    out = []
    for m in meshes:
        w = rng.normal(size=3)
        w /= np.linalg.norm(w)
        f = m.normals @ w
        u = screened_poisson(m, f, a)
        out.append((node_features(m, np.concatenate([np.broadcast_to(w, (m.n_vertices, 3)), f[:, None]], 1)), u))
    return out


def _kpp_cond(u: np.ndarray, kappa: float, r: float) -> np.ndarray:
    c = np.zeros((u.shape[0], 4))
    c[:, 0], c[:, 1], c[:, 2] = u, kappa / KAPPA_SCALE, r / R_SCALE
    return c


def kpp_dataset(
    meshes: Sequence[Mesh],
    seed: Any,
    *,
    n_steps: int = 10,
    dt: float = 0.2,
    kappa: tuple[float, float] = (0.01, 0.04),
    r: tuple[float, float] = (0.5, 1.5),
) -> list[dict[str, Any]]:
    """One Fisher-KPP trajectory per mesh from a random smooth initial condition; kappa and r drawn per trajectory.

    Each entry: ``mesh``, ``kappa``, ``r``, ``states (n_steps + 1, n)``. ``kappa`` and ``r`` are ``(low, high)``
    ranges with ``0 < kappa[0]`` and ``0 <= r[0]``.
    """
    _check_meshes(meshes)
    _check_range("kappa", kappa, low=0.0, low_inclusive=False)
    _check_range("r", r, low=0.0)
    rng = as_generator(seed)
    steps = check_int("n_steps", n_steps, low=1)
    out = []
    for m in meshes:
        k, rr = rng.uniform(*kappa), rng.uniform(*r)
        u0 = random_smooth_field(m, rng)
        out.append(dict(mesh=m, kappa=k, r=rr, states=fisher_kpp_rollout(m, u0, kappa=k, r=rr, dt=dt, n_steps=steps)))
    return out


def kpp_pairs(trajs: Sequence[dict[str, Any]]) -> list[tuple[Mesh, np.ndarray, np.ndarray]]:
    """All one-step training pairs ``(mesh, features, scaled increment)`` of some trajectories (at least one)."""
    if len(trajs) == 0:
        raise ValueError("trajs is empty: no trajectories to cut into training pairs")
    out = []
    for t in trajs:
        s = t["states"]
        for i in range(len(s) - 1):
            out.append(
                (
                    t["mesh"],
                    node_features(t["mesh"], _kpp_cond(s[i], t["kappa"], t["r"])),
                    (s[i + 1] - s[i]) / INCREMENT_SCALE,
                )
            )
    return out


class HeatStream:
    """Online synthetic heat-equation data: every call draws fresh (geometry, kappa, initial field) samples.

    The physics-driven transient pre-training of the paper, as we read it (the notes: "online generation of
    synthetic PDE data"): each sample picks a mesh of the pool, a diffusivity kappa log-uniform in ``kappa``,
    a random smooth field u_n (:func:`random_smooth_field`, affinely squeezed into a random sub-interval of
    [0, 1]) and solves one implicit-Euler heat step for u_{n+1}. Nothing is stored.

    Parameters
    ----------
    meshes : sequence of Mesh
        The pre-training geometries.
    dt : float
    kappa : (float, float)
        The diffusivity range ``(low, high)``, ``0 < low <= high``.
    shuffle_targets : bool
        Negative control: permute each sample's target over its vertices (the right marginals, no physics).
    """

    def __init__(
        self,
        meshes: Sequence[Mesh],
        *,
        dt: float = 0.2,
        kappa: tuple[float, float] = (0.005, 0.08),
        shuffle_targets: bool = False,
    ) -> None:
        if len(meshes) == 0:
            raise ValueError("meshes is empty: the heat stream needs at least one geometry")
        self.meshes = list(meshes)
        self.dt = check_real("dt", dt, low=0.0, low_inclusive=False)
        _check_range("kappa", kappa, low=0.0, low_inclusive=False)
        self.kappa = kappa
        self.shuffle_targets = bool(shuffle_targets)

    def sample(self, rng: np.random.Generator, batch: int) -> tuple[GraphBatch, torch.Tensor]:
        """A batch of ``batch`` fresh samples as ``(graph batch, target (N, 1))``."""
        ms, xs, ys = [], [], []
        for _ in range(check_int("batch", batch, low=1)):
            m = self.meshes[int(rng.integers(len(self.meshes)))]
            k = float(np.exp(rng.uniform(np.log(self.kappa[0]), np.log(self.kappa[1]))))
            a = rng.uniform(0.2, 1.0)
            u = rng.uniform(0.0, 1.0 - a) + a * random_smooth_field(m, rng, decay=rng.uniform(0.5, 1.5))
            nxt = fisher_kpp_rollout(m, u, kappa=k, r=0.0, dt=self.dt, n_steps=1)[1]
            y = (nxt - u) / INCREMENT_SCALE
            if self.shuffle_targets:
                y = y[rng.permutation(len(y))]
            ms.append(m)
            xs.append(node_features(m, _kpp_cond(u, k, 0.0)))
            ys.append(y)
        return collate(ms, xs), torch.as_tensor(np.concatenate(ys), dtype=torch.float32)[:, None]


def relative_errors(pred: torch.Tensor, target: torch.Tensor, g: GraphBatch) -> np.ndarray:
    """Mass-weighted relative L2 error of each graph, :math:`\\|e\\|_M / \\|u\\|_M`, shape ``(n_graphs,)``.

    ``pred`` and ``target`` hold one finite value per node of ``g``: shape ``(N,)`` or ``(N, 1)``.
    """
    for name, v in (("pred", pred), ("target", target)):
        check_tensor(name, v)
        if v.ndim not in (1, 2) or (v.ndim == 2 and v.shape[1] != 1):
            raise ValueError(f"{name} must have shape (N,) or (N, 1), one value per node; got {tuple(v.shape)}")
    p, t = pred.detach().reshape(-1).cpu().double(), target.detach().reshape(-1).cpu().double()
    if p.shape != t.shape or p.shape[0] != g.mass.shape[0]:
        raise ValueError(f"pred and target must have one value per node ({g.mass.shape[0]}); got {p.shape}, {t.shape}")
    m, gid = g.mass.cpu().double(), g.graph.cpu()
    num = torch.zeros(g.n_graphs, dtype=torch.float64).index_add_(0, gid, m * (p - t) ** 2)
    den = torch.zeros(g.n_graphs, dtype=torch.float64).index_add_(0, gid, m * t**2)
    return torch.sqrt(num / den).numpy()


def rollout(model: torch.nn.Module, trajs: Sequence[dict[str, Any]], n_steps: int) -> np.ndarray:
    """Autoregressive rollout of a one-step surrogate; relative error of step ``n_steps`` per trajectory."""
    if len(trajs) == 0:
        raise ValueError("trajs is empty: nothing to roll out")
    meshes = [t["mesh"] for t in trajs]
    u = [t["states"][0].copy() for t in trajs]
    dev = next(iter(model.parameters()), torch.zeros(())).device
    g = collate(meshes, [np.zeros((m.n_vertices, N_FEATURES)) for m in meshes]).to(dev)  # built once
    off = np.cumsum([0] + [m.n_vertices for m in meshes])
    with torch.no_grad():
        for _ in range(check_int("n_steps", n_steps, low=1)):
            x = np.concatenate([node_features(t["mesh"], _kpp_cond(v, t["kappa"], t["r"])) for t, v in zip(trajs, u)])
            d = model(g.with_features(x)).reshape(-1).cpu().double().numpy() * INCREMENT_SCALE
            u = [ui + d[off[i] : off[i + 1]] for i, ui in enumerate(u)]
    pred = torch.as_tensor(np.concatenate(u))
    true = torch.as_tensor(np.concatenate([t["states"][n_steps] for t in trajs]))
    return relative_errors(pred, true, g)


def fit_curve(
    model: torch.nn.Module,
    batches: Callable[[int], tuple[GraphBatch, torch.Tensor]],
    *,
    steps: int,
    lr: float,
    evaluate: Callable[[torch.nn.Module], float] | None = None,
    eval_every: int = 10,
    checkpoint_every: int = 0,
    seed: int = 0,
) -> dict[str, Any]:
    """Train with Adam on MSE, ``batches(step) -> (graph, target)``; record ``evaluate(model)`` every few steps.

    Returns ``dict(curve=[(step, error), ...], loss=final training loss, finite=bool, checkpoints=[(step,
    state_dict), ...])``. The curve starts at step 0 (before any update) when ``evaluate`` is given; with
    ``checkpoint_every > 0`` copies of the weights are kept at step 0, every ``checkpoint_every`` steps and at the
    end (to evaluate a curve later, e.g. only for the run that validation selects). A non-finite loss stops
    training (``finite=False``).
    """
    n = check_int("steps", steps, low=0)
    lr = check_real("lr", lr, low=0.0, low_inclusive=False)
    torch.manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(n, 1))
    curve: list[tuple[int, float]] = []
    ckpt: list[tuple[int, dict[str, Any]]] = []
    every = check_int("checkpoint_every", checkpoint_every, low=0)

    def keep(step: int) -> None:
        ckpt.append((step, {k: v.detach().clone() for k, v in model.state_dict().items()}))

    if every:
        keep(0)
    if evaluate is not None:
        curve.append((0, float(evaluate(model))))
    loss_v = float("nan")
    for s in range(1, n + 1):
        g, y = batches(s)
        loss = torch.mean((model(g) - y) ** 2)
        loss_v = float(loss.detach())
        if not np.isfinite(loss_v):
            return dict(curve=curve, loss=loss_v, finite=False, checkpoints=ckpt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if evaluate is not None and (s % eval_every == 0 or s == n):
            curve.append((s, float(evaluate(model))))
        if every and (s % every == 0 or s == n):
            keep(s)
    return dict(curve=curve, loss=loss_v, finite=True, checkpoints=ckpt)
