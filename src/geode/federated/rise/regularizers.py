r"""RISE's client-side geometry regularisers, the baselines' client losses, and the pre-trained geometry.

Notation: a client batch of penultimate features :math:`Z \in \mathbb R^{B \times d}` with labels
:math:`y`; the frozen pre-trained encoder's global feature statistics, aggregated by the server from
per-client class sums (:func:`client_feature_stats`, :func:`aggregate_geometry`), give

- the global covariance :math:`\Sigma_0 = V \Lambda_0 V^\top` and its top-:math:`r` directions
  :math:`V_r`, with the target energy profile :math:`e^0_j = \lambda^0_j / \sum_{k \le r} \lambda^0_k`;
- the global class prototypes :math:`\mu_c` and their relation graph
  :math:`G^0_{cc'} = \cos(\mu_c, \mu_{c'})`.

**BLSC** (biased low-dimensional subspace correction). With the centred batch :math:`\bar Z`,
:math:`e_j = \|\bar Z v_j\|^2 / \sum_{k \le r} \|\bar Z v_k\|^2` and

.. math:: L_{\mathrm{BLSC}} = \sum_{j \le r} \max(0,\ e_j - e^0_j),

a one-sided penalty: zero when the adapted features keep the pre-trained profile (or spread energy
more evenly), positive when energy concentrates on some principal directions. It is not a
direction-wise alignment: rotating features inside the subspace with the same energy profile is free.

**MRGA** (manifold relation-graph alignment). For the classes :math:`P` present in the batch (at
least two), local prototypes :math:`\hat\mu_c` (batch class means) give
:math:`\hat G_{cc'} = \cos(\hat\mu_c, \hat\mu_{c'})`; with row-softmax over :math:`c' \in P
\setminus \{c\}` at temperature :math:`\tau`,

.. math:: L_{\mathrm{MRGA}} = \frac1{|P|} \sum_{c \in P}
   \mathrm{KL}\big(\mathrm{softmax}(G^0_{c\cdot}/\tau)\ \|\ \mathrm{softmax}(\hat G_{c\cdot}/\tau)\big),

zero when the local inter-class topology equals the pre-trained global one.

Baseline client losses: FedDecorr (Shi et al., ICLR 2023)
:math:`L = \frac1{d^2}\|\mathrm{corr}(Z)\|_F^2`; prototype KD (FedProto-style, Tan et al., AAAI 2022)
:math:`L = \frac1B \sum_i \|z_i - \mu_{y_i}\|^2` towards the pre-trained global prototypes.

No public text or code of RISE was found: the losses above are the research notes' reconstruction
(``shared/papers/rise.md``), listed as inferred in :mod:`geode.federated.rise`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from geode.core.validation import check_array, check_int, check_positive

__all__ = [
    "BLSCLoss",
    "MRGALoss",
    "PretrainedGeometry",
    "aggregate_geometry",
    "client_feature_stats",
    "feddecorr_loss",
    "proto_kd_loss",
]


def _check_zy(z: Any, y: Any) -> None:
    import torch

    if not isinstance(z, torch.Tensor):
        raise TypeError(f"z (the features) must be a 2-d torch tensor (batch, dim); got {type(z).__name__}")
    if z.dim() != 2:
        raise ValueError(f"z (the features) must be a 2-d torch tensor (batch, dim); got shape {tuple(z.shape)}")
    if y is not None and (not isinstance(y, torch.Tensor) or y.shape != (z.shape[0],)):
        raise ValueError(
            f"y (the labels) must be a 1-d tensor with one label per row of z; got {getattr(y, 'shape', y)}"
        )


def client_feature_stats(features: Any, labels: Any, n_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One client's sufficient statistics of pre-trained features: per-class counts and sums, and ``sum z z^T``.

    Returns
    -------
    counts : ndarray, shape (C,)
    sums : ndarray, shape (C, d)
    second : ndarray, shape (d, d)
    """
    n_classes = check_int("n_classes", n_classes, low=2)
    z = check_array("features", features, ndim=2, dtype=np.float64, min_rows=1)
    y = check_array("labels", labels, shape=(z.shape[0],), dtype=np.int64)
    if y.min() < 0 or y.max() >= n_classes:
        raise ValueError(f"labels must lie in [0, {n_classes}); got range [{y.min()}, {y.max()}]")
    counts = np.bincount(y, minlength=n_classes).astype(np.float64)
    sums = np.zeros((n_classes, z.shape[1]))
    np.add.at(sums, y, z)
    return counts, sums, z.T @ z


