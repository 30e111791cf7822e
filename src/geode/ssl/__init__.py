r"""Self-supervised and multimodal representation learning: the paper folders live below.

``geode.ssl.specalign`` (characteristic-function alignment of two frozen encoders) and ``geode.ssl.hamjepa``
(phase-space JEPA embeddings coupled by a learned Hamiltonian leapfrog predictor). Both are ``nn.Module`` losses
on embeddings the user's encoders produce, trained with any ``torch.optim`` optimiser.

Papers and their names
----------------------
Each paper's public names, importable from this package (``geode show <slug>`` prints the same with an example).

``hamjepa``: HamJEPA, phase-space view embeddings coupled by a symplectic Hamiltonian predictor::

    from geode.ssl import (HamJEPALoss, HamiltonianPredictor, MLPPredictor, PhaseSpaceCNN, SIGRegLoss,
                           SeparablePotential, energy_budget, epps_pulley_sigreg, hamiltonian_prediction_loss,
                           leapfrog, lejepa_prediction_loss, maxent_covariance, price_of_isotropy,
                           projected_logdet_floor, variance_floor)

- ``HamJEPALoss``: HamJEPA's objective for two views (prediction + energy budget + variance and spectral floors).
- ``HamiltonianPredictor``: the symplectic, reversible predictor (leapfrog flow of a learned separable Hamiltonian).
- ``SeparablePotential``: its potential :math:`V(q)`; ``leapfrog``: the integrator.
- ``MLPPredictor``: the ablation, an unconstrained residual MLP predictor.
- ``PhaseSpaceCNN``: a CNN encoder whose token channels split into :math:`q` and :math:`p`.
- ``SIGRegLoss``: the isotropic baseline (LeJEPA prediction + SIGReg); ``epps_pulley_sigreg``,
  ``lejepa_prediction_loss``: its two terms.
- ``hamiltonian_prediction_loss``, ``energy_budget``, ``variance_floor``, ``projected_logdet_floor``: HamJEPA's
  terms, one by one.
- ``maxent_covariance``, ``price_of_isotropy``: the closed forms (maximum-entropy covariance under an energy
  budget; the log-det price of isotropy).

``specalign``: SpecAlign, characteristic-function alignment of two frozen encoders with few pairs::

    from geode.ssl import SDRSampler, SpecAlignLoss, cf_discrepancy, info_nce, rbf_mmd2, structure_reg

- ``SpecAlignLoss``: the CF discrepancy over learnable SDRS queries, adversarial in the queries.
- ``SDRSampler``: the structured direction-radius sampler of spectral queries.
- ``cf_discrepancy``: the mean squared gap of two empirical characteristic functions at given queries.
- ``info_nce``: symmetric InfoNCE on paired rows (the paired term).
- ``rbf_mmd2``: the RBF-kernel MMD² baseline (the CF term's expectation under Gaussian queries).
- ``structure_reg``: a STRUCTURE-style neighbourhood-preserving regulariser (baseline).
"""

from __future__ import annotations

from geode.ssl import hamjepa as _hamjepa
from geode.ssl import specalign as _specalign
from geode.ssl.hamjepa import *  # noqa: F403
from geode.ssl.specalign import *  # noqa: F403

__all__ = [*_hamjepa.__all__, *_specalign.__all__]
