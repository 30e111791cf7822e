"""Render stored results as ``REPORT.md`` and a self-contained static ``index.html``.

The report lists all 57 papers in one overview table (field, status, verdict, key metric against the
paper's own figure, seeds, benchmark ratio and memory ratio), then one section per paper with results: the
claim; the verdict with each seed's own verdict; every threshold with its role (verdict or validity floor),
its aggregate over seeds, its negative controls and whether it discriminates; the tuned values; the
metrics; the results table; the benchmark; the figures; the notes; what had to be inferred.

What decides (protocol, ``shared/notes/claim-protocol.md``):

- The *current* claim definition decides: thresholds and rules come from the registered claim, not from
  the stored files. A stored result made under another definition (its ``claim_hash`` differs) is
  *stale*: it is counted and shown, never used for a verdict; ``geode reproduce`` re-runs it.
- A file's location decides what it is (``results/<slug>/<mode>-seed<k>.json``); a file that is unreadable,
  malformed or somewhere else is listed in one line under "Skipped files" and blocks nothing.
- For each paper the report uses the largest mode with a current successful result (full, then quick, then
  smoke) and evaluates the claim over all its seeds (:func:`geode.claims.verdict.evaluate`).
"""

from __future__ import annotations

import datetime as _dt
import html
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geode import __version__, catalog
from geode.claims.claim import definition_hash
from geode.claims.figures import COLOURS
from geode.claims.store import ResultStore, Scan, atomic_write_bytes, atomic_write_text
from geode.claims.verdict import Evaluation, Rules, evaluate

__all__ = ["PaperResult", "current_claims", "render_html", "render_markdown", "summarize", "write_report"]

_MODE_ORDER = ("full", "quick", "smoke")
# the figures' verdict colours; the greys are darker here, where they colour text and badges on white
_COLOURS = {**COLOURS, "not run": "#6e7781", "planned": "#afb8c1"}
_LEGEND = {
    "reproduced": "the claim's reproduced rule holds",
    "partial": "only the partial rule holds",
    "not reproduced": "neither rule holds",
    "inconclusive": "a floor a deciding comparison needs failed, an arm was not tuned properly, a deciding "
    "threshold is still unresolved (underpowered), or too few seeds ran: the comparison cannot decide",
    "error": "the check raised",
    "timeout": "the check ran past its time limit",
    "stale": "only results of an older claim definition are stored",
    "not run": "implemented, no stored result",
    "planned": "no claim check yet",
}


@dataclass
class PaperResult:
    """What the report shows for one paper."""

    paper: catalog.Paper
    state: str  # a verdict, or "error", "timeout", "stale", "not run", "planned"
    mode: str | None = None
    records: list[dict[str, Any]] = field(default_factory=list)  # current successful records of the mode
    failures: list[dict[str, Any]] = field(default_factory=list)  # error/timeout records of that mode
    claim: dict[str, Any] = field(default_factory=dict)  # the definition that decided
    evaluation: Evaluation | None = None
    stale: int = 0
    bench: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def seeds(self) -> list[int]:
        return [r["seed"] for r in self.records]

    @property
    def mean_metrics(self) -> dict[str, float]:
        keys = sorted(set().union(*(r["metrics"] for r in self.records))) if self.records else []
        return {k: statistics.fmean(r["metrics"][k] for r in self.records if k in r["metrics"]) for k in keys}

    @property
    def checks(self) -> list[dict[str, Any]]:
        return self.evaluation.checks if self.evaluation else []

    def key_metric_text(self) -> str:
        """The key metric aggregated as its threshold aggregates it, with its 90% interval where it has one;
        else the mean over seeds with its standard deviation (never "None")."""
        key = self.claim.get("key_metric")
        vals = [r["metrics"][key] for r in self.records if key in r["metrics"]]
        if not key or not vals:
            return ""
        for ch in self.checks:
            if ch.get("metric") == key and not isinstance(ch.get("value"), str) and ch.get("interval"):
                lo, hi = ch["interval"]
                return f"{key} = {_fmt(ch.get('point'))} [90%: {_fmt(lo)}, {_fmt(hi)}]"
        text = f"{key} = {_fmt(statistics.fmean(vals))}"
        if len(vals) > 1:
            text += f" ± {_fmt(statistics.stdev(vals))} (sd, {len(vals)} seeds)"
        return text

    def bench_text(self) -> tuple[str, str]:
        """(speed vs strongest baseline, memory ratio) for the overview."""
        if isinstance((self.bench or {}).get("error"), str):
            return "benchmark failed (see bench.json)", ""
        h = (self.bench or {}).get("headline") or {}
        if not h:
            return "", ""
        speed = f"{_fmt(h.get('ratio'))}x"
        if h.get("low") is not None and h.get("high") is not None:
            speed += f" [{_fmt(h['low'])}-{_fmt(h['high'])}]"
        speed += f" vs {h.get('baseline', '?')}"
        speed += _targets_text(self.bench or {})
        mem = h.get("memory_ratio")
        return speed, ("" if mem is None else f"{_fmt(mem)}x")


