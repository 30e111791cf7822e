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
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AGGREGATES", "MODES", "VERDICTS", "Claim", "Outcome", "Threshold", "evaluate_verdict", "parse_agg"]

MODES: tuple[str, ...] = ("smoke", "quick", "full")
"""Run sizes: ``smoke`` (seconds, run by the tests), ``quick`` (<= ~3 min on 2 CPU cores, the default),
``full`` (the scale a GPU machine would run)."""

VERDICTS: tuple[str, ...] = ("reproduced", "partial", "not reproduced", "inconclusive")
"""``inconclusive``: a validity floor failed (a baseline did not learn the task, too many runs collapsed,
...) or too few seeds ran, so the comparison cannot carry a verdict either way."""

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
}


AGGREGATES: tuple[str, ...] = ("mean", "geomean", "median", "bound95", "geobound95", "all")
"""How a threshold combines a metric over seeds (besides ``"k of n"``, e.g. ``"4 of 5"``):

- ``mean``, ``geomean`` (for ratios), ``median``: the statistic must satisfy the bound;
- ``bound95``: the one-sided 95% Student-t confidence bound on the mean must satisfy it (the lower bound
  for ``>=``/``>``, the upper bound for ``<=``/``<``), so a noisy mean cannot pass by luck;
- ``geobound95``: the same on the log scale (ratios), mapped back with ``exp``;
- ``all`` or ``"k of n"``: the bound must hold in every seed, or in at least the fraction k/n of the seeds.
"""

_K_OF_N = re.compile(r"^\s*(\d+)\s+of\s+(\d+)\s*$")


def parse_agg(agg: str) -> tuple[str, float]:
    """``(kind, fraction)`` for an aggregation string; ``fraction`` is the share of seeds for ``all``/``k of n``."""
    if not isinstance(agg, str):
        raise ValueError(f"Threshold agg must be a string; got {agg!r}")
    if agg == "all":
        return "fraction", 1.0
    m = _K_OF_N.match(agg)
    if m:
        k, n = int(m.group(1)), int(m.group(2))
        if not 1 <= k <= n:
            raise ValueError(f"Threshold agg {agg!r}: need 1 <= k <= n in 'k of n'")
        return "fraction", k / n
    if agg not in AGGREGATES:
        raise ValueError(f"Threshold agg must be one of {', '.join(AGGREGATES)} or 'k of n'; got {agg!r}")
    return agg, 1.0


@dataclass(frozen=True)
class Threshold:
    """A fixed bound on one measured metric: ``metrics[metric] <op> value``.

    Parameters
    ----------
    name : str
        Identifier used in the claim's ``reproduced``/``partial``/``validity`` rules.
    metric : str
        Key into :attr:`Outcome.metrics`.
    op : {">=", ">", "<=", "<"}
        Comparison.
    value : float
        The bound, fixed before the claim runs.
    description : str, optional
        What the threshold means, in words, for the report.
    agg : str, optional
        How the metric is combined over seeds before the bound is applied: ``"mean"`` (default),
        ``"geomean"``, ``"median"``, ``"bound95"``, ``"geobound95"``, ``"all"`` or ``"k of n"``
        (see :data:`AGGREGATES`). A single run's own verdict applies the bound to its own value.
    control : str or tuple of str, optional
        Metric(s) of negative controls (an untrained network, FCFS, a random predictor, the ablation
        without the paper's idea) measured by the same run. Each must *fail* this threshold (after the
        same aggregation); if one passes, the threshold "does not discriminate" and a verdict that rests
        on it is flagged.

    A missing or non-finite metric fails the threshold.
    """

    name: str
    metric: str
    op: str
    value: float
    description: str = ""
    agg: str = "mean"
    control: str | tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name in ("and", "or", "not", "True", "False", "None"):
            raise ValueError(f"Threshold name must be a Python identifier other than and/or/not; got {self.name!r}")
        if not isinstance(self.metric, str) or not self.metric:
            raise ValueError(f"Threshold metric must be a non-empty string; got {self.metric!r}")
        if self.op not in _OPS:
            raise ValueError(f"Threshold op must be one of {', '.join(_OPS)}; got {self.op!r}")
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)) or not math.isfinite(self.value):
            raise ValueError(f"Threshold value must be a finite number; got {self.value!r}")
        parse_agg(self.agg)
        if self.control is not None:
            controls = (self.control,) if isinstance(self.control, str) else tuple(self.control)
            if not controls or not all(isinstance(c, str) and c for c in controls):
                raise ValueError(f"Threshold control must be a metric name or a tuple of them; got {self.control!r}")
            if self.metric in controls:
                raise ValueError(f"Threshold {self.name!r}: a control cannot be the threshold's own metric")
            object.__setattr__(self, "control", controls[0] if len(controls) == 1 else controls)

    @property
    def controls(self) -> tuple[str, ...]:
        """The control metrics as a tuple (empty when there is none)."""
        if self.control is None:
            return ()
        return (self.control,) if isinstance(self.control, str) else tuple(self.control)

    def holds(self, x: float | None) -> bool:
        """Whether a value satisfies the bound (None and non-finite values fail)."""
        if x is None:
            return False
        try:
            x = float(x)
        except (TypeError, ValueError):
            return False
        return math.isfinite(x) and bool(_OPS[self.op](x, float(self.value)))

    def passes(self, metrics: Mapping[str, float]) -> bool:
        """Whether the measured metric of one run satisfies the bound."""
        return self.holds(metrics.get(self.metric))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "metric": self.metric,
            "op": self.op,
            "value": float(self.value),
            "description": self.description,
            "agg": self.agg,
            "control": list(self.controls),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Threshold:
        if not isinstance(d, Mapping):
            raise ValueError(f"a threshold must be an object; got {type(d).__name__}")
        try:
            control = d.get("control") or None
            if isinstance(control, list):
                control = tuple(control)
            return cls(
                str(d["name"]),
                str(d["metric"]),
                str(d["op"]),
                float(d["value"]),
                str(d.get("description", "")),
                str(d.get("agg", "mean")),
                control,
            )
        except KeyError as exc:
            raise ValueError(f"a threshold lacks the field {exc.args[0]!r}") from None
        except TypeError as exc:
            raise ValueError(f"a threshold is malformed: {exc}") from None


