"""The types of the claim harness: :class:`Threshold`, :class:`Learned`, :class:`Outcome` and the rules.

A paper's ``claim.py`` registers one claim (see :func:`geode.claims.register`): its headline claim in one
sentence, the paper's own figure, the baselines, the thresholds that decide the verdict and the floors that
make a comparison valid (written down before anything runs) and ``run(mode, seed) -> Outcome``.

The verdict is computed, never chosen: each :class:`Threshold` compares one measured metric with a fixed
bound (or with another metric of the same run, paired), and two Boolean expressions over the thresholds'
names say when the claim counts as ``reproduced`` and when as ``partial``; anything else is ``not
reproduced``. For example::

    thresholds=(
        Threshold("strong", "mse_ratio_kappa100", ">=", 2.0, agg="geobound95"),
        Threshold("rises", "ratio_rises_with_kappa", ">=", 1.0, agg="all"),
        Threshold("some", "mse_ratio_kappa100", ">=", 1.2, agg="geobound95"),
    ),
    reproduced="strong and rises",
    partial="some",

Rules are evaluated in three-valued logic (protocol v3): a threshold is ``True``, ``False`` or unknown
(``None``: its interval still contains its bound, a floor it needs failed, an arm it compares was not tuned
properly). :func:`eval_rule3` gives the value of a rule whatever the unknowns are, or ``None`` when the
unknowns decide it; :mod:`geode.claims.verdict` turns that into a verdict.
"""

from __future__ import annotations

import ast
import itertools
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AGGREGATES",
    "MODES",
    "VERDICTS",
    "Learned",
    "Outcome",
    "Threshold",
    "all_true",
    "eval_kleene",
    "eval_rule3",
    "parse_agg",
    "parse_rule",
    "rule_names",
]

MODES: tuple[str, ...] = ("smoke", "quick", "full")
"""Run sizes: ``smoke`` (seconds, run by the tests), ``quick`` (<= ~3 min on 2 CPU cores, the default),
``full`` (the scale a GPU machine would run)."""

VERDICTS: tuple[str, ...] = ("reproduced", "partial", "not reproduced", "inconclusive")
"""``inconclusive``: the comparison cannot carry a verdict either way: a floor it needs failed, an arm was
not tuned properly, a threshold that decides is still unresolved (underpowered), or too few seeds ran."""

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
}

AGGREGATES: tuple[str, ...] = ("mean", "geomean", "median", "bound95", "geobound95", "all")
"""How a threshold combines a metric over seeds (besides ``"k of n"``, e.g. ``"4 of 5"``):

- ``mean``, ``geomean`` (for ratios), ``median``: the point statistic must satisfy the bound (no interval: the
  threshold is never *unresolved*, and the report says it is judged on a point statistic);
- ``bound95``: the one-sided 95% Student-t bound on the mean must satisfy it (the lower bound for ``>``/``>=``,
  the upper bound for ``<``/``<=``). The threshold *fails* only when the bound on the other side fails too;
  in between (the two-sided 90% interval contains the bound) it is *unresolved*;
- ``geobound95``: the same on the log scale (ratios), mapped back with ``exp``;
- ``all`` or ``"k of n"``: the bound must hold in every seed, or in at least the fraction k/n of the seeds
  (a count over the seeds that ran: always resolved).
"""

_K_OF_N = re.compile(r"^\s*(\d+)\s+of\s+(\d+)\s*$")
_NAME = re.compile(r"\S[^\n]{0,119}")
"""What an arm's name may be: the ``method`` key of a tuned table (``"sds-lora"``, ``"ta"``, ``"GPR-GNN"``,
``"AdaMerging (layer-wise)"``): up to 120 characters on one line, not starting with a space."""


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


def _names(what: str, value: Any, pattern: re.Pattern[str] | None = None) -> tuple[str, ...] | None:
    """A tuple of names from a name or a sequence of names (None stays None)."""
    if value is None:
        return None
    names = (value,) if isinstance(value, str) else tuple(value)
    ok = all(isinstance(n, str) and n and (pattern is None or pattern.fullmatch(n)) for n in names)
    if not ok or len(set(names)) != len(names):
        raise ValueError(f"{what} must be a name or a sequence of distinct names; got {value!r}")
    return names


