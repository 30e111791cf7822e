"""The claim harness: register a paper's headline claim, run it, store the result, report it.

Public API used by every paper's ``claim.py``::

    from geode.claims import Outcome, Threshold, register

See :mod:`geode.claims.types` for how verdicts are computed from fixed thresholds.
"""

from __future__ import annotations

from geode.claims.registry import load_claim, load_claims, register, registered
from geode.claims.types import MODES, VERDICTS, Claim, Outcome, Threshold, evaluate_verdict

__all__ = [
    "MODES",
    "VERDICTS",
    "Claim",
    "Outcome",
    "Threshold",
    "evaluate_verdict",
    "load_claim",
    "load_claims",
    "register",
    "registered",
]
