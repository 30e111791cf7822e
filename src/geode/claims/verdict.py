"""Verdicts over seeds (protocol v3): intervals, three-valued rules, scoped floors, tuning coverage, ablations.

A claim's verdict is computed, never chosen (protocol: ``shared/notes/claim-protocol.md``). Given the
:class:`Rules` of a claim (its thresholds, floors, learned arms, tuned methods and rules) and the runs of
one or more seeds, :func:`evaluate`

1. combines each threshold's per-seed statistic with its ``agg``. A threshold is *passed*, *failed*, or
   *unresolved* when its interval (the two one-sided 95% t bounds of ``bound95``/``geobound95``) still
   contains its bound;
2. checks the floors (declared ones and those that :class:`~geode.claims.types.Learned` arms stand for). A
   failed or unresolved floor makes unknown only the comparisons that need it: those that name it in
   ``requires``, or whose ``arms`` meet the floor's arms (a floor without arms is needed by all);
3. checks tuning coverage: every declared tuned method is in each run's tuned table, with the same budget
   as the others, at least 3 values on each numeric knob, and no selection left on a grid's edge. A
   comparison with a method that fails is unknown, with the reason;
4. decides the verdict from the ``reproduced`` and ``partial`` rules in three-valued logic: a verdict that
   every completion of the unknowns gives decides; otherwise the claim is ``inconclusive`` (underpowered,
   when the unknowns that decide are unresolved intervals). A headline threshold with an idea ablation must
   also beat it for ``reproduced``; if it does not, the verdict is at most ``partial``;
5. requires the seeds to agree: ``reproduced`` needs at least k of n seeds to read ``reproduced`` on their
   own (k = ceil(2n/3) unless the claim says otherwise), ``partial`` at least k to read ``partial`` or better;
6. applies every threshold to its negative controls, and flags a verdict resting on a threshold that does
   not discriminate, or on a point statistic, or without an idea ablation.
"""

from __future__ import annotations

import ast
import itertools
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from geode.claims.types import (
    Learned,
    Threshold,
    all_true,
    eval_kleene,
    eval_rule3,
    finite,
    parse_agg,
    parse_rule,
    rule_names,
)

__all__ = ["DISCRIMINATION", "Evaluation", "Rules", "aggregate", "coverage", "evaluate"]

DISCRIMINATION: tuple[str, ...] = ("discriminates", "does not discriminate", "control unresolved", "no control")
"""Whether a threshold's negative controls fail it: all shown to fail, one passes, one is neither (its interval
contains the bound, or its metric is missing), or there is none."""
_ORDER = ("not reproduced", "partial", "reproduced")
_STANDARD_TUNED_KEYS = frozenset(
    {"method", "selected", "val_score", "trials", "grid", "budget", "extend", "axes", "edge", "seed"}
)
_MAX_ENUMERATED = 16  # unknowns enumerated exactly; beyond that every unknown counts as deciding


