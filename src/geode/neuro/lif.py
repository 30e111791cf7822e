"""Exact single-spike leaky integrate-and-fire layers in the large-time-constant regime, and an Euler cross-check.

The neuron is the current-based LIF neuron with exponential synapses in the limit of an infinite
membrane time constant (``nLIF``, Mostafa 2017; Göltz et al. 2021; Dold & Petersen 2025). With input
spike times :math:`t_i` and weights :math:`w_i` its membrane potential is

.. math::

    V(t) = \\sum_{i:\\, t_i < t} w_i \\left(1 - e^{-(t - t_i)/\\tau_s}\\right),

and it emits a single spike at the first time :math:`V(t) = \\vartheta`. Between two consecutive input
times :math:`V(t) = W_k - A_k e^{-t/\\tau_s}` with :math:`W_k = \\sum_{m \\le k} w_{(m)}` and
:math:`A_k = \\sum_{m \\le k} w_{(m)} e^{t_{(m)}/\\tau_s}` over the inputs sorted by time, so the spike
time has the closed form (Mostafa 2017)

.. math::

    t^{\\mathrm{out}} = \\tau_s \\ln \\frac{A_{k^*}}{W_{k^*} - \\vartheta},

where :math:`k^*` is the smallest prefix with :math:`W_k > \\vartheta`, :math:`A_k > 0` and
:math:`t_{(k)} \\le t^{\\mathrm{out}} \\le t_{(k+1)}` (:math:`t_{(n+1)} = \\infty`). The inputs
:math:`(1), \\dots, (k^*)` are the neuron's *causal set*. No valid prefix means no spike:
:math:`t^{\\mathrm{out}} = \\infty`.

Inside a fixed causal set the spike time is a log-sum-exp form, smooth in inputs and weights, with

.. math::

    \\frac{\\partial t^{\\mathrm{out}}}{\\partial t_i} = \\frac{w_i\\, e^{(t_i - t^{\\mathrm{out}})/\\tau_s}}
    {W_{k^*} - \\vartheta}, \\qquad
    \\frac{\\partial t^{\\mathrm{out}}}{\\partial w_i} = \\tau_s\\,
    \\frac{e^{(t_i - t^{\\mathrm{out}})/\\tau_s} - 1}{W_{k^*} - \\vartheta}

for :math:`i` in the causal set (zero otherwise); autograd through :class:`NLIFLayer` gives exactly these.

:func:`simulate_lif_euler` integrates the same neuron (and the standard LIF neuron with a finite
membrane time constant) on a time grid with the forward Euler method, as an independent check of the
closed form.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.core.random import torch_generator
from geode.core.validation import check_array, check_int, check_positive, check_real, check_tensor

__all__ = [
    "NLIFLayer",
    "NLIFNetwork",
    "first_spike_accuracy",
    "first_spike_loss",
    "latency_encode",
    "nlif_spike_times",
    "simulate_lif_euler",
    "weight_sum_penalty",
]


def _check_spike_times(name: str, t: Any, n_features: int) -> torch.Tensor:
    """Validate a tensor of input spike times of shape (batch, n_features); ``inf`` means "no spike"."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of spike times; got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor; got dtype {t.dtype}")
    if t.ndim != 2:
        raise ValueError(f"{name} must have shape (batch, {n_features}); got shape {tuple(t.shape)}")
    if t.shape[1] != n_features:
        raise ValueError(
            f"{name} must have {n_features} columns (in_features, the rows of weight); got shape {tuple(t.shape)}"
        )
    if torch.isnan(t).any():
        raise ValueError(f"{name} must not contain NaN spike times (use inf for 'no spike')")
    if (t == -math.inf).any():
        raise ValueError(f"{name} must not contain -inf spike times")
    return t


