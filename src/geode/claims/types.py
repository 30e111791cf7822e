"""The types of the claim harness: :class:`Threshold`, :class:`Claim` and :class:`Outcome`.

A paper's ``claim.py`` registers one :class:`Claim` (see :func:`geode.claims.register`): its headline
claim in one sentence, the paper's own figure, the baselines, the thresholds that decide the verdict
(written down before anything runs) and ``run(mode, seed) -> Outcome``.

The verdict is computed, never chosen: each :class:`Threshold` compares one measured metric with a
fixed bound, and two Boolean expressions over the thresholds' names say when the claim counts as
``reproduced`` and when as ``partial``; anything else is ``not reproduced``. For example::

    thresholds=(
        Threshold("strong", "mse_ratio_kappa100", ">=", 2.0),
        Threshold("rises", "ratio_rises_with_kappa", ">=", 1.0),
        Threshold("some", "mse_ratio_kappa100", ">=", 1.2),
    ),
    reproduced="strong and rises",
    partial="some",
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MODES", "VERDICTS", "Claim", "Outcome", "Threshold", "evaluate_verdict"]

MODES: tuple[str, ...] = ("smoke", "quick", "full")
"""Run sizes: ``smoke`` (seconds, run by the tests), ``quick`` (<= ~3 min on 2 CPU cores, the default),
``full`` (the scale a GPU machine would run)."""

VERDICTS: tuple[str, ...] = ("reproduced", "partial", "not reproduced")

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
}


@dataclass(frozen=True)
class Threshold:
    """A fixed bound on one measured metric: ``metrics[metric] <op> value``.

    Parameters
    ----------
    name : str
        Identifier used in the ``reproduced``/``partial`` expressions of the claim.
    metric : str
        Key into :attr:`Outcome.metrics`.
    op : {">=", ">", "<=", "<"}
        Comparison.
    value : float
        The bound, fixed before the claim runs.
    description : str, optional
        What the threshold means, in words, for the report.

    A missing or non-finite metric fails the threshold.
    """

    name: str
    metric: str
    op: str
    value: float
    description: str = ""

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name in ("and", "or", "not"):
            raise ValueError(f"Threshold name must be a Python identifier other than and/or/not; got {self.name!r}")
        if self.op not in _OPS:
            raise ValueError(f"Threshold op must be one of {', '.join(_OPS)}; got {self.op!r}")
        if not isinstance(self.value, (int, float)) or not math.isfinite(self.value):
            raise ValueError(f"Threshold value must be a finite number; got {self.value!r}")

    def passes(self, metrics: Mapping[str, float]) -> bool:
        """Whether the measured metric satisfies the bound."""
        x = metrics.get(self.metric)
        if x is None or not math.isfinite(float(x)):
            return False
        return bool(_OPS[self.op](float(x), float(self.value)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "metric": self.metric,
            "op": self.op,
            "value": float(self.value),
            "description": self.description,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Threshold:
        return cls(d["name"], d["metric"], d["op"], float(d["value"]), d.get("description", ""))


def _parse_rule(expr: str, names: set[str], what: str) -> ast.Expression:
    """Parse a Boolean rule over threshold names; only and/or/not, names and parentheses are allowed."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"{what} rule {expr!r} is not a valid expression: {exc.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise ValueError(f"{what} rule {expr!r} names unknown threshold {node.id!r}; known: {sorted(names)}")
        elif not isinstance(node, (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.Load)):
            raise ValueError(f"{what} rule {expr!r} may use only threshold names, and, or, not and parentheses")
    return tree


def _eval_rule(tree: ast.AST, passed: Mapping[str, bool]) -> bool:
    if isinstance(tree, ast.Expression):
        return _eval_rule(tree.body, passed)
    if isinstance(tree, ast.Name):
        return passed[tree.id]
    if isinstance(tree, ast.UnaryOp):
        return not _eval_rule(tree.operand, passed)
    if isinstance(tree, ast.BoolOp):
        values = [_eval_rule(v, passed) for v in tree.values]
        return all(values) if isinstance(tree.op, ast.And) else any(values)
    raise ValueError(f"unsupported rule node {type(tree).__name__}")  # unreachable after _parse_rule


def evaluate_verdict(
    thresholds: Sequence[Threshold],
    reproduced: str | None,
    partial: str | None,
    metrics: Mapping[str, float],
) -> tuple[str, list[dict[str, Any]]]:
    """Verdict and per-threshold checks for measured ``metrics``.

    ``reproduced`` defaults to every threshold holding; ``partial`` defaults to never.

    Returns
    -------
    verdict : str
        One of :data:`VERDICTS`.
    checks : list of dict
        One per threshold: its fields plus ``measured`` (float or None) and ``passed`` (bool).
    """
    names = {t.name for t in thresholds}
    passed = {t.name: t.passes(metrics) for t in thresholds}
    rep_expr = reproduced if reproduced is not None else " and ".join(t.name for t in thresholds) or "True"
    if rep_expr == "True":
        is_rep = True
    else:
        is_rep = _eval_rule(_parse_rule(rep_expr, names, "reproduced"), passed)
    is_part = partial is not None and _eval_rule(_parse_rule(partial, names, "partial"), passed)
    verdict = "reproduced" if is_rep else ("partial" if is_part else "not reproduced")
    checks = []
    for t in thresholds:
        m = metrics.get(t.metric)
        checks.append({**t.to_dict(), "measured": None if m is None else float(m), "passed": passed[t.name]})
    return verdict, checks


@dataclass
class Outcome:
    """What a claim's ``run(mode, seed)`` returns.

    Parameters
    ----------
    metrics : dict of str to float
        Measured numbers; every value must be a finite float (a diverging method should be reported
        as a large finite number with a note, or a flag metric, not as NaN).
    table : list of dict, optional
        Rows of a results table (e.g. one per method and setting); values are str, int or float.
    figures : dict of str to matplotlib Figure, optional
        Named figures; the runner saves them as PNG beside the JSON result.
    summary : str
        One line that says what was measured, with the key numbers.
    notes : list of str, optional
        Anything a reader must know to interpret the numbers (protocol choices, caveats).
    """

    metrics: dict[str, float]
    table: list[dict[str, Any]] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    summary: str = ""
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.metrics, Mapping):
            raise TypeError(f"metrics must be a dict of str to float; got {type(self.metrics).__name__}")
        clean: dict[str, float] = {}
        for k, v in self.metrics.items():
            if not isinstance(k, str):
                raise TypeError(f"metric names must be str; got {k!r}")
            try:
                x = float(v)
            except (TypeError, ValueError):
                raise TypeError(f"metric {k!r} must be a real number; got {type(v).__name__}") from None
            if not math.isfinite(x):
                raise ValueError(f"metric {k!r} must be finite; got {x}")
            clean[k] = x
        self.metrics = clean
        rows = []
        for i, row in enumerate(self.table):
            if not isinstance(row, Mapping):
                raise TypeError(f"table row {i} must be a dict; got {type(row).__name__}")
            rows.append({str(k): _plain(v) for k, v in row.items()})
        self.table = rows
        if not isinstance(self.summary, str) or "\n" in self.summary.strip():
            raise ValueError("summary must be a one-line string")
        self.summary = self.summary.strip()
        for name in self.figures:
            if not (isinstance(name, str) and name.replace("_", "").replace("-", "").isalnum()):
                raise ValueError(f"figure names must be alphanumeric with - or _; got {name!r}")


