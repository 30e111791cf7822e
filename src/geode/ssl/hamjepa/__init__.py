r"""HamJEPA: phase-space view embeddings (q, p) coupled by a learned Hamiltonian leapfrog predictor.

Paper: "Beyond Isotropy in JEPAs: Hamiltonian Geometry and Symplectic Prediction" (R. Jenkinson Alvarez,
arXiv 2605.20107); code ``R02AJ/HamJEPA-HamSIGReg`` (read, not copied). Claim: putting the structural bias into
the cross-view coupling (a symplectic Hamiltonian flow between views' phase-space states, with non-isotropic
scale and spectral floors against collapse) beats regularising one-view embeddings toward an isotropic Gaussian
(SIGReg), and an MLP predictor in place of the symplectic one loses the kNN gain.

Components: :class:`PhaseSpaceCNN` (token encoder with the channel-wise q/p split), :class:`SeparablePotential`,
:func:`leapfrog` and :class:`HamiltonianPredictor` (symplectic, reversible, tested with the autograd Jacobian),
:class:`MLPPredictor` (the ablation), :class:`HamJEPALoss` (bidirectional q/p prediction + energy budget +
variance floor + projected log-det / participation-ratio / top-eigenvalue floors + mean penalty),
:class:`SIGRegLoss` (LeJEPA: prediction to the views' mean + Epps-Pulley SIGReg), and the closed forms
:func:`maxent_covariance` and :func:`price_of_isotropy`.

Followed from the authors' code: separable H with V(q) = 0.05|q|^2 + 0.02 MLP(q) (2 x 256 GELU), 2 leapfrog steps,
dt = 0.05 fixed, float32 integration, q-matching with p weight 0.2, bidirectional (-dt back), stop-gradient
targets, the floors' constants and weights (0.2 / 0.5 / 0.5 / 0.05), projections of 128 refreshed every 16
steps, the residual-scale warm-up, AdamW with warm-up + cosine and gradient clip 1, SIGReg weight 0.02 on 64
slices with 9 knots on [0, 3].

Deliberate differences: a 3-conv CNN on MNIST (28 x 28, 4 x 4 tokens of 16 channels = 256 dimensions) instead of
a ResNet on CIFAR-100/ImageNet-100 (2048 dimensions); MNIST augmentations (random affine, brightness, noise)
instead of crops and colour jitter; float32 instead of bf16; no distributed statistics; the spectral floor's
projection dimension is capped at min(128, d, batch - 1); the linear probe is an L2 logistic regression on
standardised embeddings instead of LayerNorm + linear trained by AdamW; the learning rate is tuned (equally for
every arm, on validation) instead of fixed at 5e-4.

Inferred (the authors' ablation script was not found): the MLP predictor is a residual GELU MLP of the same
width and depth that takes the direction flag as an extra input, trained with the same loss and floors.

Examples
--------
One training step on two augmented views of the user's images: the encoder gives phase-space states
z = (q, p), the loss couples the views through the Hamiltonian predictor and keeps the floors against
collapse:

>>> import torch
>>> from geode.ssl import HamJEPALoss, HamiltonianPredictor, PhaseSpaceCNN, price_of_isotropy
>>> _ = torch.manual_seed(0)
>>> encoder = PhaseSpaceCNN(width=16, token_channels=8, grid=2)
>>> predictor = HamiltonianPredictor(encoder.state_dim, hidden=32)
>>> objective = HamJEPALoss(predictor, encoder.state_dim)
>>> opt = torch.optim.AdamW([*encoder.parameters(), *predictor.parameters()], lr=1e-3)
>>> images = torch.rand(32, 1, 28, 28)
>>> view_a = images + 0.1 * torch.randn_like(images)
>>> view_b = images.flip(-1) + 0.1 * torch.randn_like(images)
>>> z_a, z_b = encoder(view_a), encoder(view_b)
>>> z_a.shape
torch.Size([32, 32])
>>> loss = objective(z_a, z_b)
>>> opt.zero_grad()
>>> loss.backward()
>>> opt.step()
>>> sorted(objective.last)
['p_pr_norm', 'pred', 'q_pr_norm']

The predictor is a symplectic map (its Jacobian J satisfies Jᵀ Ω J = Ω) and reversible:

>>> z = torch.randn(1, 32)
>>> jac = torch.autograd.functional.jacobian(lambda v: predictor(v[None])[0], z[0])
>>> omega = torch.zeros(32, 32)
>>> omega[:16, 16:], omega[16:, :16] = torch.eye(16), -torch.eye(16)
>>> torch.allclose(jac.T @ omega @ jac, omega, atol=1e-4)
True
>>> torch.allclose(predictor(predictor(z), direction=-1), z, atol=1e-5)
True

The price an isotropic target pays under an anisotropic energy H (zero when H is a multiple of I):

>>> price_of_isotropy(torch.eye(3)), round(price_of_isotropy(torch.diag(torch.tensor([1.0, 4.0]))), 4)
(0.0, 0.4463)
"""

from __future__ import annotations

from geode.ssl.hamjepa.encoder import PhaseSpaceCNN
from geode.ssl.hamjepa.losses import (
    HamJEPALoss,
    SIGRegLoss,
    energy_budget,
    epps_pulley_sigreg,
    hamiltonian_prediction_loss,
    lejepa_prediction_loss,
    maxent_covariance,
    price_of_isotropy,
    projected_logdet_floor,
    variance_floor,
)
from geode.ssl.hamjepa.predictor import HamiltonianPredictor, MLPPredictor, SeparablePotential, leapfrog

__all__ = [
    "HamJEPALoss",
    "HamiltonianPredictor",
    "MLPPredictor",
    "PhaseSpaceCNN",
    "SIGRegLoss",
    "SeparablePotential",
    "energy_budget",
    "epps_pulley_sigreg",
    "hamiltonian_prediction_loss",
    "leapfrog",
    "lejepa_prediction_loss",
    "maxent_covariance",
    "price_of_isotropy",
    "projected_logdet_floor",
    "variance_floor",
]
