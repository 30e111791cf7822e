r"""SaMA: scalable morpho adaptation, a generalised-Kronecker (perfect-shuffle) adapter.

Paper: "SaMA: Scalable Morpho Adaptation" (NeurIPS 2026; abstract only available to us).

Claim, in one sentence: relaxing the shared-block constraint of the perfect-shuffle factorisation of a
Kronecker product gives an adapter whose rank spans low to full and grows quadratically with its
parameter budget (LoRA: linearly), and whose invariance group collapses to a diagonal group.

:class:`SaMALinear` (math in :mod:`geode.adapters.sama.sama`) wraps a frozen ``nn.Linear`` through the
field's adapter base, so :func:`geode.adapters.inject_adapters`, merge/unmerge and PEFT export (as the
exact rank-:math:`pck` LoRA form) work unchanged; :class:`SaMAConfig`/:func:`inject_sama` are the
PEFT-style configuration; :func:`jacobian_nullity` measures the flat directions of any adapter.

Details we inferred (no code or equations of the paper were available; ``PaulAlbert31/KRAdapter`` is the
nearest public adapter and was not needed): the block layout and index order, the inner width
:math:`k` as the budget dial (``rank``), initialisation (:math:`L = 0`), scaling :math:`\alpha/k`, the
generic nullity :math:`pck^2` (our derivation; the abstract's "diagonal group" is the case :math:`k = 1`).

Examples
--------
With the parameter budget of a rank-4 LoRA, a 16 x 16 SaMA update with 4 x 4 blocks reaches full rank:

>>> import torch
>>> from torch import nn
>>> from geode.adapters import LoRALinear, SaMAConfig, SaMALinear, inject_sama, jacobian_nullity, sama_nullity_theory
>>> _ = torch.manual_seed(0)
>>> sama = SaMALinear(nn.Linear(16, 16), blocks_in=4, blocks_out=4, rank=1)
>>> lora = LoRALinear(nn.Linear(16, 16), r=4)
>>> [sum(p.numel() for p in m.parameters() if p.requires_grad) for m in (sama, lora)]
[128, 128]
>>> _ = nn.init.normal_(sama.sama_L), nn.init.normal_(lora.lora_B)
>>> [int(torch.linalg.matrix_rank(m.delta_weight().detach())) for m in (sama, lora)]
[16, 4]

Its flat directions are one scale per block pair (the diagonal group), as the theory says:

>>> jacobian_nullity(sama), sama_nullity_theory(blocks_in=4, blocks_out=4, rank=1, d=4, b=4)
(16, 16)

In a model, PEFT-style (the adapter starts as the base model, and exports to LoRA's format exactly):

>>> model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
>>> x = torch.randn(5, 32)
>>> before = model(x)
>>> inject_sama(model, SaMAConfig(target_modules=["0", "2"], blocks_in=4, blocks_out=4))
['0', '2']
>>> torch.equal(model(x), before)
True
>>> a, b, s = model[0].lora_factors()
>>> a.shape, b.shape, bool(torch.allclose(s * b @ a, model[0].delta_weight()))
(torch.Size([16, 32]), torch.Size([64, 16]), True)
"""

from __future__ import annotations

from geode.adapters.sama.sama import (
    SaMAConfig,
    SaMALinear,
    effective_rank,
    inject_sama,
    jacobian_nullity,
    lora_nullity_theory,
    sama_delta,
    sama_nullity_theory,
)

__all__ = [
    "SaMAConfig",
    "SaMALinear",
    "effective_rank",
    "inject_sama",
    "jacobian_nullity",
    "lora_nullity_theory",
    "sama_delta",
    "sama_nullity_theory",
]