def _t95(df: int) -> float:
    """The one-sided 95% quantile of Student's t with ``df`` degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(0.95, df))


@dataclass(frozen=True)
class Rules:
    """What decides a claim's verdict, apart from the measurements.

    Parameters
    ----------
    thresholds : tuple of Threshold
        The verdict's thresholds (the rules name them).
    floors : tuple of Threshold
        Validity floors: what each arm (or the bed) must reach for a comparison to mean anything.
    reproduced, partial : str, optional
        Boolean rules over the verdict thresholds; ``reproduced`` defaults to all of them holding, ``partial``
        to never.
    min_seeds : int
        Fewer runs make the verdict ``inconclusive``.
    agreement : float
        Share of seeds that must read a verdict on their own for the claim to read it (default 2/3).
    method : tuple of str
        The paper's own method (and law): a declared floor on it is refused (that is the claim).
    tuned : tuple of str
        Methods (``method`` keys of the tuned table) that must be tuned with equal budgets.
    untuned : mapping of str to str
        Methods with nothing to tune, each with the reason.
    learned : tuple of Learned
        Learned arms with their untrained and trivial references.
    """

    thresholds: tuple[Threshold, ...]
    floors: tuple[Threshold, ...] = ()
    reproduced: str | None = None
    partial: str | None = None
    min_seeds: int = 1
    agreement: float = 2 / 3
    method: tuple[str, ...] = ()
    tuned: tuple[str, ...] = ()
    untuned: Mapping[str, str] = field(default_factory=dict)
    learned: tuple[Learned, ...] = ()

    def __post_init__(self) -> None:
        for name in ("thresholds", "floors", "method", "tuned", "learned"):
            value = getattr(self, name)
            object.__setattr__(self, name, (value,) if isinstance(value, str) else tuple(value))
        object.__setattr__(self, "untuned", dict(self.untuned))
        if not self.thresholds:
            raise ValueError("at least one verdict threshold is required")
        names = [t.name for t in (*self.thresholds, *self.all_floors)]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"threshold and floor names must be unique; repeated: {dup}")
        verdict_names = {t.name for t in self.thresholds}
        for rule, what in ((self.reproduced, "reproduced"), (self.partial, "partial")):
            if rule is not None:
                parse_rule(rule, verdict_names, what)
        if isinstance(self.min_seeds, bool) or not isinstance(self.min_seeds, int) or not 1 <= self.min_seeds <= 100:
            raise ValueError(f"min_seeds must be an int in [1, 100]; got {self.min_seeds!r}")
        if isinstance(self.agreement, bool) or not (
            isinstance(self.agreement, (int, float)) and 0 < self.agreement <= 1
        ):
            raise ValueError(f"agreement must be a share of seeds in (0, 1]; got {self.agreement!r}")
        both = sorted(set(self.tuned) & set(self.untuned))
        if both:
            raise ValueError(f"methods declared both tuned and untuned: {both}")
        if any(not isinstance(r, str) or not r.strip() for r in self.untuned.values()):
            raise ValueError("every untuned method needs a reason (why it has nothing to tune)")
        for f in self.floors:
            if f.ablation is not None or f.requires is not None:
                raise ValueError(f"floor {f.name!r}: a floor takes neither an ablation nor requires")
            on_method = sorted(set(f.arms or ()) & set(self.method))
            if on_method:
                raise ValueError(
                    f"floor {f.name!r} is on the paper's own method {on_method}: that is the claim, not its "
                    "validity (protocol v3, section 3); make it a verdict threshold or drop it"
                )
        covered = {*self.tuned, *self.untuned}
        floor_names = {f.name for f in self.all_floors}
        named = [("method", m) for m in self.method] + [("learned arm", a.arm) for a in self.learned]
        named += [(f"threshold {t.name!r}", a) for t in (*self.thresholds, *self.floors) for a in t.arms or ()]
        if covered or self.method:
            loose = [f"{what} {arm!r}" for what, arm in named if arm not in covered]
            if loose:
                raise ValueError(
                    f"every arm must be declared tuned (its tuning is checked) or untuned with a reason; not "
                    f"declared: {', '.join(dict.fromkeys(loose))}"
                )
        for t in self.thresholds:
            missing = sorted(set(t.requires or ()) - floor_names)
            if missing:
                raise ValueError(f"threshold {t.name!r} requires {missing}, which are not floors")

    @property
    def arms(self) -> set[str]:
        """Every declared arm: the method, tuned and untuned methods, learned arms."""
        return {*self.method, *self.tuned, *self.untuned, *(a.arm for a in self.learned)}

    @property
    def all_floors(self) -> tuple[Threshold, ...]:
        """The declared floors and those the learned arms stand for."""
        return self.floors + tuple(f for a in self.learned for f in a.floors())

    @property
    def headline(self) -> list[str]:
        """The thresholds the ``reproduced`` rule names (all verdict thresholds by default)."""
        if self.reproduced is None:
            return [t.name for t in self.thresholds]
        return rule_names(parse_rule(self.reproduced, {t.name for t in self.thresholds}, "reproduced"))

    def ablations(self) -> list[Threshold]:
        """The headline thresholds that declare an idea ablation."""
        head = set(self.headline)
        return [t for t in self.thresholds if t.name in head and t.ablation is not None]

    def required_floors(self, t: Threshold) -> list[str]:
        """The floors comparison ``t`` needs: those whose arms meet its arms (a floor without arms is the bed's,
        needed by all), or exactly its ``requires``; the learned floors of its arms in either case."""
        learned = [f.name for a in self.learned for f in a.floors() if t.arms is None or a.arm in t.arms]
        if t.requires is not None:
            return list(dict.fromkeys([*t.requires, *learned]))
        out = []
        for f in self.all_floors:
            if t.arms is None or not f.arms or set(f.arms) & set(t.arms):
                out.append(f.name)
        return out

    def metrics(self) -> set[str]:
        """Every metric the rules refer to: thresholds, floors, controls, ablations and paired values."""
        out: set[str] = set()
        for t in (*self.thresholds, *self.all_floors):
            out |= {t.metric, *t.controls}
            if t.paired:
                out.add(str(t.value))
            if t.ablation:
                out.add(t.ablation)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "thresholds": [t.to_dict() for t in self.thresholds],
            "floors": [t.to_dict() for t in self.floors],
            "reproduced": self.reproduced,
            "partial": self.partial,
            "min_seeds": self.min_seeds,
            "agreement": self.agreement,
            "method": list(self.method),
            "tuned": list(self.tuned),
            "untuned": dict(self.untuned),
            "learned": [a.to_dict() for a in self.learned],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Rules:
        """The rules of a stored claim description (schema 2 descriptions, with a ``validity`` rule, too)."""
        if not isinstance(d, Mapping):
            raise ValueError("a claim description must be an object")
        ths = [Threshold.from_dict(t) for t in d.get("thresholds") or []]
        floors = [Threshold.from_dict(t) for t in d.get("floors") or []]
        if d.get("validity"):  # schema 2: the floors were the thresholds its validity rule named
            names = {t.name for t in ths}
            named = set(rule_names(parse_rule(d["validity"], names, "validity")))
            floors += [t for t in ths if t.name in named]
            ths = [t for t in ths if t.name not in named]
        untuned = d.get("untuned") or {}
        if not isinstance(untuned, Mapping):
            raise ValueError("untuned must map methods to reasons")
        return cls(
            thresholds=tuple(ths),
            floors=tuple(floors),
            reproduced=d.get("reproduced"),
            partial=d.get("partial"),
            min_seeds=int(d.get("min_seeds", 1)),
            agreement=float(d.get("agreement", 2 / 3)),
            method=tuple(d.get("method") or ()),
            tuned=tuple(d.get("tuned") or ()),
            untuned={str(k): str(v) for k, v in untuned.items()},
            learned=tuple(Learned.from_dict(a) for a in d.get("learned") or []),
        )


# ------------------------------------------------------------------------------------------ statistics
def _combine(xs: list[float], kind: str) -> tuple[float | None, float | None, float | None]:
    """(point, low, high) of per-seed statistics: the interval only for the bound kinds with 2+ seeds."""
    if kind in ("geomean", "geobound95"):
        if min(xs) <= 0:
            return None, None, None
        xs = [math.log(x) for x in xs]
    back = math.exp if kind in ("geomean", "geobound95") else float
    if kind == "median":
        return float(statistics.median(xs)), None, None
    mean = statistics.fmean(xs)
    if kind not in ("bound95", "geobound95") or len(xs) < 2:
        return back(mean), None, None
    half = _t95(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return back(mean), back(mean - half), back(mean + half)


def aggregate(values: Sequence[float | None], threshold: Threshold) -> float | None:
    """The number ``threshold`` is applied to over the per-seed ``values`` (None when it cannot be computed).

    The fraction of seeds in which the bound holds for ``all`` and ``"k of n"``; the point statistic for
    ``mean``, ``geomean`` and ``median``; the one-sided 95% bound in the direction that makes the threshold
    harder for ``bound95`` and ``geobound95``.
    """
    kind, _ = parse_agg(threshold.agg)
    xs = [finite(v) for v in values]
    if not xs or any(x is None for x in xs):
        return None  # a missing or non-finite seed: undefined (the threshold is "missing", never passed)
    if kind == "fraction":
        return sum(threshold.holds(x) for x in xs) / len(xs)
    point, lo, hi = _combine([x for x in xs if x is not None], kind)
    if kind in ("bound95", "geobound95"):
        return lo if threshold.op in (">", ">=") else hi
    return point


def _judge(t: Threshold, values: list[float | None], single: bool) -> dict[str, Any]:
    """A threshold's state over per-seed statistics: passed, failed, unresolved or missing, with numbers."""
    kind, fraction = parse_agg(t.agg)
    out: dict[str, Any] = {"measured": None, "point": None, "interval": None}
    if not values or any(v is None for v in values):
        out["state"] = "missing"
        return out
    xs = [float(v) for v in values if v is not None]
    if single or kind == "fraction":
        share = sum(t.holds(x) for x in xs) / len(xs)
        if kind == "fraction":
            out["measured"] = out["point"] = share
        else:
            out["measured"] = out["point"] = xs[0] if len(xs) == 1 else statistics.fmean(xs)
        out["state"] = "passed" if share >= fraction - 1e-12 else "failed"
        return out
    point, lo, hi = _combine(xs, kind)
    out["point"] = point
    if point is None:
        out["state"] = "missing"  # a ratio of a non-positive value
        return out
    if kind not in ("bound95", "geobound95"):
        out["measured"] = point
        out["state"] = "passed" if t.holds(point) else "failed"
        return out
    if lo is None or hi is None:
        out["state"] = "unresolved"  # one seed: no interval yet
        return out
    hard, easy = (lo, hi) if t.op in (">", ">=") else (hi, lo)
    out["measured"], out["interval"] = hard, [lo, hi]
    out["state"] = "passed" if t.holds(hard) else ("failed" if not t.holds(easy) else "unresolved")
    return out


