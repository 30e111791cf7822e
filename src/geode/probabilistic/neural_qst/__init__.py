r"""Neural quantum state tomography with the max-sliced Wasserstein-1 loss.

Paper: "Neural quantum state tomography with max-sliced W1" (NeurIPS 2026; seed file 004, abstract 4). The
paper itself was not found; only the abstract was available, and no code.

**The claim, in one sentence.** An overparameterised network for the wavefunction, trained by rank-1
factored gradient descent on the max-sliced :math:`W_1` between the model's and the measured homodyne
distributions, keeps improving the fidelity of noisy two-mode cat states at low shot counts, where
iterative maximum likelihood plateaus at a noise floor; its landscape has no spurious minima, so restarts
agree.

**The components.**

* :func:`max_sliced_w1` (POT-style, numpy or torch): :math:`\max_p \int|F_{u_p^\top\mu} - F_{u_p^\top\nu}|`
  over directions :math:`u_p`, each 1-D :math:`W_1` exact by one merge; equals POT's
  ``max_sliced_wasserstein_distance(..., p=1)`` on the same directions (tested), with
  :func:`sliced_w1_per_direction` and :func:`wasserstein_1d_w1`;
* :func:`two_mode_cat`, :func:`hermite_functions`, :class:`QuadratureGrid` (bins and the loss +
  electronic-noise kernel), :func:`simulate_homodyne` (joint two-mode homodyne shots at phase settings:
  :math:`y = \sqrt\eta\,x + N(0, (1-\eta)/2 + \sigma_e^2)` per mode), :func:`fidelity`;
* :class:`NeuralWavefunction` (MLP from a fixed random input to :math:`c \in \mathbb C^D`,
  :math:`\psi = c/\|c\|`, :math:`\rho = \psi\psi^\dagger`), :class:`MaxSlicedW1Loss` (the loss over all
  settings with the merge order precomputed), :func:`fit_neural` (Adam, loss ``"msw1"`` or ``"nll"``);
* baselines :func:`imle` (diluted :math:`R\rho R` with the loss-aware POVM, Lvovsky 2004) and
  :func:`fit_cholesky` (GD-QST with :math:`\rho = TT^\dagger/\mathrm{tr}`, Gaikwad et al. 2025).

**What we inferred** (every item is a choice the abstract does not state):

* the model is a *pure* state (rank 1) and the measurement model (loss :math:`\eta`, electronic noise
  :math:`\sigma_e`) is known and applied to the model's ideal density: loss followed by ideal homodyne is the
  ideal quadrature scaled by :math:`\sqrt\eta` plus vacuum noise of variance :math:`(1-\eta)/2` (exact for
  any state); the truth is the pure cat before loss;
* the model's distribution is its measured bin probabilities at the bin centres (24 x 24 bins in quick);
  the data enter the msW1 loss as raw shots; msW1 over 16 equally spaced directions on the half circle
  (max over a grid, not ascent steps), averaged over phase settings;
* the network: 2 tanh hidden layers of 128 units, 16 fixed Gaussian inputs, float64, Adam;
* iMLE is diluted (:math:`\epsilon` tuned), starts from :math:`I/D`, and uses the same binned POVM; the
  phases per mode are :math:`\pi k/n`;
* every method is selected on the held-out NLL of a fresh validation draw of the same size.

Deliberate differences from the research notes: cutoff 6 rather than 10 per mode and S in {20, 100} (not
500) in quick mode, to fit the CPU budget; full mode keeps the notes' scale.

**Quick-mode finding** (claim revision 1, seeds 0-2): *partial*, 3/3 seeds partial. The msW1 network
beats iterative MLE at S = 20 in every seed (fidelity 0.71-0.93 vs 0.56-0.79) and at S = 100 in 2 of 3
(+0.033, -0.023, +0.108), but it does not keep rising after iMLE's plateau (1/3 seeds) and restarts end
0.014-0.084 apart (bound 0.01). The same network trained on the NLL is better still (0.97-0.98 at S = 100):
the rank-1 parameterisation, not the msW1 loss, carries the gain here. Details and numbers in
:mod:`geode.probabilistic.neural_qst.claim`. Benchmark (quick): :func:`max_sliced_w1` 1.39x faster than
POT's ``max_sliced_wasserstein_distance`` (memory 0.72x); one msW1 training step 2.7x faster than an iMLE
iteration and 2.7x slower than an NLL step.

Examples
--------
Reconstruct a noisy two-mode cat state from simulated homodyne shots with the msW1-trained network:

>>> import numpy as np
>>> from geode.probabilistic import MeasurementModel, QuadratureGrid, fit_neural, simulate_homodyne, two_mode_cat
>>> psi = two_mode_cat(0.8, cutoff=3)  # the state, 3 x 3 Fock amplitudes
>>> th = np.pi * np.arange(3) / 3
>>> phases = np.array([(a, b) for a in th for b in th])  # 9 joint phase settings
>>> grid = QuadratureGrid(n_bins=12, eta=0.9)  # detector efficiency 0.9
>>> train = simulate_homodyne(psi, phases, 100, grid, seed=0)  # 100 shots per setting
>>> val = simulate_homodyne(psi, phases, 100, grid, seed=1)
>>> model = MeasurementModel(grid, 3, phases)
>>> import torch
>>> _ = torch.manual_seed(0)  # the network's initial weights come from torch's global generator
>>> res = fit_neural(model, train, val, loss="msw1", steps=100, lr=1e-2, width=32, psi_true=psi)
>>> res.estimate.shape, bool(res.fidelities[-1] > 0.9)
((9,), True)

The loss on its own is POT-style, on weighted point clouds (numpy, or torch with gradients), and equals POT's
along the same directions:

>>> import ot
>>> from geode.probabilistic import max_sliced_w1
>>> rng = np.random.default_rng(0)
>>> X, Y = rng.normal(size=(50, 2)), rng.normal(size=(60, 2)) + [1.0, 0.0]
>>> a, b = np.full(50, 1 / 50), rng.dirichlet(np.ones(60))
>>> u = np.array([[1.0, 0.0], [0.0, 1.0]])  # unit directions as columns, (d, P)
>>> ours = max_sliced_w1(X, Y, a, b, projections=u)
>>> bool(np.isclose(ours, ot.max_sliced_wasserstein_distance(X, Y, a, b, p=1, projections=u)))
True
"""

from __future__ import annotations

from geode.probabilistic.neural_qst.qst import (
    MaxSlicedW1Loss,
    MeasurementModel,
    NeuralWavefunction,
    QSTResult,
    fit_cholesky,
    fit_neural,
    imle,
)
from geode.probabilistic.neural_qst.sliced import (
    max_sliced_w1,
    sliced_w1_per_direction,
    uniform_directions,
    wasserstein_1d_w1,
)
from geode.probabilistic.neural_qst.states import (
    HomodyneData,
    QuadratureGrid,
    fidelity,
    hermite_functions,
    simulate_homodyne,
    two_mode_cat,
)

__all__ = [
    "HomodyneData",
    "MaxSlicedW1Loss",
    "MeasurementModel",
    "NeuralWavefunction",
    "QSTResult",
    "QuadratureGrid",
    "fidelity",
    "fit_cholesky",
    "fit_neural",
    "hermite_functions",
    "imle",
    "max_sliced_w1",
    "simulate_homodyne",
    "sliced_w1_per_direction",
    "two_mode_cat",
    "uniform_directions",
    "wasserstein_1d_w1",
]
