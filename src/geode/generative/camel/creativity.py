r"""CAMEL components: a frozen class-conditional DDPM creator, an autoencoder appraiser, the bilevel loop.

The Creator is a frozen diffusion model; its only free variable is an offset :math:`\delta` on the prompt's
class embedding, :math:`e_c + \delta`. Samples come from a short deterministic DDIM (differentiable in
:math:`\delta`). The Appraiser is an autoencoder with parameters :math:`\phi`, pre-trained on the data. On a
batch generated from :math:`\delta`, split into support :math:`S` and query :math:`Q`, the Appraiser adapts for
:math:`K` SGD steps, :math:`\phi_{k+1} = \phi_k - \eta\nabla_\phi L(S;\phi_k)`, and the reward is its improvement

.. math:: R(\delta) = L(Q;\phi) - L(Q;\phi_K),

"unfamiliar at first, quickly learnable". The Creator ascends :math:`R(\delta) - \lambda\,\mathrm{CE}(c\mid x)`
through the inner loop (``create_graph=True``), with CE the cross-entropy of the prompt class under a fixed
observer (a linear softmax classifier).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import torch
from torch import nn

from geode.core.validation import check_array, check_real

__all__ = ["CAMEL", "Autoencoder", "ConditionalDDPM", "appraiser_reward", "fit_autoencoder"]


def _check_pos(name: str, v: float, integer: bool = False) -> None:
    if integer and (not isinstance(v, (int, np.integer)) or isinstance(v, bool)):
        raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    if not integer:
        check_real(name, v, low=0.0, low_inclusive=False)
    elif not v > 0:
        raise ValueError(f"{name} must be > 0, got {v}")


class ConditionalDDPM(nn.Module):
    r"""Class-conditional DDPM with an MLP noise predictor :math:`\epsilon_\theta(x_t, t, e_c)`.

    Forward process :math:`x_t = \sqrt{\bar\alpha_t}x_0 + \sqrt{1-\bar\alpha_t}\epsilon`, linear
    :math:`\beta_t \in [10^{-4}, 0.02]`, trained on :math:`\|\epsilon - \epsilon_\theta\|^2` (Ho et al., 2020).

    Parameters
    ----------
    dim : int
        Data dimension (64 for 8x8 digits).
    n_classes : int
        Number of prompt classes; each has a learned embedding :math:`e_c` of size ``emb``.
    T : int
        Diffusion steps.
    hidden, emb : int
        MLP width and embedding size.
    """

    def __init__(self, dim: int, n_classes: int, T: int = 100, hidden: int = 256, emb: int = 16) -> None:
        super().__init__()
        for n, v in (("dim", dim), ("n_classes", n_classes), ("T", T), ("hidden", hidden), ("emb", emb)):
            _check_pos(n, v, integer=True)
        self.dim, self.n_classes, self.T = dim, n_classes, T
        self.embed = nn.Embedding(n_classes, emb)
        self.net = nn.Sequential(
            nn.Linear(dim + emb + 16, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, dim)
        )
        betas = torch.linspace(1e-4, 0.02, T)
        self.register_buffer("abar", torch.cumprod(1 - betas, 0))

    def _tfeat(self, t: torch.Tensor) -> torch.Tensor:
        f = torch.exp(torch.linspace(0, math.log(1000.0), 8))
        a = t.float()[:, None] / self.T * f[None]
        return torch.cat([torch.sin(a), torch.cos(a)], 1)

    def eps(self, x: torch.Tensor, t: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        """Predicted noise for states ``x`` at integer steps ``t`` under embeddings ``e`` (n, emb)."""
        return self.net(torch.cat([x, e, self._tfeat(t)], 1))

    def fit(self, x: np.ndarray, y: np.ndarray, steps: int = 2000, batch: int = 256, lr: float = 2e-3, seed: int = 0):
        """Train on data ``x`` (n, dim) in [-1, 1] with integer labels ``y``; returns self (then frozen)."""
        _check_pos("steps", steps, integer=True)
        _check_pos("batch", batch, integer=True)
        _check_pos("lr", lr)
        if check_array("x", x).ndim != 2 or len(x) == 0:
            raise ValueError(f"x must have shape (n >= 1, {self.dim}), got {np.shape(x)}")
        x = np.asarray(x, dtype=np.float32)
        y = np.asarray(y)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must have shape (n, {self.dim}), got {x.shape}")
        if y.shape != (len(x),) or y.min() < 0 or y.max() >= self.n_classes:
            raise ValueError(f"y must be {len(x)} labels in [0, {self.n_classes}), got shape {y.shape}")
        g = torch.Generator().manual_seed(seed)
        X, Y = torch.as_tensor(x), torch.as_tensor(y, dtype=torch.long)
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
        for _ in range(steps):
            i = torch.randint(len(X), (batch,), generator=g)
            t = torch.randint(self.T, (batch,), generator=g)
            n = torch.randn(batch, self.dim, generator=g)
            ab = self.abar[t][:, None]
            xt = ab.sqrt() * X[i] + (1 - ab).sqrt() * n
            loss = ((self.eps(xt, t, self.embed(Y[i])) - n) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        for p in self.parameters():
            p.requires_grad_(False)
        return self

    def sample(self, label: int, noise: torch.Tensor, offset: torch.Tensor | None = None, steps: int = 10):
        r"""Deterministic DDIM (:math:`\eta=0`) from ``noise`` (n, dim) under embedding :math:`e_c+\delta`.

        Differentiable in ``offset`` and ``noise``. Outputs are clamped to [-1, 1] (the data range). The sampler
        runs at every CAMEL step: it checks types and shapes only, so NaN in ``noise`` or ``offset`` propagates
        like torch's own layers, and an empty ``noise`` (0, dim) gives an empty output.
        """
        if not 0 <= int(label) < self.n_classes:
            raise ValueError(f"label must be in [0, {self.n_classes}), got {label}")
        _check_pos("steps", steps, integer=True)
        if not isinstance(noise, torch.Tensor):
            raise TypeError(f"noise must be a tensor (n, {self.dim}); got {type(noise).__name__}")
        if offset is not None and not isinstance(offset, torch.Tensor):
            raise TypeError(f"offset must be a tensor (or None); got {type(offset).__name__}")
        if noise.ndim != 2 or noise.shape[1] != self.dim:
            raise ValueError(f"noise must have shape (n, {self.dim}), got {tuple(noise.shape)}")
        e = self.embed.weight[int(label)]
        if offset is not None:
            if offset.shape != e.shape:
                raise ValueError(f"offset must have shape {tuple(e.shape)}, got {tuple(offset.shape)}")
            e = e + offset
        e = e.expand(len(noise), -1)
        ts = torch.linspace(self.T - 1, 0, steps).round().long()
        x = noise
        for j, t in enumerate(ts):
            ab = self.abar[t]
            tt = t.repeat(len(x))
            ep = self.eps(x, tt, e)
            x0 = ((x - (1 - ab).sqrt() * ep) / ab.sqrt()).clamp(-1, 1)
            ab_next = self.abar[ts[j + 1]] if j + 1 < len(ts) else torch.tensor(1.0)
            x = ab_next.sqrt() * x0 + (1 - ab_next).sqrt() * ep
        return x.clamp(-1, 1)


class Autoencoder(nn.Module):
    """MLP autoencoder ``dim -> hidden -> code -> hidden -> dim`` (the Appraiser); loss = mean squared error.

    Its forward runs in CAMEL's inner loop: it checks the type and shape only; NaN propagates like torch's own
    layers, and an empty batch gives an empty output.
    """

    def __init__(self, dim: int, code: int = 8, hidden: int = 64) -> None:
        super().__init__()
        for n, v in (("dim", dim), ("code", code), ("hidden", hidden)):
            _check_pos(n, v, integer=True)
        self.net = nn.Sequential(
            nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, code), nn.Tanh(), nn.Linear(code, hidden),
            nn.Tanh(), nn.Linear(hidden, dim),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dim = self.net[0].in_features
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a tensor (n, {dim}); got {type(x).__name__}")
        if x.ndim != 2 or x.shape[1] != dim:
            raise ValueError(f"x must have shape (n, {dim}); got {tuple(x.shape)}")
        return self.net(x)


def fit_autoencoder(ae: Autoencoder, x: np.ndarray, steps: int = 1000, lr: float = 3e-3, seed: int = 0):
    """Pre-train the Appraiser on data ``x`` (the familiar concepts); returns ``ae``."""
    _check_pos("steps", steps, integer=True)
    _check_pos("lr", lr)
    xa = check_array("x", x, ndim=2)
    dim = ae.net[0].in_features if isinstance(ae, Autoencoder) else xa.shape[1]
    if len(xa) == 0 or xa.shape[1] != dim:
        raise ValueError(f"x must have shape (n >= 1, {dim}); got {xa.shape}")
    X = torch.as_tensor(np.asarray(x, dtype=np.float32))
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(ae.parameters(), lr=lr)
    for _ in range(steps):
        i = torch.randint(len(X), (min(256, len(X)),), generator=g)
        loss = ((ae(X[i]) - X[i]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return ae


def appraiser_reward(
    ae: nn.Module, support: torch.Tensor, query: torch.Tensor, inner_steps: int = 3, inner_lr: float = 0.5,
    create_graph: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    r"""Return ``(R, L0)``: the Appraiser's improvement :math:`L(Q;\phi)-L(Q;\phi_K)` and the initial loss.

    :math:`K` = ``inner_steps`` SGD steps of size ``inner_lr`` on the support set, run functionally
    (:func:`torch.func.functional_call`), so gradients flow from ``R`` back to the samples.
    ``inner_steps=0`` gives ``R = 0`` exactly. ``support`` and ``query`` must be non-empty ``(n, dim)`` tensors; as
    the reward runs at every CAMEL step, their values are not scanned: NaN propagates to ``R`` like torch's own
    layers.
    """
    if inner_steps < 0:
        raise ValueError(f"inner_steps must be >= 0, got {inner_steps}")
    _check_pos("inner_lr", inner_lr)
    for name, v in (("support", support), ("query", query)):
        if not isinstance(v, torch.Tensor):
            raise TypeError(f"{name} must be a tensor (n, dim); got {type(v).__name__}")
        if v.ndim != 2 or len(v) == 0 or v.shape[1] != support.shape[-1]:
            raise ValueError(f"{name} must have shape (n >= 1, dim) like support; got {tuple(v.shape)}")
    params = {k: v.detach().requires_grad_(True) for k, v in ae.named_parameters()}

    def loss(p: dict, x: torch.Tensor) -> torch.Tensor:
        return ((torch.func.functional_call(ae, p, (x,)) - x) ** 2).mean()

    l0 = loss(params, query)
    p = params
    for _ in range(inner_steps):
        gr = torch.autograd.grad(loss(p, support), list(p.values()), create_graph=create_graph)
        p = {k: v - inner_lr * g for (k, v), g in zip(p.items(), gr)}
    return l0 - loss(p, query), l0


class CAMEL:
    r"""Creator-Appraiser meta-learning: optimise the creator offset :math:`\delta` for the Appraiser's reward.

    Objective (ascended with Adam, fresh noise each outer step; support/query = halves of the batch):

    .. math:: J(\delta) = R(\delta) - \lambda\,\mathrm{CE}\big(c \mid x(\delta)\big), \qquad
              \text{novelty-only: } R \to L(Q;\phi) \text{ (the initial loss)}.

    Parameters
    ----------
    creator : ConditionalDDPM
        Frozen creator.
    appraiser : nn.Module
        Pre-trained autoencoder (reset to its pre-trained weights for every reward; never updated).
    observer : tuple of (W, b) arrays, optional
        Linear softmax classifier ``softmax(x W^T + b)`` for the recognisability term; required if ``recog > 0``.
    inner_steps, inner_lr : int, float
        :math:`K` and :math:`\eta` of the inner loop.
    recog : float
        :math:`\lambda \ge 0`.
    objective : {"camel", "novelty"}
        ``"novelty"`` is the ablation that maximises the initial loss instead of the improvement.

    Notes
    -----
    Inferred (the paper's code is not public): the creator variable is an offset on the class embedding only
    (noise is resampled, so :math:`\delta` must work for any noise); the DDIM has 10 steps; the inner loop is
    plain SGD; the recognisability term is a CE penalty rather than a constraint.
    """

    def __init__(
        self, creator: ConditionalDDPM, appraiser: nn.Module, observer: tuple | None = None, inner_steps: int = 3,
        inner_lr: float = 0.5, recog: float = 1.0, objective: Literal["camel", "novelty"] = "camel",
    ) -> None:  # fmt: skip
        if objective not in ("camel", "novelty"):
            raise ValueError(f"objective must be 'camel' or 'novelty', got {objective!r}")
        recog = check_real("recog", recog, low=0.0)
        if recog > 0 and observer is None:
            raise ValueError("observer is required when recog > 0")
        if inner_steps < 1 and objective == "camel":
            raise ValueError(f"inner_steps must be >= 1 for objective='camel', got {inner_steps}")
        _check_pos("inner_lr", inner_lr)
        self.creator, self.appraiser = creator, appraiser
        self.inner_steps, self.inner_lr, self.recog, self.objective = inner_steps, inner_lr, recog, objective
        self.observer = None
        if observer is not None:
            W, b = observer
            self.observer = (torch.as_tensor(W, dtype=torch.float32), torch.as_tensor(b, dtype=torch.float32))
        self.delta: torch.Tensor | None = None
        self.history: list[float] = []

    def objective_value(self, label: int, x: torch.Tensor) -> torch.Tensor:
        """The creator's objective :math:`J` on a batch ``x`` generated for ``label``."""
        h = len(x) // 2
        if h < 1:
            raise ValueError(f"need at least 2 samples, got {len(x)}")
        r, l0 = appraiser_reward(self.appraiser, x[:h], x[h:], self.inner_steps, self.inner_lr)
        j = r if self.objective == "camel" else l0
        if self.recog > 0:
            W, b = self.observer
            j = j - self.recog * nn.functional.cross_entropy(x @ W.T + b, torch.full((len(x),), int(label)))
        return j

    def optimize(self, label: int, steps: int = 200, batch: int = 32, lr: float = 0.05, seed: int = 0):
        """Ascend :math:`J` over the offset for ``steps`` outer steps; returns self (``delta`` set)."""
        _check_pos("steps", steps, integer=True)
        _check_pos("batch", batch, integer=True)
        _check_pos("lr", lr)
        g = torch.Generator().manual_seed(seed)
        d = torch.zeros(self.creator.embed.weight.shape[1], requires_grad=True)
        opt = torch.optim.Adam([d], lr=lr)
        for _ in range(steps):
            x = self.creator.sample(label, torch.randn(batch, self.creator.dim, generator=g), d)
            j = self.objective_value(label, x)
            opt.zero_grad()
            (-j).backward()
            opt.step()
            self.history.append(float(j.detach()))
        self.delta = d.detach()
        return self

    def sample(self, label: int, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """``n`` samples of the creator at the optimised offset."""
        if self.delta is None:
            raise RuntimeError("call optimize() first")
        with torch.no_grad():
            return self.creator.sample(label, torch.randn(n, self.creator.dim, generator=generator), self.delta)