@dataclass(frozen=True)
class Threshold:
    """A fixed bound on one measured metric, ``metrics[metric] <op> value``, combined over seeds by ``agg``.

    Parameters
    ----------
    name : str
        Identifier used in the claim's ``reproduced``/``partial`` rules and in other thresholds' ``requires``.
    metric : str
        Key into :attr:`Outcome.metrics`.
    op : {">=", ">", "<=", "<"}
        Comparison.
    value : float or str
        The bound, fixed before the claim runs; or the name of *another metric of the same run*: the threshold
        is then paired, its per-seed statistic is ``metric - value`` (``metric / value`` for ``geomean`` and
        ``geobound95``) compared with 0 (1), so that seed-to-seed noise shared by both arms cancels.
    description : str, optional
        What the threshold means, in words, for the report.
    agg : str, optional
        How the per-seed statistic is combined over seeds (see :data:`AGGREGATES`). A single run's own
        verdict applies the bound to its own value.
    control : str or tuple of str, optional
        Metric(s) of negative controls measured by the same run, put in place of ``metric``. Each must *fail*
        this threshold; if one passes, the threshold "does not discriminate" and a verdict resting on it is
        flagged. A control that could never pass (a random rotation) only shows the threshold is not vacuous.
    ablation : str, optional
        The metric of the *idea ablation* (the paper's method without its key idea) on the same scale as
        ``metric``. A headline threshold that declares one must also beat it (paired per seed, strictly, with
        the same aggregation) for the claim to be ``reproduced``; if it does not, the verdict is at most
        ``partial`` and the report says the gain is not from the paper's idea (protocol v3, section 3).
    arms : str or tuple of str, optional
        The methods this threshold is about: the ``method`` keys of the tuned table (or the arms of
        :class:`Learned` declarations). For a comparison, a floor on any of these arms is required and a
        tuning problem of any of them makes it unknown; None means every arm. For a floor, the arms whose
        validity it checks; None (or ``()``) means the bed itself, needed by every comparison.
    requires : str or tuple of str, optional
        For a comparison, exactly the floors it needs, overriding what ``arms`` implies; a failed floor makes
        only the comparisons that need it unknown.

    A missing or non-finite metric makes the threshold unknown (it never passes).
    """

    name: str
    metric: str
    op: str
    value: float | str
    description: str = ""
    agg: str = "mean"
    control: str | tuple[str, ...] | None = None
    ablation: str | None = None
    arms: str | tuple[str, ...] | None = None
    requires: str | tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name in ("and", "or", "not", "True", "False", "None"):
            raise ValueError(f"Threshold name must be a Python identifier other than and/or/not; got {self.name!r}")
        if not isinstance(self.metric, str) or not self.metric:
            raise ValueError(f"Threshold metric must be a non-empty string; got {self.metric!r}")
        if self.op not in _OPS:
            raise ValueError(f"Threshold op must be one of {', '.join(_OPS)}; got {self.op!r}")
        if isinstance(self.value, str):
            if not self.value or self.value == self.metric:
                raise ValueError(f"Threshold {self.name!r}: a paired value must name another metric")
        elif isinstance(self.value, bool) or not isinstance(self.value, (int, float)) or not math.isfinite(self.value):
            raise ValueError(f"Threshold value must be a finite number or a metric name; got {self.value!r}")
        parse_agg(self.agg)
        controls = _names(f"Threshold {self.name!r} control", self.control)
        if controls is not None:
            if not controls:
                raise ValueError(f"Threshold {self.name!r}: control must name at least one metric")
            if self.metric in controls:
                raise ValueError(f"Threshold {self.name!r}: a control cannot be the threshold's own metric")
            object.__setattr__(self, "control", controls[0] if len(controls) == 1 else controls)
        if self.ablation is not None:
            if not isinstance(self.ablation, str) or not self.ablation or self.ablation in (self.metric, self.value):
                raise ValueError(
                    f"Threshold {self.name!r}: ablation must name a metric other than the threshold's own and its "
                    f"paired value; got {self.ablation!r}"
                )
        object.__setattr__(self, "arms", _names(f"Threshold {self.name!r} arms", self.arms, _NAME))
        requires = _names(f"Threshold {self.name!r} requires", self.requires)
        if requires is not None and not all(r.isidentifier() for r in requires):
            raise ValueError(f"Threshold {self.name!r}: requires must name thresholds; got {self.requires!r}")
        object.__setattr__(self, "requires", requires)

    @property
    def controls(self) -> tuple[str, ...]:
        """The control metrics as a tuple (empty when there is none)."""
        if self.control is None:
            return ()
        return (self.control,) if isinstance(self.control, str) else tuple(self.control)

    @property
    def paired(self) -> bool:
        """Whether the bound is another metric of the same run."""
        return isinstance(self.value, str)

    @property
    def bound(self) -> float:
        """The number the per-seed statistic is compared with (0 or 1 for a paired threshold)."""
        if not self.paired:
            return float(self.value)
        return 1.0 if parse_agg(self.agg)[0] in ("geomean", "geobound95") else 0.0

    def holds(self, x: float | None) -> bool:
        """Whether a per-seed statistic satisfies the bound (None and non-finite values fail)."""
        if x is None:
            return False
        try:
            x = float(x)
        except (TypeError, ValueError):
            return False
        return math.isfinite(x) and bool(_OPS[self.op](x, self.bound))

    def statistic(self, metrics: Mapping[str, Any], metric: str | None = None) -> float | None:
        """The per-seed statistic of one run: the metric (or ``metric``, e.g. a control's), paired if the
        value is a metric name; None when a metric is missing or not finite (or a ratio is undefined)."""
        x = finite(metrics.get(metric or self.metric))
        if x is None or not self.paired:
            return x
        y = finite(metrics.get(str(self.value)))
        if y is None:
            return None
        if self.bound == 1.0:
            return x / y if x > 0 and y > 0 else None
        return x - y

    def passes(self, metrics: Mapping[str, Any]) -> bool:
        """Whether one run satisfies the bound."""
        return self.holds(self.statistic(metrics))

    def versus(self, other: str, name: str) -> Threshold:
        """The paired threshold "``metric`` strictly beats ``other``" with this one's aggregation and arms."""
        op = ">" if self.op in (">", ">=") else "<"
        return Threshold(name, self.metric, op, other, f"{self.metric} beats {other}", self.agg, arms=self.arms)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "metric": self.metric,
            "op": self.op,
            "value": self.value if self.paired else float(self.value),
            "description": self.description,
            "agg": self.agg,
            "control": list(self.controls),
            "ablation": self.ablation,
            "arms": None if self.arms is None else list(self.arms),
            "requires": None if self.requires is None else list(self.requires),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Threshold:
        if not isinstance(d, Mapping):
            raise ValueError(f"a threshold must be an object; got {type(d).__name__}")
        try:
            value = d["value"]
            if not isinstance(value, str):
                value = float(value)
            listed = {k: (tuple(d[k]) if isinstance(d.get(k), list) else d.get(k)) for k in ("arms", "requires")}
            control = d.get("control") or None
            return cls(
                str(d["name"]),
                str(d["metric"]),
                str(d["op"]),
                value,
                str(d.get("description", "")),
                str(d.get("agg", "mean")),
                tuple(control) if isinstance(control, list) else control,
                d.get("ablation"),
                listed["arms"],
                listed["requires"],
            )
        except KeyError as exc:
            raise ValueError(f"a threshold lacks the field {exc.args[0]!r}") from None
        except TypeError as exc:
            raise ValueError(f"a threshold is malformed: {exc}") from None


