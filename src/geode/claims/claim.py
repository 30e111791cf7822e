"""A paper's headline claim as a runnable experiment: :class:`Claim`, its hash, and the device rule."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from geode.claims.types import MODES, Outcome, Threshold
from geode.claims.verdict import Evaluation, Rules, evaluate

__all__ = ["Claim", "definition_hash", "device_for"]


def device_for(mode: str) -> str:
    """The device a claim runs on: the CPU in ``smoke`` and ``quick``; CUDA in ``full`` when there is one.

    One rule for every claim, so that a quick verdict never depends on the machine it ran on.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    if mode != "full":
        return "cpu"
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass(frozen=True)
class Claim:
    """A paper's headline claim as a runnable experiment.

    Attributes
    ----------
    slug, title, field : str
        The paper's slug, title and field (from the catalogue).
    claim : str
        The claim, in one sentence.
    paper_figure : str
        The paper's own number for the claim, in words (e.g. ``"4.4x lower MSE than SRMC at κ=100"``).
    baselines : tuple of str
        The baselines the paper names and the check compares against.
    rules : Rules
        What decides the verdict: thresholds, floors, rules, learned arms, tuned methods, seeds.
    key_metric : str
        The metric shown in the report's overview table.
    run : callable
        ``run(mode, seed) -> Outcome``.
    module : str
        Module that registered the claim (used to re-import it in worker processes).
    doc : str
        The paper package's docstring: the method, the claim and every detail we had to infer.
    timing_metrics : tuple of str
        Metrics measured from wall-clock time; the only ones allowed to differ between two runs of a seed.
    replication : str
        For a claim with ``min_seeds < 3``: how it replicates inside one run.
    revision : int
        Bumped by hand when ``run`` changes what it measures (results of another revision are stale).
    assets : tuple of str
        Names of the offline assets the claim needs in ``quick`` mode.
    no_ablation, no_learned : str
        Why the headline has no idea ablation, or the claim no learned arm with untrained references ("" when
        they are declared, or not yet: the contract test lists the claims still missing them).
    """

    slug: str
    title: str
    field: str
    claim: str
    paper_figure: str
    baselines: tuple[str, ...]
    rules: Rules
    key_metric: str
    run: Callable[[str, int], Outcome]
    module: str
    doc: str = ""
    timing_metrics: tuple[str, ...] = ()
    replication: str = ""
    revision: int = 1
    assets: tuple[str, ...] = ()
    no_ablation: str = ""
    no_learned: str = ""

    def __post_init__(self) -> None:
        if not self.claim.strip():
            raise ValueError(f"claim {self.slug!r}: the claim sentence must not be empty")
        if self.rules.min_seeds < 3 and not self.replication.strip():
            raise ValueError(
                f"claim {self.slug!r}: min_seeds={self.rules.min_seeds} < 3 needs replication='how the run "
                "replicates internally' (protocol section 2)"
            )
        if isinstance(self.revision, bool) or not isinstance(self.revision, int) or self.revision < 1:
            raise ValueError(f"claim {self.slug!r}: revision must be an int >= 1; got {self.revision!r}")

    @property
    def thresholds(self) -> tuple[Threshold, ...]:
        return self.rules.thresholds

    @property
    def floors(self) -> tuple[Threshold, ...]:
        return self.rules.all_floors

    @property
    def min_seeds(self) -> int:
        return self.rules.min_seeds

    @property
    def reproduced(self) -> str | None:
        return self.rules.reproduced

    @property
    def partial(self) -> str | None:
        return self.rules.partial

    def metrics_needed(self) -> set[str]:
        """Every metric the definition refers to (thresholds, floors, controls, ablations, paired values)."""
        return self.rules.metrics() | {self.key_metric}

    def missing_metrics(self, metrics: Mapping[str, Any]) -> list[str]:
        """The metrics the definition needs that ``metrics`` lacks (they read ``missing``: unknown)."""
        return sorted(self.metrics_needed() - set(metrics))

    def verdict(self, outcome: Outcome | Mapping[str, float]) -> tuple[str, list[dict[str, Any]]]:
        """One run's own verdict and checks (each bound applied to the run's own value).

        ``outcome`` is what ``run`` returned, or just its metrics (then no tuning coverage is checked).
        """
        if isinstance(outcome, Outcome):
            ev = evaluate(self.rules, [outcome.metrics], tuned=[outcome.tuned], single=True)
        else:
            ev = evaluate(self.rules, [dict(outcome)], single=True)
        return ev.verdict, ev.checks

    def evaluate(self, records: Sequence[Mapping[str, Any]]) -> Evaluation:
        """The verdict over stored records of one mode (each with ``metrics``, ``tuned`` and ``seed``)."""
        return evaluate(
            self.rules,
            [r["metrics"] for r in records],
            tuned=[r.get("tuned") or [] for r in records],
            seeds=[int(r.get("seed", i)) for i, r in enumerate(records)],
        )

    def describe(self) -> dict[str, Any]:
        """The claim's fixed description (everything but ``run``), as stored with every result."""
        d = {
            "slug": self.slug,
            "title": self.title,
            "field": self.field,
            "claim": self.claim,
            "paper_figure": self.paper_figure,
            "baselines": list(self.baselines),
            **self.rules.to_dict(),
            "replication": self.replication,
            "revision": self.revision,
            "key_metric": self.key_metric,
            "doc": self.doc,
            "timing_metrics": list(self.timing_metrics),
            "assets": list(self.assets),
            "no_ablation": self.no_ablation,
            "no_learned": self.no_learned,
        }
        d["hash"] = definition_hash(d)
        return d

    def definition_hash(self) -> str:
        """A hash of what decides what ``run`` measures (slug and revision); see :data:`HASHED`."""
        return definition_hash(self.describe())


HASHED = ("slug", "revision")
"""What decides what ``run`` *measures*: a stored result of another slug or revision is stale.

The verdict's rules (thresholds, floors, ablations, tuned methods) are not hashed: the report and ``show``
always judge stored metrics by the *current* definition, so a changed rule re-judges the same measurements
without re-running them (and a threshold moved after a run shows in the claim's history, not in a re-run).
A metric the current definition names that a record lacks reads ``missing`` (unknown), never passed. Bump
``revision`` whenever ``run`` changes what it measures.
"""


def definition_hash(description: Mapping[str, Any]) -> str:
    """The hash of what a claim description says ``run`` measures (a result with another hash is stale)."""
    core = {k: description.get(k) for k in HASHED}
    blob = json.dumps(core, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]
