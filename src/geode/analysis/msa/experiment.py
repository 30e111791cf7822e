r"""The MSA claim's experiments: invariance/warp property tests and rich vs lazy networks.

- :func:`make_embedding`: a fixed curved 2-D manifold in :math:`\mathbb R^{20}`,
  :math:`x = Q\,\phi(z)` with :math:`\phi(z) = (z_1, z_2, \sin 2z_1, \cos 2z_2, z_1 z_2, \sin(z_1 + z_2))`
  and a random :math:`Q \in \mathbb R^{20 \times 6}` with orthonormal columns, :math:`z \in [-1, 1]^2`.
- :func:`property_checks`: a random tanh MLP ``f`` on that manifold, compared with a rotated copy, a
  scaled copy, a shared reparametrisation of the coordinates and a one-sided nonlinear warp
  :math:`z \mapsto z + 0.3 \sin 3z` (the notes' test).
- :func:`train_regime_mlp` and :func:`rich_lazy_study`: one-hidden-layer tanh MLPs (width 512) fitted
  to :math:`y = \sin(3 z_1) \cos(2 z_2)` in the Chizat-Bach scaling :math:`f = \alpha (g_\theta -
  g_{\theta_0})`, rich (:math:`\alpha = 0.1`) and lazy (:math:`\alpha = 100`), and the pairwise distances
  between their hidden representations under MSA, linear CKA, RSA and the Procrustes angle.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.analysis.msa.metric import msa, msa_from_metrics
from geode.analysis.pullback import pullback_metric
from geode.analysis.similarity import linear_cka, procrustes_distance, rsa
from geode.core.random import as_generator, torch_generator
from geode.core.validation import check_int, check_positive

__all__ = [
    "RegimeMLP",
    "between_within_ratio",
    "make_embedding",
    "nearest_neighbour_accuracy",
    "property_checks",
    "rich_lazy_study",
    "train_regime_mlp",
]

DTYPE = torch.float32


def make_embedding(seed: int, ambient_dim: int = 20) -> Callable[[torch.Tensor], torch.Tensor]:
    r"""The map :math:`z \mapsto Q \phi(z)` from :math:`[-1, 1]^2` into :math:`\mathbb R^{\text{ambient\_dim}}`."""
    ambient_dim = check_int("ambient_dim", ambient_dim, low=6)
    q, _ = np.linalg.qr(as_generator(seed).normal(size=(ambient_dim, 6)))
    qt = torch.as_tensor(q.T, dtype=DTYPE)

    def embed(z: torch.Tensor) -> torch.Tensor:
        z1, z2 = z[..., 0], z[..., 1]
        phi = torch.stack([z1, z2, torch.sin(2 * z1), torch.cos(2 * z2), z1 * z2, torch.sin(z1 + z2)], dim=-1)
        return phi @ qt.to(z.dtype)

    return embed


def _uniform_square(n: int, seed: int) -> torch.Tensor:
    return torch.rand(n, 2, generator=torch_generator(seed), dtype=DTYPE) * 2 - 1


class RegimeMLP(nn.Module):
    r"""One-hidden-layer tanh MLP :math:`g(x) = a^\top \tanh(W x + b) / \sqrt m` (NTK scaling of the readout).

    ``W`` ~ N(0, 1/d_in), ``b`` ~ N(0, 0.25), ``a`` ~ N(0, 1). :meth:`hidden` is the representation compared.
    """

    def __init__(self, d_in: int, width: int, seed: int) -> None:
        super().__init__()
        g = torch_generator(seed)
        self.weight = nn.Parameter(torch.randn(width, d_in, generator=g, dtype=DTYPE) / math.sqrt(d_in))
        self.bias = nn.Parameter(torch.randn(width, generator=g, dtype=DTYPE) * 0.5)
        self.readout = nn.Parameter(torch.randn(width, generator=g, dtype=DTYPE))
        self.width = width

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x @ self.weight.T + self.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hidden(x) @ self.readout / math.sqrt(self.width)


@dataclass
class TrainedNet:
    net: RegimeMLP
    alpha: float
    train_mse: float
    weight_movement: float  # ||W - W0||_F / ||W0||_F


def train_regime_mlp(
    alpha: float,
    seed: int,
    embed: Callable[[torch.Tensor], torch.Tensor],
    z_train: torch.Tensor,
    *,
    width: int = 512,
    steps: int = 1000,
    lr: float = 1e-3,
) -> TrainedNet:
    r"""Fit :math:`f = \alpha (g_\theta - g_{\theta_0})` to :math:`y = \sin(3z_1)\cos(2z_2)` with full-batch Adam.

    The loss is :math:`\frac1n \sum_i (f(x_i) - y_i)^2`. Adam's steps do not depend on the loss scale, so
    :math:`\alpha` sets the regime through the size of the change :math:`g - g_0 = y / \alpha` the
    network must make: large for :math:`\alpha = 0.1` (rich: the first layer moves a lot), tiny for
    :math:`\alpha = 100` (lazy: it stays at its initialisation).
    """
    alpha = check_positive("alpha", alpha)
    x = embed(z_train)
    y = torch.sin(3 * z_train[:, 0]) * torch.cos(2 * z_train[:, 1])
    net = RegimeMLP(x.shape[1], width, seed)
    with torch.no_grad():
        g0 = net(x).clone()
    w0 = net.weight.detach().clone()
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    loss = torch.tensor(0.0)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((alpha * (net(x) - g0) - y) ** 2).mean()
        loss.backward()
        opt.step()
    with torch.no_grad():
        mse = float(((alpha * (net(x) - g0) - y) ** 2).mean())
        move = float((net.weight - w0).norm() / w0.norm())
    return TrainedNet(net, alpha, mse, move)


def between_within_ratio(dist: np.ndarray, labels: Sequence[int]) -> float:
    """Mean distance between groups over mean distance within groups (off-diagonal pairs only)."""
    lab = np.asarray(labels)
    same = lab[:, None] == lab[None, :]
    off = ~np.eye(len(lab), dtype=bool)
    within = float(dist[same & off].mean())
    between = float(dist[~same].mean())
    return between / max(within, 1e-300)


def nearest_neighbour_accuracy(dist: np.ndarray, labels: Sequence[int]) -> float:
    """Leave-one-out 1-nearest-neighbour classification accuracy from a distance matrix."""
    lab = np.asarray(labels)
    d = dist.astype(float).copy()
    np.fill_diagonal(d, np.inf)
    return float(np.mean(lab[np.argmin(d, axis=1)] == lab))


def _random_mlp(d_in: int, width: int, seed: int, gain: float = 1.5) -> Callable[[torch.Tensor], torch.Tensor]:
    g = torch_generator(seed)
    w1 = torch.randn(width, d_in, generator=g, dtype=torch.float64) * gain / math.sqrt(d_in)
    b1 = torch.randn(width, generator=g, dtype=torch.float64) * 0.3
    w2 = torch.randn(width, width, generator=g, dtype=torch.float64) * gain / math.sqrt(width)
    b2 = torch.randn(width, generator=g, dtype=torch.float64) * 0.3

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(torch.tanh(x @ w1.T + b1) @ w2.T + b2)

    return f


def property_checks(seed: int, *, n_points: int = 400, width: int = 128) -> dict[str, Any]:
    r"""The notes' property tests on a random two-layer tanh MLP ``f`` on the embedded manifold.

    Returns MSA distances for a rotated copy (:math:`Qf + b`), a scaled copy (:math:`3.7 f`), the
    change of MSA between two different random MLPs under a shared reparametrisation
    :math:`z = \varphi(u)` (:math:`\varphi(u) = (u_1 + 0.5 u_2^2,\ u_2 + 0.3 \sin u_1)` composed the other
    way round, with an exact inverse), and, for the one-sided warp :math:`w(z) = z + 0.3 \sin 3z`, MSA,
    linear CKA, RSA and the Procrustes angle between :math:`f(Z)` and :math:`f(w(Z))`.
    """
    embed = make_embedding(seed)
    rng = as_generator(seed + 17)
    z = torch.as_tensor(rng.uniform(-1, 1, size=(n_points, 2)), dtype=torch.float64)
    fa = _random_mlp(20, width, seed * 7 + 1)
    fb = _random_mlp(20, width, seed * 7 + 2)
    q, _ = np.linalg.qr(rng.normal(size=(width, width)))
    qt = torch.as_tensor(q, dtype=torch.float64)
    shift = torch.as_tensor(rng.normal(size=width), dtype=torch.float64)

    def f(zz: torch.Tensor) -> torch.Tensor:
        return fa(embed(zz))

    def f_rot(zz: torch.Tensor) -> torch.Tensor:
        return f(zz) @ qt + shift

    def f_scaled(zz: torch.Tensor) -> torch.Tensor:
        return 3.7 * f(zz)

    def g(zz: torch.Tensor) -> torch.Tensor:
        return fb(embed(zz))

    def phi(u: torch.Tensor) -> torch.Tensor:  # z = phi(u): first shear u2 by sin(u1), then u1 by u2^2
        v2 = u[:, 1] + 0.3 * torch.sin(u[:, 0])
        return torch.stack([u[:, 0] + 0.5 * v2**2, v2], dim=1)

    def phi_inv(zz: torch.Tensor) -> torch.Tensor:
        u1 = zz[:, 0] - 0.5 * zz[:, 1] ** 2
        return torch.stack([u1, zz[:, 1] - 0.3 * torch.sin(u1)], dim=1)

    def warp(zz: torch.Tensor) -> torch.Tensor:
        return zz + 0.3 * torch.sin(3 * zz)

    u = phi_inv(z)
    g_f = pullback_metric(f, z)
    out: dict[str, Any] = {}
    out["msa_rotation"] = msa_from_metrics(g_f, pullback_metric(f_rot, z))
    out["msa_scale"] = msa_from_metrics(g_f, pullback_metric(f_scaled, z))
    d0 = msa_from_metrics(g_f, pullback_metric(g, z))
    d1 = msa_from_metrics(pullback_metric(lambda uu: f(phi(uu)), u), pullback_metric(lambda uu: g(phi(uu)), u))
    out["msa_two_random_nets"] = d0
    out["msa_reparam_change"] = abs(d1 - d0)
    d_warp, info = msa_from_metrics(g_f, pullback_metric(lambda zz: f(warp(zz)), z), return_info=True)
    out["msa_warp"] = d_warp
    out["msa_warp_pointwise"] = info["pointwise"]
    with torch.no_grad():
        x_a = f(z).numpy()
        x_w = f(warp(z)).numpy()
        x_r = f_rot(z).numpy()
        x_s = f_scaled(z).numpy()
    out["cka_warp"] = linear_cka(x_a, x_w)
    out["rsa_warp"] = rsa(x_a, x_w)
    out["procrustes_warp"] = procrustes_distance(x_a, x_w)
    out["cka_rotation"] = linear_cka(x_a, x_r)
    out["cka_scale"] = linear_cka(x_a, x_s)
    zn = z.numpy()
    out["msa_samples_warp"] = msa(x_a, x_w, zn)
    out["msa_samples_rotation"] = msa(x_a, x_r, zn)
    out["z"] = zn
    return out


def _pairwise(items: Sequence[Any], dist: Callable[[Any, Any], float]) -> np.ndarray:
    n = len(items)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            out[i, j] = out[j, i] = dist(items[i], items[j])
    return out


def rich_lazy_study(
    seed: int,
    *,
    n_per_regime: int = 5,
    width: int = 512,
    steps: int = 1000,
    n_train: int = 500,
    n_eval: int = 400,
    alphas: tuple[float, float] = (0.1, 100.0),
    lr: float = 1e-3,
) -> dict[str, Any]:
    """Train ``n_per_regime`` rich and lazy MLPs; pairwise distances of their hidden representations.

    All networks share the manifold, the training points and the evaluation points of this ``seed``
    and differ in their initialisation. Returns the networks' diagnostics, the labels (0 rich, 1 lazy)
    and one distance matrix per measure: ``msa`` (exact pullback metrics), ``msa_samples`` (the same
    from samples, kNN regression on the coordinates), ``cka`` (1 - linear CKA), ``rsa``
    (1 - Spearman correlation of Euclidean RDMs) and ``procrustes`` (angular Procrustes distance).
    """
    n_per_regime = check_int("n_per_regime", n_per_regime, low=2)
    embed = make_embedding(seed)
    z_train = _uniform_square(n_train, seed * 1000 + 1)
    z_eval = _uniform_square(n_eval, seed * 1000 + 2)
    nets: list[TrainedNet] = []
    labels: list[int] = []
    for r, alpha in enumerate(alphas):
        for i in range(n_per_regime):
            nets.append(
                train_regime_mlp(
                    alpha, seed * 1000 + 100 * (r + 1) + i, embed, z_train, width=width, steps=steps, lr=lr
                )
            )
            labels.append(r)
    reps, metrics = [], []
    for t in nets:

        def hid(zz: torch.Tensor, net: RegimeMLP = t.net) -> torch.Tensor:
            return net.hidden(embed(zz))

        with torch.no_grad():
            reps.append(hid(z_eval).double().numpy())
        metrics.append(pullback_metric(hid, z_eval))
    zn = z_eval.double().numpy()
    idx = list(range(len(nets)))
    dists = {
        "msa": _pairwise(idx, lambda i, j: msa_from_metrics(metrics[i], metrics[j])),
        "msa_samples": _pairwise(idx, lambda i, j: msa(reps[i], reps[j], zn)),
        "cka": _pairwise(idx, lambda i, j: 1.0 - linear_cka(reps[i], reps[j])),
        "rsa": _pairwise(idx, lambda i, j: 1.0 - rsa(reps[i], reps[j])),
        "procrustes": _pairwise(idx, lambda i, j: procrustes_distance(reps[i], reps[j])),
    }
    return {
        "labels": labels,
        "alphas": [t.alpha for t in nets],
        "train_mse": [t.train_mse for t in nets],
        "weight_movement": [t.weight_movement for t in nets],
        "distances": dists,
        "z_eval": zn,
        "metrics": metrics,
    }
