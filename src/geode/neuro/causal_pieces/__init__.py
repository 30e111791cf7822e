"""Causal pieces: counting the subnetworks that cause the output spikes of a single-spike SNN.

Paper: Dold & Petersen, "Causal pieces: analysing and improving spiking neural networks piece by
piece" (arXiv 2504.14015; NeurIPS 2026 version with large-τ_m LIF neurons, inhibitory synapses and an
approximation-error lower bound).

Claim, in one sentence: the number of causal pieces (regions of input × parameter space where the
same subnetwork causes the output spikes) measures a spiking network's approximation capability, and
initialisations with more causal pieces on the training set strongly correlate with training success.

The method: :func:`count_causal_pieces` runs a network of exact nLIF layers
(:class:`geode.neuro.NLIFLayer`, closed-form first-spike times with their causal sets), builds each
input's *causal path* (the causal sets of the neurons upstream of the spiking output neurons) and
counts the distinct paths over the inputs, optionally also over random parameter draws around the
weights. :func:`run_init_study` is the paper's experiment: count pieces at initialisation for many
weight distributions, train, and correlate.

Since issue 19 the claim check follows the authors' release (``dodo47/snnpiece``) instead:
:mod:`geode.neuro.causal_pieces.release` (:class:`ReleaseNet`: raw Yin-Yang features as spike times, one
hidden nLIF layer with tau_s = 0.5, a linear decoder on the hidden spike times, cross-entropy; the release's
random initialisations; pieces = distinct joint hidden causal states), trained with Adam, a half-cosine
decay and the firing-ability term against the collapse, epoch selected on validation. The inferred
details below describe the all-spiking variant (:func:`run_init_study`), kept as an option.

Quick-mode finding (claim revision 2, 3 seeds x 16 release initialisations, 40 epochs): ``reproduced``
(seeds: reproduced, partial, reproduced; flagged unstable). Spearman rho(log #pieces at init, test
accuracy) 0.87 / 0.65 / 0.89 (shuffled-pieces control 0.18 / 0.11 / -0.18); best run 90.9% / 88.8% /
90.5% (best untrained 37-48%); no run collapsed (1-2 per seed dead at init); Euler's distance to the
closed form 1.1-2.3e-2 / 1-2e-3 / 1e-4 at dt 1e-2 / 1e-3 / 1e-4. Tuning chose lr 3e-2 and gamma 1 in every
seed, both the upper values of their two-point grids: the grid is too small and was not extended (budget).
Revision 1 (all-spiking [5, 60, 3]) said ``partial``: rho 0.37, best 74.8%, 7 of 16 runs at exactly 1/3.

Details we inferred (the paper does not fix them, or the notes did not record them):

- Neuron: :math:`V(t) = \\sum_{t_i < t} w_i (1 - e^{-(t - t_i)/\\tau_s})` (nLIF, τ_m → ∞), τ_s = 1 and
  θ = 1; the normalisation of the synaptic kernel is absorbed into the weights.
- A piece is identified by the *restricted* causal path (only neurons upstream of a spiking output);
  a network that never spikes has exactly one piece (the empty path). The unrestricted count (every
  neuron's causal set) and the first layer's count are reported beside it.
- Inputs: Yin-Yang features (x, y, 1-x, 1-y) coded as t = 0.15 τ_s + v (2 τ_s - 0.15 τ_s) (Göltz et
  al. 2021) plus one bias spike at t = 0: 5 inputs. The paper's bias-spike timing is not known to us.
- Simulated window t_max = 4 τ_s: later spikes count as "no spike". Output spikes before t_max depend
  only on hidden spikes before t_max, so the window does not change the classifier's outputs.
- Loss: cross-entropy on softmax(-t_out/τ_s) with silent outputs set to t_max (no gradient through
  them); no extra penalty reviving silent neurons (the notes mention one as a risk mitigation; we
  leave it out because it would change the very dependence on the initial causal structure that the
  claim is about). ``run_init_study(silence_penalty=K)`` adds Mostafa's (2017) weight-sum penalty
  for users who want it; the check runs with K = 0. Prediction: the earliest output spike; ties
  (including "no output spike at all") are broken uniformly at random, counted in expectation, so a
  silent network scores chance (1/3).
- Initialisations: :math:`w \\sim \\mathcal{N}(m\\,\\vartheta/n_{in}, (s\\,\\vartheta)^2/n_{in})` in every
  layer, signed or folded to :math:`|w|` (positive-only). The 16 quick configurations
  (:data:`INIT_GRID`: m ∈ {1, 1.5, 2, 4} × s ∈ {0.1, 0.5, 1.5} signed, and m ∈ {1, 1.5, 2, 4} with
  s = 1 positive-only) were fixed from piece counts at initialisation alone, before any training,
  to span collapsed (1 piece), sparse and rich (> 1000 pieces) networks.
- Training: Adam (lr 5e-3), batch 50, 30 epochs on 2000 training points; test accuracy on 1000.
- Spearman ρ is computed between log(#pieces) and final test accuracy over the 16 runs; when either
  is constant ρ is undefined and is reported as 0 with ``rho_defined = 0``.

Examples
--------
Count the causal pieces of two single-spike networks at initialisation, then train both the same way (the
all-spiking variant; :class:`ReleaseNet` is the release's network):

>>> import torch
>>> from geode.neuro import NLIFNetwork, count_causal_pieces, first_spike_accuracy, first_spike_loss
>>> from geode.neuro import yinyang_spike_data
>>> x, y = yinyang_spike_data(500, seed=0)             # Yin-Yang points as 5 input spike times, 3 classes
>>> nets = {"collapsed": NLIFNetwork.from_sizes([5, 30, 3], weight_mean=0.5, weight_std=0.1, t_max=4.0),
...         "rich": NLIFNetwork.from_sizes([5, 30, 3], weight_mean=2.0, weight_std=1.5, t_max=4.0)}
>>> pieces = {name: count_causal_pieces(net, x) for name, net in nets.items()}   # at initialisation
>>> pieces["collapsed"], pieces["rich"] > 100              # a silent network is one piece (the empty path)
(1, True)
>>> for net in nets.values():                             # the same 30 Adam steps for both
...     opt = torch.optim.Adam(net.parameters(), lr=1e-2)
...     for step in range(30):
...         opt.zero_grad()
...         first_spike_loss(net(x)[0], y, t_max=4.0).backward()
...         opt.step()
>>> acc = {name: first_spike_accuracy(net(x)[0], y) for name, net in nets.items()}
>>> round(acc["collapsed"], 3), acc["rich"] > 0.4         # more pieces at init, better training
(0.333, True)
"""

from __future__ import annotations

from geode.neuro.causal_pieces.experiment import (
    INIT_GRID,
    InitConfig,
    rank_correlation,
    run_init_study,
    yinyang_spike_data,
)
from geode.neuro.causal_pieces.pieces import causal_path_masks, count_causal_pieces
from geode.neuro.causal_pieces.release import (
    DECODE_T,
    ReleaseInit,
    ReleaseNet,
    release_inits,
    train_release,
    yinyang_raw,
)

__all__ = [
    "DECODE_T",
    "INIT_GRID",
    "InitConfig",
    "ReleaseInit",
    "ReleaseNet",
    "causal_path_masks",
    "count_causal_pieces",
    "rank_correlation",
    "release_inits",
    "run_init_study",
    "train_release",
    "yinyang_raw",
    "yinyang_spike_data",
]