def parse_rule(expr: str, names: set[str], what: str) -> ast.Expression:
    """Parse a Boolean rule over threshold names; only and/or/not, names and parentheses are allowed."""
    if not isinstance(expr, str) or not expr.strip():
        raise ValueError(f"{what} rule must be a non-empty string; got {expr!r}")
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


def rule_names(tree: ast.AST) -> list[str]:
    """The threshold names a parsed rule refers to, in order of first appearance."""
    return list(dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)))


def eval_rule(tree: ast.AST, passed: Mapping[str, bool]) -> bool:
    """Evaluate a parsed rule given which thresholds passed."""
    if isinstance(tree, ast.Expression):
        return eval_rule(tree.body, passed)
    if isinstance(tree, ast.Name):
        return passed[tree.id]
    if isinstance(tree, ast.UnaryOp):
        return not eval_rule(tree.operand, passed)
    if isinstance(tree, ast.BoolOp):
        values = [eval_rule(v, passed) for v in tree.values]
        return all(values) if isinstance(tree.op, ast.And) else any(values)
    raise ValueError(f"unsupported rule node {type(tree).__name__}")  # unreachable after parse_rule


def decide_verdict(
    passed: Mapping[str, bool],
    verdict_names: Sequence[str],
    reproduced: ast.AST | None,
    partial: ast.AST | None,
    validity: ast.AST | None,
) -> tuple[str, list[str]]:
    """The verdict given which thresholds passed, and the passing thresholds that carried it.

    ``verdict_names`` are the thresholds the default ``reproduced`` rule requires (all but the floors).
    """
    if validity is not None and not eval_rule(validity, passed):
        return "inconclusive", []
    if reproduced is None:
        if all(passed[n] for n in verdict_names):
            return "reproduced", list(verdict_names)
    elif eval_rule(reproduced, passed):
        return "reproduced", [n for n in rule_names(reproduced) if passed[n]]
    if partial is not None and eval_rule(partial, passed):
        return "partial", [n for n in rule_names(partial) if passed[n]]
    return "not reproduced", []