def _as_bool(state: str) -> bool | None:
    return True if state == "passed" else (False if state == "failed" else None)


# ------------------------------------------------------------------------------------- tuning coverage
def _axes(text: Any) -> dict[str, int] | None:
    if not isinstance(text, str):
        return None
    out = {}
    for part in text.split(","):
        name, _, n = part.strip().rpartition(":")
        if name and n.isdigit():
            out[name] = int(n)
    return out


def _tag(key: str, declared: str) -> str | None:
    """Which study a tuned-table key belongs to for a declared method: None when it does not match, "" for an
    exact name, what the wildcards stand for in a pattern (``"cora"`` for ``"cora: GCN"`` under ``"*: GCN"``)."""
    if not any(ch in declared for ch in "*?"):
        return "" if key == declared else None
    regex = "".join("(.*)" if ch == "*" else "(.)" if ch == "?" else re.escape(ch) for ch in declared)
    m = re.fullmatch(regex, key)
    return None if m is None else "|".join(m.groups())


def coverage(
    rules: Rules, tuned: Sequence[Sequence[Mapping[str, Any]] | None], seeds: Sequence[int] | None = None
) -> dict[str, list[str]]:
    """For each declared tuned method, why its tuning fails the protocol in these runs (empty: it passes).

    ``tuned`` holds each run's tuned table (``seeds`` names the runs in the messages). Within a study (the rows
    that share their other columns, e.g. ``K``, and, for a declared pattern such as ``"*: GCN"``, what its
    wildcard stands for: ``"cora"``), a declared method fails when it is missing, when it had fewer
    configurations than another declared method (``min(grid, budget)``: a baseline left with a smaller grid, the
    spirit case), when it shares no budget with them, when a numeric knob has fewer than 3 values or the table
    does not say (no ``axes``), or when a selection is left on a grid's edge. Each problem is one line that
    counts the seeds and studies it concerns.
    """
    names = [str(s) for s in seeds] if seeds is not None else [str(i) for i in range(len(tuned))]
    problems: dict[str, dict[str, list[str]]] = {m: {} for m in rules.tuned}
    edges: dict[str, dict[str, int]] = {m: {} for m in rules.tuned}
    rows_seen: dict[str, int] = {m: 0 for m in rules.tuned}

    def note(m: str, what: str, detail: str) -> None:
        problems[m].setdefault(what, [])
        if detail not in problems[m][what]:
            problems[m][what].append(detail)

    for seed, table in zip(names, tuned):
        rows = [r for r in table or [] if isinstance(r, Mapping)]
        studies: dict[tuple[Any, ...], dict[str, list[Mapping[str, Any]]]] = {}
        tags_of: dict[str, set[str]] = {m: set() for m in rules.tuned}
        for m in rules.tuned:
            for r in rows:
                tag = _tag(str(r.get("method")), m)
                if tag is None:
                    continue
                tags_of[m].add(tag)
                cols = tuple(sorted((k, str(v)) for k, v in r.items() if k not in _STANDARD_TUNED_KEYS))
                studies.setdefault((cols, tag), {}).setdefault(m, []).append(r)
        all_tags = set().union(*tags_of.values()) - {""}
        for m in rules.tuned:
            if not tags_of[m]:
                note(m, "not in the tuned table of seed(s)", seed)
            elif any(ch in m for ch in "*?") and all_tags - tags_of[m]:
                note(m, "missing from studies", f"{', '.join(sorted(all_tags - tags_of[m]))} (seed {seed})")
        for (cols, tag), by_method in studies.items():
            where = ", ".join(f"{k}={v}" for k, v in cols) + (f" {tag}" if tag else "")
            sizes = {m: max(_configs(r) for r in rs) for m, rs in by_method.items()}
            budgets = {
                m: {(r.get("budget", r.get("trials")), r.get("extend", 0)) for r in rs} for m, rs in by_method.items()
            }
            if len(budgets) > 1 and not set.intersection(*budgets.values()):
                for m in budgets:
                    note(m, "shares no budget with the other methods in", f"{where or 'the study'} (seed {seed})")
            most = max(sizes.values())
            for m, n in sizes.items():
                if n < most:
                    top = next(x for x, v in sizes.items() if v == most)
                    note(m, "fewer configurations than the others", f"{n:g} vs {top} {most:g}")
            for m, rs in by_method.items():
                for r in rs:
                    rows_seen[m] += 1
                    axes = _axes(r.get("axes"))
                    if axes is None:
                        note(m, "knob values not recorded (a tuned row without axes)", f"seed {seed}")
                    for knob, n in (axes or {}).items():
                        if n < 3:
                            note(m, "knobs with fewer than 3 values", f"{knob} ({n})")
                    for knob in _edge_knobs(r.get("edge")):
                        edges[m][knob] = edges[m].get(knob, 0) + 1
    out: dict[str, list[str]] = {}
    for m in rules.tuned:
        lines = [f"{what}: {', '.join(details)}" for what, details in problems[m].items()]
        if edges[m]:
            where = ", ".join(f"{k} {n}x" for k, n in edges[m].items())
            lines.append(f"selected on a grid edge in {rows_seen[m]} tuned row(s): {where}")
        out[m] = lines
    return out