@dataclass(frozen=True)
class PretrainedGeometry:
    """The pre-trained geometry the server broadcasts once: prototypes, principal basis, energy profile.

    Attributes
    ----------
    prototypes : ndarray, shape (C, d)
        Global class means of pre-trained features (a class no client holds is a zero row).
    basis : ndarray, shape (d, r)
        Top-``r`` eigenvectors of the global feature covariance.
    profile : ndarray, shape (r,)
        Their eigenvalues normalised to sum 1 (the target energy profile :math:`e^0`).
    """

    prototypes: np.ndarray
    basis: np.ndarray
    profile: np.ndarray


def aggregate_geometry(stats: list[tuple[np.ndarray, np.ndarray, np.ndarray]], rank: int) -> PretrainedGeometry:
    r"""Server side: global prototypes and the top-``rank`` covariance eigenbasis from clients' statistics.

    :math:`\mu_c = \sum_k s_{kc} / \sum_k n_{kc}`, :math:`m = \sum_{k,c} s_{kc} / N`,
    :math:`\Sigma_0 = \sum_k S_k / N - m m^\top` (the moments can travel through
    :func:`geode.federated.secure_sum`).
    """
    if isinstance(stats, (str, bytes)) or not isinstance(stats, Sequence) or len(stats) == 0:
        raise ValueError("stats must hold at least one client's (counts, sums, second moment)")
    checked = []
    for k, s in enumerate(stats):
        if isinstance(s, (str, bytes)) or not isinstance(s, Sequence) or len(s) != 3:
            raise TypeError(f"stats[{k}] must be a triple (counts, sums, second moment) from client_feature_stats")
        c = check_array(f"stats[{k}][0]", s[0], ndim=1)
        sm = check_array(f"stats[{k}][1]", s[1], shape=(c.shape[0], None))
        sec = check_array(f"stats[{k}][2]", s[2], shape=(sm.shape[1], sm.shape[1]))
        if checked and (c.shape, sm.shape) != (checked[0][0].shape, checked[0][1].shape):
            raise ValueError(
                f"stats[{k}] has {c.shape[0]} classes and dimension {sm.shape[1]}; stats[0] has "
                f"{checked[0][0].shape[0]} and {checked[0][1].shape[1]}"
            )
        checked.append((c, sm, sec))
    counts = sum(np.asarray(s[0], dtype=np.float64) for s in checked)
    sums = sum(np.asarray(s[1], dtype=np.float64) for s in checked)
    second = sum(np.asarray(s[2], dtype=np.float64) for s in checked)
    n = counts.sum()
    if n <= 0:
        raise ValueError("stats hold no examples (every class count is 0)")
    d = sums.shape[1]
    rank = check_int("rank", rank, low=1, high=d)
    protos = np.divide(sums, counts[:, None], out=np.zeros_like(sums), where=counts[:, None] > 0)
    m = sums.sum(0) / n
    cov = second / n - np.outer(m, m)
    lam, vec = np.linalg.eigh((cov + cov.T) / 2)
    order = np.argsort(lam)[::-1][:rank]
    lam = np.clip(lam[order], 0.0, None)
    if lam.sum() <= 0:
        raise ValueError("the pre-trained features have zero variance: no principal subspace")
    return PretrainedGeometry(protos, vec[:, order], lam / lam.sum())


class BLSCLoss(torch.nn.Module):
    r"""Biased low-dimensional subspace correction: :math:`\sum_j \max(0, e_j - e^0_j)` (module docstring).

    Parameters
    ----------
    basis : array_like, shape (d, r)
        Principal directions :math:`V_r` of the pre-trained features (orthonormal columns).
    profile : array_like, shape (r,)
        Target energy profile :math:`e^0` (non-negative, sums to 1).
    eps : float
        Guards the normalisation of a batch whose energy in the subspace is zero.
    """

    def __init__(self, basis: Any, profile: Any, eps: float = 1e-12) -> None:
        import torch

        super().__init__()
        v = check_array("basis", basis, ndim=2, dtype=np.float64)
        e0 = check_array("profile", profile, shape=(v.shape[1],), dtype=np.float64)
        if np.any(e0 < 0) or not np.isclose(e0.sum(), 1.0, atol=1e-6):
            raise ValueError("profile must be non-negative and sum to 1")
        if not np.allclose(v.T @ v, np.eye(v.shape[1]), atol=1e-5):
            raise ValueError("basis must have orthonormal columns")
        self.eps = check_positive("eps", eps)
        self.register_buffer("basis", torch.as_tensor(v, dtype=torch.float32))
        self.register_buffer("profile", torch.as_tensor(e0, dtype=torch.float32))

    def energy_profile(self, z: Any) -> Any:
        """:math:`e_j` of a batch (centred inside)."""
        _check_zy(z, None)
        if z.shape[1] != self.basis.shape[0]:
            raise ValueError(f"features have dim {z.shape[1]}; the basis expects {self.basis.shape[0]}")
        zc = z - z.mean(0, keepdim=True)
        energy = (zc @ self.basis.to(z.dtype)).pow(2).sum(0)
        return energy / energy.sum().clamp_min(self.eps)

    def forward(self, z: Any) -> Any:
        """The BLSC penalty of a batch ``z`` (B, d): 0 for a batch of fewer than two rows (documented).

        A per-step training loss: shapes are checked, values are not scanned (a NaN propagates, as in torch's
        own losses).
        """
        _check_zy(z, None)
        if z.shape[0] < 2:
            return z.sum() * 0.0
        e = self.energy_profile(z)
        return (e - self.profile.to(z.dtype)).clamp_min(0.0).sum()


