"""Optimization engagement: alignment of the next-token loss's AGOP with a probe-defined concept subspace.

The measurements (:func:`agop`, :func:`concept_subspace`, :func:`engagement`, :func:`subspace_alignment`),
the synthetic agreement language with a 2-layer transformer and its checkpoint-series driver
(:mod:`geode.analysis.agop_engagement.experiment`), and the claim check (``geode reproduce agop-engagement``).

Examples
--------
The AGOP of the next-token loss at a transformer block, against the direction a linear probe finds for the
subject's number (an untrained model here; :mod:`~geode.analysis.agop_engagement.experiment` follows both over
training checkpoints):

>>> import numpy as np, torch
>>> from geode.analysis import AgreementLanguage, TinyTransformer, agop, concept_subspace, engagement
>>> lang = AgreementLanguage()                           # "the <noun> <distractors> <verb>", number agreement
>>> ids, plural, lemma = lang.sample(200, np.random.default_rng(0))
>>> ids = torch.as_tensor(ids)
>>> model = TinyTransformer(lang.vocab_size, lang.length, d=32)
>>> G = agop(model, ids, "blocks.1", positions=-2)       # AGOP of the next-token loss where the verb is predicted
>>> G.shape, G.dtype
(torch.Size([32, 32]), torch.float64)
>>> acts = {}
>>> hook = model.blocks[1].register_forward_hook(lambda m, i, out: acts.update(h=out[:, -2]))
>>> with torch.no_grad():
...     _ = model(ids)
>>> hook.remove()
>>> U = concept_subspace(acts["h"].numpy(), plural)      # the number probe's direction, orthonormal
>>> U.shape
(32, 1)
>>> e = engagement(G, U)                                 # 1 = as engaged as a random direction
>>> top = np.linalg.eigh(G.numpy())[1][:, -1:]           # no direction is more engaged than the top eigenvector
>>> bool(0 <= e <= engagement(G, top)), round(engagement(G, np.eye(32)), 6)
(True, 1.0)
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