def _configs(row: Mapping[str, Any]) -> float:
    """The configurations a tuned row's method was given before any extension: min(grid, budget)."""
    values = [finite(row.get(k)) for k in ("grid", "budget")]
    known = [v for v in values if v is not None]
    if known:
        return min(known)
    trials = finite(row.get("trials"))
    return trials if trials is not None else 0.0


def _edge_knobs(text: Any) -> list[str]:
    """The knobs an ``edge`` cell names (``"lr=0.01 at the upper edge of [...]; wd=0 at ..."``)."""
    if not isinstance(text, str) or not text.strip():
        return []
    found = re.findall(r"(?:^|;\s*)([^=;]+?)=", text)
    return [k.strip() for k in found] or ["?"]


# ---------------------------------------------------------------------------------------------- verdict
@dataclass
class Evaluation:
    """The outcome of :func:`evaluate`.

    Attributes
    ----------
    verdict : str
        One of :data:`geode.claims.VERDICTS`.
    checks : list of dict
        One per verdict threshold and floor: its definition; ``role`` (``"verdict"`` or ``"floor"``);
        ``per_seed`` statistics; ``measured`` (what the bound is applied to), ``point`` and ``interval``;
        ``state`` (``passed``, ``failed``, ``unresolved``, ``missing``); for a verdict threshold ``needs`` (the
        floors it requires), ``effective`` (``passed``, ``failed`` or ``unknown``) and ``void`` (why it is
        unknown); ``controls`` and ``discrimination``; ``ablation`` (the paired check against the idea
        ablation, or None).
    coverage : dict of str to list of str
        For each declared tuned method, why its tuning fails (empty when it passes).
    reasons : list of str
        Why the verdict is ``inconclusive`` (empty otherwise).
    underpowered : list of str
        The unresolved thresholds that decide an ``inconclusive`` verdict (more seeds may resolve them).
    at_least : str or None
        For an ``inconclusive`` verdict, the lowest verdict any completion of the unknowns gives.
    carried_by, flags, seed_verdicts, seeds, n_seeds, min_seeds
        The thresholds that carried a ``reproduced``/``partial`` verdict; warnings a reader must see; each
        run's own verdict; the seeds' ids; their number and the minimum.
    """

    verdict: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    coverage: dict[str, list[str]] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    underpowered: list[str] = field(default_factory=list)
    at_least: str | None = None
    carried_by: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    seed_verdicts: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    n_seeds: int = 0
    min_seeds: int = 1

    @property
    def unstable(self) -> bool:
        """True when the runs' own verdicts disagree."""
        return len(set(self.seed_verdicts)) > 1

    @property
    def label(self) -> str:
        """The verdict as shown: ``inconclusive (underpowered: a, b)`` names what more seeds may resolve."""
        if self.verdict == "inconclusive" and self.underpowered:
            return f"inconclusive (underpowered: {', '.join(self.underpowered)})"
        return self.verdict

    @property
    def failed_floors(self) -> list[str]:
        return [c["name"] for c in self.checks if c["role"] == "floor" and c["state"] == "failed"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "label": self.label,
            "checks": self.checks,
            "coverage": self.coverage,
            "reasons": self.reasons,
            "underpowered": self.underpowered,
            "at_least": self.at_least,
            "carried_by": self.carried_by,
            "flags": self.flags,
            "seed_verdicts": self.seed_verdicts,
            "seeds": self.seeds,
            "unstable": self.unstable,
            "n_seeds": self.n_seeds,
            "min_seeds": self.min_seeds,
        }


