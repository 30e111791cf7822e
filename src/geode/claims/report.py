"""Render stored results as ``REPORT.md`` and a self-contained static ``index.html``.

The report lists all 57 papers in one overview table (field, status, verdict, key metric against the
paper's own figure), then one section per paper with results: the claim, the thresholds with what
was measured, the metrics, the results table, the figures and what had to be inferred.

For each paper the report shows the largest mode that has a successful result (full, then quick,
then smoke). With several seeds the metrics are averaged over seeds and the verdict is evaluated on
the averages with the claim's fixed thresholds (each seed's own verdict is listed too). Rendering
needs no paper module: every result file carries its claim's description.
"""

from __future__ import annotations

import datetime as _dt
import html
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geode import __version__, catalog
from geode.claims.store import ResultStore, atomic_write_text
from geode.claims.types import Threshold, evaluate_verdict

__all__ = ["PaperResult", "render_html", "render_markdown", "summarize", "write_report"]

_MODE_ORDER = ("full", "quick", "smoke")
_COLOURS = {
    "reproduced": "#1a7f37",
    "partial": "#b08800",
    "not reproduced": "#cf222e",
    "error": "#8250df",
    "timeout": "#8250df",
    "not run": "#6e7781",
    "planned": "#afb8c1",
}


@dataclass
class PaperResult:
    """What the report shows for one paper."""

    paper: catalog.Paper
    state: str  # a verdict, or "error", "timeout", "not run", "planned"
    mode: str | None = None
    records: list[dict[str, Any]] = field(default_factory=list)  # the shown mode's records, by seed
    failures: list[dict[str, Any]] = field(default_factory=list)  # error/timeout records of that mode
    claim: dict[str, Any] = field(default_factory=dict)
    mean_metrics: dict[str, float] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def seeds(self) -> list[int]:
        return [r["seed"] for r in self.records]

    def key_metric_text(self) -> str:
        key = self.claim.get("key_metric")
        if not key or key not in self.mean_metrics:
            return ""
        vals = [r["metrics"][key] for r in self.records if key in r["metrics"]]
        text = f"{key} = {_fmt(self.mean_metrics[key])}"
        if len(vals) > 1:
            text += f" ± {_fmt(statistics.stdev(vals))}"
        return text


def _fmt(x: Any) -> str:
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if x == 0 or 1e-3 <= abs(x) < 1e5:
            return f"{x:.4g}"
        return f"{x:.3e}"
    return str(x)


def summarize(records: Iterable[dict[str, Any]]) -> list[PaperResult]:
    """One :class:`PaperResult` per catalogue paper from stored records.

    Papers with results come first, then implemented papers not run yet, then planned ones; each group
    in catalogue order (field, then slug).
    """
    by_slug: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        by_slug[rec["slug"]].append(rec)
    out = []
    for paper in catalog.papers():
        recs = by_slug.get(paper.slug, [])
        if not recs:
            out.append(PaperResult(paper, "planned" if paper.status == "planned" else "not run"))
            continue
        ok_modes = [m for m in _MODE_ORDER if any(r["mode"] == m and r["status"] == "ok" for r in recs)]
        mode = ok_modes[0] if ok_modes else next(m for m in _MODE_ORDER if any(r["mode"] == m for r in recs))
        in_mode = sorted((r for r in recs if r["mode"] == mode), key=lambda r: r["seed"])
        ok = [r for r in in_mode if r["status"] == "ok"]
        failures = [r for r in in_mode if r["status"] != "ok"]
        if not ok:
            out.append(PaperResult(paper, failures[0]["status"], mode, [], failures, failures[0].get("claim", {})))
            continue
        claim = ok[-1].get("claim", {})
        keys = sorted(set().union(*(r["metrics"] for r in ok)))
        mean = {k: statistics.fmean(r["metrics"][k] for r in ok if k in r["metrics"]) for k in keys}
        thresholds = [Threshold.from_dict(t) for t in claim.get("thresholds", [])]
        if thresholds:
            verdict, checks = evaluate_verdict(thresholds, claim.get("reproduced"), claim.get("partial"), mean)
        else:
            verdict, checks = ok[0]["verdict"], ok[0].get("checks", [])
        out.append(PaperResult(paper, verdict, mode, ok, failures, claim, mean, checks))
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
    for state in ("reproduced", "partial", "not reproduced", "error", "timeout", "not run"):
        if c.get(state):
            parts.append(f"{c[state]} {state}")
    return ", ".join(parts)


def _mode_text(r: PaperResult) -> str:
    if not r.mode:
        return ""
    text = f"{r.mode}, {len(r.records)} seed(s)"
    return text + (f", {len(r.failures)} failed" if r.failures else "")


def _seed_text(r: PaperResult) -> str:
    if not r.records:
        return ""
    return ", ".join(f"{rec['seed']}: {rec['verdict']}" for rec in r.records)