def nlif_spike_times(
    t_in: torch.Tensor,
    weight: torch.Tensor,
    tau_s: float,
    theta: float,
    *,
    t_max: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """First-spike times of nLIF neurons by the closed form, and their causal sets.

    Parameters
    ----------
    t_in : torch.Tensor, shape (batch, n_in)
        Input spike times; ``inf`` means the input does not spike. NaN is rejected. An empty batch
        ``(0, n_in)`` gives empty outputs.
    weight : torch.Tensor, shape (n_in, n_out)
        Synaptic weights :math:`w_{ij}` (any sign: excitatory and inhibitory); finite and non-empty.
    tau_s : float
        Synaptic time constant :math:`\\tau_s > 0`.
    theta : float
        Firing threshold :math:`\\vartheta > 0`.
    t_max : float, optional
        End of the simulated window: spikes later than ``t_max`` count as "no spike".

    Returns
    -------
    t_out : torch.Tensor, shape (batch, n_out)
        :math:`\\tau_s \\ln(A_{k^*}/(W_{k^*} - \\vartheta))`, or ``inf`` for a neuron that never spikes.
        Differentiable in ``t_in`` and ``weight`` wherever the causal set is locally constant.
    causal_mask : torch.BoolTensor, shape (batch, n_in, n_out)
        ``causal_mask[b, i, j]`` is True iff input ``i`` belongs to the causal set of output ``j``
        on sample ``b`` (all False when ``j`` does not spike). A connection with weight exactly 0 is
        treated as absent and never belongs to a causal set.

    Notes
    -----
    Vectorised: one sort of the inputs, cumulative sums over the sorted weights, a validity test per
    prefix and the index of the first valid prefix. Times are shifted by each sample's earliest input
    before exponentiating, so only the spread of input times within a sample (not their absolute value)
    must stay below ~80 τ_s in float32 (~700 τ_s in float64).
    """
    tau_s = check_positive("tau_s", tau_s)
    theta = check_positive("theta", theta)
    if t_max is not None:
        t_max = check_real("t_max", t_max)
    weight = check_tensor("weight", weight, ndim=2)
    t_in = _check_spike_times("t_in", t_in, weight.shape[0])
    batch, n_in = t_in.shape
    n_out = weight.shape[1]
    dtype = torch.promote_types(t_in.dtype, weight.dtype)
    t_in, weight = t_in.to(dtype), weight.to(dtype)

    t_sorted, order = torch.sort(t_in, dim=1)  # inf (silent inputs) go last
    finite = torch.isfinite(t_sorted)  # (B, n_in)
    t_safe = torch.where(finite, t_sorted, torch.zeros_like(t_sorted))
    # Reference time: earliest input of each sample (detached; t_out is exactly invariant to it).
    t_ref = torch.where(finite[:, :1], t_safe[:, :1], torch.zeros_like(t_safe[:, :1])).detach()
    w_sorted = weight[order] * finite[..., None]  # (B, n_in, n_out); silent inputs carry no weight
    W = torch.cumsum(w_sorted, dim=1)  # W_k
    A = torch.cumsum(w_sorted * torch.exp((t_safe - t_ref) / tau_s)[..., None], dim=1)  # A_k e^{-t_ref/τ_s}
    possible = (W > theta) & (A > 0) & finite[..., None]
    # Safe arguments so that neither value nor gradient is NaN where the candidate is not possible.
    num = torch.where(possible, A, torch.ones_like(A))
    den = torch.where(possible, W - theta, torch.ones_like(W))
    t_cand = t_ref[..., None] + tau_s * (torch.log(num) - torch.log(den))  # (B, n_in, n_out)
    t_next = torch.cat([t_sorted[:, 1:], torch.full_like(t_sorted[:, :1], math.inf)], dim=1)
    # A tolerance of a few ulps on the interval ends: a crossing that rounding puts just outside both
    # neighbouring intervals would otherwise be lost.
    tol = 64 * torch.finfo(dtype).eps * (tau_s + t_safe.abs())
    valid = possible & (t_cand >= (t_safe - tol)[..., None]) & (t_cand <= (t_next + tol)[..., None])
    spikes = valid.any(dim=1)  # (B, n_out)
    k_star = valid.to(torch.int8).argmax(dim=1)  # first valid prefix (argmax returns the first maximum)
    t_sel = torch.gather(t_cand, 1, k_star[:, None, :]).squeeze(1)
    if t_max is not None:
        spikes = spikes & (t_sel <= t_max)
    t_out = torch.where(spikes, t_sel, torch.full_like(t_sel, math.inf))
    pos = torch.arange(n_in, device=t_in.device)[None, :, None]
    # the causal set: the prefix up to k*, without absent synapses (weight exactly 0)
    mask_sorted = (pos <= k_star[:, None, :]) & spikes[:, None, :] & (w_sorted != 0)
    causal_mask = torch.zeros(batch, n_in, n_out, dtype=torch.bool, device=t_in.device)
    causal_mask.scatter_(1, order[..., None].expand(batch, n_in, n_out), mask_sorted)
    return t_out, causal_mask


class NLIFLayer(nn.Module):
    """A layer of single-spike nLIF neurons with exact, differentiable first-spike times.

    Implements the closed form of :func:`nlif_spike_times` (see the module docstring for the
    mathematics): the spike time of neuron :math:`j` is

    .. math::

        t_j = \\tau_s \\ln \\frac{\\sum_{i \\in C_j} w_{ij} e^{t_i/\\tau_s}}{\\sum_{i \\in C_j} w_{ij} - \\vartheta},

    where the causal set :math:`C_j` is the shortest time-ordered prefix of the inputs whose
    candidate spike time falls before the next input.

    Parameters
    ----------
    in_features, out_features : int
        Number of input and output neurons (>= 1).
    tau_s : float
        Synaptic time constant :math:`\\tau_s > 0` (the time unit of the layer).
    theta : float
        Firing threshold :math:`\\vartheta > 0`.
    t_max : float, optional
        End of the simulated window; spikes after it count as "no spike" (``inf``).
    weight_mean, weight_std : float
        Initial weights are drawn from :math:`\\mathcal{N}(\\mu, \\sigma^2)` with
        ``mu = weight_mean * theta / in_features`` and ``sigma = weight_std * theta / sqrt(in_features)``
        (defaults 1.5 and 1.0: an expected total input weight of 1.5 θ). Use
        :meth:`reset_parameters` for other initialisations.
    seed : int
        Seed of the initial weights.

    Examples
    --------
    >>> import torch
    >>> layer = NLIFLayer(2, 1, tau_s=1.0, theta=1.0)
    >>> with torch.no_grad():
    ...     _ = layer.weight.fill_(1.5)
    >>> with torch.no_grad():
    ...     t_out, mask = layer(torch.tensor([[0.0, 5.0]]))
    >>> round(float(t_out), 4), mask[0, :, 0].tolist()  # ln 3: input 0 alone causes the spike
    (1.0986, [True, False])
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        tau_s: float = 1.0,
        theta: float = 1.0,
        *,
        t_max: float | None = None,
        weight_mean: float = 1.5,
        weight_std: float = 1.0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.in_features = check_int("in_features", in_features, low=1)
        self.out_features = check_int("out_features", out_features, low=1)
        self.tau_s = check_positive("tau_s", tau_s)
        self.theta = check_positive("theta", theta)
        self.t_max = None if t_max is None else check_real("t_max", t_max)
        check_real("weight_mean", weight_mean)
        check_real("weight_std", weight_std, low=0.0)
        self.weight = nn.Parameter(torch.empty(self.in_features, self.out_features))
        self.reset_parameters(weight_mean, weight_std, seed=seed)

    def reset_parameters(self, mean: float = 1.5, std: float = 1.0, *, positive: bool = False, seed: int = 0) -> None:
        """Draw weights :math:`w_{ij} \\sim \\mathcal{N}(\\mu, \\sigma^2)`, fan-in scaled.

        ``mu = mean * theta / in_features`` and ``sigma = std * theta / sqrt(in_features)``, so ``mean`` is
        the expected total input weight in units of the threshold. With ``positive=True`` the weights are
        folded, :math:`|w_{ij}|` (positive-only, purely excitatory initialisation).
        """
        mean = check_real("mean", mean)
        std = check_real("std", std, low=0.0)
        mu = mean * self.theta / self.in_features
        sigma = std * self.theta / math.sqrt(self.in_features)
        with torch.no_grad():
            w = torch.randn(self.in_features, self.out_features, generator=torch_generator(seed))
            w = mu + sigma * w
            self.weight.copy_(w.abs() if positive else w)

    def forward(self, t_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Output spike times (``inf`` = no spike) and the causal mask, shape (batch, in, out).

        A 1-D input of shape ``(in_features,)`` is treated as a batch of one; ``inf`` in ``t_in`` means "no
        input spike" and an output time ``inf`` "no output spike"; an empty batch gives empty outputs.
        """
        squeeze = isinstance(t_in, torch.Tensor) and t_in.ndim == 1
        if squeeze:
            t_in = t_in[None]
        t_out, mask = nlif_spike_times(t_in, self.weight, self.tau_s, self.theta, t_max=self.t_max)
        return (t_out[0], mask[0]) if squeeze else (t_out, mask)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, tau_s={self.tau_s}, "
            f"theta={self.theta}, t_max={self.t_max}"
        )


