from __future__ import annotations

import re
from html.parser import HTMLParser

import geode.claims._testing  # noqa: F401
from geode.claims.report import render_html, render_markdown, summarize, write_report
from geode.claims.runner import Task, execute, run_tasks
from geode.claims.store import ResultStore

VOID = {"meta", "img", "br", "hr", "link", "input"}


class _Balanced(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.imgs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.imgs.append(dict(attrs)["src"])
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
        else:
            self.stack.pop()


def _store_with_toys(tmp_path):
    store = ResultStore(tmp_path)
    for seed in range(3):
        rec, figs = execute(Task("_seeded", "smoke", seed, "geode.claims._testing"))
        store.write(rec, figs)
    rec, figs = execute(Task("_ok", "quick", 0, "geode.claims._testing"))
    store.write(rec, figs)
    rec, figs = execute(Task("_raises", "smoke", 0, "geode.claims._testing"))
    store.write(rec, figs)
    return store


def test_summary_averages_seeds_before_applying_the_thresholds(tmp_path):
    store = _store_with_toys(tmp_path)
    recs = [r for r in store.records() if r["slug"] == "_seeded"]
    assert [r["verdict"] for r in recs] == ["reproduced", "partial", "not reproduced"]
    assert summarize(recs) == summarize([])  # toy slugs are not papers: the report lists the catalogue
    rows = summarize([{**r, "slug": "svf"} for r in recs])
    assert len(rows) == 57
    (row,) = [r for r in rows if r.paper.slug == "svf"]
    assert row.mode == "smoke" and row.seeds == [0, 1, 2]
    assert abs(row.mean_metrics["value"] - 0.4) < 1e-12
    assert row.state == "partial"  # the mean 0.4 passes 'some' (>= 0.2) but not 'big' (>= 0.5)
    assert row.key_metric_text().startswith("value = 0.4 ± ")


def test_the_largest_mode_with_a_success_is_shown(tmp_path):
    store = _store_with_toys(tmp_path)
    recs = [{**r, "slug": "svf"} for r in store.records() if r["slug"] in ("_seeded", "_ok")]
    (row,) = [r for r in summarize(recs) if r.paper.slug == "svf"]
    assert row.mode == "quick" and row.state == "reproduced"


def test_planned_and_not_run_states(tmp_path):
    rows = summarize([])
    assert {r.state for r in rows} <= {"planned", "not run"}
    assert all((r.state == "planned") == (r.paper.status == "planned") for r in rows)


def test_report_files_are_written_and_the_html_is_well_formed(tmp_path):
    store = _store_with_toys(tmp_path)
    recs = [{**r, "slug": "svf"} if r["slug"] == "_ok" else r for r in store.records()]
    rows = summarize(recs)
    html_text = render_html(rows)
    parser = _Balanced()
    parser.feed(html_text)
    assert parser.errors == [] and parser.stack == []
    assert parser.imgs == ["results/_ok/quick-seed0/curve.png"]
    assert len(re.findall(r"<tr[ >]", html_text)) >= 57 + 1
    md = render_markdown(rows)
    assert "## SVF" in md and "![curve](results/_ok/quick-seed0/curve.png)" in md
    assert md.count("\n| `") + md.count("\n| [`") >= 57
    md_path, html_path = write_report(store)
    assert md_path.read_text().startswith("# geode: claim report")
    assert html_path.read_text().lstrip().startswith("<!DOCTYPE html>")


def test_errors_are_shown_with_their_traceback(tmp_path):
    store = ResultStore(tmp_path)
    run_tasks([Task("_raises", "smoke", 0, "geode.claims._testing")], store, timeout=60)
    recs = [{**r, "slug": "svf"} for r in store.records()]
    (row,) = [r for r in summarize(recs) if r.paper.slug == "svf"]
    assert row.state == "error"
    assert "this claim fails on purpose" in render_markdown([row])
    assert "this claim fails on purpose" in render_html([row])
