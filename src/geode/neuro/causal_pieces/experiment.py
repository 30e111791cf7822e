"""The initialisation study of the causal-pieces paper: count pieces at initialisation, train, correlate.

For each initialisation configuration (weight mean and standard deviation, signed or positive-only),
build a single-spike nLIF network, count its causal pieces on the training set, train it with Adam on
the first-spike cross-entropy and record the final test accuracy. The paper's claim is that
``log(#pieces at init)`` and the accuracy after training are strongly rank-correlated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from geode.core.random import torch_generator
from geode.core.validation import check_int, check_positive, check_real
from geode.data.yinyang import YinYangDataset
from geode.neuro.causal_pieces.pieces import count_causal_pieces
from geode.neuro.lif import NLIFNetwork, first_spike_accuracy, first_spike_loss, latency_encode, weight_sum_penalty

__all__ = ["INIT_GRID", "InitConfig", "rank_correlation", "run_init_study", "yinyang_spike_data"]


@dataclass(frozen=True)
class InitConfig:
    """One weight initialisation: :math:`w \\sim \\mathcal{N}(\\mu, \\sigma^2)`, optionally folded to :math:`|w|`.

    ``mean`` is the expected total input weight of a neuron in units of the threshold
    (:math:`\\mu = \\text{mean}\\cdot\\vartheta/n_\\text{in}`) and ``std`` the fan-in-scaled spread
    (:math:`\\sigma = \\text{std}\\cdot\\vartheta/\\sqrt{n_\\text{in}}`); the same values are used in every
    layer. ``positive`` folds the weights (purely excitatory network).
    """

    mean: float
    std: float
    positive: bool = False

    def __post_init__(self) -> None:
        check_real("mean", self.mean)
        check_real("std", self.std, low=0.0)

    @property
    def name(self) -> str:
        return f"{'pos' if self.positive else 'normal'}(m={self.mean:g},s={self.std:g})"


# The 16 configurations of the quick check. Fixed from the piece counts at initialisation alone (before
# any training run) so that the grid spans collapsed (1 piece), sparse and rich (>1000 pieces) inits:
# a 4 x 3 grid of signed normals and four positive-only (folded) normals.
INIT_GRID: tuple[InitConfig, ...] = tuple(
    [InitConfig(m, s) for m in (1.0, 1.5, 2.0, 4.0) for s in (0.1, 0.5, 1.5)]
    + [InitConfig(m, 1.0, positive=True) for m in (1.0, 1.5, 2.0, 4.0)]
)
"""The 16 weight initialisations of the all-spiking study (:func:`run_init_study`), from collapsed to rich."""


def yinyang_spike_data(
    n: int, seed: int, *, tau_s: float = 1.0, dtype: torch.dtype = torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    """Yin-Yang samples as input spike times (Göltz et al. 2021 coding) and labels.

    Features :math:`(x, y, 1-x, 1-y)` are coded as :math:`t = 0.15\\tau_s + v\\,(2\\tau_s - 0.15\\tau_s)`, plus
    one bias spike at :math:`t = 0`: 5 inputs.
    """
    ds = YinYangDataset(n, seed=seed)
    tau_s = check_positive("tau_s", tau_s)
    t = latency_encode(ds.X, t_early=0.15 * tau_s, t_late=2.0 * tau_s, bias_times=(0.0,), dtype=dtype)
    return t, torch.from_numpy(ds.y.copy())


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank (as in Spearman's ρ)."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    ranks = np.empty(x.size)
    start = 0
    for end in range(1, x.size + 1):
        if end == x.size or xs[end] != xs[start]:
            ranks[order[start:end]] = 0.5 * (start + end - 1) + 1.0
            start = end
    return ranks


def rank_correlation(x: Sequence[float], y: Sequence[float]) -> tuple[float, bool]:
    """Spearman's ρ of ``x`` and ``y`` (Pearson correlation of average ranks), and whether it is defined.

    ρ is undefined when either variable is constant (all ranks tied) or there are fewer than 3 pairs;
    then ``(0.0, False)`` is returned so that the metric stays a finite float (no evidence of
    correlation).

    Examples
    --------
    >>> rank_correlation([1, 2, 3, 4], [10, 20, 30, 25])
    (0.8, True)
    >>> rank_correlation([1, 1, 1], [1, 2, 3])
    (0.0, False)
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D of the same length; got shapes {x.shape} and {y.shape}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be finite")
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return 0.0, False
    rx, ry = _average_ranks(x), _average_ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    rho = float(np.dot(rx, ry) / math.sqrt(np.dot(rx, rx) * np.dot(ry, ry)))
    return round(rho, 12), True


