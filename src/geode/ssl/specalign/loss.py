r"""SpecAlign: characteristic-function alignment of two embedding distributions over learnable spectral queries.

For embeddings :math:`Z_a = \{a_j\}_{j=1}^{n}` and :math:`Z_b = \{b_j\}_{j=1}^{m}` in :math:`\mathbb{R}^k`
the empirical characteristic functions are :math:`\hat\varphi_a(t) = \frac1n\sum_j e^{i t^\top a_j}`, and the
discrepancy over spectral queries :math:`t_1, \dots, t_M` is

.. math:: L_{CF} = \frac1M \sum_{m=1}^M |\hat\varphi_a(t_m) - \hat\varphi_b(t_m)|^2
          = \frac1M \sum_m (\Delta\cos_m)^2 + (\Delta\sin_m)^2 ,

with :math:`\Delta\cos_m = \operatorname{mean}_j \cos(t_m^\top a_j) - \operatorname{mean}_j \cos(t_m^\top b_j)`
(and likewise for sin). By Bochner's theorem, with queries drawn from a density :math:`\rho`,
:math:`\mathbb{E}_{t\sim\rho} L_{CF}` is the (biased, V-statistic) MMD² with the kernel
:math:`k(x, y) = \int \cos(t^\top(x - y))\,d\rho(t)`; Gaussian queries :math:`N(0, \sigma^{-2} I)` give the
RBF kernel :math:`\exp(-\|x-y\|^2 / 2\sigma^2)` (a unit test checks it).

The structured direction–radius sampler (SDRS) writes :math:`t_m = r_m u_m` with
:math:`u_m = v_m / \|v_m\|` (learnable :math:`v_m`) and a log-normal radius
:math:`r_m = \exp(\mu_{s(m)} + e^{\ell_{s(m)}} \epsilon_m)`, :math:`\epsilon_m \sim N(0, 1)`, one learnable
:math:`(\mu_s, \ell_s)` per scale :math:`s` of a multi-scale grid (queries split evenly over the scales).

Inferred details (the paper was not found; notes ``specalign.md``): learnable unconstrained directions (not a
vMF mixture); the radius law initialised at the given scales with log-std 0.25; queries trained adversarially
(they *maximise* the discrepancy, OCF-GAN style) through a gradient-reversal layer with a learning-rate scale
chosen by the caller; the radius is fresh noise at each call (reparametrised), the directions fixed parameters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from geode.core.validation import check_positive, check_tensor

__all__ = ["SDRSampler", "SpecAlignLoss", "cf_discrepancy", "info_nce", "rbf_mmd2", "structure_reg"]


def _check_pair(a: Any, b: Any, names: tuple[str, str] = ("a", "b")) -> None:
    """Both 2-D (samples, dim) tensors, non-empty and finite, of one dimension."""
    for n, x in zip(names, (a, b)):
        check_tensor(n, x, ndim=2)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"{names[0]} and {names[1]} must have the same dimension; got {a.shape[1]} and {b.shape[1]}")


def cf_discrepancy(a: torch.Tensor, b: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    r"""Mean squared gap of the empirical characteristic functions of ``a`` and ``b`` at ``queries``.

    Parameters
    ----------
    a, b : Tensor of shape (n, k) and (m, k)
        Two samples (their sizes may differ; each non-empty and finite).
    queries : Tensor of shape (M, k)
        Spectral queries :math:`t_m`; must be finite and non-empty (M >= 1).

    Returns
    -------
    Tensor
        The scalar :math:`\frac1M\sum_m |\hat\varphi_a(t_m) - \hat\varphi_b(t_m)|^2` (0 for equal samples,
        symmetric in ``a`` and ``b``, at most 4).
    """
    _check_pair(a, b)
    check_tensor("queries", queries, shape=(None, a.shape[1]))
    pa, pb = a @ queries.T, b @ queries.T
    dc = pa.cos().mean(0) - pb.cos().mean(0)
    ds = pa.sin().mean(0) - pb.sin().mean(0)
    return (dc.square() + ds.square()).mean()


def rbf_mmd2(a: torch.Tensor, b: torch.Tensor, bandwidth: float = 1.0) -> torch.Tensor:
    r"""Biased (V-statistic) MMD² with the RBF kernel exp(−‖x − y‖² / 2σ²), σ = ``bandwidth``."""
    _check_pair(a, b)
    check_positive("bandwidth", bandwidth)

    def k(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.exp(-torch.cdist(x, y).square() / (2 * bandwidth**2)).mean()

    return k(a, a) + k(b, b) - 2 * k(a, b)


def info_nce(a: torch.Tensor, b: torch.Tensor, temperature: float = 0.1) -> torch.Tensor:
    r"""Symmetric InfoNCE (CLIP loss) of paired rows of ``a`` and ``b`` (L2-normalised inside)."""
    _check_pair(a, b)
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"a and b must be paired (same number of rows); got {a.shape[0]} and {b.shape[0]}")
    check_positive("temperature", temperature)
    logits = nn.functional.normalize(a, dim=1) @ nn.functional.normalize(b, dim=1).T / temperature
    target = torch.arange(a.shape[0])
    return 0.5 * (nn.functional.cross_entropy(logits, target) + nn.functional.cross_entropy(logits.T, target))


def structure_reg(x: torch.Tensor, z: torch.Tensor, temperature: float = 0.1) -> torch.Tensor:
    r"""STRUCTURE-style regulariser: KL from the frozen features' neighbourhood distribution to the projection's.

    Row-softmax of cosine similarities (self excluded) at ``temperature`` in the input space :math:`P` and in the
    projected space :math:`Q`; returns :math:`\operatorname{mean}_i KL(P_i \| Q_i)`. A single-scale reading of
    STRUCTURE's multi-scale neighbourhood preservation (inferred). ``x`` (n, k) and ``z`` (n, k') must be finite,
    non-empty and paired by rows; ``temperature`` > 0.
    """
    check_tensor("x", x, ndim=2)
    check_tensor("z", z, ndim=2)
    if x.shape[0] != z.shape[0]:
        raise ValueError(f"x and z must be 2-D with the same number of rows; got {tuple(x.shape)}, {tuple(z.shape)}")
    check_positive("temperature", temperature)
    eye = torch.eye(x.shape[0], dtype=torch.bool)

    def logp(v: torch.Tensor) -> torch.Tensor:
        v = nn.functional.normalize(v, dim=1)
        s = (v @ v.T / temperature).masked_fill(eye, -1e9)
        return s.log_softmax(1)

    lp, lq = logp(x.detach()), logp(z)
    return (lp.exp() * (lp - lq)).masked_fill(eye, 0.0).sum(1).mean()


class _Reverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        return -g


class SDRSampler(nn.Module):
    r"""Structured direction–radius sampler of spectral queries: learnable directions, log-normal learnable radii.

    :math:`t_m = r_m\, v_m / \|v_m\|`.

    Parameters
    ----------
    dim : int
        Embedding dimension :math:`k`.
    n_queries : int
        Number of queries :math:`M` (split evenly over ``scales``; at least one per scale).
    scales : sequence of float
        Initial median radii of the multi-scale grid (each > 0).
    seed : int
        Seed of the initial directions (standard normal).
    """

    def __init__(self, dim: int, n_queries: int = 64, scales: Sequence[float] = (1.0, 3.0, 10.0), seed: int = 0):
        super().__init__()
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive int; got {dim!r}")
        try:
            scales = tuple(scales)
        except TypeError:
            raise TypeError(f"scales must be a sequence of positive numbers; got {type(scales).__name__}") from None
        if not scales:
            raise ValueError("scales must be a non-empty sequence of positive numbers; got ()")
        scales = tuple(check_positive(f"scales[{i}]", s) for i, s in enumerate(scales))
        if not isinstance(n_queries, int) or n_queries < len(scales):
            raise ValueError(f"n_queries must be an int >= len(scales) = {len(scales)}; got {n_queries!r}")
        g = torch.Generator().manual_seed(seed)
        self.directions = nn.Parameter(torch.randn(n_queries, dim, generator=g))
        self.log_mu = nn.Parameter(torch.log(torch.tensor(scales)))
        self.log_std = nn.Parameter(torch.full((len(scales),), math.log(0.25)))
        self.register_buffer("scale_index", torch.arange(n_queries) % len(scales))

    def forward(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """Draw the (M, dim) queries (fresh radius noise each call)."""
        u = nn.functional.normalize(self.directions, dim=1)
        eps = torch.randn(u.shape[0], generator=generator)
        i = self.scale_index
        r = torch.exp(self.log_mu[i] + self.log_std[i].exp() * eps)
        return r[:, None] * u


class SpecAlignLoss(nn.Module):
    r"""The SpecAlign term :math:`L_{CF}` over SDRS queries, adversarial in the queries.

    ``loss = SpecAlignLoss(dim)(za, zb)``; calling ``loss.backward()`` gives the projectors the gradient that
    *lowers* the discrepancy and the sampler's parameters the gradient that *raises* it (gradient reversal),
    so one optimiser step trains both (give the sampler's parameters a smaller learning rate).

    Parameters
    ----------
    dim, n_queries, scales, seed
        Passed to :class:`SDRSampler`.
    adversarial : bool
        Reverse the gradient into the queries (else the queries also minimise, which shrinks radii to 0).
    """

    def __init__(
        self,
        dim: int,
        n_queries: int = 64,
        scales: Sequence[float] = (1.0, 3.0, 10.0),
        seed: int = 0,
        adversarial: bool = True,
    ):
        super().__init__()
        self.sampler = SDRSampler(dim, n_queries, scales, seed)
        self.adversarial = bool(adversarial)

    def forward(self, a: torch.Tensor, b: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """The discrepancy of the two batches (sizes may differ) at freshly drawn queries."""
        _check_pair(a, b)
        t = self.sampler(generator)
        if self.adversarial:
            t = _Reverse.apply(t)
        return cf_discrepancy(a, b, t)
