"""Verdicts over several seeds: aggregation, validity floors, negative controls, stability.

A claim's verdict is computed, never chosen (protocol: ``shared/notes/claim-protocol.md``). Given the
metrics of one or more runs (seeds) of a claim, :func:`evaluate`

1. combines each threshold's metric over the runs with the threshold's ``agg`` (mean, geometric mean,
   median, a one-sided 95% bound, or "holds in k of n seeds") and applies the bound;
2. checks the ``validity`` rule (the floors that must hold for the comparison to mean anything). If it
   fails, or fewer than ``min_seeds`` runs are there, the verdict is ``inconclusive`` and the reasons name
   the failed floors;
3. otherwise the verdict is ``reproduced`` if the ``reproduced`` rule holds, else ``partial`` if the
   ``partial`` rule holds, else ``not reproduced``;
4. applies every threshold to its negative controls' metrics, aggregated the same way: a threshold whose
   control passes it too "does not discriminate", and a verdict that rests on such a threshold (or on one
   without any control) is flagged;
5. computes each run's own verdict (each bound applied to that run's value) and marks the claim
   ``unstable`` when the runs disagree.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from geode.claims.types import Threshold, decide_verdict, evaluate_verdict, parse_agg, parse_rule, rule_names

__all__ = ["DISCRIMINATION", "Evaluation", "aggregate", "evaluate"]

DISCRIMINATION: tuple[str, ...] = ("discriminates", "does not discriminate", "no control")


def _t95(df: int) -> float:
    """The one-sided 95% quantile of Student's t with ``df`` degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(0.95, df))


def aggregate(values: Sequence[float | None], threshold: Threshold) -> float | None:
    """Combine one metric's per-run values as ``threshold.agg`` says; None when it cannot be computed.

    For ``all`` and ``"k of n"`` the result is the fraction of runs in which the bound holds (the
    threshold then passes when that fraction reaches k/n). Missing or non-finite values make every
    statistic except these fractions undefined (None), so the threshold fails.
    """
    kind, _ = parse_agg(threshold.agg)
    if not values:
        return None
    if kind == "fraction":
        return sum(threshold.holds(v) for v in values) / len(values)
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if len(xs) != len(values):
        return None
    if kind == "mean":
        return statistics.fmean(xs)
    if kind == "median":
        return float(statistics.median(xs))
    if kind in ("geomean", "geobound95"):
        if min(xs) <= 0:
            return None
        xs = [math.log(x) for x in xs]
        if kind == "geomean":
            return math.exp(statistics.fmean(xs))
    # bound95 / geobound95: one-sided 95% t bound in the direction that makes the threshold harder
    if len(xs) < 2:
        return None
    half = _t95(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    bound = statistics.fmean(xs) + (-half if threshold.op in (">=", ">") else half)
    return math.exp(bound) if kind == "geobound95" else bound


def _passes(threshold: Threshold, measured: float | None) -> bool:
    kind, fraction = parse_agg(threshold.agg)
    if kind == "fraction":
        return measured is not None and measured >= fraction - 1e-12
    return threshold.holds(measured)


@dataclass
class Evaluation:
    """The outcome of :func:`evaluate`.

    Attributes
    ----------
    verdict : str
        One of :data:`geode.claims.VERDICTS`.
    checks : list of dict
        One per threshold: its definition, ``role`` (``"verdict"``, ``"floor"`` or ``"both"``),
        ``measured`` (the aggregate), ``per_seed`` values, ``passed``, ``controls`` (each control's metric,
        aggregate and whether it passes) and ``discrimination`` (one of :data:`DISCRIMINATION`).
    failed_floors : list of str
        Names of validity thresholds that failed.
    reasons : list of str
        Why the verdict is ``inconclusive`` (empty otherwise).
    carried_by : list of str
        Thresholds that passed in the rule that decided a ``reproduced`` or ``partial`` verdict.
    flags : list of str
        Warnings a reader must see: a verdict carried by a threshold that does not discriminate or has no
        control, seeds that disagree.
    seed_verdicts : list of str
        Each run's own verdict, in the order of the runs.
    n_seeds, min_seeds : int
    """

    verdict: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    failed_floors: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    carried_by: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    seed_verdicts: list[str] = field(default_factory=list)
    n_seeds: int = 0
    min_seeds: int = 1

    @property
    def unstable(self) -> bool:
        """True when the runs' own verdicts disagree."""
        return len(set(self.seed_verdicts)) > 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "checks": self.checks,
            "failed_floors": self.failed_floors,
            "reasons": self.reasons,
            "carried_by": self.carried_by,
            "flags": self.flags,
            "seed_verdicts": self.seed_verdicts,
            "unstable": self.unstable,
            "n_seeds": self.n_seeds,
            "min_seeds": self.min_seeds,
        }