def evaluate(
    rules: Rules,
    runs: Sequence[Mapping[str, Any]],
    *,
    tuned: Sequence[Sequence[Mapping[str, Any]]] | None = None,
    seeds: Sequence[int] | None = None,
    single: bool = False,
) -> Evaluation:
    """The verdict of a claim over the metrics of ``runs`` (one mapping per seed, all of one mode).

    Parameters
    ----------
    rules : Rules
    runs : sequence of mapping
        The metrics of each run.
    tuned : sequence of list of dict, optional
        Each run's tuned table (``Outcome.tuned``), for the coverage of the declared tuned methods; without it
        the coverage is not checked.
    seeds : sequence of int, optional
        The runs' seeds, for the report.
    single : bool
        Judge one run on its own (a seed's own verdict): each bound applies to the run's own value and the
        seeds' agreement is not asked.
    """
    runs = list(runs)
    tuned_tables = list(tuned) if tuned is not None else [None for _ in runs]
    if len(tuned_tables) != len(runs):
        raise ValueError("tuned must hold one table per run")
    cov = coverage(rules, tuned_tables, seeds) if rules.tuned and tuned is not None else {}
    cov_bad = {m: p for m, p in cov.items() if p}

    floors: dict[str, dict[str, Any]] = {}
    for f in rules.all_floors:
        floors[f.name] = {**_check(f, runs, single), "role": "floor"}

    checks: list[dict[str, Any]] = []
    state: dict[str, bool | None] = {}
    why: dict[str, list[tuple[str, str]]] = {}  # name -> [(kind, subject)]: why it is unknown
    for t in rules.thresholds:
        c = {**_check(t, runs, single), "role": "verdict"}
        needs = rules.required_floors(t)
        void = [(f"floor {floors[n]['state']}", n) for n in needs if floors[n]["state"] != "passed"]
        arms = t.arms if t.arms is not None else rules.tuned
        void += [("untuned", m) for m in arms if m in cov_bad]
        own = _as_bool(c["state"])
        state[t.name] = None if (void or own is None) else own
        why[t.name] = ([(c["state"], t.name)] if own is None else []) + void
        c.update(needs=needs, effective=_effective(state[t.name]), void=[_why_text(w) for w in why[t.name]])
        if t.ablation is not None:
            a = _check(t.versus(t.ablation, f"{t.name}_beats_ablation"), runs, single)
            a_own = _as_bool(a["state"])
            key = f"{t.name}__ablation"
            subject = f"{t.name} (vs its ablation)"
            state[key] = None if (void or a_own is None) else a_own
            why[key] = ([(a["state"], subject)] if a_own is None else []) + void
            c["ablation"] = {"metric": t.ablation, **a, "effective": _effective(state[key])}
        else:
            c["ablation"] = None
        checks.append(c)
    checks += [{**floors[f.name], "effective": floors[f.name]["state"]} for f in rules.all_floors]

    names = {t.name for t in rules.thresholds}
    rep = parse_rule(rules.reproduced, names, "reproduced") if rules.reproduced is not None else None
    part = parse_rule(rules.partial, names, "partial") if rules.partial is not None else None
    ablations = [f"{t.name}__ablation" for t in rules.ablations()]
    ev = Evaluation(verdict="inconclusive", checks=checks, coverage=cov, n_seeds=len(runs), min_seeds=rules.min_seeds)
    ev.seeds = list(seeds) if seeds is not None else list(range(len(runs)))
    if not single:
        ev.seed_verdicts = [
            evaluate(rules, [r], tuned=None if tb is None else [tb], single=True).verdict
            for r, tb in zip(runs, tuned_tables)
        ]
    completions, deciding = _decide(rules, rep, part, ablations, state)
    outcomes = {v: _agreed(v, ev.seed_verdicts, rules.agreement) for v in completions}
    finals = sorted({o for o, _ in outcomes.values()}, key=lambda v: (_ORDER + ("inconclusive",)).index(v))
    if len(finals) == 1:
        ev.verdict = finals[0]
        why = next(w for _, w in outcomes.values())
        if why:
            (ev.reasons if ev.verdict == "inconclusive" else ev.flags).append(why)
    else:
        ev.at_least = None if "inconclusive" in finals else finals[0]
        blocking = [w for n in deciding for w in why[n]]
        if blocking and all(kind in _MORE_SEEDS_HELP for kind, _ in blocking):
            ev.underpowered = list(dict.fromkeys(subject for kind, subject in blocking if kind == "unresolved"))
            ev.underpowered += [f"floor {f}" for kind, f in blocking if kind == "floor unresolved"]
        ev.reasons = _reasons(blocking)
        if ev.at_least not in (None, "not reproduced"):
            ev.reasons.append(f"{ev.at_least} at least, whatever the unknowns are")
    if not single:
        if len(runs) < rules.min_seeds:
            ev.reasons.append(f"{len(runs)} seed(s) ran; the verdict needs at least {rules.min_seeds}")
            ev.verdict, ev.underpowered, ev.at_least = "inconclusive", [], None
        if ev.unstable:
            ev.flags.append("unstable: the seeds disagree (" + ", ".join(ev.seed_verdicts) + ")")
    _carry(ev, rules, rep, part, state)
    return ev


