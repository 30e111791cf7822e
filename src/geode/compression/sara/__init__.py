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

Examples
--------
Run a denoiser's block linears at a rank chosen per DDIM step: SARA-DP picks the ranks from the measured
low-rank approximation errors under a MACs budget, SARA-Online from the spectrum of the previous output.

>>> import torch
>>> from geode.compression import DigitDenoiser, SaraOnline, SVDLinear, apply_sara, ddim_sample, lrae_table, sara_dp
>>> model = DigitDenoiser(dim=64, width=32, hidden=64, n_blocks=2, seed=0)  # (train it first: DDPM loss)
>>> noise = torch.randn(8, 64, generator=torch.Generator().manual_seed(0))
>>> dense, dense_macs = ddim_sample(model, noise, steps=6)
>>> same, _ = ddim_sample(apply_sara(model), noise, steps=6)  # SVDLinear targets, still at full rank
>>> torch.equal(dense, same)
True
>>> menu = [4, 8, 16, None]  # ranks per block (None: dense)
>>> errors = lrae_table(model, noise, menu, steps=6)  # (steps, blocks, menu)
>>> costs = [sum(m.macs(r) for m in model.targets()[0]) for r in menu]
>>> choice = sara_dp(errors.numpy(), costs, budget=0.7 * 6 * 2 * costs[-1])  # 70% of the blocks' dense MACs
>>> schedule = [[menu[j] for j in row] for row in choice]
>>> x, macs = ddim_sample(model, noise, steps=6, schedule=schedule)
>>> bool(macs < dense_macs), bool(((x - dense).norm() / dense.norm()) < 0.1)
(True, True)
>>> online = SaraOnline(0.05, [32, 32])  # tail-energy tolerance, each block's full rank
>>> _, online_macs = ddim_sample(model, noise, steps=6, controller=online)
>>> online.fractions[0], bool(online_macs < dense_macs)  # the first step runs at full rank
(1.0, True)
>>> layer = SVDLinear.from_linear(torch.nn.Linear(16, 8))
>>> layer.macs(), layer.macs(2)  # dense 16 x 8; rank 2: 2 x (16 + 8)
(128, 48)
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
