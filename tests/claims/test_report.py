from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

import geode.claims._testing  # noqa: F401
from geode.claims import load_claim
from geode.claims._testing import HOSTILE
from geode.claims.report import render_html, render_markdown, summarize, write_report
from geode.claims.runner import Task, execute
from geode.claims.store import ResultStore

VOID = {"meta", "img", "br", "hr", "link", "input"}
M = "geode.claims._testing"


class _Parsed(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.imgs: list[str] = []
        self.tags: list[str] = []
        self.handlers: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.handlers += [k for k, _ in attrs if k.startswith("on")]
        if tag == "img":
            self.imgs.append(dict(attrs)["src"])
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
        else:
            self.stack.pop()


def _as(slug, rec):
    """A toy record presented as paper ``slug`` (its claim definition travels with it)."""
    return {**rec, "slug": slug}


def _runs(slug, seeds, mode="smoke"):
    return [execute(Task(slug, mode, s, M))[0] for s in seeds]


def _defs(toy, slug="svf"):
    return {slug: load_claim(toy, M).describe()}


def test_verdicts_are_evaluated_over_seeds_by_the_current_definition():
    recs = [_as("svf", r) for r in _runs("_seeded", range(3))]
    assert [r["verdict"] for r in recs] == ["reproduced", "partial", "not reproduced"]
    assert summarize(_runs("_seeded", range(3))) == summarize([])  # toy slugs are not papers
    rows = summarize(recs, _defs("_seeded"))
    assert len(rows) == 57
    (row,) = [r for r in rows if r.paper.slug == "svf"]
    assert row.mode == "smoke" and row.seeds == [0, 1, 2]
    assert abs(row.mean_metrics["value"] - 0.4) < 1e-12
    assert row.state == "partial"  # the mean 0.4 passes 'some' (>= 0.2) but not 'big' (>= 0.5)
    assert row.evaluation.unstable and row.key_metric_text().startswith("value = 0.4 ± ")


def test_floors_controls_and_flags_reach_both_renderers():
    recs = [_as("svf", r) for r in _runs("_floors", [0, 1, 2])]
    (row,) = [r for r in summarize(recs, _defs("_floors")) if r.paper.slug == "svf"]
    assert row.state == "reproduced"
    disc = {c["name"]: c["discrimination"] for c in row.checks}
    assert disc == {"gain": "discriminates", "some": "does not discriminate", "learns": "no control"}
    md, page = render_markdown([row]), render_html([row])
    for text in (md, page):
        assert "does not discriminate" in text and "floor" in text and "bound95(gain)" in text
    bad = [_as("svf", r) for r in _runs("_floors", [0, 1, 3])]  # seed 3: the baseline does not learn
    (row,) = [r for r in summarize(bad, _defs("_floors")) if r.paper.slug == "svf"]
    assert row.state == "inconclusive" and row.evaluation.failed_floors == ["learns"]
    assert "floor learns failed" in render_markdown([row])


def test_one_seed_is_inconclusive_under_the_three_seed_rule():
    recs = [_as("svf", r) for r in _runs("_ok", [0], mode="quick")]
    (row,) = [r for r in summarize(recs, _defs("_ok")) if r.paper.slug == "svf"]
    assert row.state == "inconclusive" and "needs at least 3" in row.evaluation.reasons[0]


def test_results_of_another_definition_are_stale_and_never_decide():
    recs = [_as("svf", r) for r in _runs("_seeded", range(3))]
    current = load_claim("_seeded", M).describe()
    changed = {**current, "hash": "f" * 16}  # as if the thresholds had changed since
    (row,) = [r for r in summarize(recs, {"svf": changed}) if r.paper.slug == "svf"]
    assert row.state == "stale" and row.stale == 3 and row.records == []
    (row,) = [r for r in summarize(recs, {"svf": current}) if r.paper.slug == "svf"]
    assert row.state == "partial" and row.stale == 0


def test_the_largest_mode_with_a_success_is_shown():
    recs = [_as("svf", r) for r in _runs("_ok", range(3)) + _runs("_ok", range(3), mode="quick")]
    (row,) = [r for r in summarize(recs, _defs("_ok")) if r.paper.slug == "svf"]
    assert row.mode == "quick" and row.state == "reproduced"


def test_planned_and_not_run_states():
    rows = summarize([])
    assert {r.state for r in rows} <= {"planned", "not run"}
    assert all((r.state == "planned") == (r.paper.status == "planned") for r in rows)


def test_report_files_are_written_the_html_is_well_formed_and_figures_are_local(tmp_path):
    store = ResultStore(tmp_path)
    for s in range(3):
        rec, figs = execute(Task("svf", "smoke", s))
        store.write(rec, figs)
    md_path, html_path, problems = write_report(store)
    assert problems == []
    page = html_path.read_text()
    parser = _Parsed()
    parser.feed(page)
    assert parser.errors == [] and parser.stack == []
    local = r"results/svf/smoke-seed0/[\w-]+\.[0-9a-f]+\.png|figures/[\w-]+\.png"
    assert parser.imgs and all(re.fullmatch(local, s) for s in parser.imgs)
    assert parser.imgs[:2] == ["figures/overview.png", "figures/svf.png"]  # led by figures
    assert all((tmp_path / s).is_file() for s in parser.imgs)
    assert "smoke: floors are expected to fail at this size" in page
    assert len(re.findall(r"<tr[ >]", page)) >= 57 + 1
    md = md_path.read_text()
    assert md.startswith("# geode: claim report") and "## SVF" in md
    assert md.count("\n| `") + md.count("\n| [`") >= 57


def test_a_bad_file_is_listed_and_blocks_nothing(tmp_path):
    store = ResultStore(tmp_path)
    for s in range(3):
        store.write(*execute(Task("svf", "smoke", s)))
    (tmp_path / "results" / "svf" / "quick-seed0.json").write_text("{broken")
    moved = json.loads((tmp_path / "results" / "svf" / "smoke-seed1.json").read_text())
    (tmp_path / "results" / "svf" / "full-seed7.json").write_text(json.dumps(moved))  # not what it says it is
    md_path, _, problems = write_report(store)
    assert len(problems) == 2
    md = md_path.read_text()
    assert "## Skipped files" in md and "smoke, 3 seed(s)" in md  # full-seed7 never outranks smoke


def test_errors_are_shown_with_their_traceback():
    rec, _ = execute(Task("_raises", "smoke", 0, M))
    (row,) = [r for r in summarize([_as("svf", rec)], _defs("_raises")) if r.paper.slug == "svf"]
    assert row.state == "error"
    assert "this claim fails on purpose" in render_markdown([row])
    assert "this claim fails on purpose" in render_html([row])


def test_hostile_text_is_escaped_in_every_field_of_both_renderers():
    recs = [_as("svf", r) for r in _runs("_hostile", range(3))]
    recs[0]["error"] = HOSTILE
    failed = {**execute(Task("_raises", "smoke", 3, M))[0], "slug": "svf", "error": HOSTILE + "\n```\n" + HOSTILE}
    claim = load_claim("_hostile", M).describe()
    claim["doc"] = "doc ```\n" + HOSTILE
    (row,) = [r for r in summarize(recs + [failed], {"svf": claim}) if r.paper.slug == "svf"]
    page = render_html([row])
    parser = _Parsed()
    parser.feed(page)
    from geode.claims.report import _FILTER_JS

    # the only script is the report's own table filter, after every stored text
    assert parser.tags.count("script") == 1 and page.count("<script>") == 1
    assert page.rstrip().endswith(f"<script>{_FILTER_JS}</script>\n</body></html>")
    assert parser.handlers == [] and parser.errors == []
    assert all(not s.startswith("javascript") for s in parser.imgs)
    md = render_markdown([row])
    # every fenced block is closed by a fence longer than any backtick run inside it ...
    fences = re.findall(r"^(`{3,})text$", md, flags=re.M)
    assert len(fences) == 2 and all(len(f) >= 4 for f in fences)
    # ... and outside the fences (where a renderer would read HTML) every hostile text is escaped
    outside = re.sub(r"^(`{4,})text\n.*?^\1$", "", md, flags=re.M | re.S)
    assert "<script>" not in outside and "<img" not in outside and "onerror=alert" in outside
    assert "[link](javascript" not in outside  # brackets escaped: no link


@pytest.mark.parametrize("field", ["summary", "notes"])
def test_control_characters_do_not_break_the_markdown_table(field):
    recs = [_as("svf", r) for r in _runs("_ok", range(3))]
    recs[0][field] = "a | b\nc" if field == "summary" else ["a | b\nc"]
    (row,) = [r for r in summarize(recs, _defs("_ok")) if r.paper.slug == "svf"]
    assert "a \\| b c" in render_markdown([row])


def test_benchmarks_show_in_the_overview():
    bench = {
        "size": "quick",
        "headline": {"case": "c", "baseline": "loop", "ratio": 1.5, "low": 1.4, "high": 1.6, "memory_ratio": 0.5},
        "cases": [
            {
                "name": "c",
                "candidate_peak_mib": 10.0,
                "baselines": [
                    {"name": "loop", "ratio": 1.5, "low": 1.4, "high": 1.6, "peak_mib": 20.0, "memory_ratio": 0.5}
                ],
            }
        ],
    }
    recs = [_as("svf", r) for r in _runs("_ok", range(3))]
    (row,) = [r for r in summarize(recs, _defs("_ok"), {"svf": bench}) if r.paper.slug == "svf"]
    assert row.bench_text() == ("1.5x [1.4-1.6] vs loop", "0.5x")
    assert "1.5x \\[1.4-1.6\\] vs loop" in render_markdown([row]) and "0.5x" in render_html([row])


def test_the_measured_column_never_says_none():
    from geode.claims.report import _check_rows, _measured_text

    one = [_as("svf", r) for r in _runs("_noisy", [0])]  # one seed of a bound95 threshold: no interval yet
    (row,) = [r for r in summarize(one, _defs("_noisy")) if r.paper.slug == "svf"]
    cells = [c for line in _check_rows(row) for c in line]
    assert "None" not in cells and "0.5 (one seed: no interval)" in cells
    assert _measured_text({"agg": "2 of 3", "measured": 2 / 3, "per_seed": [1, 2, 3]}) == "2 of 3 seeds"
    assert _measured_text({"agg": "mean", "measured": None, "per_seed": [None]}) == "missing"