def _targets_text(bench: dict[str, Any]) -> str:
    """The stated targets of a bench record for the overview: the first case's, or a count over the cases."""
    judged = [t for c in bench.get("cases") or [] if isinstance(c, dict) for t in c.get("targets") or []]
    if not judged:
        return ""
    if len(judged) == 1:
        from geode.claims.bench import met_text, target_text

        return f"; target {target_text(judged[0])}: {met_text(judged[0].get('met'))}"
    met = sum(1 for t in judged if t.get("met") is True)
    return f"; targets met: {met} of {len(judged)}"


def _fmt(x: Any) -> str:
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if x != x:
            return "nan"
        if x == 0 or 1e-3 <= abs(x) < 1e5:
            return f"{x:.4g}"
        return f"{x:.3e}"
    return str(x)


def current_claims(slugs: Iterable[str]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The registered definitions (``Claim.describe()``) of ``slugs``, and why any could not be loaded."""
    from geode.claims.registry import load_claim

    out: dict[str, dict[str, Any]] = {}
    errors: dict[str, str] = {}
    for slug in slugs:
        try:
            out[slug] = load_claim(slug).describe()
        except Exception as exc:  # an import error in one paper must not block the report
            errors[slug] = f"{type(exc).__name__}: {exc}"
    return out, errors


def _read_bench(store: ResultStore, slug: str) -> tuple[dict[str, Any] | None, str | None]:
    """A paper's ``bench.json`` when it is well formed, else (None, the one-line problem; None when absent)."""
    from geode.claims.store import ResultFileError, check_plain, load_json

    p = store.results_dir / slug / "bench.json"
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"cannot read {p}: {exc}; ignored"
    try:
        d = load_json(text, str(p))
        check_plain(d, str(p))
        _check_bench(d)
    except (ResultFileError, ValueError, TypeError) as exc:
        return None, f"{p}: {str(exc)[:300]}; ignored"
    return d, None


def _check_bench(d: Any) -> None:
    """The shape the report reads of a bench record: objects and lists where it iterates, numbers where it
    formats them; a failed benchmark holds an ``error`` text instead of cases."""

    def number(x: Any) -> bool:
        return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool))

    if not isinstance(d, dict):
        raise ValueError("a bench record must be a JSON object")
    if isinstance(d.get("error"), str):
        return
    head = d.get("headline", {})
    if not isinstance(head, dict) or not all(number(head.get(k)) for k in ("ratio", "low", "high", "memory_ratio")):
        raise ValueError("its headline must be an object of numbers")
    cases = d.get("cases", [])
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        raise ValueError("its cases must be a list of objects")
    for c in cases:
        bases = c.get("baselines", [])
        if not isinstance(bases, list) or not all(isinstance(b, dict) for b in bases):
            raise ValueError("a case's baselines must be a list of objects")
        for b in bases:
            if not all(number(b.get(k)) for k in ("ratio", "low", "high", "peak_mib", "memory_ratio")):
                raise ValueError("a baseline's ratio, spread and memory must be numbers")
        targets = c.get("targets", [])
        if not isinstance(targets, list):
            raise ValueError("a case's targets must be a list")
        for t in targets:
            _check_target(t)
    if not all(number(head.get(k)) for k in ("targets", "targets_met")):
        raise ValueError("its headline's target counts must be numbers")


def _check_target(t: Any) -> None:
    """A case's stored target: absent, or an object with a known metric and comparison, a number, a met flag."""
    from geode.claims.bench import TARGET_METRICS, TARGET_OPS

    if not isinstance(t, dict):
        raise ValueError("a case's target must be an object")
    if t.get("metric") not in TARGET_METRICS or t.get("op") not in TARGET_OPS:
        raise ValueError(f"a target's metric must be one of {TARGET_METRICS} and its op one of {TARGET_OPS}")
    v = t.get("value")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError("a target's value must be a number")
    m = t.get("measured")
    if m is not None and (isinstance(m, bool) or not isinstance(m, (int, float))):
        raise ValueError("a target's measured value must be a number or null")
    if t.get("met") not in (True, False, None):
        raise ValueError("a target's met must be true, false or null")
    if not all(t.get(k) is None or isinstance(t.get(k), str) for k in ("baseline", "source")):
        raise ValueError("a target's baseline and source must be text")