_MORE_SEEDS_HELP = ("unresolved", "floor unresolved")
_WHY = {
    "unresolved": ("{} unresolved", "unresolved (the interval still contains the bound)"),
    "missing": ("{} missing", "metric missing or undefined"),
    "floor failed": ("floor {} failed", "floor failed"),
    "floor unresolved": ("floor {} unresolved", "floor unresolved"),
    "floor missing": ("floor {} missing", "floor's metric missing"),
    "untuned": ("{} not tuned by the protocol", "not tuned by the protocol (see the tuning coverage)"),
}


def _why_text(w: tuple[str, str]) -> str:
    return _WHY[w[0]][0].format(w[1])


def _reasons(blocking: list[tuple[str, str]]) -> list[str]:
    """One line per kind of unknown that decides the verdict, naming what it concerns."""
    by_kind: dict[str, list[str]] = {}
    for kind, subject in blocking:
        by_kind.setdefault(kind, [])
        if subject not in by_kind[kind]:
            by_kind[kind].append(subject)
    return [
        f"{_WHY[k][1]}: {', '.join(v)}" for k, v in sorted(by_kind.items(), key=lambda kv: list(_WHY).index(kv[0]))
    ]


def _check(t: Threshold, runs: list[Mapping[str, Any]], single: bool) -> dict[str, Any]:
    per_seed = [t.statistic(r) for r in runs]
    c = {**t.to_dict(), "per_seed": per_seed, **_judge(t, per_seed, single)}
    c["passed"] = c["state"] == "passed"
    controls = []
    for cm in t.controls:
        cj = _judge(t, [t.statistic(r, cm) for r in runs], single)
        shown = cj["measured"]
        if cj["interval"] is not None:  # a control must fail: show the bound on the easy side
            shown = cj["interval"][1] if t.op in (">", ">=") else cj["interval"][0]
        controls.append({"metric": cm, "state": cj["state"], "measured": shown, "passes": cj["state"] == "passed"})
    c["controls"] = controls
    if not controls:
        c["discrimination"] = "no control"
    elif any(x["passes"] for x in controls):
        c["discrimination"] = "does not discriminate"
    elif all(x["state"] == "failed" for x in controls):
        c["discrimination"] = "discriminates"
    else:
        c["discrimination"] = "control unresolved"
    return c


