r"""REEF-GP: a post-hoc Gaussian process on the residuals of a frozen operator, in its embedding space.

For a frozen operator :math:`G` with prediction :math:`\hat u(x)` and internal embedding :math:`h(x)` at
``feature_layer`` (concatenated with the point's coordinates), REEF-GP models the residual
:math:`r = u - \hat u` on a held-out calibration split as

.. math::

    r(x) \sim \mathcal{GP}\bigl(0,\ k(z, z')\bigr) + \varepsilon(x), \qquad z = W h(x), \quad
    \|W\|_2 \le 1 \ (\text{spectral normalisation}),

    k(z, z') = s^2 \Bigl(1 + \sqrt5 \rho + \tfrac53 \rho^2\Bigr) e^{-\sqrt5 \rho}, \quad
    \rho = \bigl\|(z - z') / \ell\bigr\| \quad (\text{Matérn-5/2, ARD}),

    \varepsilon(x) \sim \mathcal{N}\bigl(0, \sigma^2(x)\bigr), \quad
    \sigma^2(x) = \operatorname{softplus}(\mathrm{MLP}(g(x))) + 10^{-6},

with geometry descriptors :math:`g(x)` = (distance-to-boundary proxy, log local point spacing, local
gradient magnitude of :math:`\hat u`). :math:`W`, :math:`\ell`, :math:`s` and the noise network are fit
by the exact marginal likelihood on a fresh random subset of the calibration points at every step
(subset-of-data training, no inducing points). The prediction keeps the operator's mean and adds the
exact GP posterior variance on a conditioning subset :math:`S`:

.. math::

    \mu(x) = \hat u(x), \qquad
    \operatorname{Var}(x) = k(z, z) - k_{zS} (K_{SS} + \Sigma_S)^{-1} k_{Sz} + \sigma^2(x) .
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.core.validation import check_array, check_int, check_real
from geode.uncertainty.reef_gp.operator import check_clouds

__all__ = ["REEFGP", "geometry_descriptors", "matern52"]


def matern52(a: torch.Tensor, b: torch.Tensor, lengthscale: torch.Tensor, outputscale: torch.Tensor) -> torch.Tensor:
    r"""Matérn-5/2 ARD kernel matrix :math:`s^2 (1 + \sqrt5\rho + 5\rho^2/3) e^{-\sqrt5\rho}`.

    Parameters
    ----------
    a, b : torch.Tensor, shapes (n, d) and (m, d)
        The points (an empty ``a`` or ``b`` gives an empty ``(n, m)`` matrix).
    lengthscale : torch.Tensor or float
        Positive finite length scales: one per dimension ``(d,)``, or one shared (a scalar or ``(1,)``).
    outputscale : torch.Tensor or float
        The positive finite variance :math:`s^2` (a scalar or ``(1,)``).

    Returns
    -------
    torch.Tensor, shape (n, m)

    Notes
    -----
    The shapes and the (few) scale parameters are checked; the points are not scanned for NaN or infinity,
    since the kernel runs at every step of REEF-GP's marginal-likelihood fit: a NaN in ``a`` (``b``) gives NaN
    in its row (column), as in torch's own operations (``REEFGP.fit`` and ``predict`` check their inputs).
    """
    if not isinstance(a, torch.Tensor):
        raise TypeError(f"a must be a torch tensor of shape (n, d); got {type(a).__name__}")
    if not isinstance(b, torch.Tensor):
        raise TypeError(f"b must be a torch tensor of shape (m, d); got {type(b).__name__}")
    if a.ndim != 2:
        raise ValueError(f"a must have shape (n, d); got {tuple(a.shape)}")
    if b.ndim != 2 or b.shape[1] != a.shape[1]:
        raise ValueError(f"b must have shape (m, {a.shape[1]}) like a {tuple(a.shape)}; got {tuple(b.shape)}")
    lengthscale = _scale("lengthscale", lengthscale, a.shape[1])
    outputscale = _scale("outputscale", outputscale, 1)
    a, b = a / lengthscale, b / lengthscale
    d2 = (a**2).sum(-1)[:, None] + (b**2).sum(-1)[None, :] - 2 * a @ b.T
    rho = torch.sqrt(d2.clamp_min(1e-12))
    s5 = np.sqrt(5.0) * rho
    return outputscale * (1 + s5 + s5**2 / 3) * torch.exp(-s5)


def _scale(name: str, value: Any, d: int) -> Any:
    """A positive finite float, or a tensor of ``d`` (or one) of them; returned unchanged."""
    if isinstance(value, torch.Tensor):
        if value.numel() not in {1, d} or value.ndim > 1:
            raise ValueError(f"{name} must be a scalar or have shape ({d},); got {tuple(value.shape)}")
        ok = bool(((value > 0) & (value < float("inf"))).all())  # at most d entries: cheap
        if not ok:
            raise ValueError(f"{name} must be positive and finite; got {value.detach().cpu().tolist()}")
        return value
    check_real(name, value, low=0.0, low_inclusive=False)
    return value


def geometry_descriptors(points: Any, sdf: Any, u_hat: Any, neighbours: int = 6) -> np.ndarray:
    """``(S, n, 3)``: distance-to-boundary proxy, log mean spacing to the ``neighbours`` nearest points, and
    the largest finite-difference slope of ``u_hat`` to them (one cloud at a time)."""
    from scipy.spatial import cKDTree

    pts = check_array("points", points)
    s = check_array("sdf", sdf)
    uh = check_array("u_hat", u_hat)
    neighbours = check_int("neighbours", neighbours, low=1)
    if pts.ndim != 3 or pts.shape[-1] != 2 or s.shape != pts.shape[:2] or uh.shape != pts.shape[:2]:
        raise ValueError(f"points must be (S, n, 2) with sdf and u_hat (S, n); got {pts.shape}, {s.shape}, {uh.shape}")
    if pts.shape[1] <= neighbours:
        raise ValueError(f"points must hold more than neighbours={neighbours} points per cloud; got {pts.shape[1]}")
    out = np.zeros(pts.shape[:2] + (3,))
    for i in range(len(pts)):
        d, j = cKDTree(pts[i]).query(pts[i], neighbours + 1)
        d, j = d[:, 1:], j[:, 1:]
        slope = np.abs(uh[i][j] - uh[i][:, None]) / np.maximum(d, 1e-12)
        out[i] = np.column_stack([s[i], np.log(d.mean(1)), slope.max(1)])
    return out


class REEFGP:
    """Residual-on-embedded-features GP over a frozen operator (sklearn-style ``fit`` / ``predict``).

    Parameters
    ----------
    operator : torch.nn.Module
        The frozen neural operator, ``operator(x) -> (S, n)`` for inputs ``x`` (S, n, d_in) whose first two
        features are the coordinates and third the distance-to-boundary proxy.
    feature_layer : str, callable or None
        The submodule whose output is the embedding (a forward hook reads it), a callable ``x -> (S, n, d)``,
        or ``None`` to use the raw inputs (the "GP on raw coordinates" ablation).
    q : int
        Dimension of the spectrally normalised projection.
    subset_size : int
        Calibration points per marginal-likelihood step.
    n_condition : int
        Calibration points the prediction conditions on.
    steps : int
        Adam steps on the marginal likelihood.
    lr : float
        Adam learning rate.
    heteroscedastic : bool
        Learn :math:`\\sigma^2(x)` from the geometry descriptors (else one learned noise level).
    with_coords : bool
        Concatenate the coordinates to the embedding.
    seed : int
        Seed of the initialisation and of the subsets.
    """

    def __init__(
        self,
        operator: nn.Module,
        feature_layer: str | Callable[[torch.Tensor], torch.Tensor] | None = "decoder.embedding",
        *,
        q: int = 16,
        subset_size: int = 1000,
        n_condition: int = 2000,
        steps: int = 150,
        lr: float = 0.03,
        heteroscedastic: bool = True,
        with_coords: bool = True,
        seed: int = 0,
    ) -> None:
        if not isinstance(operator, nn.Module):
            raise TypeError(f"operator must be a torch.nn.Module; got {type(operator).__name__}")
        self.operator = operator
        if isinstance(feature_layer, str):
            try:
                operator.get_submodule(feature_layer)
            except AttributeError as e:
                raise ValueError(f"feature_layer {feature_layer!r} is not a submodule of the operator") from e
        self.feature_layer = feature_layer
        self.q = check_int("q", q, low=1)
        self.subset_size = check_int("subset_size", subset_size, low=2)
        self.n_condition = check_int("n_condition", n_condition, low=1)
        self.steps = check_int("steps", steps, low=0)
        self.lr = check_real("lr", lr, low=0.0, low_inclusive=False)
        self.heteroscedastic = bool(heteroscedastic)
        self.with_coords = bool(with_coords)
        self.seed = seed

    # -- the frozen operator's outputs ------------------------------------------------------------------
    def operator_outputs(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(u_hat (S, n), embedding (S, n, d))`` of the frozen operator (no gradient)."""
        check_clouds("x", x, min_features=3)
        xt = torch.as_tensor(x, dtype=torch.float32)
        captured: dict[str, torch.Tensor] = {}
        self.operator.eval()
        with torch.no_grad():
            if isinstance(self.feature_layer, str):
                mod = self.operator.get_submodule(self.feature_layer)
                hook = mod.register_forward_hook(lambda _m, _i, o: captured.__setitem__("h", o))
                try:
                    u_hat = self.operator(xt)
                finally:
                    hook.remove()
                h = captured["h"]
            else:
                u_hat = self.operator(xt)
                h = xt if self.feature_layer is None else self.feature_layer(xt)
        if self.with_coords and self.feature_layer is not None:
            h = torch.cat([h, xt[..., :2]], -1)
        return u_hat.double().numpy(), h.double().numpy()

    def _inputs(self, x: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        u_hat, h = self.operator_outputs(x)
        xn = np.asarray(x, dtype=np.float64)
        g = geometry_descriptors(xn[..., :2], xn[..., 2], u_hat)
        return u_hat, h.reshape(-1, h.shape[-1]), g.reshape(-1, 3)

    # -- the GP -----------------------------------------------------------------------------------------
    def _build(self, d_h: int) -> None:
        torch.manual_seed(self.seed)
        lin = nn.Linear(d_h, self.q, bias=False).double()
        self.proj_ = nn.utils.parametrizations.spectral_norm(lin)
        self.log_ls_ = nn.Parameter(torch.zeros(self.q, dtype=torch.float64))
        self.log_os_ = nn.Parameter(torch.tensor(0.0, dtype=torch.float64))
        self.noise_ = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1)).double()
        if not self.heteroscedastic:
            for p in self.noise_[:-1].parameters():
                p.requires_grad_(False)
                p.data.zero_()

    def _z(self, h: torch.Tensor) -> torch.Tensor:
        return self.proj_((h - self.h_mean_) / self.h_scale_)

    def _noise(self, g: torch.Tensor) -> torch.Tensor:
        return nn.functional.softplus(self.noise_((g - self.g_mean_) / self.g_scale_)).squeeze(-1) + 1e-6

    def _k(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return matern52(a, b, self.log_ls_.exp(), self.log_os_.exp())

    def fit(self, x: Any, u: Any) -> REEFGP:
        """Fit on a held-out calibration split: inputs ``x`` (S, n, d_in), true solutions ``u`` (S, n)."""
        t0 = time.process_time()
        u_hat, h, g = self._inputs(x)
        ua = check_array("u", u.detach().cpu().numpy() if isinstance(u, torch.Tensor) else u)
        if ua.shape != u_hat.shape:
            raise ValueError(f"u must have shape {u_hat.shape}; got {ua.shape}")
        r = torch.as_tensor((ua - u_hat).ravel())
        ht, gt = torch.as_tensor(h), torch.as_tensor(g)
        self.h_mean_, self.h_scale_ = ht.mean(0), ht.std(0) + 1e-8
        self.g_mean_, self.g_scale_ = gt.mean(0), gt.std(0) + 1e-8
        self.r_scale_ = float(r.std()) + 1e-12
        rs = r / self.r_scale_
        self._build(h.shape[1])
        params = [
            *self.proj_.parameters(),
            self.log_ls_,
            self.log_os_,
            *[p for p in self.noise_.parameters() if p.requires_grad],
        ]
        opt = torch.optim.Adam(params, lr=self.lr)
        gen = torch.Generator().manual_seed(self.seed)
        n = len(rs)
        m = min(self.subset_size, n)
        self.losses_ = []
        self.proj_.train()
        for _ in range(self.steps):
            idx = torch.randperm(n, generator=gen)[:m]
            z = self._z(ht[idx])
            kmat = self._k(z, z) + torch.diag(self._noise(gt[idx]))
            chol = torch.linalg.cholesky(kmat + 1e-6 * torch.eye(m, dtype=torch.float64))
            alpha = torch.cholesky_solve(rs[idx, None], chol)
            nll = 0.5 * (rs[idx, None] * alpha).sum() + torch.log(torch.diagonal(chol)).sum()
            loss = nll / m
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            self.losses_.append(float(loss.detach()))
        self.proj_.eval()
        # conditioning subset for prediction
        idx = torch.randperm(n, generator=gen)[: min(self.n_condition, n)]
        with torch.no_grad():
            self.z_cond_ = self._z(ht[idx])
            kmat = self._k(self.z_cond_, self.z_cond_) + torch.diag(self._noise(gt[idx]))
            self.chol_ = torch.linalg.cholesky(kmat + 1e-6 * torch.eye(len(idx), dtype=torch.float64))
        self.fit_seconds_ = time.process_time() - t0
        return self

    def predict(self, x: Any, *, return_parts: bool = False) -> Any:
        """``(mean, std)`` of shape (S, n): the operator's own mean and the GP + noise standard deviation."""
        if not hasattr(self, "chol_"):
            raise RuntimeError("call fit(x_calibration, u_calibration) first")
        u_hat, h, g = self._inputs(x)
        with torch.no_grad():
            z = self._z(torch.as_tensor(h))
            ks = self._k(z, self.z_cond_)
            v = torch.cholesky_solve(ks.T, self.chol_)
            var_gp = (self.log_os_.exp() - (ks * v.T).sum(1)).clamp_min(0.0)
            var_noise = self._noise(torch.as_tensor(g))
        scale2 = self.r_scale_**2
        std = torch.sqrt((var_gp + var_noise) * scale2).numpy().reshape(u_hat.shape)
        if return_parts:
            return (
                u_hat,
                std,
                (var_gp * scale2).numpy().reshape(u_hat.shape),
                (var_noise * scale2).numpy().reshape(u_hat.shape),
            )
        return u_hat, std