def _md_cell(x: Any) -> str:
    return _fmt(x).replace("|", "\\|").replace("\n", " ")


def render_markdown(rows: list[PaperResult]) -> str:
    """The report as Markdown (figures referenced by relative path)."""
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# geode: claim report",
        "",
        f"Generated {now} by geode {__version__}. {_headline(rows)}.",
        "",
        "Each verdict comes from thresholds fixed in the paper's claim check before it ran. A claim that does",
        "not reproduce at CPU scale is a finding, reported with its numbers.",
        "",
        "| paper | field | status | verdict | measured (key metric) | paper's figure | mode, seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        verdict = f"**{r.state}**" if r.state in ("reproduced", "partial", "not reproduced") else r.state
        fig = r.claim.get("paper_figure", "")
        ms = _mode_text(r)
        link = f"[`{r.paper.slug}`](#{r.paper.slug})" if r.mode else f"`{r.paper.slug}`"
        lines.append(
            f"| {link} {_md_cell(r.paper.title)} | {r.paper.field} | {r.paper.status} | {verdict} | "
            f"{_md_cell(r.key_metric_text())} | {_md_cell(fig)} | {ms} |"
        )
    for r in rows:
        if not r.mode:
            continue
        c = r.claim
        lines += ["", f'<a id="{r.paper.slug}"></a>', "", f"## {r.paper.title} (`{r.paper.slug}`)", ""]
        if c:
            lines += [f"**Claim.** {c.get('claim', '')}", "", f"**Paper's figure.** {c.get('paper_figure', '')}", ""]
            lines += [f"**Baselines.** {', '.join(c.get('baselines', []))}", ""]
        lines.append(f"**Verdict: {r.state}** ({r.mode} mode; per seed: {_seed_text(r) or 'none succeeded'})")
        if r.records and r.records[0].get("summary"):
            lines += ["", f"Seed {r.records[0]['seed']}: {r.records[0]['summary']}"]
        if r.checks:
            lines += ["", "| threshold | rule | measured (mean over seeds) | passed |", "|---|---|---|---|"]
            for ch in r.checks:
                lines.append(
                    f"| {ch['name']} | `{ch['metric']} {ch['op']} {_fmt(ch['value'])}` | {_md_cell(ch['measured'])} | "
                    f"{'yes' if ch['passed'] else 'no'} |"
                )
            rule = c.get("reproduced") or "all thresholds"
            lines += ["", f"Reproduced when: `{rule}`. Partial when: `{c.get('partial') or 'never'}`."]
        if r.mean_metrics:
            lines += ["", "| metric | mean | per seed |", "|---|---|---|"]
            for k, v in r.mean_metrics.items():
                per = ", ".join(_fmt(rec["metrics"].get(k)) for rec in r.records)
                lines.append(f"| {k} | {_fmt(v)} | {per} |")
        if r.records and r.records[0].get("table"):
            table = r.records[0]["table"]
            cols = list(dict.fromkeys(k for row in table for k in row))
            lines += ["", f"Results table (seed {r.records[0]['seed']}):", ""]
            lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
            lines += ["| " + " | ".join(_md_cell(row.get(k, "")) for k in cols) + " |" for row in table]
        if r.records:
            for name, path in r.records[0].get("figures", {}).items():
                lines += ["", f"![{name}]({path})"]
            notes = r.records[0].get("notes") or []
            if notes:
                lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
        for f in r.failures:
            lines += [
                "",
                f"Seed {f['seed']} ended with **{f['status']}**:",
                "",
                "```",
                (f.get("error") or "").strip(),
                "```",
            ]
        if c.get("doc"):
            lines += [
                "",
                "<details><summary>The method and what was inferred</summary>",
                "",
                "```text",
                c["doc"],
                "```",
                "",
                "</details>",
            ]
    return "\n".join(lines) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1200px;