def run_init_study(
    configs: Sequence[InitConfig],
    *,
    sizes: Sequence[int] = (5, 60, 3),
    n_train: int = 2000,
    n_test: int = 1000,
    epochs: int = 30,
    lr: float = 5e-3,
    batch_size: int = 50,
    tau_s: float = 1.0,
    theta: float = 1.0,
    t_max: float = 4.0,
    draws: int = 1,
    silence_penalty: float = 0.0,
    seed: int = 0,
) -> tuple[list[dict[str, Any]], np.ndarray]:
    """Count causal pieces at initialisation, train, and measure the test accuracy, per configuration.

    Parameters
    ----------
    configs : sequence of InitConfig
        At least one.
    sizes : sequence of int
        Layer widths; the first must be 5 (4 Yin-Yang features and a bias spike).
    n_train, n_test : int
        Yin-Yang training and test set sizes.
    epochs, lr, batch_size : int, float, int
        Adam training schedule.
    tau_s, theta, t_max : float
        Neuron constants and the simulated window (later spikes count as "no spike").
    draws : int
        Independent weight draws per configuration.
    silence_penalty : float
        Coefficient of :func:`geode.neuro.lif.weight_sum_penalty` added to the loss for every layer
        (0, the default, trains on the first-spike cross-entropy alone).
    seed : int
        Seeds the data sets, the weights and the mini-batch order.

    Returns
    -------
    rows : list of dict
        One per (configuration, draw): ``config``, ``mean``, ``std``, ``positive``, ``draw``, ``pieces``
        (causal paths on the training set at init), ``pieces_full_state``, ``pieces_hidden`` (first
        layer), ``silent_fraction``, ``init_test_acc``, ``final_train_acc``, ``final_test_acc``.
    curves : numpy.ndarray, shape (len(rows), epochs + 1)
        Test accuracy after each epoch (column 0: at initialisation).
    """
    configs = list(configs)
    if not configs:
        raise ValueError("configs must hold at least one InitConfig")
    for i, cfg in enumerate(configs):
        if not isinstance(cfg, InitConfig):
            raise TypeError(f"configs[{i}] must be an InitConfig; got {type(cfg).__name__}")
    sizes = [check_int(f"sizes[{i}]", s, low=1) for i, s in enumerate(sizes)]
    if len(sizes) < 2:
        raise ValueError(f"sizes must list at least an input and an output width; got {sizes}")
    if sizes[0] != 5:
        raise ValueError(f"sizes[0] must be 5 (4 Yin-Yang features and a bias spike); got {sizes[0]}")
    n_train = check_int("n_train", n_train, low=1)
    n_test = check_int("n_test", n_test, low=1)
    epochs = check_int("epochs", epochs, low=0)
    lr = check_positive("lr", lr)
    batch_size = check_int("batch_size", batch_size, low=1)
    t_max = check_real("t_max", t_max, low=0.0, low_inclusive=False)
    draws = check_int("draws", draws, low=1)
    silence_penalty = check_real("silence_penalty", silence_penalty, low=0.0)
    seed = check_int("seed", seed, low=0)
    x_train, y_train = yinyang_spike_data(n_train, seed * 1000 + 42, tau_s=tau_s)
    x_test, y_test = yinyang_spike_data(n_test, seed * 1000 + 41, tau_s=tau_s)
    rows: list[dict[str, Any]] = []
    curves = np.zeros((len(configs) * draws, epochs + 1))
    for ci, cfg in enumerate(configs):
        for d in range(draws):
            run_seed = seed * 1000 + 100 * d + 10 * ci
            net = NLIFNetwork.from_sizes(
                sizes,
                tau_s,
                theta,
                t_max=t_max,
                weight_mean=cfg.mean,
                weight_std=cfg.std,
                positive=cfg.positive,
                seed=run_seed,
            )
            pieces, info = count_causal_pieces(net, x_train, log=True)
            full_state = count_causal_pieces(net, x_train, restrict_to_output=False)
            hidden = count_causal_pieces(list(net.layers)[:1], x_train)
            opt = torch.optim.Adam(net.parameters(), lr=lr)
            gen = torch_generator(run_seed + 1)
            row_i = len(rows)
            with torch.no_grad():
                curves[row_i, 0] = first_spike_accuracy(net(x_test)[0], y_test)
            for epoch in range(epochs):
                perm = torch.randperm(n_train, generator=gen)
                for s in range(0, n_train, batch_size):
                    idx = perm[s : s + batch_size]
                    t_out, _ = net(x_train[idx])
                    loss = first_spike_loss(t_out, y_train[idx], t_max=t_max, tau_s=tau_s)
                    if silence_penalty:
                        loss = loss + silence_penalty * sum(weight_sum_penalty(l.weight, theta) for l in net.layers)
                    opt.zero_grad()
                    loss.backward()  # zero gradient where no neuron on the path spikes
                    opt.step()
                with torch.no_grad():
                    curves[row_i, epoch + 1] = first_spike_accuracy(net(x_test)[0], y_test)
            with torch.no_grad():
                train_acc = first_spike_accuracy(net(x_train)[0], y_train)
            rows.append(
                {
                    "config": cfg.name,
                    "mean": cfg.mean,
                    "std": cfg.std,
                    "positive": cfg.positive,
                    "draw": d,
                    "pieces": int(pieces),
                    "log_pieces": math.log(pieces),
                    "pieces_full_state": int(full_state),
                    "pieces_hidden": int(hidden),
                    "silent_fraction": info["silent_fraction"],
                    "init_test_acc": float(curves[row_i, 0]),
                    "final_train_acc": train_acc,
                    "final_test_acc": float(curves[row_i, -1]),
                }
            )
    return rows, curves
