"""SPIRIT: speed-driven self-speculative decoding by layer skipping (paper ``spirit``).

* :mod:`~geode.inference.spirit.decoding`: layer-skipping drafts on the target itself and lossless greedy
  speculative verification, with a per-forward cost model;
* :mod:`~geode.inference.spirit.policies`: SPIRIT-like speed-driven selection (ratio, then pattern, with
  shift-aware profiles) and the SWIFT-like matchness baseline, run over a request stream;
* :mod:`~geode.inference.spirit.stream`: the claim's two-task world (tiny Llama on copy / reversal; in
  ``full`` mode the pretrained SmolLM2-135M-Instruct on in-context copy / count requests).
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