def summarize(
    records: Iterable[dict[str, Any]],
    claims: dict[str, dict[str, Any]] | None = None,
    benches: dict[str, dict[str, Any]] | None = None,
    load_errors: dict[str, str] | None = None,
) -> list[PaperResult]:
    """One :class:`PaperResult` per catalogue paper.

    Parameters
    ----------
    records : iterable of dict
        Valid records at their own locations (:meth:`ResultStore.scan`).
    claims : dict of slug -> description, optional
        The current claim definitions. A paper missing here is judged by its newest stored definition,
        with a note saying so.
    benches : dict of slug -> bench.json contents, optional
    load_errors : dict of slug -> message, optional
        Why a claim could not be loaded.

    Papers with results come first, then implemented papers not run yet, then planned ones; each group in
    catalogue order (field, then slug).
    """
    claims = claims or {}
    benches = benches or {}
    load_errors = load_errors or {}
    by_slug: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        by_slug[rec["slug"]].append(rec)
    out = []
    for paper in catalog.papers():
        recs = by_slug.get(paper.slug, [])
        bench = benches.get(paper.slug)
        notes: list[str] = []
        claim = claims.get(paper.slug)
        if claim is None and recs:
            stored = [r for r in recs if isinstance(r.get("claim"), dict)]
            if stored:
                claim = max(stored, key=lambda r: r.get("started", ""))["claim"]
                why = load_errors.get(paper.slug, "not loaded")
                notes.append(f"The claim could not be loaded ({why}); its newest stored definition is used.")
        if not recs:
            state = "planned" if paper.status == "planned" else "not run"
            out.append(PaperResult(paper, state, claim=claim or {}, bench=bench, notes=notes))
            continue
        want = (claim or {}).get("hash") or (definition_hash(claim) if claim else None)
        current = [r for r in recs if want is None or r.get("claim_hash") == want or r["status"] != "ok"]
        stale = sum(1 for r in recs if r not in current)
        ok_modes = [m for m in _MODE_ORDER if any(r["mode"] == m and r["status"] == "ok" for r in current)]
        if not ok_modes:
            failed = [r for r in current if r["status"] != "ok"]
            if failed:
                mode = next(m for m in _MODE_ORDER if any(r["mode"] == m for r in failed))
                in_mode = sorted((r for r in failed if r["mode"] == mode), key=lambda r: r["seed"])
                out.append(
                    PaperResult(paper, in_mode[0]["status"], mode, [], in_mode, claim or {}, None, stale, bench, notes)
                )
            else:
                out.append(PaperResult(paper, "stale", None, [], [], claim or {}, None, stale, bench, notes))
            continue
        mode = ok_modes[0]
        in_mode = sorted((r for r in current if r["mode"] == mode), key=lambda r: r["seed"])
        ok = [r for r in in_mode if r["status"] == "ok"]
        failures = [r for r in in_mode if r["status"] != "ok"]
        claim = claim or ok[-1].get("claim", {})
        try:
            ev = evaluate(
                Rules.from_dict(claim),
                [r["metrics"] for r in ok],
                tuned=[r.get("tuned") or [] for r in ok],
                seeds=[r["seed"] for r in ok],
            )
        except (ValueError, TypeError) as exc:
            notes.append(f"The claim definition cannot be evaluated: {exc}")
            out.append(PaperResult(paper, "error", mode, ok, failures, claim, None, stale, bench, notes))
            continue
        if stale:
            notes.append(f"{stale} stored result(s) of an older claim definition are stale and not used.")
        out.append(PaperResult(paper, ev.verdict, mode, ok, failures, claim, ev, stale, bench, notes))
    rank = {"planned": 2, "not run": 1}
    return sorted(out, key=lambda r: rank.get(r.state, 0))  # stable: catalogue order within each group


def _counts(rows: list[PaperResult]) -> dict[str, int]:
    c: dict[str, int] = defaultdict(int)
    for r in rows:
        c[r.state] += 1
    return c


def _headline(rows: list[PaperResult]) -> str:
    c = _counts(rows)
    implemented = sum(r.paper.status == "implemented" for r in rows)
    parts = [f"{len(rows)} papers", f"{implemented} implemented"]
    parts += [f"{c[s]} {s}" for s in _COLOURS if s != "planned" and c.get(s)]
    return ", ".join(parts)


def _mode_text(r: PaperResult) -> str:
    if not r.mode:
        return f"{r.stale} stale" if r.stale else ""
    text = f"{r.mode}, {len(r.records)} seed(s)"
    if r.evaluation and r.evaluation.unstable:
        text += ", unstable"
    if r.failures:
        text += f", {len(r.failures)} failed"
    if r.stale:
        text += f", {r.stale} stale"
    return text


def _seed_text(r: PaperResult) -> str:
    if not r.evaluation:
        return ""
    return ", ".join(f"{s}: {v}" for s, v in zip(r.seeds, r.evaluation.seed_verdicts))


def _label(r: PaperResult) -> str:
    return r.evaluation.label if r.evaluation else r.state


def _replication(c: dict[str, Any]) -> str:
    return f" ({c['replication']})" if c.get("replication") else ""


def _rule_text(ch: dict[str, Any]) -> str:
    agg = ch.get("agg", "mean")
    value = ch["value"]
    if isinstance(value, str):  # paired: the per-seed difference (ratio for geo aggregates) against 0 (1)
        geo = agg in ("geomean", "geobound95")
        return f"{agg}({ch['metric']} {'/' if geo else '-'} {value}) {ch['op']} {1 if geo else 0}"
    return f"{agg}({ch['metric']}) {ch['op']} {_fmt(value)}"


def _control_text(ch: dict[str, Any]) -> str:
    ctrl = ch.get("controls") or []
    if not ctrl:
        return "none"
    parts = [f"{c['metric']} = {_fmt(c['measured'])} ({'passes' if c['passes'] else 'fails'})" for c in ctrl]
    return "; ".join(parts)


