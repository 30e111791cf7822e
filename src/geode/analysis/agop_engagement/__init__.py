"""Optimization engagement: alignment of the next-token loss's AGOP with a probe-defined concept subspace.

The measurements (:func:`agop`, :func:`concept_subspace`, :func:`engagement`, :func:`subspace_alignment`),
the synthetic agreement language with a 2-layer transformer and its checkpoint-series driver
(:mod:`geode.analysis.agop_engagement.experiment`), and the claim check (``geode reproduce agop-engagement``).
"""

from __future__ import annotations

from geode.analysis.agop_engagement.engagement import (
    agop,
    agop_loop,
    concept_subspace,
    engagement,
    layer_names,
    next_token_loss,
    subspace_alignment,
)
from geode.analysis.agop_engagement.experiment import AgreementLanguage, TinyTransformer

__all__ = [
    "AgreementLanguage",
    "TinyTransformer",
    "agop",
    "agop_loop",
    "concept_subspace",
    "engagement",
    "layer_names",
    "next_token_loss",
    "subspace_alignment",
]