def _effective(v: bool | None) -> str:
    return "unknown" if v is None else ("passed" if v else "failed")


def _verdict_of(
    names: list[str], rep: ast.AST | None, part: ast.AST | None, ablations: list[str], s: Mapping[str, bool]
) -> str:
    rep_holds = all(s[n] for n in names) if rep is None else eval_rule3(rep, s)
    if rep_holds:
        return "reproduced" if all(s[a] for a in ablations) else "partial"
    if part is not None and eval_rule3(part, s):
        return "partial"
    return "not reproduced"


def _kleene_verdict(
    names: list[str], rep: ast.AST | None, part: ast.AST | None, ablations: list[str], s: Mapping[str, bool | None]
) -> str | None:
    """The verdict when Kleene logic decides it whatever the unknowns are, else None."""
    rep_v = all_true(s, names) if rep is None else eval_kleene(rep, s)
    abl_v = all_true(s, ablations)
    part_v = False if part is None else eval_kleene(part, s)
    if rep_v is True:
        return {True: "reproduced", False: "partial", None: None}[abl_v]
    if rep_v is False:
        return {True: "partial", False: "not reproduced", None: None}[part_v]
    return None


def _decide(
    rules: Rules, rep: ast.AST | None, part: ast.AST | None, ablations: list[str], state: dict[str, bool | None]
) -> tuple[list[str], list[str]]:
    """The verdicts the completions of the unknowns give (one: decided), and the unknowns that decide."""
    names = [t.name for t in rules.thresholds]
    used = set(rule_names(rep)) if rep is not None else set(names)
    if part is not None:
        used |= set(rule_names(part))
    used |= set(ablations)
    unknown = [n for n in state if n in used and state[n] is None]
    base = {n: bool(v) for n, v in state.items() if v is not None}
    base = {n: base.get(n, False) for n in state}
    if not unknown:
        return [_verdict_of(names, rep, part, ablations, base)], []
    if len(unknown) > _MAX_ENUMERATED:  # too many to enumerate: Kleene logic, sound but it may leave more open
        decided = _kleene_verdict(names, rep, part, ablations, state)
        return ([decided], []) if decided else (list(_ORDER), unknown)
    results: dict[tuple[bool, ...], str] = {}
    for combo in itertools.product((False, True), repeat=len(unknown)):
        results[combo] = _verdict_of(names, rep, part, ablations, {**base, **dict(zip(unknown, combo))})
    verdicts = sorted(set(results.values()), key=_ORDER.index)
    deciding = []
    for i, n in enumerate(unknown):
        if any(results[c] != results[c[:i] + (not c[i],) + c[i + 1 :]] for c in results):
            deciding.append(n)
    return verdicts, deciding