def _plain(v: Any) -> Any:
    """Table cells as JSON-friendly plain values (numpy scalars become Python numbers)."""
    if v is None or isinstance(v, (str, bool, int)):
        return v
    if hasattr(v, "item") and callable(v.item):
        try:
            v = v.item()
        except (ValueError, TypeError):
            return str(v)
        if isinstance(v, (bool, int, str)):
            return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    return str(v)


@dataclass(frozen=True)
class Claim:
    """A paper's headline claim as a runnable experiment.

    Attributes
    ----------
    slug : str
        The paper's slug in :mod:`geode.catalog`.
    title : str
        The paper's title (taken from the catalogue).
    field : str
        The paper's field.
    claim : str
        The claim, in one sentence.
    paper_figure : str
        The paper's own number for the claim, in words (e.g. ``"4.4x lower MSE than SRMC at κ=100"``).
    baselines : tuple of str
        The baselines the paper names and the check compares against.
    thresholds : tuple of Threshold
        Fixed bounds on measured metrics.
    reproduced, partial : str or None
        Boolean rules over threshold names (see the module docstring).
    key_metric : str
        The metric shown in the report's overview table.
    run : callable
        ``run(mode, seed) -> Outcome``.
    module : str
        Module that registered the claim (used to re-import it in worker processes).
    doc : str
        The paper package's docstring: the method, the claim and every detail we had to infer.
    timing_metrics : tuple of str
        Metrics measured from wall-clock time (speed-ups). They are the only metrics allowed to differ
        between two runs with the same seed; everything else must be bit-for-bit reproducible.
    """

    slug: str
    title: str
    field: str
    claim: str
    paper_figure: str
    baselines: tuple[str, ...]
    thresholds: tuple[Threshold, ...]
    reproduced: str | None
    partial: str | None
    key_metric: str
    run: Callable[[str, int], Outcome]
    module: str
    doc: str = ""
    timing_metrics: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        names = [t.name for t in self.thresholds]
        if len(set(names)) != len(names):
            raise ValueError(f"claim {self.slug!r}: threshold names must be unique; got {names}")
        if self.reproduced is not None:
            _parse_rule(self.reproduced, set(names), "reproduced")
        if self.partial is not None:
            _parse_rule(self.partial, set(names), "partial")
        if not self.claim.strip():
            raise ValueError(f"claim {self.slug!r}: the claim sentence must not be empty")

    def verdict(self, metrics: Mapping[str, float]) -> tuple[str, list[dict[str, Any]]]:
        """Verdict and checks for measured metrics (see :func:`evaluate_verdict`)."""
        return evaluate_verdict(self.thresholds, self.reproduced, self.partial, metrics)

    def describe(self) -> dict[str, Any]:
        """The claim's fixed description (everything but ``run``), as stored with every result."""
        return {
            "slug": self.slug,
            "title": self.title,
            "field": self.field,
            "claim": self.claim,
            "paper_figure": self.paper_figure,
            "baselines": list(self.baselines),
            "thresholds": [t.to_dict() for t in self.thresholds],
            "reproduced": self.reproduced,
            "partial": self.partial,
            "key_metric": self.key_metric,
            "doc": self.doc,
            "timing_metrics": list(self.timing_metrics),
        }
