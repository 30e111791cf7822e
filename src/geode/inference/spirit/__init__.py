"""SPIRIT: speed-driven self-speculative decoding by layer skipping (paper ``spirit``).

* :mod:`~geode.inference.spirit.decoding`: layer-skipping drafts on the target itself and lossless greedy
  speculative verification, with a per-forward cost model;
* :mod:`~geode.inference.spirit.policies`: SPIRIT-like speed-driven selection (ratio, then pattern, with
  shift-aware profiles) and the SWIFT-like matchness baseline, run over a request stream;
* :mod:`~geode.inference.spirit.stream`: the claim's two-task world (tiny Llama on copy / reversal; in
  ``full`` mode the pretrained SmolLM2-135M-Instruct on in-context copy / count requests).

Examples
--------
>>> from geode.inference import SpiritPolicy, greedy_decode, run_stream, self_speculative_decode, skippable_layers
>>> from geode.models import build_tiny_lm
>>> model = build_tiny_lm(32, d_model=32, n_layers=6, seed=0).eval()   # any Llama-style HF causal LM
>>> skippable_layers(model)                                           # never the first or the last
[1, 2, 3, 4]
>>> out, stats = self_speculative_decode(model, [1, 2, 3], 12, skip=[2, 3], k=3)   # draft = model minus 2 layers
>>> out == greedy_decode(model, [1, 2, 3], 12)                        # verified by the full model: lossless
True
>>> stats                                                             # doctest: +ELLIPSIS
DecodeStats(tokens=12, target_forwards=..., draft_forwards=..., acceptance=..., speed=... (modelled))
>>> requests = [([1, 2, 3], 0), ([1, 4, 5], 0), ([7, 2, 3], 1), ([7, 5, 6], 1)]   # (prompt, task) pairs
>>> res = run_stream(model, requests, SpiritPolicy(model, seed=0), window=1, max_new=6)
>>> len(res["skips"]), res["outputs"][0] == greedy_decode(model, [1, 2, 3], 6)   # one skip set per window
(4, True)
"""

from __future__ import annotations

from geode.inference.spirit.decoding import (
    DecodeStats,
    greedy_decode,
    self_speculative_decode,
    skip_layers,
    skippable_layers,
    step_cost,
)
from geode.inference.spirit.policies import SpiritPolicy, StaticPolicy, SwiftPolicy, matchness, run_stream

__all__ = [
    "DecodeStats",
    "SpiritPolicy",
    "StaticPolicy",
    "SwiftPolicy",
    "greedy_decode",
    "matchness",
    "run_stream",
    "self_speculative_decode",
    "skip_layers",
    "skippable_layers",
    "step_cost",
]
