"""The claim harness: register a paper's headline claim, tune its methods equally, run it, store and report it.

Public API used by every paper's ``claim.py``::

    from geode.claims import Learned, Outcome, Threshold, device_for, register, tune

See :mod:`geode.claims.types` for thresholds and rules, :mod:`geode.claims.verdict` for how verdicts are
computed over seeds (intervals, scoped floors, tuning coverage, idea ablations, three-valued rules),
:mod:`geode.claims.tuning` for equal tuning, :mod:`geode.claims.seeds` for seed lists and added seeds, and
:mod:`geode.claims.bench` for benchmarks.
"""

from __future__ import annotations

from geode.claims.claim import Claim, device_for
from geode.claims.registry import load_claim, load_claims, register, registered
from geode.claims.tuning import Tuned, TuneResult, tune
from geode.claims.types import AGGREGATES, MODES, VERDICTS, Learned, Outcome, Threshold
from geode.claims.verdict import Evaluation, Rules, evaluate

__all__ = [
    "AGGREGATES",
    "MODES",
    "VERDICTS",
    "Claim",
    "Evaluation",
    "Learned",
    "Outcome",
    "Rules",
    "Threshold",
    "TuneResult",
    "Tuned",
    "device_for",
    "evaluate",
    "load_claim",
    "load_claims",
    "register",
    "registered",
    "tune",
]
