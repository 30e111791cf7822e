r"""A tiny DDPM and the UFCOD trajectory features: path energy and dynamics energy of DDIM reversal.

The noise prediction of a diffusion model is a scaled score, :math:`\hat\epsilon_\theta(x_t, t) =
-\sqrt{1 - \bar\alpha_t}\, \nabla_x \log p_t(x_t)`. UFCOD (after DiffPath, Heng et al. 2024) runs the
deterministic DDIM *reversal* :math:`x_0 \to x_T` on ``N`` respaced steps :math:`t_0 = 0 < t_1 < \dots <
t_{N-1}`,

.. math::

    \hat x_0 = \frac{x_{t_i} - \sqrt{1-\bar\alpha_{t_i}}\, \hat\epsilon_i}{\sqrt{\bar\alpha_{t_i}}}, \qquad
    x_{t_{i+1}} = \sqrt{\bar\alpha_{t_{i+1}}}\, \hat x_0 + \sqrt{1 - \bar\alpha_{t_{i+1}}}\, \hat\epsilon_i ,
    \qquad \hat\epsilon_i = \hat\epsilon_\theta(x_{t_i}, t_i),

(with :math:`\bar\alpha` after :math:`t_{N-1}` equal to 0, the end of the path) and records

.. math::

    E_{\text{path}} = \sum_{i, c, h, w} \hat\epsilon_i^2, \qquad
    E_{\text{dyn}} = \sum_{i, c, h, w} \bigl(N (\hat\epsilon_{i+1} - \hat\epsilon_i)\bigr)^2 ,

the integrated score magnitude and the score's roughness along the path (a discrete Sobolev norm).
:func:`trajectory_features` also returns DiffPath's six statistics (sums of
:math:`\hat\epsilon, \hat\epsilon^2, \hat\epsilon^3` and of the scaled differences and their powers).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.core.validation import check_array, check_int, check_real

__all__ = ["TinyUNet", "cosine_alpha_bar", "train_ddpm", "trajectory_features"]


def cosine_alpha_bar(n_steps: int, s: float = 0.008) -> np.ndarray:
    r""":math:`\bar\alpha_t = f(t)/f(0)`, :math:`f(t) = \cos^2(\frac{t/T + s}{1 + s}\frac{\pi}{2})`, t = 1..T,
    clipped so that :math:`\beta_t \le 0.999` (Nichol & Dhariwal, 2021)."""
    n_steps = check_int("n_steps", n_steps, low=1)
    s = check_real("s", s, low=0.0)
    t = np.arange(n_steps + 1) / n_steps
    f = np.cos((t + s) / (1 + s) * math.pi / 2) ** 2
    betas = np.clip(1 - f[1:] / f[:-1], 0, 0.999)
    return np.cumprod(1 - betas)


class _Block(nn.Module):
    """GroupNorm-SiLU-conv residual block with an additive time embedding."""

    def __init__(self, cin: int, cout: int, temb: int) -> None:
        super().__init__()
        self.n1 = nn.GroupNorm(8, cin)
        self.c1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.t = nn.Linear(temb, cout)
        self.n2 = nn.GroupNorm(8, cout)
        self.c2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        h = self.c1(nn.functional.silu(self.n1(x)))
        h = h + self.t(e)[:, :, None, None]
        h = self.c2(nn.functional.silu(self.n2(h)))
        return h + self.skip(x)


class TinyUNet(nn.Module):
    """A two-level U-Net ``eps(x, t)`` for small images (side divisible by 2); ~0.2M parameters at width 32.

    Parameters
    ----------
    channels : int
        Image channels.
    width : int
        Channels of the first level (a multiple of 8; the second level has twice as many).
    seed : int
        Seed of the initialisation.

    Notes
    -----
    ``forward(x, t)`` checks the types and shapes only (it runs at every training step): NaN or infinity in ``x``
    propagates like torch's own layers (``train_ddpm`` and ``trajectory_features`` check the images).
    """

    def __init__(self, channels: int = 1, width: int = 32, seed: int = 0) -> None:
        super().__init__()
        channels = check_int("channels", channels, low=1)
        w = check_int("width", width, low=8)
        if w % 8:
            raise ValueError(f"width must be a multiple of 8 (GroupNorm with 8 groups); got {width}")
        torch.manual_seed(seed)
        temb = 4 * w
        self.channels = channels
        self.width = w
        self.temb = nn.Sequential(nn.Linear(w, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.inp = nn.Conv2d(channels, w, 3, padding=1)
        self.d1 = _Block(w, w, temb)
        self.down = nn.Conv2d(w, 2 * w, 3, stride=2, padding=1)
        self.d2 = _Block(2 * w, 2 * w, temb)
        self.mid = _Block(2 * w, 2 * w, temb)
        self.up = nn.ConvTranspose2d(2 * w, w, 4, stride=2, padding=1)
        self.u1 = _Block(2 * w, w, temb)
        self.out = nn.Sequential(nn.GroupNorm(8, w), nn.SiLU(), nn.Conv2d(w, channels, 3, padding=1))

    def embed(self, t: torch.Tensor) -> torch.Tensor:
        """Sinusoidal embedding of the timestep followed by a two-layer MLP."""
        half = self.width // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
        a = t.float()[:, None] * freqs[None]
        return self.temb(torch.cat([a.sin(), a.cos()], 1))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """The predicted noise of images ``x`` (B, channels, H, W) at integer timesteps ``t`` (B,)."""
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch tensor (B, C, H, W); got {type(x).__name__}")
        if x.ndim != 4 or x.shape[1] != self.channels:
            raise ValueError(f"x must have shape (B, {self.channels}, H, W); got {tuple(x.shape)}")
        if not isinstance(t, torch.Tensor) or t.shape != x.shape[:1]:
            got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"t must be a tensor of one timestep per image of x, shape ({len(x)},); got {got}")
        e = self.embed(t)
        h1 = self.d1(self.inp(x), e)
        h2 = self.mid(self.d2(self.down(h1), e), e)
        return self.out(self.u1(torch.cat([self.up(h2), h1], 1), e))


def _check_images(images: Any) -> None:
    """Images ``(n >= 1, C, H, W)`` of finite numbers, else an error naming ``images``."""
    a = check_array("images", images.detach().cpu().numpy() if isinstance(images, torch.Tensor) else images, ndim=4)
    if a.shape[0] == 0:
        raise ValueError(f"images must hold at least one image; got shape {a.shape}")


def train_ddpm(
    model: Any,
    images: Any,
    *,
    n_steps: int = 1000,
    iters: int = 1000,
    batch_size: int = 128,
    lr: float = 2e-3,
    seed: int = 0,
) -> list[float]:
    r"""Train ``model`` as an :math:`\epsilon`-predictor on images in [-1, 1] (shape (n, C, H, W)).

    The simple DDPM loss :math:`\mathbb{E}\|\epsilon - \hat\epsilon_\theta(\sqrt{\bar\alpha_t} x_0 +
    \sqrt{1-\bar\alpha_t}\epsilon, t)\|^2` with the cosine schedule of ``n_steps`` steps, Adam with a cosine
    learning-rate decay. Returns the loss of every iteration.
    """
    iters = check_int("iters", iters, low=0)
    batch_size = check_int("batch_size", batch_size, low=1)
    lr = check_real("lr", lr, low=0.0, low_inclusive=False)
    _check_images(images)
    x = torch.as_tensor(np.asarray(images), dtype=torch.float32)
    ab = torch.as_tensor(cosine_alpha_bar(n_steps), dtype=torch.float32)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=max(iters, 1), pct_start=0.1)
    model.train()
    losses = []
    for _ in range(iters):
        i = torch.randint(0, len(x), (batch_size,), generator=g)
        t = torch.randint(0, n_steps, (batch_size,), generator=g)
        eps = torch.randn(x[i].shape, generator=g)
        a = ab[t][:, None, None, None]
        loss = ((model(a.sqrt() * x[i] + (1 - a).sqrt() * eps, t) - eps) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


def trajectory_features(
    model: Any, images: Any, *, n_steps: int = 1000, n_ddim: int = 10, batch_size: int = 256, six: bool = False
) -> np.ndarray:
    """``(n, 2)`` [path energy, dynamics energy] of each image (``six``: DiffPath's ``(n, 6)`` statistics).

    Parameters
    ----------
    model : callable ``eps(x, t)``
        The frozen noise predictor (trained on any data set).
    images : array (n, C, H, W) in [-1, 1]
    n_steps : int
        Steps of the model's training schedule (cosine).
    n_ddim : int
        Respaced DDIM steps ``N`` (timesteps ``0, T/N, 2T/N, ...``; the authors' default 10).
    """
    n_ddim = check_int("n_ddim", n_ddim, low=2)
    batch_size = check_int("batch_size", batch_size, low=1)
    _check_images(images)
    x_all = torch.as_tensor(np.asarray(images), dtype=torch.float32)
    ab_full = cosine_alpha_bar(n_steps)
    ts = np.arange(0, n_steps, n_steps // n_ddim)[:n_ddim]
    ab = torch.as_tensor(np.r_[ab_full[ts], 0.0], dtype=torch.float32)
    out = []
    with torch.no_grad():
        for s in range(0, len(x_all), batch_size):
            x = x_all[s : s + batch_size]
            eps_list = []
            for i, t in enumerate(ts):
                e = model(x, torch.full((len(x),), int(t), dtype=torch.long))
                eps_list.append(e)
                x0 = (x - (1 - ab[i]).sqrt() * e) / ab[i].sqrt()
                x = ab[i + 1].sqrt() * x0 + (1 - ab[i + 1]).sqrt() * e
            eps = torch.stack(eps_list, 1).double()  # (B, N, C, H, W)
            d = torch.diff(eps, dim=1) * n_ddim
            dims = (1, 2, 3, 4)
            f = [
                eps.sum(dims),
                (eps**2).sum(dims),
                (eps**3).sum(dims),
                d.sum(dims),
                (d**2).sum(dims),
                (d**3).sum(dims),
            ]
            out.append(torch.stack(f, 1).numpy())
    feats = np.concatenate(out) if out else np.zeros((0, 6))
    return feats if six else feats[:, [1, 4]]