class MRGALoss(torch.nn.Module):
    r"""Manifold relation-graph alignment: row-wise KL between softmaxed pre-trained and local relation graphs.

    Parameters
    ----------
    prototypes : array_like, shape (C, d)
        Pre-trained global class prototypes :math:`\mu_c`.
    tau : float
        Softmax temperature :math:`\tau`.
    """

    def __init__(self, prototypes: Any, tau: float = 0.1) -> None:
        import torch
        import torch.nn.functional as F

        super().__init__()
        mu = check_array("prototypes", prototypes, ndim=2, dtype=np.float64, min_rows=2)
        self.tau = check_positive("tau", tau)
        mu_t = torch.as_tensor(mu, dtype=torch.float32)
        self.register_buffer("graph", F.normalize(mu_t, dim=1) @ F.normalize(mu_t, dim=1).T)

    def forward(self, z: Any, y: Any) -> Any:
        """The MRGA penalty of a batch ``z`` (B, d) with labels ``y`` (B,): 0 when fewer than two classes are
        present. A per-step training loss: shapes are checked, values are not scanned (a NaN propagates, as in
        torch's own losses).
        """
        import torch
        import torch.nn.functional as F

        _check_zy(z, y)
        c = self.graph.shape[0]
        present = torch.unique(y)
        if present.numel() < 2:
            return z.sum() * 0.0
        if int(present.max()) >= c or int(present.min()) < 0:
            raise ValueError(f"labels must lie in [0, {c})")
        onehot = (y[:, None] == present[None, :]).to(z.dtype)  # (B, P)
        local = (onehot.T @ z) / onehot.sum(0)[:, None]
        ghat = F.normalize(local, dim=1) @ F.normalize(local, dim=1).T
        g0 = self.graph.to(z.dtype)[present][:, present]
        off = ~torch.eye(present.numel(), dtype=torch.bool)
        p = present.numel()
        t = F.log_softmax(g0[off].view(p, p - 1) / self.tau, dim=1)
        s = F.log_softmax(ghat[off].view(p, p - 1) / self.tau, dim=1)
        return (t.exp() * (t - s)).sum(1).mean()


def feddecorr_loss(z: Any) -> Any:
    r"""FedDecorr: :math:`\frac1{d^2}\|\mathrm{corr}(Z)\|_F^2` of a batch (0 for a batch of < 2 rows).

    A per-step training loss: the shape of ``z`` is checked, its values are not scanned (a NaN propagates, as
    in torch's own losses).
    """
    _check_zy(z, None)
    if z.shape[0] < 2:
        return z.sum() * 0.0
    zs = (z - z.mean(0)) / (z.std(0, unbiased=False) + 1e-8)
    corr = zs.T @ zs / z.shape[0]
    return corr.pow(2).sum() / z.shape[1] ** 2


def proto_kd_loss(z: Any, y: Any, prototypes: Any) -> Any:
    r"""Prototype KD: :math:`\frac1B \sum_i \|z_i - \mu_{y_i}\|^2` towards global prototypes (a tensor (C, d)).

    A per-step training loss: shapes are checked, values are not scanned (a NaN propagates, as in torch's own
    losses).
    """
    import torch

    _check_zy(z, y)
    if not isinstance(prototypes, torch.Tensor):
        raise TypeError(f"prototypes must be a torch tensor (C, d); got {type(prototypes).__name__}")
    if prototypes.dim() != 2 or prototypes.shape[0] == 0 or prototypes.shape[1] != z.shape[1]:
        raise ValueError(
            f"prototypes must have shape (C >= 1, {z.shape[1]}) to match z; got {tuple(prototypes.shape)}"
        )
    return (z - prototypes.to(z.dtype)[y]).pow(2).sum(1).mean()
