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