def _measured_text(ch: dict[str, Any]) -> str:
    """What the bound is applied to: a share of seeds as "k of n seeds", a bound with its 90% interval, a point;
    "missing" or "one seed: no interval" instead of None."""
    per = ch.get("per_seed") or []
    agg = str(ch.get("agg", "mean"))
    if agg == "all" or " of " in agg:
        if ch.get("measured") is None:
            return "missing"
        return f"{round(float(ch['measured']) * len(per))} of {len(per)} seeds"
    if ch.get("measured") is None:
        if ch.get("state") == "unresolved" and ch.get("point") is not None:
            return f"{_fmt(ch['point'])} (one seed: no interval)"
        return "missing"
    text = _fmt(ch.get("measured"))
    iv = ch.get("interval")
    if iv:
        text = f"{_fmt(ch.get('point'))} [{_fmt(iv[0])}, {_fmt(iv[1])}]"
    return text


def _state_text(ch: dict[str, Any]) -> str:
    state = ch.get("state", "passed" if ch.get("passed") else "failed")
    if ch.get("effective") == "unknown" and ch.get("void"):
        own = "" if state in ("unresolved", "missing") else f"{state}; "
        return f"{own}unknown: {'; '.join(ch['void'])}"
    return state


def _ablation_text(ch: dict[str, Any]) -> str:
    a = ch.get("ablation")
    if not a:
        return ""
    return f"vs {a['metric']}: {a.get('effective', a.get('state'))} ({_measured_text(a)})"


def _needs_text(ch: dict[str, Any]) -> str:
    if ch.get("role") == "floor":
        arms = ch.get("arms")
        return f"on {', '.join(arms)}" if arms else "the bed"
    needs = ch.get("needs")
    return ", ".join(needs) if needs else "no floor"


_CHECK_HEADER = [
    "threshold",
    "role",
    "rule",
    "needs / on",
    "measured (mean [90% interval])",
    "per seed",
    "state",
    "idea ablation",
    "negative control",
    "discriminates",
]


def _check_rows(r: PaperResult) -> list[list[str]]:
    """One row per verdict threshold and floor, as plain text (escaped by the renderer)."""
    return [
        [
            ch["name"],
            ch.get("role", ""),
            _rule_text(ch),
            _needs_text(ch),
            _measured_text(ch),
            ", ".join(_fmt(v) for v in ch.get("per_seed", [])),
            _state_text(ch),
            _ablation_text(ch),
            _control_text(ch),
            ch.get("discrimination", ""),
        ]
        for ch in r.checks
    ]


def _rules_text(c: dict[str, Any]) -> str:
    agreement = float(c.get("agreement", 2 / 3))
    return (
        f"Reproduced when: {c.get('reproduced') or 'all verdict thresholds'}. "
        f"Partial when: {c.get('partial') or 'never'}. Seeds needed: {c.get('min_seeds', 1)}"
        f"{_replication(c)}; a verdict needs {agreement:.0%} of the seeds to read it on their own."
    )


def _coverage_rows(r: PaperResult) -> list[list[str]]:
    """Tuning coverage of the declared methods, the untuned ones with their reasons, the learned arms."""
    c, ev = r.claim, r.evaluation
    rows = []
    for m, problems in (ev.coverage if ev else {}).items():
        rows.append([m, "tuned", "; ".join(problems) if problems else "equal budget, >= 3 values per knob, no edge"])
    for m, why in (c.get("untuned") or {}).items():
        rows.append([m, "nothing to tune", str(why)])
    for a in c.get("learned") or []:
        refs = ", ".join(f"{k} {a[k]}" for k in ("untrained", "trivial") if a.get(k))
        rows.append([str(a.get("arm")), "learned", f"{a.get('metric')} must beat {refs}"])
    if not rows:
        rows.append(["(none declared)", "", "the claim declares no tuned methods: coverage is not checked"])
    return rows


def _seeds_text(r: PaperResult) -> str:
    return ", ".join(str(s) for s in r.seeds) or "none"


# --------------------------------------------------------------------------------------------- Markdown
_MD_SPECIAL = re.compile(r"([\\`\[\]|])")


def _md(x: Any) -> str:
    """Text safe in Markdown: HTML escaped, no links, no code spans, no table breaks, one line."""
    text = html.escape(_fmt(x), quote=False)
    return _MD_SPECIAL.sub(r"\\\1", text).replace("\r", " ").replace("\n", " ")


