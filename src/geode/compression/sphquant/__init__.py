"""SPHQuant: rotation-free spherical weight-only quantisation (signs, radius, positive unit direction).

Paper: "SPHQuant: spherical weight-only quantisation" (NeurIPS 2026; code not released, the authors'
README gives the bit budgets: 2.25 bits per weight at W2, 3.125 at W3). Claim: at 2-3 bits SPHQuant
matches state-of-the-art rotation-free methods and beats RTN/GPTQ on outlier-heavy weights.

Components (:mod:`geode.compression.sphquant.sphquant`): :class:`SPHCodebook` (positive unit codewords in
hyperspherical angles), :func:`spherical_kmeans`, :func:`sph_encode` / :func:`sph_decode`,
:class:`SPHLinear` (the packed format; up to 4 rows are multiplied through per-call sign-pattern x codeword
tables without materialising the weight, more rows dequantise and multiply; the shared-memory GPU kernel of the
paper is future work), :func:`sphquant_model` (quantise a model's linear layers in place).

Inferred details (the paper is not available; from the abstract and the README's budgets):

- the budget: ``(8 + k + b_rho)/8 + 16/group_size`` bits per weight, so W3 = 3.125 is ``k + b_rho = 16``
  with ``group_size=128`` and one 16-bit radius scale per group; the split between direction bits ``k``
  and radius bits ``b_rho`` is tuned on validation (``k`` in {6, 8, 10}, at most 1024 codewords: "compact,
  small enough for shared-memory lookup"); the codebook (``2^k x 8`` 16-bit numbers) is shared by the whole
  model and, as in the paper's accounting, left out of the bits per weight (reported separately);
- the radius grid: uniform on ``[0, max radius of the group]`` (one scale per group, no zero point); the
  radius of a vector is its least-squares length along the chosen codeword ``<|w|, c_j>`` (equal to
  ``||w||`` for an exact direction), the codeword the one of largest cosine with ``|w|``;
- the codebook: spherical k-means on the directions of all quantised layers, then Adam on the angles and
  the log group scales minimising the summed relative layer-output error ``tr(D H D^T) / tr(W H W^T)``
  on calibration Hessians, discrete codes fixed; angles projected to ``[0, pi/2]`` after each step;
- calibration: every layer's Hessian from the float model's activations (the same for GPTQ).

Examples
--------
Quantise the linear layers of a small network with an outlier input column to 3.25 bits per weight, against
3-bit GPTQ and round-to-nearest (3.5 bits with their 16-bit scale and zero point per group of 64).

>>> import copy
>>> import torch
>>> from torch import nn
>>> from geode.compression import PackedLinear, calibration_hessians, linear_names, replace_linears, sphquant_model
>>> _ = torch.manual_seed(0)
>>> model = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 16))
>>> with torch.no_grad():
...     _ = model[0].weight[:, 3].mul_(20)  # an outlier input column
>>> x = torch.randn(256, 64)  # calibration inputs
>>> names = linear_names(model)  # every nn.Linear (but an "lm_head")
>>> hessians = calibration_hessians(model, [x], names)
>>> sph = copy.deepcopy(model)
>>> info = sphquant_model(sph, hessians, names, direction_bits=8, radius_bits=8, group_size=64, finetune_steps=20)
>>> info["bits_per_weight"], type(sph[0]).__name__, info["error_after"] < info["error_before"]
(3.25, 'SPHLinear', True)
>>> gptq, rtn = copy.deepcopy(model), copy.deepcopy(model)
>>> replace_linears(gptq, lambda n, lin: PackedLinear.from_linear(lin, bits=3, group_size=64, hessian=hessians[n]),
...                 names)
>>> replace_linears(rtn, lambda n, lin: PackedLinear.from_linear(lin, bits=3, group_size=64), names)
>>> def rel_error(m):  # relative output error on the calibration inputs
...     with torch.no_grad():
...         return float((m(x) - model(x)).pow(2).sum() / model(x).pow(2).sum())
>>> rel_error(sph) < rel_error(gptq) < rel_error(rtn), gptq[0].bits_per_weight()
(True, 3.5)
"""

from __future__ import annotations

from geode.compression.sphquant.sphquant import (
    SPHCodebook,
    SPHCodes,
    SPHLinear,
    angles_to_vectors,
    sph_bits_per_weight,
    sph_decode,
    sph_encode,
    spherical_kmeans,
    sphquant_model,
    vectors_to_angles,
)

__all__ = [
    "SPHCodebook",
    "SPHCodes",
    "SPHLinear",
    "angles_to_vectors",
    "sph_bits_per_weight",
    "sph_decode",
    "sph_encode",
    "spherical_kmeans",
    "sphquant_model",
    "vectors_to_angles",
]
