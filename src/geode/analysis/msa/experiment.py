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
  between their hidden representations under MSA, linear CKA, RSA and the Procrustes angle; with
  ``alphas`` spanning the continuum (0.1 to 100), :func:`mantel` measures how well each distance orders
  the networks by :math:`\log\alpha` (the harder separation task of revision 2).
- :func:`warp_sensitivity`: the warp, a rotation + scale (isometry control) and three unrelated random
  networks, so that each measure's response to the warp is read against its own noise floor (the
  distance between unrelated networks).
- :func:`rnn_ssm_study`: a CPU-scale version of the paper's RNN vs SSM working-memory comparison: tanh
  RNNs and diagonal linear state-space models (LRU-style, real decay in (0, 1), MLP readout) recall a 2-D
  stimulus after a noisy delay; the representation is the state at the end of the delay as a function of
  the stimulus, and every measure's between/within-architecture ratio is reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.analysis.msa.metric import msa_distance, msa_from_metrics
from geode.analysis.pullback import pullback_metric
from geode.analysis.similarity import linear_cka, procrustes_distance, rsa
from geode.core.random import as_generator, torch_generator
from geode.core.validation import check_int, check_positive

__all__ = [
    "RegimeMLP",
    "between_within_ratio",
    "make_embedding",
    "mantel",
    "nearest_neighbour_accuracy",
    "pairwise_distances",
    "property_checks",
    "rich_lazy_study",
    "rnn_ssm_study",
    "train_regime_mlp",
    "warp_sensitivity",
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


def mantel(dist: np.ndarray, target: np.ndarray) -> float:
    """Spearman correlation between the off-diagonal entries (i < j) of two distance matrices."""
    from scipy.stats import spearmanr

    iu = np.triu_indices(dist.shape[0], 1)
    a, b = np.asarray(dist)[iu], np.asarray(target)[iu]
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    return float(spearmanr(a, b)[0])


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
    out["msa_samples_warp"] = msa_distance(x_a, x_w, zn)
    out["msa_samples_rotation"] = msa_distance(x_a, x_r, zn)
    out["z"] = zn
    return out


def warp_sensitivity(seed: int, *, n_points: int = 400, width: int = 128, n_nets: int = 3) -> dict[str, float]:
    r"""Each measure's response to the one-sided warp :math:`z + 0.3 \sin 3z`, against its noise floor.

    For ``n_nets`` unrelated random tanh MLPs :math:`f_k` on the embedded manifold: the *warp* distance
    is the mean over k of :math:`d(f_k, f_k \circ w)`; the *noise floor* is the mean of
    :math:`d(f_k, f_l)` over the pairs k < l (two unrelated networks); the *isometry* distance (a
    control that every measure should ignore) is the mean of :math:`d(f_k, 3.7 Q f_k + b)`. Returned
    per measure (``msa``, ``cka`` as 1 - CKA, ``rsa`` as 1 - Spearman, ``procrustes``): ``{m}_warp``,
    ``{m}_floor``, ``{m}_isometry``, ``{m}_warp_rel`` = warp / floor and ``{m}_isometry_rel``.
    """
    embed = make_embedding(seed)
    rng = as_generator(seed + 29)
    z = torch.as_tensor(rng.uniform(-1, 1, size=(n_points, 2)), dtype=torch.float64)
    q, _ = np.linalg.qr(rng.normal(size=(width, width)))
    qt = torch.as_tensor(q, dtype=torch.float64)
    shift = torch.as_tensor(rng.normal(size=width), dtype=torch.float64)
    nets = [_random_mlp(20, width, seed * 7 + 100 + k) for k in range(n_nets)]
    fs = [(lambda zz, f=f: f(embed(zz))) for f in nets]

    def warp(zz: torch.Tensor) -> torch.Tensor:
        return zz + 0.3 * torch.sin(3 * zz)

    variants = {
        "base": fs,
        "warp": [(lambda zz, f=f: f(warp(zz))) for f in fs],
        "iso": [(lambda zz, f=f: 3.7 * f(zz) @ qt + shift) for f in fs],
    }
    metric = {k: [pullback_metric(f, z) for f in v] for k, v in variants.items()}
    with torch.no_grad():
        rep = {k: [f(z).numpy() for f in v] for k, v in variants.items()}
    dists: dict[str, Callable[[str, int, str, int], float]] = {
        "msa": lambda a, i, b, j: msa_from_metrics(metric[a][i], metric[b][j], rank="ignore"),
        "cka": lambda a, i, b, j: 1.0 - linear_cka(rep[a][i], rep[b][j]),
        "rsa": lambda a, i, b, j: 1.0 - rsa(rep[a][i], rep[b][j]),
        "procrustes": lambda a, i, b, j: procrustes_distance(rep[a][i], rep[b][j]),
    }
    out: dict[str, float] = {}
    pairs = [(i, j) for i in range(n_nets) for j in range(i + 1, n_nets)]
    for m, dist in dists.items():
        floor = float(np.mean([dist("base", i, "base", j) for i, j in pairs]))
        w = float(np.mean([dist("base", k, "warp", k) for k in range(n_nets)]))
        iso = float(np.mean([abs(dist("base", k, "iso", k)) for k in range(n_nets)]))
        out.update(
            {
                f"{m}_floor": floor,
                f"{m}_warp": w,
                f"{m}_isometry": iso,
                f"{m}_warp_rel": w / max(floor, 1e-300),
                f"{m}_isometry_rel": iso / max(floor, 1e-300),
            }
        )
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
    dists = pairwise_distances(reps, metrics, zn)
    return {
        "labels": labels,
        "alphas": [t.alpha for t in nets],
        "train_mse": [t.train_mse for t in nets],
        "weight_movement": [t.weight_movement for t in nets],
        "distances": dists,
        "z_eval": zn,
        "metrics": metrics,
    }


def pairwise_distances(
    reps: Sequence[np.ndarray], metrics: Sequence[np.ndarray], z: np.ndarray
) -> dict[str, np.ndarray]:
    """Distance matrices between representations under every measure of the claim.

    ``reps[i]`` (n, d_i) are the representations at the shared points ``z`` (n, d) and ``metrics[i]``
    (n, d, d) their exact pullback metrics. Measures: ``msa`` (exact metrics), ``msa_samples`` (kNN
    regression on ``z``), ``cka`` (1 - linear CKA), ``rsa`` (1 - Spearman of Euclidean RDMs),
    ``procrustes`` (angular Procrustes distance).
    """
    import warnings

    from geode.analysis.msa.metric import SingularMetricWarning

    idx = list(range(len(reps)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SingularMetricWarning)  # counted by the caller where it matters
        return {
            "msa": _pairwise(idx, lambda i, j: msa_from_metrics(metrics[i], metrics[j])),
            "msa_samples": _pairwise(idx, lambda i, j: msa_distance(reps[i], reps[j], z)),
            "cka": _pairwise(idx, lambda i, j: 1.0 - linear_cka(reps[i], reps[j])),
            "rsa": _pairwise(idx, lambda i, j: 1.0 - rsa(reps[i], reps[j])),
            "procrustes": _pairwise(idx, lambda i, j: procrustes_distance(reps[i], reps[j])),
        }


class _MemoryNet(nn.Module):
    """A tanh RNN or a diagonal linear SSM (LRU-style) that stores a 2-D stimulus through a delay."""

    def __init__(self, arch: str, hidden: int, seed: int) -> None:
        super().__init__()
        g = torch_generator(seed)
        self.arch = arch
        self.inp = nn.Parameter(torch.randn(hidden, 2, generator=g, dtype=DTYPE) / math.sqrt(2))
        if arch == "rnn":
            self.rec = nn.Parameter(torch.randn(hidden, hidden, generator=g, dtype=DTYPE) * 0.9 / math.sqrt(hidden))
            self.bias = nn.Parameter(torch.zeros(hidden, dtype=DTYPE))
            self.out = nn.Parameter(torch.randn(2, hidden, generator=g, dtype=DTYPE) / math.sqrt(hidden))
        else:  # decay lambda = sigmoid(nu) in (0, 1), initialised near 0.9-0.99
            self.nu = nn.Parameter(torch.empty(hidden, dtype=DTYPE).uniform_(2.0, 4.5, generator=g))
            self.mlp_w = nn.Parameter(torch.randn(hidden, hidden, generator=g, dtype=DTYPE) / math.sqrt(hidden))
            self.mlp_b = nn.Parameter(torch.zeros(hidden, dtype=DTYPE))
            self.out = nn.Parameter(torch.randn(2, hidden, generator=g, dtype=DTYPE) / math.sqrt(hidden))

    def state(self, u: torch.Tensor) -> torch.Tensor:
        """Final state after the input sequence ``u`` (batch, T, 2)."""
        h = torch.zeros(u.shape[0], self.inp.shape[0], dtype=u.dtype)
        for t in range(u.shape[1]):
            if self.arch == "rnn":
                h = torch.tanh(h @ self.rec.T + u[:, t] @ self.inp.T + self.bias)
            else:
                h = torch.sigmoid(self.nu) * h + u[:, t] @ self.inp.T
        return h

    def readout(self, h: torch.Tensor) -> torch.Tensor:
        if self.arch == "rnn":
            return h @ self.out.T
        return torch.nn.functional.gelu(h @ self.mlp_w.T + self.mlp_b) @ self.out.T


def _sequence(z: torch.Tensor, delay: int, noise: float, gen: torch.Generator | None) -> torch.Tensor:
    u = torch.zeros(z.shape[0], delay + 1, 2, dtype=z.dtype)
    u[:, 0] = z
    if noise > 0 and gen is not None:
        u[:, 1:] = noise * torch.randn(z.shape[0], delay, 2, generator=gen, dtype=z.dtype)
    return u


def rnn_ssm_study(
    seed: int,
    *,
    n_per_arch: int = 3,
    hidden: int = 64,
    delay: int = 10,
    steps: int = 300,
    batch: int = 128,
    noise: float = 0.1,
    n_eval: int = 300,
    lr: float = 3e-3,
) -> dict[str, Any]:
    r"""Train ``n_per_arch`` RNNs and SSMs to recall a stimulus z in [-1, 1]^2 after a noisy delay.

    Returns the recall MSE of every network (noise-free test), the labels (0 RNN, 1 SSM), the
    distance matrices of their end-of-delay states :math:`h_T(z)` under every measure
    (:func:`pairwise_distances`; exact pullback metrics of :math:`z \mapsto h_T(z)`), and the
    fraction of points where a state map's metric is ridge-dominated.
    """
    n_per_arch = check_int("n_per_arch", n_per_arch, low=2)
    z_eval = _uniform_square(n_eval, seed * 1000 + 900)
    nets, labels, mses = [], [], []
    for a, arch in enumerate(("rnn", "ssm")):
        for i in range(n_per_arch):
            s = seed * 1000 + 910 + 10 * a + i
            net = _MemoryNet(arch, hidden, s)
            gen = torch_generator(s + 5)
            opt = torch.optim.Adam(net.parameters(), lr=lr)
            for _ in range(steps):
                z = torch.rand(batch, 2, generator=gen, dtype=DTYPE) * 2 - 1
                loss = ((net.readout(net.state(_sequence(z, delay, noise, gen))) - z) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            with torch.no_grad():
                pred = net.readout(net.state(_sequence(z_eval, delay, 0.0, None)))
                mses.append(float(((pred - z_eval) ** 2).mean()))
            nets.append(net.double())
            labels.append(a)
    zd = z_eval.double()
    reps, metrics = [], []
    for net in nets:

        def fn(zz: torch.Tensor, net: _MemoryNet = net) -> torch.Tensor:
            return net.state(_sequence(zz, delay, 0.0, None))

        with torch.no_grad():
            reps.append(fn(zd).numpy())
        metrics.append(pullback_metric(fn, zd))
    from geode.analysis.msa.metric import _ridge_dominated

    singular = float(np.mean([_ridge_dominated(g, 1e-6).mean() for g in metrics]))
    return {
        "labels": labels,
        "recall_mse": mses,
        "distances": pairwise_distances(reps, metrics, zd.numpy()),
        "ridge_dominated_fraction": singular,
    }
