"""SARA: step-adaptive rank for diffusion inference (the SVD rank of linear layers as a control variable).

Paper: Step-Adaptive Rank Adjustment (SARA), NeurIPS 2026 (catalogue title above; only the abstract was
available, no code). Claim: the effective rank of the denoiser output varies across steps, so choosing
the SVD rank of pretrained linear layers per step and block (SARA-DP: measured low-rank approximation
error + dynamic programming under a MACs budget; SARA-Online: a closed-form spectral LRAE of the previous
output) gives speed-ups at small quality loss, better than uniform truncation.

Components (:mod:`geode.compression.sara.sara`): :class:`SVDLinear` (``set_rank`` at inference),
:class:`DigitDenoiser` and :func:`apply_sara`, :func:`set_block_ranks`, :func:`ddim_sample` (fixed
schedule, per-step controller or step caching, with a MACs count), :func:`lrae_table`, :func:`sara_dp`
(exact multiple-choice knapsack), :class:`SaraOnline`.

Inferred details (the paper is not available):

- targets: the two linears of every MLP block (embedding, time MLP and output layers stay dense); one
  rank per block and step, shared by its two linears; plain SVD of the weights (no activation whitening);
  a rank at or above ``min(d_in, d_out)`` runs dense; the MACs count every layer of every evaluated step;
- LRAE on the full-rank trajectory of warm-up noises, one block truncated at a time, relative squared
  error of the output summed over samples; errors assumed additive over (step, block) (the paper's DP);
  costs rounded up to 1/2000 of the budget so the DP's choice always fits the true budget;
- Online: the previous step's output read as a matrix, each sample's 8x8 image (``reading="sample"``) or
  the batch's samples x pixels (``"batch"``); tail energies averaged over samples; the rank fraction is
  scaled to each block's full rank and rounded up; the first step runs at full rank; the tolerance tau is
  the least whose MACs on warm-up noises fit the budget (bisection);
- sampler: deterministic DDIM (eta = 0), linear DDPM betas 1e-4 .. 0.02 over 1000 training steps.
"""

from __future__ import annotations

from geode.compression.sara.sara import (
    DigitDenoiser,
    SaraOnline,
    SVDLinear,
    apply_sara,
    ddim_sample,
    ddpm_alphas,
    lrae_table,
    sara_dp,
    set_block_ranks,
)

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