class NLIFNetwork(nn.Module):
    """A feedforward network of :class:`NLIFLayer` s with single-spike coding.

    Parameters
    ----------
    layers : sequence of NLIFLayer
        Consecutive layers; ``layers[l].out_features`` must equal ``layers[l+1].in_features``.

    The forward pass returns the output spike times and the list of every layer's causal mask (the
    per-neuron causal sets from which :func:`geode.neuro.causal_pieces.count_causal_pieces` builds the
    causal path).
    """

    def __init__(self, layers: Sequence[NLIFLayer]) -> None:
        super().__init__()
        layers = list(layers)
        if not layers:
            raise ValueError("layers must hold at least one NLIFLayer")
        for i, layer in enumerate(layers):
            if not isinstance(layer, NLIFLayer):
                raise TypeError(f"layers[{i}] must be an NLIFLayer; got {type(layer).__name__}")
        for i in range(len(layers) - 1):
            if layers[i].out_features != layers[i + 1].in_features:
                raise ValueError(
                    f"layer shape mismatch: layers[{i}] has out_features={layers[i].out_features} but "
                    f"layers[{i + 1}] has in_features={layers[i + 1].in_features}"
                )
        self.layers = nn.ModuleList(layers)

    @classmethod
    def from_sizes(
        cls,
        sizes: Sequence[int],
        tau_s: float = 1.0,
        theta: float = 1.0,
        *,
        t_max: float | None = None,
        weight_mean: float | Sequence[float] = 1.5,
        weight_std: float | Sequence[float] = 1.0,
        positive: bool = False,
        seed: int = 0,
    ) -> NLIFNetwork:
        """A network with layer widths ``sizes`` (e.g. ``[5, 60, 3]``), initialised per layer.

        ``weight_mean`` / ``weight_std`` are one value for all layers or one per layer (see
        :meth:`NLIFLayer.reset_parameters`); layer ``l`` is seeded with ``seed + l``.
        """
        sizes = [check_int(f"sizes[{i}]", s, low=1) for i, s in enumerate(sizes)]
        if len(sizes) < 2:
            raise ValueError(f"sizes must list at least an input and an output width; got {sizes}")
        n = len(sizes) - 1
        means = [weight_mean] * n if isinstance(weight_mean, (int, float)) else list(weight_mean)
        stds = [weight_std] * n if isinstance(weight_std, (int, float)) else list(weight_std)
        if len(means) != n or len(stds) != n:
            raise ValueError(f"weight_mean and weight_std must be scalars or have {n} entries (one per layer)")
        for l in range(n):
            check_real("weight_mean" if n == 1 else f"weight_mean[{l}]", means[l])
            check_real("weight_std" if n == 1 else f"weight_std[{l}]", stds[l], low=0.0)
        layers = []
        for l in range(n):
            layer = NLIFLayer(sizes[l], sizes[l + 1], tau_s, theta, t_max=t_max)
            layer.reset_parameters(means[l], stds[l], positive=positive, seed=seed + l)
            layers.append(layer)
        return cls(layers)

    def forward(self, t_in: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Output spike times (batch, n_out) and the causal masks of all layers.

        ``inf`` in ``t_in`` means "no input spike", an output time ``inf`` "no output spike"; an empty batch
        gives empty outputs.
        """
        masks = []
        t = t_in
        for layer in self.layers:
            t, m = layer(t)
            masks.append(m)
        return t, masks


def latency_encode(
    x: Any,
    *,
    t_early: float = 0.15,
    t_late: float = 2.0,
    bias_times: Sequence[float] = (0.0,),
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Time-to-first-spike coding of features in [0, 1]: :math:`t = t_e + x (t_l - t_e)`, plus bias spikes.

    Parameters
    ----------
    x : array_like, shape (n, d)
        Features in [0, 1] (Yin-Yang coordinates), finite. An empty batch ``(0, d)`` gives an empty
        ``(0, d + len(bias_times))`` tensor.
    t_early, t_late : float
        Spike times of the values 0 and 1 (Göltz et al. 2021 use 0.15 τ_s and 2 τ_s).
    bias_times : sequence of float
        Times of extra, input-independent bias spikes appended as columns (default one at t = 0); an empty
        sequence appends none.

    Returns
    -------
    torch.Tensor, shape (n, d + len(bias_times))
    """
    arr = check_array("x", x, ndim=2)
    if arr.size and (arr.min() < 0.0 or arr.max() > 1.0):
        raise ValueError(f"x must lie in [0, 1]; got values in [{arr.min():.3g}, {arr.max():.3g}]")
    t_early = check_real("t_early", t_early)
    t_late = check_real("t_late", t_late)
    if t_late <= t_early:
        raise ValueError(f"t_late must be > t_early; got t_early={t_early}, t_late={t_late}")
    bias = [check_real(f"bias_times[{i}]", b) for i, b in enumerate(bias_times)]
    t = t_early + arr * (t_late - t_early)
    if bias:
        t = np.concatenate([t, np.broadcast_to(np.asarray(bias, float), (arr.shape[0], len(bias)))], axis=1)
    return torch.as_tensor(t, dtype=dtype)


def _check_outputs(t_out: Any, labels: Any) -> None:
    """Output spike times (batch >= 1, classes), no NaN (``inf`` = no spike), and integer labels in range."""
    check_tensor("t_out", t_out, ndim=2, finite=False, floating=True)
    if bool(torch.isnan(t_out).any()):
        raise ValueError("t_out must not contain NaN spike times (use inf for 'no spike')")
    if not isinstance(labels, torch.Tensor):
        raise TypeError(f"labels must be a torch tensor of class indices; got {type(labels).__name__}")
    if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
        raise TypeError(f"labels must be an integer tensor of class indices; got {labels.dtype}")
    if labels.shape != (t_out.shape[0],):
        raise ValueError(
            f"t_out must be (batch, classes) and labels (batch,); got {tuple(t_out.shape)}, {tuple(labels.shape)}"
        )
    if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= t_out.shape[1]):
        raise ValueError(
            f"labels must lie in [0, {t_out.shape[1] - 1}] (one per column of t_out); "
            f"got values in [{int(labels.min())}, {int(labels.max())}]"
        )


