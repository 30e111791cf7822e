r"""CapTrack's capability taxonomy as data classes, and a registry of capability-specific metrics.

The taxonomy (Thede et al., arXiv 2603.06610; the authors' ``evaluation/taxonomy_cfg.py`` and
``evaluation/plotting_utils.py``) has three groups: **CAN** (latent competence: C1 parametric knowledge, C2
reasoning, C3 contextual comprehension, C4 epistemic faithfulness, C5a/b/c robustness to rephrasing, domain
shift and language), **WILL** (default behaviours: W1 willingness to answer, W2 helpfulness and scope, W3a
verbosity and style, W3b formatting use) and **HOW** (execution: H1 instruction following, H2 output-format
fidelity, H3 tool use, H4 multi-turn state, H5 long context, H6 citation mechanics).

A :class:`CapabilityRegistry` maps each capability to the metrics measured for it; a :class:`Metric` names a
per-item score function and whether a higher value is better (relative drift is reported as measured; the
sign convention is the caller's to read).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CAPTRACK_TAXONOMY", "Capability", "CapabilityRegistry", "Metric"]

GROUPS = ("CAN", "WILL", "HOW")


@dataclass(frozen=True)
class Capability:
    """One capability of the taxonomy: ``code`` (``"C1"``, ``"W3a"``...), ``name``, ``group`` (CAN/WILL/HOW)."""

    code: str
    name: str
    group: str
    description: str = ""

    def __post_init__(self) -> None:
        if not self.code or not isinstance(self.code, str):
            raise ValueError(f"code must be a non-empty string; got {self.code!r}")
        if self.group not in GROUPS:
            raise ValueError(f"group must be one of {GROUPS}; got {self.group!r}")

    @property
    def is_knowledge(self) -> bool:
        """C1, parametric knowledge: the accuracy-centric view of forgetting."""
        return self.code == "C1"

    @property
    def is_behaviour(self) -> bool:
        """A default behaviour (WILL) or an execution skill (HOW): what the accuracy-centric view misses."""
        return self.group in ("WILL", "HOW")


@dataclass(frozen=True)
class Metric:
    """A capability-specific metric: ``score(item_output) -> float`` per probe, averaged over the probes."""

    name: str
    capability: str
    score: Callable[..., float] | None = None
    higher_is_better: bool = True


CAPTRACK_TAXONOMY: tuple[Capability, ...] = (
    Capability("C1", "parametric knowledge", "CAN", "facts and skills stored in the weights"),
    Capability("C2", "reasoning", "CAN", "multi-step reasoning accuracy and step validity"),
    Capability("C3", "contextual comprehension", "CAN", "using information given in the context"),
    Capability("C4", "epistemic faithfulness", "CAN", "answers faithful to evidence, truthful"),
    Capability("C5a", "prompt robustness", "CAN", "the same task under rephrased prompts"),
    Capability("C5b", "domain robustness", "CAN", "the same skill under domain shift"),
    Capability("C5c", "multilingual robustness", "CAN", "the same task in other languages"),
    Capability("W1", "willingness to answer", "WILL", "refusing unsafe requests, complying with benign ones"),
    Capability("W2", "helpfulness and scope", "WILL", "coverage and overreach of answers"),
    Capability("W3a", "verbosity and style", "WILL", "response length, hedging, directness"),
    Capability("W3b", "formatting use", "WILL", "bullets, tables, emoji used by default"),
    Capability("H1", "instruction following", "HOW", "verifiable instructions (IFEval-style)"),
    Capability("H2", "output-format fidelity", "HOW", "answers in a requested format (JSON, table)"),
    Capability("H3", "tool use", "HOW", "function selection and arguments"),
    Capability("H4", "multi-turn state", "HOW", "keeping state across turns"),
    Capability("H5", "context-window operations", "HOW", "long-context retrieval"),
    Capability("H6", "citation mechanics", "HOW", "citing sources in the requested format"),
)
"""The paper's taxonomy (codes as in the authors' heat-maps)."""


@dataclass
class CapabilityRegistry:
    """Capabilities and the metrics measured for each.

    Parameters
    ----------
    capabilities : iterable of Capability
        Default: :data:`CAPTRACK_TAXONOMY`.
    """

    capabilities: Iterable[Capability] = CAPTRACK_TAXONOMY
    metrics: dict[str, Metric] = field(default_factory=dict)

    def __post_init__(self) -> None:
        caps = tuple(self.capabilities)
        codes = [c.code for c in caps]
        if len(set(codes)) != len(codes):
            raise ValueError(f"capabilities: duplicate codes in {codes}")
        self._caps = {c.code: c for c in caps}

    def capability(self, code: str) -> Capability:
        if code not in self._caps:
            raise KeyError(f"unknown capability {code!r}; known: {sorted(self._caps)}")
        return self._caps[code]

    def add(self, metric: Metric) -> Metric:
        """Register ``metric`` under its capability (which must exist); names are unique."""
        self.capability(metric.capability)
        if metric.name in self.metrics:
            raise ValueError(f"metric {metric.name!r} is already registered")
        self.metrics[metric.name] = metric
        return metric

    def metrics_of(self, code: str) -> list[Metric]:
        self.capability(code)
        return [m for m in self.metrics.values() if m.capability == code]

    def used_capabilities(self) -> list[Capability]:
        """The capabilities that have at least one metric, in taxonomy order."""
        used = {m.capability for m in self.metrics.values()}
        return [c for c in self._caps.values() if c.code in used]

    def group_of(self, metric_name: str) -> Any:
        return self.capability(self.metrics[metric_name].capability)
