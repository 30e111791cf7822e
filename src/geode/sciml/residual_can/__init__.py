"""Cauchy activations and ResidualCAN for scientific learning (physics-informed networks).

Paper: "Cauchy activations and ResidualCAN for scientific learning" (NeurIPS 2026). The Cauchy activation
and loss follow XNet (Li, Xia & Zhang, arXiv 2409.19221) and its public implementations; ResidualCAN
itself is reconstructed from the abstract (no code was available to us).

Claim, in one sentence: ResidualCAN, a Cauchy-activation MLP plus a softmax-weighted residual of dense
Cauchy-kernel nodes, reaches 1520x lower stationary Allen-Cahn PINN error than a SiLU MLP at
:math:`\\varepsilon = 1`, mostly thanks to the dense local-basis residual (not the Cauchy activation), while
tuned SIREN/Fourier baselines can dominate on Poisson/Burgers.

The components: :class:`CauchyActivation` (trainable :math:`\\lambda_1, \\lambda_2, d`), :class:`CauchyLoss`
(DeepXDE-style ``loss(y_true, y_pred)``), :class:`ResidualCAN` (``node="gaussian"`` is the RBF-node
ablation), :func:`cauchy_mlp`; the PINN trainer, problems and baselines are the field's
(:mod:`geode.sciml.pinn`, :mod:`geode.sciml.nets`). :func:`run_pinn_suite` is the benchmark of the claim.

Details we inferred (the abstract does not fix them):

- ResidualCAN: :math:`u(x) = \\mathrm{MLP}_\\varphi(x) + \\sum_m \\operatorname{softmax}(\\beta)_m a_m C_m(x)`, main
  path one hidden layer of 32 Cauchy-activated neurons, :math:`M = 64` nodes; the node kernel is normalised
  by its width,
  :math:`C_m = (d_m\\lambda_{1,m}^\\top(x-\\mu_m) + d_m^2\\lambda_{2,m})/(\\lVert x-\\mu_m\\rVert^2 + d_m^2)`,
  so that a node's peak is :math:`O(1)` whatever its width (the notes' unnormalised kernel peaks at
  :math:`1/d^2 \\approx 1000` for 64 nodes on :math:`[-1, 1]`).
- Initialisation: node centres at the cell centres of a uniform grid over the domain, widths at the grid
  spacing, :math:`\\lambda = 1`, :math:`\\beta = 0`, amplitudes :math:`a_m = 0` (the residual starts switched
  off); Cauchy activations at :math:`\\lambda_1 = \\lambda_2 = d = 1` (XNet); linear layers as torch's.
- The RBF ablation keeps everything but the kernel: :math:`G_m = \\exp(-\\lVert x-\\mu_m\\rVert^2 / (2 d_m^2))`.
  "Dropping the residual" is the Cauchy-activation MLP ``[1, 64, 1]`` alone.
- PINN problems: stationary Allen-Cahn :math:`\\varepsilon^2 u'' + u - u^3 = 0` on :math:`[-1, 1]` with
  :math:`u(\\pm1) = \\pm\\tanh(1/(\\sqrt2\\varepsilon))`, 256 equispaced collocation points, the two boundary
  points with weight 1, float64; the loss :math:`\\rho` (MSE or Cauchy with :math:`c = 1`) is applied to
  residual and boundary terms alike (DeepXDE's convention). The Poisson check is :math:`-u'' = f` with
  :math:`u = \\sin(\\pi x) + 0.2\\sin(5\\pi x)`; Burgers is the steady viscous shock with :math:`\\nu = 0.1`.
- Training protocols (:func:`run_protocols`, claim revision 2): every architecture is tuned with the same
  number of configurations (learning rate; :math:`\\omega_0` for SIREN; :math:`\\sigma` for the Fourier
  features) on the residual at held-out points (no solution used), then trained at equal wall-clock with
  ResidualCAN (fixed step-cost factors :data:`STEP_COST` from the benchmark) followed by 200 L-BFGS
  iterations per network (the notes' optional L-BFGS stage). The issue's step-matched protocol (same Adam
  steps, no L-BFGS) is reported beside; the verdict uses the equal-wall-clock one.

Examples
--------
ResidualCAN as a PINN on stationary Allen-Cahn, against a SiLU MLP with the same Adam budget:

>>> import torch
>>> from geode.sciml import MLP, AllenCahn1D, ResidualCAN, train_pinn
>>> net = ResidualCAN(1, 1, width=32, depth=1, n_nodes=64, domain=[(-1.0, 1.0)])  # Cauchy MLP + 64 Cauchy nodes
>>> x = torch.linspace(-1, 1, 5)[:, None]
>>> torch.equal(net(x), net.main(x))                     # the node residual starts switched off (a_m = 0)
True
>>> problem = AllenCahn1D(eps=1.0)                       # eps^2 u'' + u - u^3 = 0 on [-1, 1], u* = tanh(x / sqrt 2)
>>> can = train_pinn(net, problem, n_collocation=64, steps=100, lr=1e-2, n_test=501)
>>> silu = train_pinn(MLP([1, 64, 1], "silu"), problem, n_collocation=64, steps=100, lr=1e-2, n_test=501)
>>> bool(can.rel_l2 < silu.rel_l2 / 5)                   # the same Adam budget: several times lower error
True
"""

from __future__ import annotations

from geode.sciml.residual_can.cauchy import (
    CauchyActivation,
    CauchyLoss,
    ResidualCAN,
    cauchy_kernel,
    cauchy_mlp,
    gaussian_kernel,
)
from geode.sciml.residual_can.experiment import (
    ARCHITECTURES,
    STEP_COST,
    PINNSuite,
    ProtocolRuns,
    make_architecture,
    run_pinn_suite,
    run_protocols,
)

__all__ = [
    "ARCHITECTURES",
    "STEP_COST",
    "CauchyActivation",
    "CauchyLoss",
    "PINNSuite",
    "ProtocolRuns",
    "ResidualCAN",
    "cauchy_kernel",
    "cauchy_mlp",
    "gaussian_kernel",
    "make_architecture",
    "run_pinn_suite",
    "run_protocols",
]
