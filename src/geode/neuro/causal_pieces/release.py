"""The released protocol of the causal-pieces paper (``dodo47/snnpiece``), written anew: one hidden nLIF layer.

Network (the release's ``MLPExpIF`` with its defaults for Yin-Yang, ``[4, 30, 3]``):

- input: the raw Yin-Yang features :math:`(x, y, 1-x, 1-y) \\in [0, 1]^4` *are* the input spike times (no
  latency code, no bias spike);
- hidden: ``H`` exact nLIF neurons (:func:`geode.neuro.lif.nlif_spike_times`, :math:`\\tau_s = 0.5`,
  :math:`\\vartheta = 1`, no leak), first-spike times :math:`t_j`;
- decoder: a linear layer on the hidden spike times, a time later than 4.5 (or no spike) entering as 0,
  :math:`\\text{logits} = W_d\\, \\tilde t + b_d` with :math:`\\tilde t_j = t_j [t_j \\le 4.5]`;
- loss: cross-entropy on the logits (the release's ``CE``); Adam, batch 200.

Initialisation (the release's ``run_seed``): per run, :math:`\\mu \\sim U(0, 1) - 0.2`,
:math:`\\sigma \\sim U(0, 1)`, hidden weights :math:`w_{ij} \\sim \\mathcal{N}(\\mu, \\sigma^2)` with no fan-in
scaling; the decoder keeps PyTorch's default ``nn.Linear`` initialisation (trainable, as in the release).

Pieces: distinct joint states of all hidden neurons' causal sets over the training inputs (the release's
Yin-Yang scan), :func:`geode.neuro.causal_pieces.count_causal_pieces` on the hidden layer with
``restrict_to_output=False``.

Training collapse and its fix. A hidden neuron that does not spike (or spikes after 4.5) gives the
decoder a constant 0 and receives no gradient; once every hidden neuron is silent on every input the
network predicts from the decoder bias alone (1/3 accuracy) and nothing revives it. The spiking
literature's remedy (Mostafa 2017; the release's "weight bumping", its ``gamma``) is a firing-ability
term :math:`\\gamma \\sum_j \\max(0, \\vartheta - \\sum_i w_{ij})` that pulls a neuron whose total input weight
cannot reach the threshold back towards firing (:func:`geode.neuro.lif.weight_sum_penalty`). Our recipe
adds it with :math:`\\gamma` chosen on a validation split together with the learning rate (the release
defaults to :math:`\\gamma = 0`); a run is *collapsed* when its hidden layer spikes on some training input at
initialisation and on none after training.

Deliberate differences from the release: the epoch is selected on a validation split (the release
reports the best test epoch); spike validity is the exact closed-form test (the release requires
:math:`\\sum w - \\vartheta > 10^{-3}`); our Yin-Yang generator (:class:`geode.data.YinYangDataset`)
reproduces the published labels but draws its own points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.core.validation import check_int, check_positive, check_real
from geode.data.yinyang import YinYangDataset
from geode.neuro.causal_pieces.pieces import count_causal_pieces
from geode.neuro.lif import NLIFLayer, _check_spike_times, weight_sum_penalty

__all__ = ["DECODE_T", "ReleaseInit", "ReleaseNet", "release_inits", "train_release", "yinyang_raw"]

DECODE_T = 4.5
"""Hidden spike times above this (or no spike) enter the decoder as 0 (the release's ``LinearDecoder``)."""


def yinyang_raw(n: int, seed: int, *, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """Yin-Yang features :math:`(x, y, 1-x, 1-y)` used directly as input spike times, and the labels."""
    ds = YinYangDataset(check_int("n", n, low=1), seed=seed)
    return torch.as_tensor(np.asarray(ds.X), dtype=dtype), torch.from_numpy(ds.y.copy()).long()


@dataclass(frozen=True)
class ReleaseInit:
    """One initialisation of the release: hidden weights :math:`\\mathcal{N}(\\mu, \\sigma^2)`, raw (no fan-in).

    ``mean`` must be finite, ``std`` finite and >= 0, ``seed`` an integer.
    """

    mean: float
    std: float
    seed: int

    def __post_init__(self) -> None:
        check_real("mean", self.mean)
        check_real("std", self.std, low=0.0)
        check_int("seed", self.seed)

    @property
    def name(self) -> str:
        return f"N(mu={self.mean:.2f},sd={self.std:.2f})#{self.seed}"


def release_inits(n: int, seed: int, offset: float = 0.2) -> tuple[ReleaseInit, ...]:
    """``n`` initialisations as the release draws them: mu ~ U(0,1) - offset, sigma ~ U(0,1), one seed each."""
    rng = np.random.default_rng([check_int("seed", seed, low=0), 19])
    offset = check_real("offset", offset)
    out = []
    for i in range(check_int("n", n, low=1)):
        mu, sd = float(rng.random()) - offset, float(rng.random())
        out.append(ReleaseInit(mu, sd, int(seed * 1000 + i)))
    return tuple(out)


class ReleaseNet(nn.Module):
    """Hidden nLIF layer and a linear decoder on its spike times (the release's Yin-Yang network).

    Parameters
    ----------
    hidden : int
        Hidden nLIF neurons (30 in the release).
    init : ReleaseInit
        Weight distribution and seed of the hidden layer (the decoder is seeded from it too).
    tau_s, theta : float
        Neuron constants (0.5 and 1 in the release).
    in_features, classes : int
        4 Yin-Yang features, 3 classes.
    """

    def __init__(
        self,
        hidden: int,
        init: ReleaseInit,
        *,
        tau_s: float = 0.5,
        theta: float = 1.0,
        in_features: int = 4,
        classes: int = 3,
    ) -> None:
        super().__init__()
        hidden = check_int("hidden", hidden, low=1)
        if not isinstance(init, ReleaseInit):
            raise TypeError(f"init must be a ReleaseInit; got {type(init).__name__}")
        self.hidden = NLIFLayer(in_features, hidden, check_positive("tau_s", tau_s), check_positive("theta", theta))
        gen = torch.Generator().manual_seed(init.seed)
        with torch.no_grad():
            self.hidden.weight.copy_(
                torch.randn(in_features, hidden, generator=gen, dtype=self.hidden.weight.dtype) * init.std + init.mean
            )
        torch.manual_seed(init.seed + 1)
        self.decoder = nn.Linear(hidden, check_int("classes", classes, low=2))

    def _check_x(self, x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.ndim == 1:
            return _check_spike_times("x", x[None], self.hidden.in_features)[0]
        return _check_spike_times("x", x, self.hidden.in_features)

    def hidden_times(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Hidden spike times (``inf``: no spike) and causal masks.

        ``x`` holds input spike times (``inf``: no input spike, NaN refused); an empty batch gives empty outputs.
        """
        return self.hidden(self._check_x(x))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(B, classes)`` and the hidden spike times ``(B, hidden)``.

        ``x`` holds input spike times (``inf``: no input spike, NaN refused); a hidden neuron that does not
        spike has time ``inf`` and enters the decoder as 0. An empty batch gives empty outputs.
        """
        t, _ = self.hidden(self._check_x(x))
        used = torch.isfinite(t) & (t <= DECODE_T)
        return self.decoder(torch.where(used, t, torch.zeros_like(t))), t


def _spiking_fraction(net: ReleaseNet, x: torch.Tensor) -> float:
    """Fraction of inputs on which at least one hidden neuron spikes before the decoder's cut."""
    with torch.no_grad():
        t, _ = net.hidden(x)
    return float(((t <= DECODE_T) & torch.isfinite(t)).any(dim=1).float().mean())


def _accuracy(net: ReleaseNet, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((net(x)[0].argmax(dim=1) == y).float().mean())


def train_release(
    net: ReleaseNet,
    data: dict[str, tuple[torch.Tensor, torch.Tensor]],
    *,
    lr: float = 1e-2,
    gamma: float = 0.0,
    epochs: int = 200,
    batch_size: int = 200,
    cosine: bool = False,
    seed: int = 0,
) -> dict[str, Any]:
    """Train with Adam on cross-entropy (+ ``gamma`` x the firing-ability term); select the epoch on validation.

    Parameters
    ----------
    net : ReleaseNet
        Trained in place; left at the selected epoch's weights.
    data : dict
        ``"train"``, ``"val"`` and ``"test"`` pairs ``(x, y)``.
    lr, gamma : float
        Adam learning rate; weight of :func:`geode.neuro.lif.weight_sum_penalty` on the hidden layer.
    epochs, batch_size : int
        Schedule (200 epochs of batches of 200 in the release).
    cosine : bool
        Decay the learning rate to 0 over the epochs by a half cosine (the release keeps it constant).
    seed : int
        Mini-batch order.

    Returns
    -------
    dict
        ``pieces_init`` (distinct hidden causal states on the training inputs), ``spiking_init`` /
        ``spiking_final`` (fraction of training inputs with a hidden spike), ``collapsed``, ``best_epoch``
        (by validation accuracy; 0 is the initialisation), ``val_acc``, ``test_acc`` and ``train_acc`` at it,
        ``test_curve`` (test accuracy after every epoch, for the figure only).
    """
    lr = check_positive("lr", lr)
    gamma = check_real("gamma", gamma, low=0.0)
    epochs = check_int("epochs", epochs, low=0)
    batch_size = check_int("batch_size", batch_size, low=1)
    x_tr, y_tr = data["train"]
    x_va, y_va = data["val"]
    x_te, y_te = data["test"]
    theta = net.hidden.theta
    pieces = count_causal_pieces([net.hidden], x_tr, restrict_to_output=False)
    spiking_init = _spiking_fraction(net, x_tr)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, (lambda e: 0.5 * (1 + math.cos(math.pi * e / max(epochs, 1)))) if cosine else (lambda e: 1.0)
    )
    gen = torch.Generator().manual_seed(int(seed))
    best = (_accuracy(net, x_va, y_va), 0)
    best_state = {k: v.clone() for k, v in net.state_dict().items()}
    curve = [_accuracy(net, x_te, y_te)]
    for epoch in range(1, epochs + 1):
        perm = torch.randperm(x_tr.shape[0], generator=gen)
        for s in range(0, x_tr.shape[0], batch_size):
            idx = perm[s : s + batch_size]
            logits, _ = net(x_tr[idx])
            loss = nn.functional.cross_entropy(logits, y_tr[idx])
            if gamma:
                loss = loss + gamma * weight_sum_penalty(net.hidden.weight, theta)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        sched.step()
        val = _accuracy(net, x_va, y_va)
        curve.append(_accuracy(net, x_te, y_te))
        if val > best[0]:
            best = (val, epoch)
            best_state = {k: v.clone() for k, v in net.state_dict().items()}
    spiking_final = _spiking_fraction(net, x_tr)
    net.load_state_dict(best_state)
    return {
        "pieces_init": int(pieces),
        "log_pieces_init": math.log(pieces),
        "spiking_init": spiking_init,
        "spiking_final": spiking_final,
        "collapsed": bool(spiking_init > 0 and spiking_final == 0),
        "best_epoch": best[1],
        "val_acc": best[0],
        "test_acc": _accuracy(net, x_te, y_te),
        "train_acc": _accuracy(net, x_tr, y_tr),
        "test_curve": curve,
    }