def _fence(text: str, info: str = "text") -> list[str]:
    """A fenced block that ``text`` cannot close: the fence is longer than any backtick run inside."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, text, fence]


def _md_table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(_md(h) for h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return out


def _legend_lines() -> list[str]:
    return [f"- **{s}**: {d}" for s, d in _LEGEND.items()]


def render_markdown(
    rows: list[PaperResult], problems: list[str] | None = None, figures: dict[str, str] | None = None
) -> str:
    """The report as Markdown, led by figures (referenced by relative path); every stored text is escaped."""
    figures = figures or {}
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# geode: claim report",
        "",
        f"Generated {now} by geode {__version__}. {_md(_headline(rows))}.",
        "",
        "Each verdict comes from thresholds fixed in the paper's claim check before it ran, evaluated over all",
        "seeds by the current claim definition. A claim that does not reproduce at CPU scale is a finding,",
        "reported with its numbers.",
        "",
        *_legend_lines(),
        "",
    ]
    if figures.get("overview"):
        lines += [f"![the papers by field and verdict]({figures['overview']})", ""]
    overview = []
    for r in rows:
        verdict = f"**{_md(_label(r))}**" if r.mode else r.state
        speed, mem = r.bench_text()
        link = f"[`{r.paper.slug}`](#{r.paper.slug})" if r.mode else f"`{r.paper.slug}`"
        overview.append(
            f"| {link} {_md(r.paper.title)} | {r.paper.field} | {r.paper.status} | {verdict} | "
            f"{_md(r.key_metric_text())} | {_md(r.claim.get('paper_figure', ''))} | {_md(_mode_text(r))} | "
            f"{_md(speed)} | {_md(mem)} |"
        )
    lines += [
        "| paper | field | status | verdict | measured (key metric) | paper's figure | mode, seeds "
        "| speed vs strongest baseline | memory ratio |",
        "|---|---|---|---|---|---|---|---|---|",
        *overview,
    ]
    if problems:
        lines += ["", "## Skipped files", ""] + [f"- {_md(p)}" for p in problems]
    for r in rows:
        if not r.mode and not r.stale:
            continue
        c = r.claim
        lines += ["", f'<a id="{r.paper.slug}"></a>', "", f"## {_md(r.paper.title)} (`{r.paper.slug}`)", ""]
        if c:
            lines += [
                f"**Claim.** {_md(c.get('claim', ''))}",
                "",
                f"**Paper's figure.** {_md(c.get('paper_figure', ''))}",
            ]
            lines += ["", f"**Baselines.** {_md(', '.join(c.get('baselines', [])))}", ""]
        per = _seed_text(r) or "none succeeded"
        lines.append(
            f"**Verdict: {_md(_label(r))}** ({_md(r.mode or 'no current result')}, seeds {_md(_seeds_text(r))}; "
            f"per seed: {_md(per)})"
        )
        if r.mode == "smoke":
            lines += ["", f"*{_md(_SMOKE_NOTE)}*"]
        if figures.get(r.paper.slug):
            lines += ["", f"![{r.paper.slug}: thresholds against their bounds]({figures[r.paper.slug]})"]
        ev = r.evaluation
        if ev:
            for reason in ev.reasons:
                lines += ["", f"Inconclusive: {_md(reason)}."]
            for flag in ev.flags:
                lines += ["", f"Flag: {_md(flag)}."]
        for note in r.notes:
            lines += ["", _md(note)]
        if r.records and r.records[0].get("summary"):
            lines += ["", f"Seed {r.records[0]['seed']}: {_md(r.records[0]['summary'])}"]
        if r.checks:
            lines += [""] + _md_table(_CHECK_HEADER, _check_rows(r))
            lines += ["", _md(_rules_text(c))]
        if r.evaluation:
            lines += ["", "Tuning coverage and learned arms:", ""]
            lines += _md_table(["method", "kind", "protocol check"], _coverage_rows(r))
        lines += _bench_md(r.bench)
        if r.records:
            for name, path in r.records[0].get("figures", {}).items():
                if _safe_fig(path, r.records[0]):
                    lines += ["", f"![{name}]({path})"]
        lines += ["", "<details><summary>Tuning, raw metrics, results table and notes</summary>"]
        tuned = [{"seed": rec["seed"], **row} for rec in r.records for row in rec.get("tuned") or []]
        if tuned:
            cols = list(dict.fromkeys(k for row in tuned for k in row))
            lines += ["", "Tuned on validation (equal budget):", ""]
            lines += _md_table(cols, [[row.get(k, "") for k in cols] for row in tuned])
        if r.records:
            mean = r.mean_metrics
            lines += [""] + _md_table(
                ["metric", "mean", "per seed"],
                [[k, _fmt(v), ", ".join(_fmt(rec["metrics"].get(k)) for rec in r.records)] for k, v in mean.items()],
            )
            table = r.records[0].get("table") or []
            if table:
                cols = list(dict.fromkeys(k for row in table for k in row))
                lines += ["", f"Results table (seed {r.records[0]['seed']}):", ""]
                lines += _md_table(cols, [[row.get(k, "") for k in cols] for row in table])
            notes = r.records[0].get("notes") or []
            if notes:
                lines += ["", "Notes:", ""] + [f"- {_md(n)}" for n in notes]
        lines += ["", "</details>"]
        for f in r.failures:
            lines += ["", f"Seed {f['seed']} ended with **{f['status']}**:", ""]
            lines += _fence((f.get("error") or "").strip())
        if c.get("doc"):
            lines += ["", "<details><summary>The method and what was inferred</summary>", ""]
            lines += _fence(c["doc"]) + ["", "</details>"]
    return "\n".join(lines) + "\n"


def _bench_rows(bench: dict[str, Any] | None) -> list[list[Any]]:
    rows = []
    for case in (bench or {}).get("cases") or []:
        if not isinstance(case, dict):
            continue
        for b in case.get("baselines") or []:
            if isinstance(b, dict):
                rows.append(
                    [
                        case.get("name", ""),
                        b.get("name", ""),
                        f"{_fmt(b.get('ratio'))}x [{_fmt(b.get('low'))}-{_fmt(b.get('high'))}]",
                        _fmt(case.get("candidate_peak_mib")),
                        _fmt(b.get("peak_mib")),
                        "" if b.get("memory_ratio") is None else f"{_fmt(b.get('memory_ratio'))}x",
                        _row_target(case.get("targets"), b.get("name")),
                    ]
                )
    return rows


def _row_target(targets: Any, baseline: Any) -> str:
    """The targets judged on this baseline's row: ``speed-up >= 1.5x: met (source)``; blank on the others."""
    from geode.claims.bench import met_text, target_text

    out = []
    for t in targets if isinstance(targets, list) else []:
        if isinstance(t, dict) and t.get("baseline") == baseline:
            text = f"{target_text(t)}: {met_text(t.get('met'))}"
            out.append(text + (f" ({t['source']})" if t.get("source") else ""))
    return "; ".join(out)


