r"""SpecAlign: characteristic-function alignment of two frozen unimodal encoders with few pairs.

Paper: *SpecAlign: Spectral Characteristic Distribution Alignment* (the paper itself was not found; notes
``shared/papers/specalign.md``). Claim: beside InfoNCE on the few pairs, comparing the two modalities' embedding
distributions through their characteristic functions at learnable spectral queries (the structured
direction-radius sampler, SDRS) aligns independently pre-trained encoders better with scarce paired supervision.

Components: :class:`SpecAlignLoss` (the CF term over SDRS queries, adversarial in the queries through gradient
reversal), :class:`SDRSampler`, :func:`cf_discrepancy`, and the terms it is compared with: :func:`info_nce`,
:func:`rbf_mmd2` (the MMD the CF term equals in expectation for Gaussian queries, by Bochner's theorem) and
:func:`structure_reg` (a STRUCTURE-style neighbourhood regulariser). The math and every inferred detail are in
:mod:`geode.ssl.specalign.loss`; the claim check's set-up in :mod:`geode.ssl.specalign.claim`.

Examples
--------
Linear projectors of two frozen feature spaces to a shared sphere, trained on 50 pairs with InfoNCE plus the
SpecAlign term on unpaired pools (the queries get a smaller learning rate; they maximise the discrepancy):

>>> import torch
>>> from torch import nn
>>> from geode.ssl import SpecAlignLoss, cf_discrepancy, info_nce, rbf_mmd2
>>> _ = torch.manual_seed(0)
>>> latent = torch.randn(550, 8)
>>> x = torch.tanh(latent @ torch.randn(8, 64))  # frozen "image" features
>>> y = torch.relu(latent @ torch.randn(8, 48))  # frozen "text" features of the same items
>>> proj_x, proj_y = nn.Linear(64, 16), nn.Linear(48, 16)
>>> spec = SpecAlignLoss(16, n_queries=32)
>>> opt = torch.optim.Adam([
...     {"params": [*proj_x.parameters(), *proj_y.parameters()], "lr": 1e-2},
...     {"params": spec.parameters(), "lr": 1e-3}])
>>> def embed(proj, feats):
...     return nn.functional.normalize(proj(feats), dim=1)
>>> pairs, pool_x, pool_y = slice(0, 50), slice(50, 300), slice(300, 550)
>>> gaps = []
>>> for _ in range(60):
...     gap = spec(embed(proj_x, x[pool_x]), embed(proj_y, y[pool_y]))
...     loss = info_nce(embed(proj_x, x[pairs]), embed(proj_y, y[pairs])) + gap
...     opt.zero_grad()
...     loss.backward()
...     opt.step()
...     gaps.append(gap.item())
>>> gaps[-1] < gaps[0]
True

With Gaussian queries t ~ N(0, I / σ²) the CF discrepancy is, in expectation, the RBF MMD² of bandwidth σ
(Bochner's theorem):

>>> a, b = torch.randn(200, 4), torch.randn(200, 4) + 0.5
>>> cf = cf_discrepancy(a, b, torch.randn(20000, 4) / 0.5)
>>> abs(cf.item() - rbf_mmd2(a, b, bandwidth=0.5).item()) < 0.01
True
"""

from __future__ import annotations

from geode.ssl.specalign.loss import SDRSampler, SpecAlignLoss, cf_discrepancy, info_nce, rbf_mmd2, structure_reg

__all__ = ["SDRSampler", "SpecAlignLoss", "cf_discrepancy", "info_nce", "rbf_mmd2", "structure_reg"]