def _capped(t_out: torch.Tensor, t_max: float) -> torch.Tensor:
    return torch.where(torch.isfinite(t_out) & (t_out <= t_max), t_out, torch.full_like(t_out, t_max))


def first_spike_loss(t_out: torch.Tensor, labels: torch.Tensor, *, t_max: float, tau_s: float = 1.0) -> torch.Tensor:
    """Cross-entropy on :math:`\\mathrm{softmax}(-t^{\\mathrm{out}}/\\tau_s)` (Göltz et al. 2021).

    Output neurons that do not spike within ``t_max`` (``inf`` in ``t_out``) count as spiking at ``t_max``
    (no gradient flows through them). ``t_out`` must hold at least one sample and no NaN; ``labels`` are
    integer class indices in ``[0, classes)``.
    """
    t_max = check_real("t_max", t_max)
    tau_s = check_positive("tau_s", tau_s)
    _check_outputs(t_out, labels)
    return nn.functional.cross_entropy(-_capped(t_out, t_max) / tau_s, labels)


def weight_sum_penalty(weight: torch.Tensor, theta: float) -> torch.Tensor:
    """Mostafa's (2017) firing-ability penalty :math:`\\sum_j \\max(0, \\vartheta - \\sum_i w_{ij})`.

    A neuron whose total input weight is below the threshold can never spike (whatever the input
    times), and a silent neuron passes no gradient; this term pushes such neurons back towards firing.
    ``weight`` has shape (n_in, n_out), finite and non-empty.
    """
    theta = check_positive("theta", theta)
    check_tensor("weight", weight, ndim=2)
    return torch.relu(theta - weight.sum(dim=0)).sum()


