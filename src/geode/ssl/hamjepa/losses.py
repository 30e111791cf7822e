r"""HamJEPA's objective, its non-isotropic floors, the SIGReg (LeJEPA) baseline, and the price of isotropy.

HamJEPA (defaults of the authors' ``configs/cifar100_hjepa_mv.yaml``): for two views with phase-space states
:math:`z_a = (q_a, p_a)`, :math:`z_b = (q_b, p_b)` and a predictor :math:`\Phi_{\pm\delta t}`,

.. math:: L_{pred} = \tfrac12\big[\ell(\Phi_{\delta t}(z_a), \bar z_b) + \ell(\Phi_{-\delta t}(z_b), \bar z_a)\big],
          \qquad \ell(\hat z, \bar z) = \mathrm{MSE}(\hat q, \bar q) + 0.2\,\mathrm{MSE}(\hat p, \bar p)

(:math:`\bar z` = stop-gradient target), and over all views' states

.. math:: L = L_{pred} + 0.2\,L_{budget} + 0.5\,L_{var} + 0.5\,L_{logdet} + 0.05\,\|\mathbb{E} z\|^2/2d,

with the energy budget :math:`L_{budget} = (\mathbb{E}\|q\|^2/d - 1)^2 + (\mathbb{E}\|p\|^2/d - 1)^2`, the variance
floor :math:`L_{var} = \operatorname{mean}_i \mathrm{relu}(0.2 - \mathrm{std}_i)^2` (for q and for p), and the
projected spectral floor on a random orthonormal projection to :math:`k = 128` dimensions, refreshed every 16
steps: :math:`\mathrm{relu}(-1.5 - \log\det C / k)^2 + \mathrm{relu}(\rho_0 - PR/k)^2
+ \mathrm{relu}(\lambda_{max}/\mathrm{tr}\,C - \kappa_0)^2`,
with :math:`(\rho_0, \kappa_0) = (0.12, 0.35)` for q and :math:`(0.16, 0.30)` for p. None of these pulls the
marginal toward an isotropic Gaussian: they only keep it from collapsing.

The isotropic baseline (LeJEPA with SIGReg): every view predicts the mean of the global views,
:math:`L = \tfrac12\,\mathrm{mean}\,(\bar z_{glob} - z_v)^2 + \lambda\,\mathrm{SIGReg}(z)` with :math:`\lambda = 0.02`
and SIGReg the Epps-Pulley statistic against :math:`N(0, 1)` of the embeddings projected on 64 random unit
directions (9 quadrature points on :math:`[0, 3]`, Gaussian weight), averaged over directions and views.

Theory (the paper's closed form, tested): maximising :math:`\log\det\Sigma` subject to
:math:`\mathrm{tr}(H\Sigma) = c` gives :math:`\Sigma^* = (c/d) H^{-1}`; the isotropic covariance meeting the same
budget, :math:`(c/\mathrm{tr} H) I`, loses :math:`d \log(\mathrm{AM}(\lambda_H)/\mathrm{GM}(\lambda_H)) \ge 0` in
log-determinant (the *price of isotropy*).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from geode.core.validation import check_int, check_real, check_tensor

__all__ = [
    "HamJEPALoss",
    "SIGRegLoss",
    "energy_budget",
    "epps_pulley_sigreg",
    "hamiltonian_prediction_loss",
    "lejepa_prediction_loss",
    "maxent_covariance",
    "price_of_isotropy",
    "projected_logdet_floor",
    "variance_floor",
]


def _check_emb(name: str, x: Any, min_rows: int = 2) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch tensor (batch, dim); got {type(x).__name__}")
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D tensor (batch, dim); got shape {getattr(x, 'shape', None)}")
    if x.shape[0] < min_rows:
        raise ValueError(f"{name} must hold at least {min_rows} samples; got {x.shape[0]}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} must be finite (it holds NaN or inf)")


def _check_views(za: Any, zb: Any) -> None:
    _check_emb("z_a", za)
    _check_emb("z_b", zb)
    if za.shape != zb.shape:
        raise ValueError(
            f"z_a and z_b must be paired views of one batch with equal shapes; got {tuple(za.shape)} and "
            f"{tuple(zb.shape)}"
        )


def hamiltonian_prediction_loss(
    predictor: nn.Module, z_a: torch.Tensor, z_b: torch.Tensor, *, p_weight: float = 0.2, bidirectional: bool = True
) -> torch.Tensor:
    r"""HamJEPA's cross-view loss: predict view b's state from view a's (and back, with the time step reversed).

    Predict :math:`\bar z_b` from :math:`z_a` (and back with :math:`-\delta t`).

    ``predictor(z, direction)`` maps a (batch, 2d) state; the targets are detached; q is matched with weight 1
    and p with ``p_weight``.
    """
    _check_views(z_a, z_b)
    p_weight = check_real("p_weight", p_weight, low=0.0)
    d = z_a.shape[1] // 2

    def match(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        t = target.detach()
        out = (pred[:, :d] - t[:, :d]).square().mean()
        return out + p_weight * (pred[:, d:] - t[:, d:]).square().mean() if p_weight > 0 else out

    loss = match(predictor(z_a, direction=1), z_b)
    if bidirectional:
        loss = 0.5 * (loss + match(predictor(z_b, direction=-1), z_a))
    return loss


def energy_budget(z: torch.Tensor, *, q_target: float = 1.0, p_target: float = 1.0) -> torch.Tensor:
    r"""Energy budget of states ``z = [q, p]`` (batch, 2d): squared gaps of E‖q‖²/d and E‖p‖²/d to their targets.

    :math:`(\mathbb{E}\|q\|^2/d - q_0)^2 + (\mathbb{E}\|p\|^2/d - p_0)^2`."""
    _check_emb("z", z, 1)
    if z.shape[1] % 2:
        raise ValueError(f"z must have an even number of features (q then p); got {z.shape[1]}")
    d = z.shape[1] // 2
    q2 = z[:, :d].float().square().mean()
    p2 = z[:, d:].float().square().mean()
    return (q2 - check_real("q_target", q_target, low=0.0)) ** 2 + (
        p2 - check_real("p_target", p_target, low=0.0)
    ) ** 2


def variance_floor(x: torch.Tensor, *, std_floor: float = 0.2, eps: float = 1e-4) -> torch.Tensor:
    r"""Variance floor: the mean squared shortfall of each feature's standard deviation below σ₀.

    :math:`\operatorname{mean}_i \mathrm{relu}(\sigma_0 - \sqrt{\mathrm{Var}\,x_i + \epsilon})^2`.

    The variance is the biased one; :math:`\sigma_0` = ``std_floor``.
    """
    _check_emb("x", x)
    check_real("std_floor", std_floor, low=0.0, low_inclusive=False)
    std = torch.sqrt(x.float().var(0, unbiased=False) + check_real("eps", eps, low=0.0))
    return torch.relu(std_floor - std).square().mean()


def projected_logdet_floor(
    x: torch.Tensor,
    projection: torch.Tensor,
    *,
    logdet_floor: float = -1.5,
    pr_floor: float | None = None,
    eigmax_ceiling: float | None = None,
    eps: float = 1e-4,
) -> tuple[torch.Tensor, dict[str, float]]:
    r"""The spectral floor on the covariance :math:`C` of ``x @ projection`` (k columns), and its statistics.

    Returns the penalty :math:`\mathrm{relu}(\ell_0 - \log\det C/k)^2` (+ the participation-ratio floor
    :math:`\mathrm{relu}(\rho_0 - PR/k)^2`, :math:`PR = \mathrm{tr}(C)^2/\mathrm{tr}(C^2)`, and the top-eigenvalue
    ceiling :math:`\mathrm{relu}(\lambda_{max}/\mathrm{tr}C - \kappa_0)^2` when given) and a dict with
    ``logdet_per_dim``, ``pr_norm`` and ``eigmax_frac``. :math:`C` is the unbiased covariance plus
    :math:`\epsilon I`.
    """
    _check_emb("x", x)
    check_tensor("projection", projection, shape=(x.shape[1], None))
    k = projection.shape[1]
    y = (x.float() - x.float().mean(0, keepdim=True)) @ projection.float()
    c = y.T @ y / (x.shape[0] - 1)
    c = 0.5 * (c + c.T) + check_real("eps", eps, low=0.0) * torch.eye(k, dtype=c.dtype)
    logdet = torch.linalg.slogdet(c)[1] / k
    tr = c.trace()
    pr_norm = tr.square() / (c.square().sum() + 1e-12) / k
    eigmax = torch.linalg.eigvalsh(c)[-1] / (tr + 1e-12)
    loss = torch.relu(check_real("logdet_floor", logdet_floor) - logdet).square()
    if pr_floor is not None:
        loss = loss + torch.relu(check_real("pr_floor", pr_floor) - pr_norm).square()
    if eigmax_ceiling is not None:
        loss = loss + torch.relu(eigmax - check_real("eigmax_ceiling", eigmax_ceiling)).square()
    stats = {
        "logdet_per_dim": float(logdet.detach()),
        "pr_norm": float(pr_norm.detach()),
        "eigmax_frac": float(eigmax.detach()),
    }
    return loss, stats


def lejepa_prediction_loss(views: torch.Tensor, n_global: int = 2) -> torch.Tensor:
    r"""LeJEPA's prediction term: half the mean squared gap of every view to the mean of the global views.

    :math:`\tfrac12\,\mathrm{mean}_{v,b,k}(\bar z_{b,k} - z_{v,b,k})^2` with :math:`\bar z` the mean of the first
    ``n_global`` views (not detached, as in LeJEPA). ``views``: (V, B, K), finite and non-empty."""
    check_tensor("views", views, ndim=3)
    check_int("n_global", n_global, low=1, high=views.shape[0])
    centre = views[:n_global].mean(0, keepdim=True)
    return 0.5 * (centre - views).square().mean()


def epps_pulley_sigreg(
    z: torch.Tensor, directions: torch.Tensor, *, t_max: float = 3.0, n_points: int = 9
) -> torch.Tensor:
    r"""SIGReg: the Epps-Pulley statistic of ``z @ directions`` against :math:`N(0, 1)`, averaged over slices.

    For each slice :math:`x = z u`, :math:`T = N \int w(t)\,|\hat\varphi_x(t) - e^{-t^2/2}|^2 dt` with the
    Gaussian weight :math:`w(t) = e^{-t^2/2}` and the trapezoid rule on ``n_points`` knots of
    :math:`[0, t_{max}]` doubled for :math:`[-t_{max}, 0)` (the LeJEPA definition, scaled by N). ``directions``
    (dim, slices) should have unit columns.
    """
    _check_emb("z", z)
    check_tensor("directions", directions, shape=(z.shape[1], None))
    t_max = check_real("t_max", t_max, low=0.0, low_inclusive=False)
    n_points = check_int("n_points", n_points, low=3)
    t = torch.linspace(0.0, t_max, n_points, dtype=torch.float32)
    w = torch.full((n_points,), 2.0 * t_max / (n_points - 1))
    w[[0, -1]] /= 2.0
    phi = torch.exp(-0.5 * t.square())
    x = (z.float() @ directions.float()).unsqueeze(-1) * t  # (N, S, T)
    err = (x.cos().mean(0) - phi).square() + x.sin().mean(0).square()  # (S, T)
    return (err @ (w * phi)).mean() * z.shape[0]


def _orthonormal(dim: int, k: int, gen: torch.Generator) -> torch.Tensor:
    return torch.linalg.qr(torch.randn(dim, k, generator=gen))[0]


class HamJEPALoss(nn.Module):
    r"""HamJEPA's total objective for two views (see the module docstring), with its projection state.

    Parameters
    ----------
    predictor : nn.Module
        :class:`~geode.ssl.hamjepa.HamiltonianPredictor` (or the :class:`~geode.ssl.hamjepa.MLPPredictor`
        ablation), called as ``predictor(z, direction)``.
    state_dim : int
        :math:`2d`.
    lambdas : dict, optional
        Weights ``budget`` (0.2), ``var`` (0.5), ``logdet`` (0.5), ``mean`` (0.05).
    proj_dim, refresh : int
        Columns of the random orthonormal projection of the spectral floor (128, capped at d and batch - 1) and
        the steps between redraws (16).
    seed : int
        Seed of the projections.
    """

    def __init__(
        self,
        predictor: nn.Module,
        state_dim: int,
        *,
        lambdas: dict[str, float] | None = None,
        p_weight: float = 0.2,
        proj_dim: int = 128,
        refresh: int = 16,
        seed: int = 0,
    ) -> None:
        super().__init__()
        check_int("state_dim", state_dim, low=2)
        if state_dim % 2:
            raise ValueError(f"state_dim must be even; got {state_dim}")
        self.predictor = predictor
        self.d = state_dim // 2
        self.lambdas = {"budget": 0.2, "var": 0.5, "logdet": 0.5, "mean": 0.05, **(lambdas or {})}
        unknown = set(self.lambdas) - {"budget", "var", "logdet", "mean"}
        if unknown:
            raise ValueError(f"lambdas has unknown keys {sorted(unknown)}; use budget, var, logdet, mean")
        self.p_weight = check_real("p_weight", p_weight, low=0.0)
        self.proj_dim = check_int("proj_dim", proj_dim, low=1)
        self.refresh = check_int("refresh", refresh, low=1)
        self._gen = torch.Generator().manual_seed(check_int("seed", seed, low=0))
        self._step = 0
        self._proj: dict[str, torch.Tensor] = {}
        self.last: dict[str, float] = {}

    def forward(self, z_a: torch.Tensor, z_b: torch.Tensor) -> torch.Tensor:
        _check_views(z_a, z_b)
        if z_a.shape[1] != 2 * self.d:
            raise ValueError(f"z_a must have {2 * self.d} features; got {z_a.shape[1]}")
        lam = self.lambdas
        pred = hamiltonian_prediction_loss(self.predictor, z_a, z_b, p_weight=self.p_weight)
        z = torch.cat([z_a, z_b], 0)
        q, p = z[:, : self.d], z[:, self.d :]
        k = min(self.proj_dim, self.d, z.shape[0] - 1)
        if self._step % self.refresh == 0 or not self._proj or self._proj["q"].shape[1] != k:
            self._proj = {"q": _orthonormal(self.d, k, self._gen), "p": _orthonormal(self.d, k, self._gen)}
        self._step += 1
        ld_q, sq = projected_logdet_floor(q, self._proj["q"], pr_floor=0.12, eigmax_ceiling=0.35)
        ld_p, sp = projected_logdet_floor(p, self._proj["p"], pr_floor=0.16, eigmax_ceiling=0.30)
        budget = energy_budget(z)
        var = variance_floor(q) + variance_floor(p)
        mean = z.float().mean(0).square().mean()
        self.last = {"pred": float(pred.detach()), "q_pr_norm": sq["pr_norm"], "p_pr_norm": sp["pr_norm"]}
        return pred + lam["budget"] * budget + lam["var"] * var + lam["logdet"] * (ld_q + ld_p) + lam["mean"] * mean


class SIGRegLoss(nn.Module):
    r"""The isotropic baseline: LeJEPA prediction to the views' mean plus λ-weighted SIGReg.

    Slices (64 unit directions) are redrawn at every call from the module's own generator (``seed``), as in
    LeJEPA's default ``refresh_interval=1``.
    """

    def __init__(self, dim: int, *, weight: float = 0.02, slices: int = 64, seed: int = 0) -> None:
        super().__init__()
        self.dim = check_int("dim", dim, low=1)
        self.weight = check_real("weight", weight, low=0.0)
        self.slices = check_int("slices", slices, low=1)
        self._gen = torch.Generator().manual_seed(check_int("seed", seed, low=0))

    def forward(self, z_a: torch.Tensor, z_b: torch.Tensor) -> torch.Tensor:
        _check_views(z_a, z_b)
        if z_a.shape[1] != self.dim:
            raise ValueError(f"z_a must have {self.dim} features; got {z_a.shape[1]}")
        u = torch.randn(self.dim, self.slices, generator=self._gen)
        u = u / u.norm(dim=0, keepdim=True)
        views = torch.stack([z_a, z_b])
        reg = 0.5 * (epps_pulley_sigreg(z_a, u) + epps_pulley_sigreg(z_b, u))
        return lejepa_prediction_loss(views) + self.weight * reg


def _check_spd(h: Any) -> torch.Tensor:
    try:
        h = torch.as_tensor(h, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(f"h must be a square matrix of real numbers; got {type(h).__name__}") from exc
    if h.ndim != 2 or h.shape[0] != h.shape[1] or h.shape[0] == 0:
        raise ValueError(f"h must be a non-empty square matrix; got shape {tuple(h.shape)}")
    if not bool(torch.isfinite(h).all()):
        raise ValueError("h must contain only finite values (found NaN or inf)")
    if not torch.allclose(h, h.T, atol=1e-10):
        raise ValueError("h must be symmetric")
    if float(torch.linalg.eigvalsh(h)[0]) <= 0:
        raise ValueError("h must be positive definite")
    return h


def maxent_covariance(h: Any, c: float = 1.0) -> torch.Tensor:
    r"""The maximum-entropy (and minimax) covariance under the energy budget tr(HΣ) = c: (c/d) H⁻¹ (float64)."""
    h = _check_spd(h)
    return check_real("c", c, low=0.0, low_inclusive=False) / h.shape[0] * torch.linalg.inv(h)


def price_of_isotropy(h: Any) -> float:
    r"""The log-det price of isotropy under an energy H: d log(AM / GM of H's eigenvalues) ≥ 0.

    :math:`d \log(\mathrm{AM}(\lambda_H) / \mathrm{GM}(\lambda_H))`."""
    lam = torch.linalg.eigvalsh(_check_spd(h))
    return float(lam.numel() * (math.log(float(lam.mean())) - float(lam.log().mean())))
