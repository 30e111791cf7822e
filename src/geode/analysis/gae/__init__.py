"""GAE: the Geometry-Adaptive Explainer, realigning a sparse dictionary to OOD activations without training.

Paper: Lim, Kim, Lee and Song, "Geometry-Adaptive Explainer for Faithful Dictionary-Based
Interpretability under Distribution Shift" (arXiv 2605.21849, NeurIPS 2026). No public code.

Claim, in one sentence: distribution shift rotates the subspace a model actively uses, the faithfulness
gap (a distance between the ID dictionary's subspace and the OOD-active subspace) controls how much a
dictionary explainer degrades, and GAE, which realigns the dictionary to unlabeled OOD activations in
closed form while preserving its features, recovers faithfulness and matches training-based baselines.

The method (:class:`GAE`): estimate the OOD-active subspace by PCA; compare it with the dictionary's
usage-weighted decoder subspace (:func:`faithfulness_gap`); rotate the dictionary by the orthogonal
Procrustes alignment of the two subspaces, extended to the direct rotation of the whole space
(:func:`direct_rotation`); refit the decoder in closed form (constrained ridge) with the encoder fixed.

Details we inferred (the project page lists the three closed-form steps; the equations are ours):

- SAE in SAELens' layout (:class:`geode.analysis.SparseAutoencoder`); TopK (k = 8) in the claim check.
- OOD subspace: top eigenvectors of the OOD covariance up to 99 % of the variance; the dictionary
  subspace has the same dimension, from the decoder rows weighted by their RMS activation on an ID
  sample (2,000 rows; without one, on the OOD sample).
- Gap: :math:`\\|P_{id} - P_{ood}\\|_F / \\sqrt 2 = (\\sum \\sin^2 \\theta_i)^{1/2}`.
- Procrustes: the notes rotate only the decoder (:math:`W_{rot} = W_{dec} U_{id} R U_{ood}^T +
  W_{dec}(I - U_{id} U_{id}^T)`); with the encoder left alone the codes of rotated inputs are wrong, and
  the issue's acceptance test (exact on a pure rotation) fails. We rotate encoder and decoder by the
  direct rotation T (which agrees with the Procrustes R on the subspace) and re-centre
  (:math:`b_{dec}' = \\mu_{ood} + (b_{dec} - \\mu_{id}) T^T`): the feature activations of a rotated
  input equal those of the original input, which is how "feature identities are preserved" is read.
- Refit: ridge towards the rotated decoder with λ = 0.1 x mean diag(AᵀA), rows projected onto the OOD
  subspace (the exact constrained solution).
- Claim check: 64-d activations, 256 features in a 24-d subspace (superposition), sparse non-negative
  codes; the shift rotates the subspace by θ ∈ {10, 30, 60}° into unused directions and scales the codes
  by 1.25 (full mode: 5 to 85 degrees; not 90, where every principal angle is π/2 and no subspace method
  can tell how to align the features); 2,000 unlabeled OOD samples; FVU on held-out OOD data.
  Degradation and excess are measured against the ID dictionary's FVU on held-out ID data.
  Fine-tuning: 1,000 Adam steps (quick; 5,000 in full) from the ID dictionary on the OOD sample; the ID
  dictionary, and the one retrained on the OOD sample, train for 2,000 steps (quick). The downstream
  "model" is a fixed random GELU MLP (spliced-in FVU reported, not thresholded).
- Left out: transcoders, causal (ablation/patching) faithfulness and LM experiments (GPT-2/Gemma SAEs
  live on the HF hub, which is offline here), and the quadratic-bound slope.
"""

from __future__ import annotations

from geode.analysis.gae.experiment import planted_features, rotation_towards, run_shift_study, sample_activations
from geode.analysis.gae.explainer import (
    GAE,
    active_subspace,
    dictionary_subspace,
    direct_rotation,
    faithfulness_gap,
    mean_shift_adapt,
    refit_decoder,
)

__all__ = [
    "GAE",
    "active_subspace",
    "dictionary_subspace",
    "direct_rotation",
    "faithfulness_gap",
    "mean_shift_adapt",
    "planted_features",
    "refit_decoder",
    "rotation_towards",
    "run_shift_study",
    "sample_activations",
]