padding:0 1rem;color:#1f2328;line-height:1.45}
h1{margin-bottom:.2rem}table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}
th,td{border:1px solid #d0d7de;padding:.3rem .55rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}.badge{display:inline-block;padding:.08rem .5rem;border-radius:1rem;color:#fff;
font-size:.8rem;white-space:nowrap}.muted{color:#656d76}section{border-top:1px solid #d0d7de;margin-top:2rem}
img{max-width:100%;border:1px solid #d0d7de;margin:.4rem 0}pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;
font-size:.8rem;white-space:pre-wrap}.legend span{margin-left:.7rem}
tr.planned td{color:#8c959f;font-size:.8rem;padding:.15rem .55rem}
"""


def _badge(state: str) -> str:
    colour = _COLOURS.get(state, "#6e7781")
    return f'<span class="badge" style="background:{colour}">{html.escape(state)}</span>'


def _table_html(header: list[str], body: list[list[str]], row_classes: list[str] | None = None) -> str:
    head = "".join(f"<th>{h}</th>" for h in header)
    classes = row_classes or [""] * len(body)
    rows = "".join(
        (f'<tr class="{cls}">' if cls else "<tr>") + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
        for row, cls in zip(body, classes)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def render_html(rows: list[PaperResult]) -> str:
    """The report as one static HTML page; figures are PNG files referenced by relative path."""
    e = html.escape
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    counts = _counts(rows)
    legend = " ".join(f"{_badge(s)} {counts.get(s, 0)}" for s in _COLOURS)
    overview = []
    for r in rows:
        name = (
            f'<a href="#{e(r.paper.slug)}"><code>{e(r.paper.slug)}</code></a>'
            if r.mode
            else f"<code>{e(r.paper.slug)}</code>"
        )
        overview.append(
            [
                f"{name}<br><span class='muted'>{e(r.paper.title)}</span>",
                e(r.paper.field),
                e(r.paper.status),
                _badge(r.state),
                e(r.key_metric_text()),
                e(r.claim.get("paper_figure", "")),
                e(_mode_text(r)),
            ]
        )
    row_classes = ["planned" if r.state == "planned" else "" for r in rows]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>geode claim report</title><style>{_CSS}</style></head><body>",
        "<h1>geode: claim report</h1>",
        f"<p class='muted'>Generated {e(now)} by geode {e(__version__)}. {e(_headline(rows))}.</p>",
        "<p>Each verdict comes from thresholds fixed in the paper's claim check before it ran. A claim that does "
        "not reproduce at CPU scale is a finding, reported with its numbers.</p>",
        f"<p class='legend'>{legend}</p>",
        _table_html(
            ["paper", "field", "status", "verdict", "measured (key metric)", "paper's figure", "mode"],
            overview,
            row_classes,
        ),
    ]
    for r in rows:
        if not r.mode:
            continue
        c = r.claim
        parts.append(f'<section id="{e(r.paper.slug)}"><h2>{e(r.paper.title)} <code>{e(r.paper.slug)}</code></h2>')
        if c:
            parts.append(f"<p><b>Claim.</b> {e(c.get('claim', ''))}</p>")
            parts.append(f"<p><b>Paper's figure.</b> {e(c.get('paper_figure', ''))}</p>")
            parts.append(f"<p><b>Baselines.</b> {e(', '.join(c.get('baselines', [])))}</p>")
        parts.append(
            f"<p><b>Verdict</b> {_badge(r.state)} <span class='muted'>{e(r.mode)} mode; per seed: "
            f"{e(_seed_text(r) or 'none succeeded')}</span></p>"
        )
        if r.records and r.records[0].get("summary"):
            parts.append(f"<p>{e(r.records[0]['summary'])}</p>")
        if r.checks:
            body = [
                [
                    e(ch["name"]),
                    f"<code>{e(ch['metric'])} {e(ch['op'])} {e(_fmt(ch['value']))}</code>",
                    e(_fmt(ch["measured"])),
                    "yes" if ch["passed"] else "<b>no</b>",
                ]
                for ch in r.checks
            ]
            parts.append(_table_html(["threshold", "rule", "measured (mean over seeds)", "passed"], body))
            parts.append(
                f"<p class='muted'>Reproduced when <code>{e(c.get('reproduced') or 'all thresholds')}</code>; "
                f"partial when <code>{e(c.get('partial') or 'never')}</code>.</p>"
            )
        if r.mean_metrics:
            body = [
                [e(k), e(_fmt(v)), e(", ".join(_fmt(rec["metrics"].get(k)) for rec in r.records))]
                for k, v in r.mean_metrics.items()
            ]
            parts.append(_table_html(["metric", "mean", "per seed"], body))
        if r.records and r.records[0].get("table"):
            table = r.records[0]["table"]
            cols = list(dict.fromkeys(k for row in table for k in row))
            parts.append(f"<p class='muted'>Results table (seed {r.records[0]['seed']})</p>")
            parts.append(
                _table_html([e(c_) for c_ in cols], [[e(_fmt(row.get(k, ""))) for k in cols] for row in table])
            )
        if r.records:
            for name, path in r.records[0].get("figures", {}).items():
                parts.append(
                    f'<figure><img src="{e(path)}" alt="{e(name)}"><figcaption>{e(name)}</figcaption></figure>'
                )
            notes = r.records[0].get("notes") or []
            if notes:
                parts.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ul>")
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
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(store: ResultStore) -> tuple[Path, Path]:
    """Write ``REPORT.md`` and ``index.html`` into the store's folder (atomically); return their paths."""
    rows = summarize(store.records())
    md, page = store.root / "REPORT.md", store.root / "index.html"
    atomic_write_text(md, render_markdown(rows))
    atomic_write_text(page, render_html(rows))
    return md, page