_BENCH_HEADER = [
    "case",
    "baseline",
    "speed-up (median, IQR)",
    "method peak MiB",
    "baseline peak MiB",
    "memory ratio",
    "target",
]


def _bench_md(bench: dict[str, Any] | None) -> list[str]:
    rows = _bench_rows(bench)
    if not rows:
        return []
    head = f"Benchmark ({_md(bench.get('size', ''))} size; speed-up = baseline time / method time, interleaved):"
    return ["", head, ""] + _md_table(_BENCH_HEADER, rows)


def _safe_fig(path: Any, rec: dict[str, Any]) -> bool:
    """Only the record's own figure paths (the store validated them; checked again here)."""
    prefix = f"results/{rec['slug']}/{rec['mode']}-seed{rec['seed']}/"
    return isinstance(path, str) and path.startswith(prefix) and re.fullmatch(r"[\w.-]+\.png", path[len(prefix) :])


# ------------------------------------------------------------------------------------------------- HTML
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1280px;
padding:0 1rem;color:#1f2328;line-height:1.45}
h1{margin-bottom:.2rem}table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}
th,td{border:1px solid #d0d7de;padding:.3rem .55rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}.badge{display:inline-block;padding:.08rem .5rem;border-radius:1rem;color:#fff;
font-size:.8rem;white-space:nowrap}.muted{color:#656d76}section{border-top:1px solid #d0d7de;margin-top:2rem}
img{max-width:100%;border:1px solid #d0d7de;margin:.4rem 0}pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;
font-size:.8rem;white-space:pre-wrap}.legend span{margin-left:.7rem}.flag{color:#9a6700}
tr.planned td{color:#8c959f;font-size:.8rem;padding:.15rem .55rem}
"""


def _badge(state: str) -> str:
    colour = _COLOURS.get(state, "#6e7781")
    return f'<span class="badge" style="background:{colour}">{html.escape(state)}</span>'


def _table_html(
    header: list[str],
    body: list[list[str]],
    row_classes: list[str] | None = None,
    table_id: str | None = None,
    row_data: list[dict[str, str]] | None = None,
) -> str:
    e = html.escape
    head = "".join(f"<th>{h}</th>" for h in header)
    classes = row_classes or [""] * len(body)
    data = row_data or [{}] * len(body)
    rows = []
    for row, cls, d in zip(body, classes, data):
        attrs = (f' class="{cls}"' if cls else "") + "".join(f' data-{k}="{e(v)}"' for k, v in d.items())
        rows.append(f"<tr{attrs}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    tid = f' id="{e(table_id)}"' if table_id else ""
    return f"<table{tid}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


_SMOKE_NOTE = "smoke: floors are expected to fail at this size (use quick mode for a verdict)"

_FILTER_JS = """
(function () {
  var f = document.getElementById('filter-field'), v = document.getElementById('filter-verdict');
  var rows = document.querySelectorAll('#papers tbody tr');
  function apply() {
    var shown = 0;
    rows.forEach(function (r) {
      var ok = (!f.value || r.dataset.field === f.value) && (!v.value || r.dataset.verdict === v.value);
      r.style.display = ok ? '' : 'none';
      if (ok) { shown += 1; }
    });
    document.getElementById('filter-count').textContent = shown + ' of ' + rows.length + ' papers';
  }
  f.addEventListener('change', apply);
  v.addEventListener('change', apply);
  apply();
})();
"""


def _figure_html(path: str | None, alt: str) -> str:
    if not path:
        return ""
    e = html.escape
    return f'<figure><img src="{e(path)}" alt="{e(alt)}"></figure>'


def render_html(
    rows: list[PaperResult], problems: list[str] | None = None, figures: dict[str, str] | None = None
) -> str:
    """The report as one static HTML page, led by figures; PNG files are referenced by relative path.

    ``figures`` maps ``"overview"`` and paper slugs to the figures :func:`write_report` made. The table of papers
    can be filtered by field and verdict (a few lines of inline JavaScript; no network).
    """
    e = html.escape
    figures = figures or {}
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    counts = _counts(rows)
    legend = " ".join(f"<span title='{e(_LEGEND[s])}'>{_badge(s)} {counts.get(s, 0)}</span>" for s in _COLOURS)
    overview = []
    for r in rows:
        shown = r.mode or r.stale
        name = (
            f'<a href="#{e(r.paper.slug)}"><code>{e(r.paper.slug)}</code></a>'
            if shown
            else f"<code>{e(r.paper.slug)}</code>"
        )
        speed, mem = r.bench_text()
        overview.append(
            [
                f"{name}<br><span class='muted'>{e(r.paper.title)}</span>",
                e(r.paper.field),
                _badge(r.state) + (f"<br><span class='muted'>{e(_label(r))}</span>" if _label(r) != r.state else ""),
                e(r.key_metric_text()),
                e(r.claim.get("paper_figure", "")),
                e(_mode_text(r)),
                e(speed),
                e(mem),
            ]
        )
    fields = sorted({r.paper.field for r in rows})
    states = [s for s in _COLOURS if counts.get(s)]
    options_f = "".join(f'<option value="{e(f)}">{e(f)}</option>' for f in fields)
    options_v = "".join(f'<option value="{e(v)}">{e(v)} ({counts[v]})</option>' for v in states)
    table = _table_html(
        [
            "paper",
            "field",
            "verdict",
            "measured (key metric)",
            "paper's figure",
            "mode, seeds",
            "speed vs strongest baseline",
            "memory ratio",
        ],
        overview,
        ["planned" if r.state == "planned" else "" for r in rows],
        table_id="papers",
        row_data=[{"field": r.paper.field, "verdict": r.state} for r in rows],
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>geode claim report</title><style>{_CSS}</style></head><body>",
        "<h1>geode: claim report</h1>",
        f"<p class='muted'>Generated {e(now)} by geode {e(__version__)}. {e(_headline(rows))}.</p>",
        "<p>Each verdict comes from thresholds fixed in the paper's claim check before it ran, evaluated over all "
        "seeds by the current claim definition. A claim that does not reproduce at CPU scale is a finding, reported "
        "with its numbers.</p>",
        _figure_html(figures.get("overview"), "the papers by field and verdict"),
        f"<p class='legend'>{legend}</p>",
        "<ul class='muted'>" + "".join(f"<li><b>{e(s)}</b>: {e(d)}</li>" for s, d in _LEGEND.items()) + "</ul>",
        "<p class='filters'>Field <select id='filter-field'><option value=''>all</option>"
        f"{options_f}</select> Verdict <select id='filter-verdict'><option value=''>all</option>{options_v}</select>"
        " <span id='filter-count' class='muted'></span></p>",
        table,
    ]
    if problems:
        parts.append("<h2>Skipped files</h2><ul>" + "".join(f"<li>{e(p)}</li>" for p in problems) + "</ul>")
    for r in rows:
        if not r.mode and not r.stale:
            continue
        c = r.claim
        parts.append(f'<section id="{e(r.paper.slug)}"><h2>{e(r.paper.title)} <code>{e(r.paper.slug)}</code></h2>')
        parts.append(
            f"<p><b>Verdict</b> {_badge(r.state)} {e(_label(r)) if _label(r) != r.state else ''} "
            f"<span class='muted'>{e(r.mode or 'no current result')}, seeds {e(_seeds_text(r))}; per seed: "
            f"{e(_seed_text(r) or 'none succeeded')}</span></p>"
        )
        if r.mode == "smoke":
            parts.append(f"<p class='flag'>{e(_SMOKE_NOTE)}</p>")
        parts.append(_figure_html(figures.get(r.paper.slug), f"{r.paper.slug}: thresholds against their bounds"))
        ev = r.evaluation
        if ev:
            parts += [f"<p class='flag'>Inconclusive: {e(x)}.</p>" for x in ev.reasons]
            parts += [f"<p class='flag'>Flag: {e(x)}.</p>" for x in ev.flags]
        if c:
            parts.append(f"<p><b>Claim.</b> {e(c.get('claim', ''))}</p>")
            parts.append(f"<p><b>Paper's figure.</b> {e(c.get('paper_figure', ''))}</p>")
            parts.append(f"<p><b>Baselines.</b> {e(', '.join(c.get('baselines', [])))}</p>")
        parts += [f"<p class='muted'>{e(n)}</p>" for n in r.notes]
        if r.records and r.records[0].get("summary"):
            parts.append(f"<p>{e(r.records[0]['summary'])}</p>")
        if r.checks:
            parts.append(_table_html(_CHECK_HEADER, [[e(x) for x in row] for row in _check_rows(r)]))
            parts.append(f"<p class='muted'>{e(_rules_text(c))}</p>")
        if r.evaluation:
            parts.append("<p class='muted'>Tuning coverage and learned arms</p>")
            parts.append(
                _table_html(["method", "kind", "protocol check"], [[e(x) for x in row] for row in _coverage_rows(r)])
            )
        if r.records:
            for name, path in r.records[0].get("figures", {}).items():
                if _safe_fig(path, r.records[0]):
                    parts.append(
                        f'<figure><img src="{e(path)}" alt="{e(name)}"><figcaption>{e(name)}</figcaption></figure>'
                    )
        brows = _bench_rows(r.bench)
        if brows:
            parts.append(
                f"<p class='muted'>Benchmark ({e(str((r.bench or {}).get('size', '')))} size; speed-up = "
                "baseline time / method time, interleaved repetitions in one process)</p>"
            )
            parts.append(_table_html(_BENCH_HEADER, [[e(str(x)) for x in row] for row in brows]))
        raw = []
        tuned = [{"seed": rec["seed"], **row} for rec in r.records for row in rec.get("tuned") or []]
        if tuned:
            cols = list(dict.fromkeys(k for row in tuned for k in row))
            raw.append("<p class='muted'>Tuned on validation (equal budget)</p>")
            raw.append(_table_html([e(k) for k in cols], [[e(_fmt(row.get(k, ""))) for k in cols] for row in tuned]))
        if r.records:
            body = [
                [e(k), e(_fmt(v)), e(", ".join(_fmt(rec["metrics"].get(k)) for rec in r.records))]
                for k, v in r.mean_metrics.items()
            ]
            raw.append(_table_html(["metric", "mean", "per seed"], body))
            table = r.records[0].get("table") or []
            if table:
                cols = list(dict.fromkeys(k for row in table for k in row))
                raw.append(f"<p class='muted'>Results table (seed {r.records[0]['seed']})</p>")
                raw.append(
                    _table_html([e(k) for k in cols], [[e(_fmt(row.get(k, ""))) for k in cols] for row in table])
                )
            notes = r.records[0].get("notes") or []
            if notes:
                raw.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ul>")
        if raw:
            parts.append("<details><summary>Tuning, raw metrics, results table and notes</summary>")
            parts += raw
            parts.append("</details>")
        for f in r.failures:
            parts.append(
                f"<details><summary>Seed {f['seed']} ended with {_badge(f['status'])}</summary>"
                f"<pre>{e((f.get('error') or '').strip())}</pre></details>"
            )
        if c.get("doc"):
            parts.append(
                f"<details><summary>The method and what was inferred</summary><pre>{e(c['doc'])}</pre></details>"
            )
        parts.append("</section>")
    parts.append(f"<script>{_FILTER_JS}</script>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def collect(store: ResultStore) -> tuple[list[PaperResult], Scan]:
    """Scan the store, load the current claims and benchmarks, and summarise every paper."""
    scan = store.scan()
    slugs = sorted({r["slug"] for r in scan.records} | {p.slug for p in catalog.papers(status="implemented")})
    slugs = [s for s in slugs if not s.startswith("_")]
    claims, errors = current_claims(slugs)
    benches = {}
    for s in slugs:
        bench, problem = _read_bench(store, s)
        if bench is not None:
            benches[s] = bench
        if problem:
            scan.problems.append(problem)
    return summarize(scan.records, claims, benches, errors), scan


def write_figures(store: ResultStore, rows: list[PaperResult]) -> dict[str, str]:
    """Draw the overview and each judged paper's thresholds into ``figures/`` (atomically); their relative paths.

    A figure that cannot be drawn costs only itself (the report says nothing of it).
    """
    from geode.claims.figures import overview_png, paper_png

    out: dict[str, str] = {}
    by_field: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in rows:
        by_field[r.paper.field][r.state] += 1
    jobs: list[tuple[str, Any]] = [("overview", lambda: overview_png(by_field))]
    for r in rows:
        if r.evaluation is not None and r.records:
            title = f"{r.paper.slug}: {_label(r)} ({r.mode}, seeds {_seeds_text(r)})"
            runs = [rec["metrics"] for rec in r.records]
            jobs.append((r.paper.slug, lambda r=r, runs=runs, title=title: paper_png(r.checks, runs, title)))
    for name, draw in jobs:
        try:
            png = draw()
        except Exception:  # a figure must never cost the report
            continue
        if png:
            atomic_write_bytes(store.root / "figures" / f"{name}.png", png)
            out[name] = f"figures/{name}.png"
    return out


def write_report(store: ResultStore) -> tuple[Path, Path, list[str]]:
    """Write ``REPORT.md``, ``index.html`` and their figures into the store's folder (atomically).

    Returns the two paths and the one-line problems of skipped files.
    """
    rows, scan = collect(store)
    figures = write_figures(store, rows)
    md, page = store.root / "REPORT.md", store.root / "index.html"
    atomic_write_text(md, render_markdown(rows, scan.problems, figures))
    atomic_write_text(page, render_html(rows, scan.problems, figures))
    return md, page, scan.problems