def _agreed(verdict: str, seed_verdicts: list[str], agreement: float) -> tuple[str, str]:
    """The verdict once the seeds must agree, and why it changed ("" when it did not).

    ``reproduced`` needs k = ceil(agreement * n) seeds to read ``reproduced`` on their own, ``partial`` k seeds to
    read ``partial`` or better. A shortfall that seeds inconclusive on their own could fill makes the verdict
    ``inconclusive`` (a floor failed in those seeds: no comparison, not a negative result); otherwise the verdict
    is demoted.
    """
    n = len(seed_verdicts)
    if not n or verdict not in ("reproduced", "partial"):
        return verdict, ""
    k = math.ceil(agreement * n - 1e-9)
    n_rep = sum(v == "reproduced" for v in seed_verdicts)
    n_part = sum(v in ("reproduced", "partial") for v in seed_verdicts)
    n_inc = sum(v == "inconclusive" for v in seed_verdicts)
    wanted = verdict
    if verdict == "reproduced":
        if n_rep >= k:
            return verdict, ""
        if n_rep + n_inc >= k:
            return "inconclusive", (
                f"reproduced over all seeds, but only {n_rep} of {n} seeds read it on their own (needs {k}) and "
                f"{n_inc} cannot be judged on their own"
            )
        verdict = "partial"
    if n_part >= k:
        why = f"{n_rep} of {n} seeds read reproduced on their own (needs {k})" if wanted != verdict else ""
        return verdict, (f"the seeds do not agree: {wanted} over all seeds, but {why}: partial" if why else "")
    if n_part + n_inc >= k:
        return "inconclusive", (
            f"{wanted} over all seeds, but only {n_part} of {n} seeds read partial or better on their own (needs "
            f"{k}) and {n_inc} cannot be judged on their own"
        )
    return "not reproduced", (
        f"the seeds do not agree: {wanted} over all seeds, but only {n_part} of {n} seeds read partial or better "
        f"on their own (needs {k}): not reproduced"
    )


def _carry(ev: Evaluation, rules: Rules, rep: ast.AST | None, part: ast.AST | None, state: dict[str, Any]) -> None:
    by_name = {c["name"]: c for c in ev.checks if c["role"] == "verdict"}
    if ev.verdict == "reproduced":
        ev.carried_by = [n for n in (rule_names(rep) if rep is not None else list(by_name)) if state.get(n)]
    elif ev.verdict == "partial":
        tree = part if part is not None and eval_rule3(part, state) else rep
        ev.carried_by = [n for n in (rule_names(tree) if tree is not None else list(by_name)) if state.get(n)]
    for n in ev.carried_by:
        c = by_name[n]
        if c["discrimination"] == "does not discriminate":
            failing = [x["metric"] for x in c["controls"] if x["passes"]]
            ev.flags.append(
                f"the verdict rests on '{n}', which does not discriminate: control {', '.join(failing)} passes it"
            )
        elif c["discrimination"] == "no control":
            ev.flags.append(f"the verdict rests on '{n}', which no negative control tests")
        elif c["discrimination"] == "control unresolved":
            open_ = [f"{x['metric']} ({x['state']})" for x in c["controls"] if x["state"] != "failed"]
            ev.flags.append(f"the verdict rests on '{n}', whose control is not shown to fail it: {', '.join(open_)}")
        if c["interval"] is None and parse_agg(c["agg"])[0] in ("mean", "geomean", "median") and ev.n_seeds > 1:
            ev.flags.append(f"the verdict rests on '{n}', a point statistic ({c['agg']}) with no interval")
    lost = [c["name"] for c in by_name.values() if c["ablation"] and c["ablation"]["effective"] == "failed"]
    if lost and state and any(state.get(n) for n in rules.headline):
        ev.flags.append(
            "the gain is not from the paper's idea: "
            + ", ".join(f"'{n}' does not beat its ablation {by_name[n]['ablation']['metric']}" for n in lost)
        )
    if ev.verdict == "reproduced" and not rules.ablations():
        ev.flags.append("no idea ablation is declared for the headline: the gain is not shown to be the paper's idea")