def finite(x: Any) -> float | None:
    """``x`` as a float when it is a finite real number (not a bool), else None."""
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


@dataclass(frozen=True)
class Learned:
    """A learned arm must beat its own untrained version and the trivial reference (protocol v3, section 3).

    Each declaration becomes up to two floors on ``arm`` (``<arm>_beats_untrained``, ``<arm>_beats_trivial``):
    paired per seed, ``metric`` strictly better than ``untrained`` (the same arm at initialisation, or with a
    random encoder) and than ``trivial`` (raw features, pixels, a constant predictor), aggregated with
    ``agg``. A comparison with an arm that fails them is unknown until the arm is fixed.

    Parameters
    ----------
    arm : str
        The arm's name (as in ``Threshold.arms`` and the tuned table).
    metric : str
        The arm's score.
    untrained, trivial : str, optional
        Metrics of its untrained version and of the trivial reference, on the same scale (at least one).
    higher : bool
        Whether a higher score is better.
    agg : str
        Aggregation of the paired floors (default ``bound95``: the gap must be clear of seed noise).
    """

    arm: str
    metric: str
    untrained: str | None = None
    trivial: str | None = None
    higher: bool = True
    agg: str = "bound95"

    def __post_init__(self) -> None:
        if not isinstance(self.arm, str) or not _NAME.fullmatch(self.arm):
            raise ValueError(f"Learned arm must be a one-line name; got {self.arm!r}")
        if self.untrained is None and self.trivial is None:
            raise ValueError(f"Learned {self.arm!r}: give the untrained version's metric, the trivial one's, or both")
        parse_agg(self.agg)

    def floors(self) -> tuple[Threshold, ...]:
        """The floors this declaration stands for."""
        base = re.sub(r"\W+", "_", self.arm).strip("_") or "arm"
        base = base if base[0].isalpha() else f"arm_{base}"
        op = ">" if self.higher else "<"
        out = []
        for what, other in (("untrained", self.untrained), ("trivial", self.trivial)):
            if other is not None:
                desc = f"floor: {self.arm} ({self.metric}) beats its {what} reference ({other})"
                out.append(Threshold(f"{base}_beats_{what}", self.metric, op, other, desc, self.agg, arms=(self.arm,)))
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        return {
            "arm": self.arm,
            "metric": self.metric,
            "untrained": self.untrained,
            "trivial": self.trivial,
            "higher": self.higher,
            "agg": self.agg,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Learned:
        if not isinstance(d, Mapping):
            raise ValueError(f"a learned arm must be an object; got {type(d).__name__}")
        try:
            return cls(
                str(d["arm"]),
                str(d["metric"]),
                d.get("untrained"),
                d.get("trivial"),
                bool(d.get("higher", True)),
                str(d.get("agg", "bound95")),
            )
        except KeyError as exc:
            raise ValueError(f"a learned arm lacks the field {exc.args[0]!r}") from None


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


def eval_kleene(tree: ast.AST, state: Mapping[str, bool | None]) -> bool | None:
    """Evaluate a parsed rule in Kleene's three-valued logic, node by node (None: unknown).

    Sound (a True or False holds whatever the unknowns are) but not complete: ``b or not b`` with ``b`` unknown
    is None. :func:`eval_rule3` is exact.
    """
    if isinstance(tree, ast.Expression):
        return eval_kleene(tree.body, state)
    if isinstance(tree, ast.Name):
        return state[tree.id]
    if isinstance(tree, ast.UnaryOp):
        v = eval_kleene(tree.operand, state)
        return None if v is None else not v
    if isinstance(tree, ast.BoolOp):
        values = [eval_kleene(v, state) for v in tree.values]
        decisive = isinstance(tree.op, ast.Or)  # True decides an or, False decides an and
        if decisive in values:
            return decisive
        return None if None in values else not decisive
    raise ValueError(f"unsupported rule node {type(tree).__name__}")  # unreachable after parse_rule


def all_true(state: Mapping[str, bool | None], names: Sequence[str]) -> bool | None:
    """Kleene's AND over ``names`` (True for none)."""
    values = [state[n] for n in names]
    return False if False in values else (None if None in values else True)


_MAX_UNKNOWN = 16


def eval_rule3(tree: ast.AST, state: Mapping[str, bool | None]) -> bool | None:
    """The value of a parsed rule whatever its unknowns are: True or False when every completion of the unknown
    (None) names it uses gives that value, None when they disagree.

    Exact by enumeration up to 16 unknown names (Kleene's logic, sound but weaker, beyond that).
    """
    unknown = [n for n in rule_names(tree) if state[n] is None]
    if not unknown:
        return eval_kleene(tree, state)
    if len(unknown) > _MAX_UNKNOWN:
        return eval_kleene(tree, state)
    seen = set()
    for combo in itertools.product((False, True), repeat=len(unknown)):
        seen.add(bool(eval_kleene(tree, {**state, **dict(zip(unknown, combo))})))
        if len(seen) > 1:
            return None
    return seen.pop()


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
