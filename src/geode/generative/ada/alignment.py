r"""Adversarial distribution alignment (ADA): components.

A generative model :math:`\mu_\theta` pre-trained on (imperfect) simulation data, :math:`\mu_{base}`, is aligned with
samples of the pushforwards :math:`o^{(i)}_\#\nu` of a hidden experimental distribution :math:`\nu` through
observables :math:`o^{(i)}`. One discriminator :math:`D_i` per observable is trained by binary cross-entropy
(experimental :math:`o_i` samples labelled 1, :math:`o_i(x),\ x\sim\mu_\theta` labelled 0); its logit
:math:`\ell_i = \log D_i/(1-D_i)` estimates :math:`\log p_{exp,i}/p_{\theta,i}`. The generator maximises

.. math::  J(\theta) = \mathbb E_{x\sim\mu_\theta}\Big[\sum_i \ell_i(o_i(x))\Big]
           - \beta\,\mathrm{KL}(\mu_\theta\,\|\,\mu_{base}),

alternating with discriminator steps; the KL is estimated pathwise from reparameterised flow samples with the
flow's exact log-density. Its fixed point is :math:`\mu\propto\mu_{base}\prod_i w_i(o_i)`, the I-projection
of the base onto the set of distributions with the experimental observable marginals.

Components: :class:`RealNVP` (our own small affine-coupling normalising flow for the base model and the
generator), :class:`ZukoFlow` (any `zuko <https://github.com/probabilists/zuko>`_ flow, e.g. a neural spline
flow, behind the same interface; extra ``flows``), :class:`ObservableDiscriminator` (the per-observable
appraiser), :class:`ADA` (the alignment loop), :func:`fit_flow` (maximum likelihood), :func:`maxent_reweight`
and :class:`MomentMatching` (baselines).

Inferred details (the paper's code is not public): the flow (affine couplings with tanh-bounded log-scales and
alternating masks), discriminator width, equal numbers of discriminator and generator steps by default
(``n_disc_steps=1``), Adam for both, observables standardised by the experimental samples' mean and standard
deviation before entering a discriminator, the KL estimated by :math:`\mathbb E_{\mu_\theta}[\log q_\theta -
\log p_{base}]` on the same reparameterised batch, and the generator initialised at the base.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping

import numpy as np
import torch
from torch import nn

__all__ = ["ADA", "MomentMatching", "ObservableDiscriminator", "RealNVP", "ZukoFlow", "fit_flow", "maxent_reweight"]

Observable = Callable[[torch.Tensor], torch.Tensor]


class _Coupling(nn.Module):
    def __init__(self, dim: int, mask: torch.Tensor, hidden: int) -> None:
        super().__init__()
        self.register_buffer("mask", mask)
        self.net = nn.Sequential(
            nn.Linear(dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, 2 * dim)
        )
        nn.init.zeros_(self.net[-1].weight)
        nn.init.zeros_(self.net[-1].bias)

    def _st(self, xa: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s, t = self.net(xa).chunk(2, dim=-1)
        s = torch.tanh(s) * (1 - self.mask)
        return s, t * (1 - self.mask)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s, t = self._st(x * self.mask)
        return x * self.mask + (1 - self.mask) * (x * torch.exp(s) + t), s.sum(-1)

    def inverse(self, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s, t = self._st(y * self.mask)
        return y * self.mask + (1 - self.mask) * ((y - t) * torch.exp(-s)), -s.sum(-1)


class RealNVP(nn.Module):
    r"""A small RealNVP flow :math:`x = f(z)`, :math:`z\sim\mathcal N(0, I)`, with an affine input standardisation.

    :math:`\log q(x) = \log\mathcal N(f^{-1}(x)) + \log|\det\partial f^{-1}/\partial x|`; each coupling maps the
    unmasked coordinates :math:`x_b \mapsto x_b e^{\tanh s(x_a)} + t(x_a)`, log-determinant :math:`\sum\tanh s`.

    Parameters
    ----------
    dim : int
        Dimension (>= 2).
    n_layers : int
        Number of couplings (masks alternate).
    hidden : int
        Width of each coupling's two hidden layers.
    loc, scale : array-like, optional
        Affine standardisation :math:`x = loc + scale\odot y` applied last (set from the training data).
    """

    def __init__(self, dim: int = 2, n_layers: int = 6, hidden: int = 32, loc=None, scale=None) -> None:
        super().__init__()
        if dim < 2:
            raise ValueError(f"dim must be >= 2; got {dim}")
        if n_layers < 1:
            raise ValueError(f"n_layers must be >= 1; got {n_layers}")
        self.dim = dim
        masks = [(torch.arange(dim) % 2 == (k % 2)).double() for k in range(n_layers)]
        self.layers = nn.ModuleList(_Coupling(dim, m, hidden) for m in masks)
        self.register_buffer("loc", torch.zeros(dim) if loc is None else torch.as_tensor(loc, dtype=torch.float64))
        self.register_buffer(
            "scale", torch.ones(dim) if scale is None else torch.as_tensor(scale, dtype=torch.float64)
        )
        self.double()

    def forward(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Map latent ``z`` to data ``x``; returns ``(x, log|det dx/dz|)``."""
        ld = torch.zeros(z.shape[0], dtype=z.dtype)
        for layer in self.layers:
            z, l = layer(z)
            ld = ld + l
        return self.loc + self.scale * z, ld + torch.log(self.scale).sum()

    def inverse(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Map data ``x`` to latent ``z``; returns ``(z, log|det dz/dx|)``."""
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must have shape (n, {self.dim}); got {tuple(x.shape)}")
        y = (x - self.loc) / self.scale
        ld = -torch.log(self.scale).sum() * torch.ones(x.shape[0], dtype=x.dtype)
        for layer in reversed(self.layers):
            y, l = layer.inverse(y)
            ld = ld + l
        return y, ld

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        z, ld = self.inverse(x)
        return -0.5 * (z**2).sum(-1) - 0.5 * self.dim * math.log(2 * math.pi) + ld

    def rsample_and_log_prob(
        self, n: int, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterised samples and their exact log-density."""
        z = torch.randn(n, self.dim, dtype=self.loc.dtype, generator=generator)
        x, ld = self(z)
        return x, -0.5 * (z**2).sum(-1) - 0.5 * self.dim * math.log(2 * math.pi) - ld

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        return self.rsample_and_log_prob(n, generator)[0]


class ZukoFlow(nn.Module):
    r"""A `zuko <https://github.com/probabilists/zuko>`_ normalising flow behind the interface :class:`ADA` uses.

    ``ZukoFlow(dim, kind="NSF", **kw)`` builds ``zuko.flows.<kind>(dim, **kw)`` (neural spline flow by default;
    ``"MAF"``, ``"RealNVP"``, ... work too) in float64, with the same affine standardisation as
    :class:`RealNVP`: :math:`x = loc + scale\odot y`, :math:`\log q(x) = \log q_y((x - loc)/scale) -
    \sum\log scale`. It exposes ``dim``, ``log_prob``, ``rsample_and_log_prob`` and ``sample``, so it can be
    the base model and the generator of :class:`ADA` and :class:`MomentMatching` and be fitted by
    :func:`fit_flow`. zuko draws from torch's global generator: the ``generator`` arguments are accepted and
    ignored (:class:`ADA` and :func:`fit_flow` seed torch's global generator, so runs stay deterministic).

    Parameters
    ----------
    dim : int
        Dimension (>= 1).
    kind : str
        Name of a flow class in ``zuko.flows``.
    loc, scale : array-like, optional
        Affine standardisation applied last (set from the training data by :func:`fit_flow`).
    **kw
        Passed to the zuko flow (e.g. ``transforms=3, hidden_features=(32, 32)``).
    """

    def __init__(self, dim: int = 2, kind: str = "NSF", loc=None, scale=None, **kw) -> None:
        super().__init__()
        try:
            import zuko
        except ImportError as e:  # pragma: no cover - exercised only without the extra
            raise ImportError("ZukoFlow needs zuko: pip install 'geode[flows]'") from e
        if dim < 1:
            raise ValueError(f"dim must be >= 1; got {dim}")
        if not hasattr(zuko.flows, kind):
            raise ValueError(f"kind must name a flow in zuko.flows (e.g. 'NSF', 'MAF'); got {kind!r}")
        self.dim = dim
        self.flow = getattr(zuko.flows, kind)(dim, **kw)
        self.register_buffer("loc", torch.zeros(dim) if loc is None else torch.as_tensor(loc, dtype=torch.float64))
        self.register_buffer(
            "scale", torch.ones(dim) if scale is None else torch.as_tensor(scale, dtype=torch.float64)
        )
        self.double()

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must have shape (n, {self.dim}); got {tuple(x.shape)}")
        return self.flow().log_prob((x - self.loc) / self.scale) - torch.log(self.scale).sum()

    def rsample_and_log_prob(
        self, n: int, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterised samples and their exact log-density (``generator`` is ignored, see the class)."""
        y, lp = self.flow().rsample_and_log_prob((n,))
        return self.loc + self.scale * y, lp - torch.log(self.scale).sum()

    @torch.no_grad()
    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        return self.rsample_and_log_prob(n, generator)[0]


def fit_flow(
    data: np.ndarray,
    steps: int = 1500,
    lr: float = 3e-3,
    batch: int = 512,
    seed: int = 0,
    flow: str = "realnvp",
    **kw,
) -> nn.Module:
    """Fit a flow to ``data`` (n, d) by maximum likelihood (Adam, cosine schedule).

    ``flow="realnvp"`` fits our :class:`RealNVP`; any other value is a zuko flow class name (``"NSF"``,
    ``"MAF"``, ...) fitted as a :class:`ZukoFlow` (extra ``flows``). ``**kw`` go to the flow's constructor.
    """
    data = np.asarray(data, float)
    if data.ndim != 2 or len(data) < 2:
        raise ValueError(f"data must have shape (n >= 2, d); got {data.shape}")
    torch.manual_seed(seed)
    if flow == "realnvp":
        model: nn.Module = RealNVP(data.shape[1], loc=data.mean(0), scale=data.std(0), **kw)
    else:
        model = ZukoFlow(data.shape[1], kind=flow, loc=data.mean(0), scale=data.std(0), **kw)
    x = torch.as_tensor(data)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(len(x), (batch,), generator=g)
        loss = -model.log_prob(x[idx]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return model


class ObservableDiscriminator(nn.Module):
    """The per-observable appraiser: an MLP on the standardised observable returning the logit ``l = log D/(1-D)``."""

    def __init__(self, obs_dim: int = 1, hidden: int = 32, loc: float = 0.0, scale: float = 1.0) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(obs_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, 1)
        )
        self.loc, self.scale = float(loc), float(scale)
        self.double()

    def forward(self, o: torch.Tensor) -> torch.Tensor:
        if o.ndim == 1:
            o = o[:, None]
        return self.net((o - self.loc) / self.scale)[:, 0]


def _obs_values(observables: Mapping[str, Observable], exp_data: Mapping[str, np.ndarray], dim: int) -> dict:
    if set(observables) != set(exp_data):
        raise ValueError(f"exp_data keys {sorted(exp_data)} must match observables {sorted(observables)}")
    out = {}
    probe = torch.zeros(2, dim, dtype=torch.float64)
    for k, f in observables.items():
        v = np.asarray(exp_data[k], float)
        if v.ndim == 2 and v.shape[1] == 1:
            v = v[:, 0]
        if v.ndim != 1 or len(v) < 2:
            raise ValueError(f"exp_data[{k!r}] must be a 1-D array of >= 2 samples; got shape {v.shape}")
        o = f(probe)
        if o.shape != (2,):
            raise ValueError(f"observable {k!r} must map (n, {dim}) to (n,); got {tuple(o.shape)}")
        out[k] = torch.as_tensor(v)
    return out


class ADA:
    r"""Adversarial distribution alignment of a flow to experimental observable samples.

    Parameters
    ----------
    base : RealNVP or ZukoFlow
        The pre-trained base model :math:`\mu_{base}` (kept frozen; the generator starts as its copy). Any
        module with ``dim``, ``log_prob``, ``rsample_and_log_prob`` and ``sample`` works.
    observables : dict of name -> callable
        Each maps a batch ``(n, d)`` tensor to ``(n,)`` (differentiably).
    beta : float
        KL weight (>= 0).
    n_disc_steps : int
        Discriminator steps per generator step.
    lr, disc_lr : float
        Adam learning rates of the generator and the discriminators.
    batch : int
        Samples per step (model and experimental each).
    hidden : int
        Width of the discriminators.
    """

    def __init__(
        self,
        base: RealNVP,
        observables: Mapping[str, Observable],
        beta: float = 0.3,
        n_disc_steps: int = 1,
        lr: float = 1e-3,
        disc_lr: float = 3e-3,
        batch: int = 512,
        hidden: int = 32,
        shuffle_labels: bool = False,
    ) -> None:
        if not observables:
            raise ValueError("observables must name at least one observable")
        if not beta >= 0:
            raise ValueError(f"beta must be >= 0; got {beta}")
        if n_disc_steps < 1:
            raise ValueError(f"n_disc_steps must be >= 1; got {n_disc_steps}")
        self.base, self.observables, self.beta = base, dict(observables), float(beta)
        self.n_disc_steps, self.lr, self.disc_lr, self.batch, self.hidden = n_disc_steps, lr, disc_lr, batch, hidden
        self.shuffle_labels = shuffle_labels  # negative control: labels carry no information

    def fit(self, exp_data: Mapping[str, np.ndarray], steps: int = 500, seed: int = 0) -> RealNVP:
        """Run the alternating loop for ``steps`` generator steps; returns the aligned generator."""
        if steps < 0:
            raise ValueError(f"steps must be >= 0; got {steps}")
        exp = _obs_values(self.observables, exp_data, self.base.dim)
        torch.manual_seed(seed)
        g = torch.Generator().manual_seed(seed)
        gen = copy.deepcopy(self.base)
        for p in self.base.parameters():
            p.requires_grad_(False)
        for p in gen.parameters():
            p.requires_grad_(True)
        discs = {k: ObservableDiscriminator(1, self.hidden, float(v.mean()), float(v.std())) for k, v in exp.items()}
        d_opt = torch.optim.Adam([p for d in discs.values() for p in d.parameters()], lr=self.disc_lr)
        g_opt = torch.optim.Adam(gen.parameters(), lr=self.lr)
        bce = nn.BCEWithLogitsLoss()
        ones, zeros = torch.ones(self.batch, dtype=torch.float64), torch.zeros(self.batch, dtype=torch.float64)
        for _ in range(steps):
            for _ in range(self.n_disc_steps):
                with torch.no_grad():
                    x = gen.sample(self.batch, g)
                loss = 0.0
                for k, d in discs.items():
                    e = exp[k][torch.randint(len(exp[k]), (self.batch,), generator=g)]
                    o = torch.cat([e, self.observables[k](x)])
                    y = torch.cat([ones, zeros])
                    if self.shuffle_labels:
                        y = y[torch.randperm(len(y), generator=g)]
                    loss = loss + bce(d(o), y)
                d_opt.zero_grad()
                loss.backward()
                d_opt.step()
            x, logq = gen.rsample_and_log_prob(self.batch, g)
            reward = sum(d(self.observables[k](x)) for k, d in discs.items())
            kl = (logq - self.base.log_prob(x)).mean()
            g_loss = -reward.mean() + self.beta * kl
            g_opt.zero_grad()
            g_loss.backward()
            g_opt.step()
        self.discriminators = discs
        return gen


class MomentMatching(ADA):
    r"""Baseline: fine-tune the flow to match the first two moments of every observable (plus :math:`\beta` KL).

    Loss :math:`\sum_i \sum_{m=1,2} ((\mathbb E_\theta[\tilde o_i^m] - \mathbb E_{exp}[\tilde o_i^m]))^2
    + \beta\,\mathrm{KL}(\mu_\theta\|\mu_{base})`, observables standardised by the experimental samples.
    """

    def fit(self, exp_data: Mapping[str, np.ndarray], steps: int = 500, seed: int = 0) -> RealNVP:
        if steps < 0:
            raise ValueError(f"steps must be >= 0; got {steps}")
        exp = _obs_values(self.observables, exp_data, self.base.dim)
        torch.manual_seed(seed)
        g = torch.Generator().manual_seed(seed)
        gen = copy.deepcopy(self.base)
        for p in self.base.parameters():
            p.requires_grad_(False)
        for p in gen.parameters():
            p.requires_grad_(True)
        stats = {k: (v.mean(), v.std()) for k, v in exp.items()}
        target = {}
        for k, v in exp.items():
            m, s = stats[k]
            target[k] = torch.stack([((v - m) / s).mean(), (((v - m) / s) ** 2).mean()])
        opt = torch.optim.Adam(gen.parameters(), lr=self.lr)
        for _ in range(steps):
            x, logq = gen.rsample_and_log_prob(self.batch, g)
            loss = self.beta * (logq - self.base.log_prob(x)).mean()
            for k, f in self.observables.items():
                m, s = stats[k]
                o = (f(x) - m) / s
                loss = loss + ((torch.stack([o.mean(), (o**2).mean()]) - target[k]) ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return gen


def maxent_reweight(features: np.ndarray, targets: np.ndarray, ridge: float = 0.0, iters: int = 200) -> np.ndarray:
    r"""MaxEnt reweighting of base samples to match feature means: :math:`w_j \propto e^{\lambda\cdot\phi(x_j)}`.

    :math:`\lambda` minimises the convex dual :math:`\log\sum_j e^{\lambda\cdot\phi_j} - \lambda\cdot\bar\phi
    + \tfrac{ridge}{2}\|\lambda\|^2` (Newton's method on standardised features). Returns normalised weights.
    With ``targets`` equal to the sample means the weights are uniform (the base model).
    """
    F = np.asarray(features, float)
    t = np.asarray(targets, float)
    if F.ndim != 2 or t.shape != (F.shape[1],):
        raise ValueError(f"features (n, k) and targets (k,) expected; got {F.shape} and {t.shape}")
    if ridge < 0:
        raise ValueError(f"ridge must be >= 0; got {ridge}")
    mu, sd = F.mean(0), F.std(0) + 1e-12
    Z, tz = (F - mu) / sd, (t - mu) / sd
    lam = np.zeros(F.shape[1])
    for _ in range(iters):
        a = Z @ lam
        w = np.exp(a - a.max())
        w /= w.sum()
        m = w @ Z
        grad = m - tz + ridge * lam
        H = (Z * w[:, None]).T @ Z - np.outer(m, m) + (ridge + 1e-10) * np.eye(len(lam))
        step = np.linalg.solve(H, grad)
        lam = lam - step
        if np.abs(step).max() < 1e-10:
            break
    a = Z @ lam
    w = np.exp(a - a.max())
    return w / w.sum()
