"""The claim harness: register a paper's headline claim, tune its methods equally, run it, store and report it.

Public API used by every paper's ``claim.py``::

    from geode.claims import Outcome, Threshold, register, tune

See :mod:`geode.claims.types` for thresholds and rules, :mod:`geode.claims.verdict` for how verdicts are
computed over seeds (aggregation, validity floors, negative controls), :mod:`geode.claims.tuning` for
equal tuning, and :mod:`geode.claims.bench` for benchmarks.
"""

from __future__ import annotations

from geode.claims.registry import load_claim, load_claims, register, registered
from geode.claims.tuning import Tuned, TuneResult, tune
from geode.claims.types import AGGREGATES, MODES, VERDICTS, Claim, Outcome, Threshold, evaluate_verdict
from geode.claims.verdict import Evaluation, evaluate

__all__ = [
    "AGGREGATES",
    "MODES",
    "VERDICTS",
    "Claim",
    "Evaluation",
    "Outcome",
    "Threshold",
    "TuneResult",
    "Tuned",
    "evaluate",
    "evaluate_verdict",
    "load_claim",
    "load_claims",
    "register",
    "registered",
    "tune",
]
