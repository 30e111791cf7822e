r"""SARA: the SVD rank of a denoiser's linear layers as an inference-time control, per step and block.

- :class:`SVDLinear`: a linear layer :math:`W = U\Sigma V^\top` that runs at rank :math:`r` as
  :math:`y = (U_r\Sigma_r)(V_r^\top x) + b` (``r`` MACs per input and output feature, :math:`r(d_{in} +
  d_{out})` per token) or dense (:math:`d_{in} d_{out}`); :meth:`SVDLinear.set_rank` changes ``r`` at any
  time, so the rank is a control variable, not a compression of the checkpoint.
- :class:`DigitDenoiser`: a small residual-MLP :math:`\epsilon`-prediction denoiser (sinusoidal time
  embedding, ``n_blocks`` pre-norm MLP blocks; the two linears of each block are the *targets*);
  :func:`apply_sara` turns the targets into :class:`SVDLinear`.
- :func:`ddim_sample`: deterministic DDIM (:math:`\eta = 0`) with a rank schedule ``(steps, blocks)``, a
  per-step controller, or step caching (reuse the previous :math:`\epsilon`); it counts the MACs spent.
- **LRAE** (:func:`lrae_table`): the low-rank approximation error of block :math:`b` at rank :math:`r` and
  step :math:`t`, :math:`\mathrm{LRAE}(t,b,r) = \sum\|\epsilon(x_t) - \epsilon^{b\leftarrow r}(x_t)\|^2 /
  \sum\|\epsilon(x_t)\|^2` over warm-up noises, on the full-rank trajectory (only block :math:`b`
  truncated).
- **SARA-DP** (:func:`sara_dp`): assuming the errors add over :math:`(t, b)`, the multiple-choice knapsack
  :math:`\min \sum_{t,b} \mathrm{LRAE}(t,b,r_{t,b})` s.t. :math:`\sum_{t,b}\mathrm{MACs}(r_{t,b}) \le B`,
  solved exactly by dynamic programming over MACs discretised upwards (so the true budget always holds).
- **SARA-Online** (:class:`SaraOnline`): from the previous step's output, read as a matrix (each sample's
  :math:`8\times 8` image, or the batch as samples x pixels), the Eckart-Young tail energy
  :math:`\mathrm{LRAE}(\rho) = \sum_{i>\rho n} s_i^2 / \sum_i s_i^2`; the step's rank fraction is the least
  :math:`\rho` with :math:`\mathrm{LRAE}(\rho) \le \tau` (linear between whole ranks), scaled to each
  target's full rank. No calibration
  data, no lookahead; the first step runs at full rank.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from geode.compression._checks import check_bias, check_input
from geode.core.validation import check_array, check_int, check_real, check_tensor

__all__ = [
    "DigitDenoiser",
    "SVDLinear",
    "SaraOnline",
    "apply_sara",
    "ddim_sample",
    "ddpm_alphas",
    "lrae_table",
    "sara_dp",
    "set_block_ranks",
]


class SVDLinear(nn.Module):
    r"""A linear layer runnable at any rank: dense, or :math:`(U_r\Sigma_r)(V_r^\top x) + b`.

    Build it with :meth:`from_linear`. ``rank=None`` (default) is the dense layer; a rank of at least
    :math:`\min(d_{in}, d_{out})` is dense as well (the exact layer costs less than the factors).
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
        super().__init__()
        check_tensor("weight", weight, ndim=2, floating=True)  # finite before the SVD
        check_bias(bias, weight.shape[0])
        w = weight.detach()
        u, s, vh = torch.linalg.svd(w.double(), full_matrices=False)
        self.register_buffer("weight", w.clone())
        self.register_buffer("bias", None if bias is None else bias.detach().clone())
        self.register_buffer("us", (u * s).to(w.dtype))
        self.register_buffer("vh", vh.to(w.dtype))
        self.register_buffer("singular_values", s.to(w.dtype))
        self.rank: int | None = None

    @classmethod
    def from_linear(cls, linear: nn.Linear) -> SVDLinear:
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"linear must be an nn.Linear; got {type(linear).__name__}")
        return cls(linear.weight, linear.bias)

    @property
    def in_features(self) -> int:
        return int(self.weight.shape[1])

    @property
    def out_features(self) -> int:
        return int(self.weight.shape[0])

    @property
    def full_rank(self) -> int:
        return min(self.in_features, self.out_features)

    def set_rank(self, rank: int | None) -> None:
        """Run at ``rank`` (1 .. full rank) from now on; ``None`` or the full rank: dense."""
        if rank is None:
            self.rank = None
            return
        r = check_int("rank", rank, low=1)
        if r > self.full_rank:
            raise ValueError(f"rank ({r}) is above the layer's dimension min{tuple(self.weight.shape)}")
        self.rank = None if r == self.full_rank else r

    def macs(self, rank: int | None = None) -> int:
        """Multiply-accumulates per token at ``rank`` (default: the current one)."""
        r = self.rank if rank is None else rank
        if r is None or r >= self.full_rank:
            return self.in_features * self.out_features
        return int(r) * (self.in_features + self.out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The dense or rank-``rank`` layer; ``x`` is checked for shape only (NaN propagates like torch's)."""
        check_input("x", x, self.in_features)
        if self.rank is None:
            return F.linear(x, self.weight, self.bias)
        y = (x @ self.vh[: self.rank].T) @ self.us[:, : self.rank].T
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, rank={self.rank or 'full'}"


def _timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    a = t.float().unsqueeze(-1) * freqs
    return torch.cat([a.sin(), a.cos()], -1)


class _Block(nn.Module):
    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, hidden)
        self.fc2 = nn.Linear(hidden, width)

    def forward(self, h: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        return h + self.fc2(F.gelu(self.fc1(self.ln(h + emb))))


class DigitDenoiser(nn.Module):
    r"""A residual-MLP :math:`\epsilon`-prediction denoiser for flattened images (8x8 digits: ``dim=64``).

    :math:`h_0 = W_{in}x + e(t)`, :math:`h_{b+1} = h_b + W_2^{(b)}\,\mathrm{gelu}(W_1^{(b)}\,
    \mathrm{LN}(h_b + e(t)))`, :math:`\epsilon = W_{out}\,\mathrm{LN}(h)`, with :math:`e(t)` an MLP of a
    sinusoidal embedding. The ``2 n_blocks`` block linears are SARA's targets.
    """

    def __init__(self, dim: int = 64, width: int = 256, hidden: int = 512, n_blocks: int = 4, seed: int = 0) -> None:
        super().__init__()
        self.dim = check_int("dim", dim, low=1)
        self.width = check_int("width", width, low=2)
        check_int("hidden", hidden, low=1)
        check_int("n_blocks", n_blocks, low=1)
        with torch.random.fork_rng():
            torch.manual_seed(int(seed))
            self.inp = nn.Linear(dim, width)
            self.t1 = nn.Linear(64, width)
            self.t2 = nn.Linear(width, width)
            self.blocks = nn.ModuleList([_Block(width, hidden) for _ in range(n_blocks)])
            self.ln = nn.LayerNorm(width)
            self.out = nn.Linear(width, dim)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """The predicted noise of ``x`` ``(n, dim)`` at diffusion times ``t`` ``(n,)``.

        Shapes and types are checked, values are not (this runs at every sampling step): NaN propagates like
        torch's own layers, and an empty batch gives an empty output.
        """
        check_input("x", x, self.dim)
        check_tensor("t", t, finite=False, nonempty=False)
        if tuple(t.shape) != tuple(x.shape[:-1]):
            raise ValueError(f"t must hold one time per sample, shape {tuple(x.shape[:-1])}; got {tuple(t.shape)}")
        emb = self.t2(F.silu(self.t1(_timestep_embedding(t, 64))))
        h = self.inp(x) + emb
        for blk in self.blocks:
            h = blk(h, emb)
        return self.out(self.ln(h))

    def targets(self) -> list[list[nn.Module]]:
        """Per block, its two target linears."""
        return [[b.fc1, b.fc2] for b in self.blocks]

    def macs(self) -> int:
        """Multiply-accumulates per sample of one evaluation at the current ranks."""
        fixed = sum(m.in_features * m.out_features for m in (self.inp, self.t1, self.t2, self.out))
        return fixed + sum(_macs(m) for pair in self.targets() for m in pair)


def _macs(m: nn.Module) -> int:
    return m.macs() if isinstance(m, SVDLinear) else m.in_features * m.out_features


def apply_sara(model: DigitDenoiser) -> DigitDenoiser:
    """Replace the target linears of ``model`` (in place) by :class:`SVDLinear` at full rank; returns it."""
    for blk in model.blocks:
        for name in ("fc1", "fc2"):
            lin = getattr(blk, name)
            if isinstance(lin, nn.Linear):
                setattr(blk, name, SVDLinear.from_linear(lin))
    return model


def set_block_ranks(model: DigitDenoiser, ranks: Sequence[int | None]) -> None:
    """Set every target of block ``b`` to ``ranks[b]`` (``None``: dense). Needs :func:`apply_sara` first."""
    if len(ranks) != len(model.blocks):
        raise ValueError(f"ranks must give one rank per block ({len(model.blocks)}); got {len(ranks)}")
    for pair, r in zip(model.targets(), ranks, strict=True):
        for m in pair:
            if not isinstance(m, SVDLinear):
                raise TypeError("set_block_ranks needs SVDLinear targets: call apply_sara(model) first")
            m.set_rank(None if r is None else min(int(r), m.full_rank))


def ddpm_alphas(n_train_steps: int = 1000, beta_start: float = 1e-4, beta_end: float = 0.02) -> torch.Tensor:
    r""":math:`\bar\alpha_t = \prod_{s \le t}(1 - \beta_s)` of the linear DDPM schedule."""
    n = check_int("n_train_steps", n_train_steps, low=1)
    check_real("beta_start", beta_start, low=0.0, high=1.0, high_inclusive=False)
    check_real("beta_end", beta_end, low=0.0, high=1.0, high_inclusive=False)
    return torch.cumprod(1.0 - torch.linspace(beta_start, beta_end, n, dtype=torch.float64), 0)


def _ddim_times(n_train_steps: int, steps: int) -> list[int]:
    return [int(round(x)) for x in np.linspace(n_train_steps - 1, 0, steps)]


def _check_noise(model: Any, noise: Any) -> None:
    check_tensor("noise", noise, ndim=2, floating=True)
    dim = getattr(model, "dim", noise.shape[1])
    if noise.shape[1] != dim:
        raise ValueError(f"noise must have shape (n, {dim}) for this model; got {tuple(noise.shape)}")


@torch.no_grad()
def ddim_sample(
    model: DigitDenoiser,
    noise: torch.Tensor,
    *,
    steps: int = 25,
    alphas: torch.Tensor | None = None,
    schedule: Sequence[Sequence[int | None]] | None = None,
    controller: Callable[[int, torch.Tensor | None], Sequence[int | None]] | None = None,
    cache_steps: Sequence[int] = (),
    record: list[torch.Tensor] | None = None,
) -> tuple[torch.Tensor, float]:
    r"""Deterministic DDIM from ``noise`` ``(n, dim)``; returns ``(x_0, MACs per sample)``.

    Parameters
    ----------
    schedule : (steps, blocks) ranks, optional
        Fixed rank of every block at every step (SARA-DP, uniform truncation).
    controller : callable, optional
        ``controller(step, previous_eps) -> ranks per block`` (SARA-Online); ``previous_eps`` is None at
        the first step.
    cache_steps : sequence of int
        Steps at which the network is not evaluated and the previous :math:`\epsilon` is reused.
    record : list, optional
        Receives :math:`x_t` of every step (the trajectory).
    """
    steps = check_int("steps", steps, low=1)
    _check_noise(model, noise)
    if schedule is not None and controller is not None:
        raise ValueError("give schedule or controller, not both")
    if schedule is not None and len(schedule) != steps:
        raise ValueError(f"schedule must have one row per step ({steps}); got {len(schedule)}")
    ab = ddpm_alphas() if alphas is None else alphas
    times = _ddim_times(len(ab), steps)
    x = noise.clone()
    eps = None
    macs = 0.0
    for i, t in enumerate(times):
        if record is not None:
            record.append(x.clone())
        if i in cache_steps and eps is not None:
            pass
        else:
            if schedule is not None:
                set_block_ranks(model, schedule[i])
            elif controller is not None:
                set_block_ranks(model, controller(i, eps))
            eps = model(x, torch.full((x.shape[0],), t))
            macs += model.macs()
        a = float(ab[t])
        a_prev = float(ab[times[i + 1]]) if i + 1 < len(times) else 1.0
        x0 = (x - math.sqrt(1 - a) * eps) / math.sqrt(a)
        x = math.sqrt(a_prev) * x0 + math.sqrt(1 - a_prev) * eps
    if schedule is not None or controller is not None:
        set_block_ranks(model, [None] * len(model.blocks))
    return x, macs


@torch.no_grad()
def lrae_table(
    model: DigitDenoiser,
    noise: torch.Tensor,
    menu: Sequence[int | None],
    *,
    steps: int = 25,
    alphas: Any = None,
    measure: str = "output",
) -> torch.Tensor:
    """LRAE ``(steps, blocks, len(menu))`` of truncating one block at one step on the full-rank trajectory.

    ``measure="output"`` (the paper's LRAE): relative squared error of that step's denoiser output.
    ``measure="sample"`` (an alternative reading, for reports): relative squared error of the final sample
    when only that (step, block) is truncated and every other evaluation runs at full rank, so the error's
    propagation along the trajectory is included.
    """
    if measure not in ("output", "sample"):
        raise ValueError(f"measure must be 'output' or 'sample'; got {measure!r}")
    _check_noise(model, noise)
    if len(menu) == 0:
        raise ValueError("menu must list at least one rank (None: full rank)")
    ab = ddpm_alphas() if alphas is None else alphas
    traj: list[torch.Tensor] = []
    x0_ref, _ = ddim_sample(model, noise, steps=steps, alphas=ab, record=traj)
    times = _ddim_times(len(ab), steps)
    nb = len(model.blocks)
    out = torch.zeros(steps, nb, len(menu), dtype=torch.float64)
    full = [None] * nb
    n = noise.shape[0]
    for i, (x, t) in enumerate(zip(traj, times, strict=True)):
        tt = torch.full((x.shape[0],), t)
        set_block_ranks(model, full)
        ref = model(x, tt)
        den = float(ref.pow(2).sum())
        variants = []
        for b in range(nb):
            for j, r in enumerate(menu):
                ranks = list(full)
                ranks[b] = r
                set_block_ranks(model, ranks)
                e = model(x, tt)
                out[i, b, j] = float((e - ref).pow(2).sum()) / den
                variants.append(e)
        set_block_ranks(model, full)
        if measure == "sample":
            eps = torch.cat(variants)
            xs = x.repeat(len(variants), 1)
            for k in range(i, steps):
                if k > i:
                    eps = model(xs, torch.full((xs.shape[0],), times[k]))
                a = float(ab[times[k]])
                a_prev = float(ab[times[k + 1]]) if k + 1 < steps else 1.0
                x0 = (xs - math.sqrt(1 - a) * eps) / math.sqrt(a)
                xs = math.sqrt(a_prev) * x0 + math.sqrt(1 - a_prev) * eps
            err = (xs - x0_ref.repeat(len(variants), 1)).pow(2).reshape(len(variants), n, -1).sum((1, 2))
            out[i] = (err / x0_ref.pow(2).sum()).reshape(nb, len(menu)).double()
    set_block_ranks(model, full)
    return out


def sara_dp(errors: Any, costs: Any, budget: float, *, resolution: int = 2000) -> np.ndarray:
    r"""Exact multiple-choice knapsack: one option per item minimising the summed error under a cost budget.

    Parameters
    ----------
    errors : array (items..., options)
        Error of each option of each item (LRAE of each rank of each (step, block)).
    costs : array (options,) or (items..., options)
        Non-negative cost of each option (MACs).
    budget : float
        Total cost allowed.
    resolution : int
        Cost units the budget is divided into; costs are rounded *up* to whole units, so the chosen
        options always fit the true budget (the solution is exact for the rounded costs).

    Returns
    -------
    numpy.ndarray of int, shape (items...)
        The chosen option of every item.
    """
    err = check_array("errors", errors)
    if err.ndim < 1 or err.size == 0:
        raise ValueError(f"errors must be a non-empty array (items..., options); got shape {err.shape}")
    shape = err.shape[:-1]
    n_opt = err.shape[-1]
    err = err.reshape(-1, n_opt)
    c_arr = check_array("costs", costs)
    try:
        cost = np.broadcast_to(c_arr, shape + (n_opt,)).reshape(-1, n_opt)
    except ValueError:
        raise ValueError(
            f"costs must have shape (options,) = ({n_opt},) or the shape of errors {shape + (n_opt,)}; "
            f"got {c_arr.shape}"
        ) from None
    if (cost < 0).any() or not np.isfinite(err).all():
        raise ValueError("costs must be >= 0 and errors finite")
    budget = check_real("budget", budget, low=0.0)
    resolution = check_int("resolution", resolution, low=1)
    unit = budget / resolution if budget > 0 else 1.0
    c = np.ceil(cost / unit - 1e-9).astype(np.int64)
    cap = resolution
    if c.min(1).sum() > cap:
        raise ValueError(f"budget ({budget:g}) is below the cheapest choice of every item ({cost.min(1).sum():g})")
    inf = np.inf
    dp = np.full(cap + 1, inf)
    dp[0] = 0.0
    choice = np.zeros((err.shape[0], cap + 1), dtype=np.int16)
    for k in range(err.shape[0]):
        new = np.full(cap + 1, inf)
        arg = np.zeros(cap + 1, dtype=np.int16)
        for j in range(n_opt):
            cj = c[k, j]
            if cj > cap:
                continue
            cand = np.full(cap + 1, inf)
            cand[cj:] = dp[: cap + 1 - cj] + err[k, j]
            better = cand < new
            new[better] = cand[better]
            arg[better] = j
        dp = new
        choice[k] = arg
    spent = int(np.argmin(dp))
    picks = np.zeros(err.shape[0], dtype=np.int64)
    for k in range(err.shape[0] - 1, -1, -1):
        j = int(choice[k, spent])
        picks[k] = j
        spent -= int(c[k, j])
    return picks.reshape(shape)


class SaraOnline:
    r"""SARA-Online controller: per-step rank fraction from the spectrum of the previous step's output.

    Parameters
    ----------
    tau : float
        Tail-energy tolerance in [0, 1): the step's rank fraction is the least :math:`\rho` with
        :math:`\sum_{i > \rho n} s_i^2 \le \tau \sum_i s_i^2`.
    full_ranks : sequence of int
        Each block's full rank (the fraction is scaled to it and rounded up).
    image_shape : (int, int)
        How one sample's output is read as a matrix (``"sample"`` reading).
    reading : {"sample", "batch"}
        ``"sample"``: each sample's output as an ``image_shape`` matrix, tail energies averaged over the
        batch; ``"batch"``: the batch's outputs as one samples x features matrix.
    """

    def __init__(
        self,
        tau: float,
        full_ranks: Sequence[int],
        *,
        image_shape: tuple[int, int] = (8, 8),
        reading: str = "sample",
    ) -> None:
        self.tau = check_real("tau", tau, low=0.0, high=1.0, high_inclusive=False)
        if reading not in ("sample", "batch"):
            raise ValueError(f"reading must be 'sample' or 'batch'; got {reading!r}")
        self.full_ranks = [check_int("full_ranks", r, low=1) for r in full_ranks]
        if not self.full_ranks:
            raise ValueError("full_ranks must list the full rank of at least one block")
        if not isinstance(image_shape, (tuple, list)) or len(image_shape) != 2:
            raise ValueError(f"image_shape must be a pair of positive integers; got {image_shape!r}")
        for v in image_shape:
            check_int("image_shape", v, low=1)
        self.image_shape = tuple(image_shape)
        self.reading = reading
        self.fractions: list[float] = []

    def fraction(self, eps: torch.Tensor) -> float:
        """The rank fraction :math:`\\rho` the output ``eps`` ``(n, dim)`` asks for.

        The batch-mean tail energy :math:`T(r)` is known at whole ranks ``r = 0 .. n`` (``T(0) = 1``,
        ``T(n) = 0``); :math:`\\rho = r^*/n` with :math:`r^*` the least real rank at which the piecewise-linear
        interpolation of ``T`` reaches ``tau`` (so the fraction varies continuously with ``tau``).
        """
        check_tensor("eps", eps, ndim=2, floating=True)  # finite before the SVD
        if self.reading == "sample" and eps.shape[1] != math.prod(self.image_shape):
            raise ValueError(
                f"eps must have shape (n, {math.prod(self.image_shape)}) for image_shape={self.image_shape}; "
                f"got {tuple(eps.shape)}"
            )
        if self.reading == "sample":
            s2 = torch.linalg.svdvals(eps.double().reshape(-1, *self.image_shape)).pow(2)
        else:
            s2 = torch.linalg.svdvals(eps.double()).pow(2).unsqueeze(0)
        tail = 1.0 - torch.cumsum(s2, -1) / s2.sum(-1, keepdim=True).clamp_min(1e-300)
        tail = torch.cat([torch.ones(1, dtype=tail.dtype), tail.mean(0).clamp_min(0.0)])  # T(0) .. T(n)
        n = s2.shape[-1]
        ok = (tail <= self.tau + 1e-12).nonzero()
        r = int(ok[0]) if ok.numel() else n
        if r == 0:
            return 0.0
        hi, lo = float(tail[r - 1]), float(tail[r])  # T(r-1) > tau >= T(r)
        r_star = (r - 1) + (hi - self.tau) / max(hi - lo, 1e-300)
        return min(1.0, r_star / n)

    def __call__(self, step: int, eps: torch.Tensor | None) -> list[int | None]:
        rho = 1.0 if eps is None else self.fraction(eps)
        self.fractions.append(rho)
        return [None if rho >= 1.0 else max(1, math.ceil(rho * k - 1e-9)) for k in self.full_ranks]