def evaluate_verdict(
    thresholds: Sequence[Threshold],
    reproduced: str | None,
    partial: str | None,
    metrics: Mapping[str, float],
    validity: str | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """Verdict and per-threshold checks for the metrics of one run.

    ``reproduced`` defaults to every threshold that is not a validity floor holding; ``partial`` to never;
    ``validity`` to always (if it fails the verdict is ``inconclusive``). For several seeds, with
    aggregation, controls and flags, see :func:`geode.claims.verdict.evaluate`.

    Returns
    -------
    verdict : str
        One of :data:`VERDICTS`.
    checks : list of dict
        One per threshold: its fields plus ``measured`` (float or None) and ``passed`` (bool).
    """
    names = {t.name for t in thresholds}
    rep = parse_rule(reproduced, names, "reproduced") if reproduced is not None else None
    part = parse_rule(partial, names, "partial") if partial is not None else None
    valid = parse_rule(validity, names, "validity") if validity is not None else None
    floors = set(rule_names(valid)) if valid is not None else set()
    passed = {t.name: t.passes(metrics) for t in thresholds}
    verdict, _ = decide_verdict(passed, [t.name for t in thresholds if t.name not in floors], rep, part, valid)
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
    tuned : list of dict, optional
        What equal tuning selected for each method (rows of :meth:`geode.claims.TuneResult.table`): the
        method, the selected values, the validation score, the trials spent and any value on its grid's edge.
    """

    metrics: dict[str, float]
    table: list[dict[str, Any]] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    summary: str = ""
    notes: list[str] = field(default_factory=list)
    tuned: list[dict[str, Any]] = field(default_factory=list)

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
        self.table = _rows("table", self.table)
        self.tuned = _rows("tuned", self.tuned)
        if isinstance(self.notes, str) or not all(isinstance(n, str) for n in self.notes):
            raise TypeError("notes must be a list of strings")
        self.notes = list(self.notes)
        if not isinstance(self.summary, str) or "\n" in self.summary.strip():
            raise ValueError("summary must be a one-line string")
        self.summary = self.summary.strip()
        for name in self.figures:
            if not (isinstance(name, str) and FIGURE_NAME.fullmatch(name)):
                raise ValueError(f"figure names must be ASCII letters, digits, - or _; got {name!r}")


FIGURE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""What a figure name may be: it becomes a file name under the results folder."""


def _rows(what: str, rows: Any) -> list[dict[str, Any]]:
    if isinstance(rows, (str, bytes, Mapping)):
        raise TypeError(f"{what} must be a list of dicts; got {type(rows).__name__}")
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"{what} row {i} must be a dict; got {type(row).__name__}")
        out.append({str(k): _plain(v) for k, v in row.items()})
    return out


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
        Fixed bounds on measured metrics: those the verdict rules use, and the validity floors.
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
    validity : str or None
        Boolean rule over threshold names (the floors) that must hold for the comparison to mean anything;
        when it fails the verdict is ``inconclusive``.
    min_seeds : int
        Seeds the verdict needs (3 by the protocol); fewer make it ``inconclusive``.
    replication : str
        For a claim with ``min_seeds < 3``: how it replicates inside one run (e.g. "60 repetitions x 3
        data draws per run").
    revision : int
        Bumped by hand when ``run`` changes what it measures; part of :meth:`definition_hash`, so results
        of an older revision are stale.
    assets : tuple of str
        Names of :data:`geode.data.ASSETS` the claim needs in ``quick`` mode.
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
    validity: str | None = None
    min_seeds: int = 3
    replication: str = ""
    revision: int = 1
    assets: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        names = [t.name for t in self.thresholds]
        if len(set(names)) != len(names):
            raise ValueError(f"claim {self.slug!r}: threshold names must be unique; got {names}")
        for rule, what in ((self.reproduced, "reproduced"), (self.partial, "partial"), (self.validity, "validity")):
            if rule is not None:
                parse_rule(rule, set(names), f"claim {self.slug!r}: {what}")
        if not self.claim.strip():
            raise ValueError(f"claim {self.slug!r}: the claim sentence must not be empty")
        if isinstance(self.min_seeds, bool) or not isinstance(self.min_seeds, int) or not 1 <= self.min_seeds <= 100:
            raise ValueError(f"claim {self.slug!r}: min_seeds must be an int in [1, 100]; got {self.min_seeds!r}")
        if self.min_seeds < 3 and not self.replication.strip():
            raise ValueError(
                f"claim {self.slug!r}: min_seeds={self.min_seeds} < 3 needs replication='how the run replicates "
                "internally' (protocol section 2)"
            )
        if isinstance(self.revision, bool) or not isinstance(self.revision, int) or self.revision < 1:
            raise ValueError(f"claim {self.slug!r}: revision must be an int >= 1; got {self.revision!r}")

    def verdict(self, metrics: Mapping[str, float]) -> tuple[str, list[dict[str, Any]]]:
        """Verdict and checks for the metrics of one run (see :func:`evaluate_verdict`)."""
        return evaluate_verdict(self.thresholds, self.reproduced, self.partial, metrics, self.validity)

    def evaluate(self, runs: Sequence[Mapping[str, float]]) -> Any:
        """The verdict over several runs (seeds): see :func:`geode.claims.verdict.evaluate`."""
        from geode.claims.verdict import evaluate

        return evaluate(
            self.thresholds,
            runs,
            reproduced=self.reproduced,
            partial=self.partial,
            validity=self.validity,
            min_seeds=self.min_seeds,
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
            "thresholds": [t.to_dict() for t in self.thresholds],
            "reproduced": self.reproduced,
            "partial": self.partial,
            "validity": self.validity,
            "min_seeds": self.min_seeds,
            "replication": self.replication,
            "revision": self.revision,
            "key_metric": self.key_metric,
            "doc": self.doc,
            "timing_metrics": list(self.timing_metrics),
            "assets": list(self.assets),
        }
        d["hash"] = definition_hash(d)
        return d

    def definition_hash(self) -> str:
        """A hash of what decides the verdict (thresholds, rules, seeds, revision, metrics' roles)."""
        return definition_hash(self.describe())


_HASHED = (
    "slug",
    "thresholds",
    "reproduced",
    "partial",
    "validity",
    "min_seeds",
    "revision",
    "key_metric",
    "timing_metrics",
)


def definition_hash(description: Mapping[str, Any]) -> str:
    """The hash of a claim description's verdict-deciding fields (a result with another hash is stale)."""
    import hashlib
    import json

    core = {k: description.get(k) for k in _HASHED}
    blob = json.dumps(core, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]