def evaluate(
    thresholds: Sequence[Threshold],
    runs: Sequence[Mapping[str, float]],
    *,
    reproduced: str | None = None,
    partial: str | None = None,
    validity: str | None = None,
    min_seeds: int = 1,
) -> Evaluation:
    """The verdict of a claim over the metrics of ``runs`` (one mapping per seed).

    Parameters
    ----------
    thresholds : sequence of Threshold
    runs : sequence of mapping
        The metrics of each run (seed), all of one mode.
    reproduced, partial, validity : str, optional
        Boolean rules over threshold names. ``reproduced`` defaults to every threshold that the validity
        rule does not name holding; ``partial`` to never; ``validity`` to always.
    min_seeds : int
        Fewer runs than this make the verdict ``inconclusive`` (protocol: at least 3 seeds, unless the
        claim replicates inside one run).
    """
    names = {t.name for t in thresholds}
    rep = parse_rule(reproduced, names, "reproduced") if reproduced is not None else None
    part = parse_rule(partial, names, "partial") if partial is not None else None
    valid = parse_rule(validity, names, "validity") if validity is not None else None
    floor_names = set(rule_names(valid)) if valid is not None else set()
    decisive = set()
    for tree in (rep, part):
        if tree is not None:
            decisive |= set(rule_names(tree))
    verdict_names = [t.name for t in thresholds if t.name not in floor_names]
    if rep is None:
        decisive |= set(verdict_names)

    checks: list[dict[str, Any]] = []
    passed: dict[str, bool] = {}
    for t in thresholds:
        per_seed = [_value(r.get(t.metric)) for r in runs]
        measured = aggregate(per_seed, t)
        ok = _passes(t, measured)
        passed[t.name] = ok
        controls = []
        for cm in t.controls:
            cval = aggregate([_value(r.get(cm)) for r in runs], t)
            controls.append({"metric": cm, "measured": cval, "passes": _passes(t, cval), "missing": cval is None})
        if not controls:
            disc = "no control"
        elif any(c["passes"] for c in controls):
            disc = "does not discriminate"
        else:
            disc = "discriminates"
        in_floor, in_verdict = t.name in floor_names, t.name in decisive
        role = "both" if in_floor and in_verdict else ("floor" if in_floor else "verdict")
        checks.append(
            {
                **t.to_dict(),
                "role": role,
                "measured": measured,
                "per_seed": per_seed,
                "passed": ok,
                "controls": controls,
                "discrimination": disc,
            }
        )

    verdict, carried = decide_verdict(passed, verdict_names, rep, part, valid)
    reasons: list[str] = []
    failed_floors = [n for n in rule_names(valid) if not passed[n]] if valid is not None else []
    if verdict == "inconclusive":
        reasons.append("validity floor(s) failed: " + ", ".join(failed_floors or ["(rule)"]))
    elif len(runs) < min_seeds:
        reasons.append(f"{len(runs)} seed(s) ran; the verdict needs at least {min_seeds}")
        verdict, carried = "inconclusive", []

    flags: list[str] = []
    by_name = {c["name"]: c for c in checks}
    for n in carried:
        c = by_name[n]
        if c["discrimination"] == "does not discriminate":
            failing = [x["metric"] for x in c["controls"] if x["passes"]]
            flags.append(
                f"the verdict rests on '{n}', which does not discriminate: control {', '.join(failing)} passes it"
            )
        elif c["discrimination"] == "no control":
            flags.append(f"the verdict rests on '{n}', which no negative control tests")

    seed_verdicts = [evaluate_verdict(thresholds, reproduced, partial, r, validity)[0] for r in runs]
    if len(set(seed_verdicts)) > 1:
        flags.append("unstable: the seeds disagree (" + ", ".join(seed_verdicts) + ")")
    return Evaluation(
        verdict=verdict,
        checks=checks,
        failed_floors=failed_floors,
        reasons=reasons,
        carried_by=carried,
        flags=flags,
        seed_verdicts=seed_verdicts,
        n_seeds=len(runs),
        min_seeds=min_seeds,
    )


def _value(x: Any) -> float | None:
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None