def first_spike_accuracy(t_out: torch.Tensor, labels: torch.Tensor) -> float:
    """Accuracy of the earliest-spike prediction, ties broken uniformly at random (in expectation).

    A sample scores :math:`1/T` when the label's neuron is among the :math:`T` neurons sharing the
    earliest spike time, else 0. A sample with no output spike at all is a tie of all classes and
    scores :math:`1/K` (chance), so a network that never spikes has chance accuracy, not the accuracy
    of whichever class an ``argmin`` over infinities happens to return (``inf`` in ``t_out`` is "no spike").
    ``t_out`` must hold at least one sample and no NaN; ``labels`` are integer class indices in ``[0, classes)``.
    """
    _check_outputs(t_out, labels)
    t_min = t_out.min(dim=1, keepdim=True).values
    earliest = t_out == t_min  # all True for a sample without any spike (inf == inf)
    hit = earliest.gather(1, labels[:, None].long()).squeeze(1)
    return float((hit.float() / earliest.sum(dim=1).float()).mean())


def simulate_lif_euler(
    t_in: Any,
    weight: Any,
    tau_s: float,
    theta: float,
    *,
    tau_m: float = math.inf,
    dt: float = 1e-4,
    t_end: float | None = None,
    chunk: int | None = None,
) -> np.ndarray:
    """First-spike times of current-based LIF neurons by forward Euler time stepping.

    Integrates, on the grid :math:`t_n = n\\,\\Delta t`,

    .. math::

        I_{n+1} = (1 - \\Delta t/\\tau_s)\\, I_n + \\sum_i w_i [\\mathrm{round}(t_i/\\Delta t) = n + 1], \\qquad
        V_{n+1} = (1 - \\Delta t/\\tau_m)\\, V_n + (\\Delta t/\\tau_s)\\, I_n,

    the Euler discretisation of :math:`\\dot I = -I/\\tau_s + \\sum_i w_i \\delta(t - t_i)` and
    :math:`\\dot V = -V/\\tau_m + I/\\tau_s`. With :math:`\\tau_m = \\infty` this is the nLIF neuron of
    :class:`NLIFLayer`; a finite :math:`\\tau_m` is the standard LIF neuron. The spike time is the first
    grid step where :math:`V \\ge \\vartheta`, refined by linear interpolation inside the step. Input
    spikes are snapped to the nearest grid point, so the error is :math:`O(\\Delta t)`.

    The recurrences run as IIR filters (:func:`scipy.signal.lfilter`) over chunks of ``chunk`` time
    steps (default: about two million array entries per chunk), stopping once every neuron has spiked.

    Parameters
    ----------
    t_in : array_like, shape (batch, n_in)
        Input spike times, >= 0; ``inf`` means no spike. An empty batch gives an empty ``(0, n_out)`` array.
    weight : array_like, shape (n_in, n_out)
        Finite weights.
    tau_s, theta : float
        Synaptic time constant and threshold (> 0).
    tau_m : float
        Membrane time constant (> 0; ``inf`` for the nLIF neuron).
    dt : float
        Time step (> 0).
    t_end : float, optional
        End of the simulation; defaults to the last finite input time plus ``10 * tau_s``.
    chunk : int, optional
        Time steps per chunk (bounds the memory).

    Returns
    -------
    numpy.ndarray of float64, shape (batch, n_out)
        First spike times; ``inf`` where the neuron does not spike before ``t_end``.
    """
    from scipy.signal import lfilter

    if isinstance(t_in, torch.Tensor):
        t_in = t_in.detach().cpu().numpy()
    if isinstance(weight, torch.Tensor):
        weight = weight.detach().cpu().numpy()
    t = check_array("t_in", t_in, ndim=2, finite=False)
    w = check_array("weight", weight, ndim=2)
    if np.isnan(t).any() or (t < 0).any():
        raise ValueError("t_in must hold spike times >= 0 or inf (no spike); found NaN or a negative time")
    if t.shape[1] != w.shape[0]:
        raise ValueError(f"t_in has {t.shape[1]} columns but weight has {w.shape[0]} rows (n_in)")
    tau_s = check_positive("tau_s", tau_s)
    theta = check_positive("theta", theta)
    if not (isinstance(tau_m, (int, float)) and tau_m > 0):
        raise ValueError(f"tau_m must be > 0 (inf for the nLIF neuron); got {tau_m!r}")
    dt = check_positive("dt", dt)
    finite = np.isfinite(t)
    if t_end is None:
        t_end = (t[finite].max() if finite.any() else 0.0) + 10 * tau_s
    t_end = check_positive("t_end", t_end)
    batch, n_in = t.shape
    n_out = w.shape[1]
    n_steps = int(math.ceil(t_end / dt))
    chunk = max(256, 2_000_000 // max(batch * n_out, 1)) if chunk is None else check_int("chunk", chunk, low=1)
    # one series per (sample, output neuron)
    idx = np.where(finite, np.rint(np.where(finite, t, 0.0) / dt), -1).astype(np.int64)  # (B, n_in)
    a = 1.0 - dt / tau_s
    b = 1.0 - dt / tau_m if math.isfinite(tau_m) else 1.0
    zi_i = np.zeros((batch * n_out, 1))
    zi_v = np.zeros((batch * n_out, 1))
    i_last = np.zeros(batch * n_out)  # I at the last step of the previous chunk
    v_last = np.zeros(batch * n_out)
    out = np.full(batch * n_out, np.inf)
    rows = (np.arange(batch)[:, None, None] * n_out + np.arange(n_out)[None, None, :]).repeat(n_in, axis=1)
    wts = np.broadcast_to(w[None], (batch, n_in, n_out))
    cols_all = np.broadcast_to(idx[..., None], (batch, n_in, n_out))
    for start in range(0, n_steps + 1, chunk):
        stop = min(start + chunk, n_steps + 1)
        J = np.zeros((batch * n_out, stop - start))
        sel = (cols_all >= start) & (cols_all < stop)
        np.add.at(J, (rows[sel], cols_all[sel] - start), wts[sel])
        I, zi_i = lfilter([1.0], [1.0, -a], J, axis=1, zi=zi_i)  # I_n = a I_{n-1} + J_n
        drive = np.concatenate([i_last[:, None], I[:, :-1]], axis=1) * (dt / tau_s)  # uses I_{n-1}
        V, zi_v = lfilter([1.0], [1.0, -b], drive, axis=1, zi=zi_v)  # V_n = b V_{n-1} + (dt/τ_s) I_{n-1}
        todo = ~np.isfinite(out)
        above = V[todo] >= theta
        hit = above.any(axis=1)
        if hit.any():
            rows_todo = np.flatnonzero(todo)[hit]
            n = above[hit].argmax(axis=1)
            v_now = V[rows_todo, n]
            v_prev = np.where(n > 0, V[rows_todo, np.maximum(n - 1, 0)], v_last[rows_todo])
            frac = np.clip((theta - v_prev) / np.maximum(v_now - v_prev, 1e-300), 0.0, 1.0)
            out[rows_todo] = (start + n - 1 + frac) * dt
        i_last, v_last = I[:, -1].copy(), V[:, -1].copy()
        if np.isfinite(out).all():
            break
    out[out > t_end] = np.inf
    return out.reshape(batch, n_out)
