from __future__ import annotations

import json
import stat

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from geode import catalog
from geode.cli import main

IMPLEMENTED = [p.slug for p in catalog.papers(status="implemented")]


def run(capsys, *argv):
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
        raise SystemExit(0)
    out = capsys.readouterr()
    return exc.value.code or 0, out.out, out.err


def one_line(err: str) -> bool:
    return "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_list_json_has_all_57_papers(capsys):
    code, out, _ = run(capsys, "list", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 57
    assert set(rows[0]) >= {"slug", "title", "field", "status"}


def test_list_filters_by_field_and_pattern(capsys):
    code, out, _ = run(capsys, "list", "--json", "--field", "adapters", "s*")
    assert code == 0
    assert {r["slug"] for r in json.loads(out)} == {"sama", "sd-lora", "sds-lora"}


@pytest.mark.parametrize(
    "argv, message",
    [
        (("reproduce", "no-such-paper"), "unknown paper slug 'no-such-paper'"),
        (("reproduce", "--all", "--mode", "huge"), "unknown mode 'huge'"),
        (("reproduce",), "pass --all"),
        (("show", "nope"), "unknown paper slug 'nope'"),
        (("list", "--field", "astrology"), "unknown field 'astrology'"),
        (("frobnicate",), "No such command"),
        (("reproduce", "--all", "--seeds", "0"), "--seeds as a count must be between 1 and 1000"),
        (("reproduce", "--all", "--seeds", "1000000000"), "between 1 and 1000"),
        (("reproduce", "--all", "--seeds", "3-1"), "is empty"),
        (("reproduce", "--all", "--seeds", "seven"), "--seeds must be a count (3), a list (7,8,9) or a range"),
        (("reproduce", "--all", "--jobs", "many"), "--jobs must be a whole number or 'auto'"),
        (("reproduce", "--all", "--max-seeds", "-1"), "--max-seeds must be"),
        (("show", "svf", "--seeds", "x"), "--seeds must be"),
        (("reproduce", "--all", "--jobs", "1000000"), "--jobs must be"),
        (("reproduce", "svf", "--timeout", "nan"), "--timeout must be"),
        (("reproduce", "svf", "--timeout", "-5"), "--timeout must be"),
        (("reproduce", "svf", "--out", ""), "--out must name a folder"),
        (("reproduce", "svf", "--mode", "smoke", "--ray", "bogus-address"), "--ray must be"),
        (("reproduce", "svf", "--mode", "smoke", "--ray", "127.0.0.1:1"), "cannot reach a Ray cluster"),
        (("report", "--out", "/nonexistent/geode-results"), "no results folder"),
        (("bench", "svf", "--size", "huge"), "unknown size"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(capsys, argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert message in err
    assert one_line(err)


def test_an_out_that_is_a_file_fails_before_any_work(capsys, tmp_path, monkeypatch):
    afile = tmp_path / "afile"
    afile.write_text("x")
    calls = []
    monkeypatch.setattr("geode.claims.runner.run_tasks", lambda *a, **k: calls.append(1))
    for cmd in (("reproduce", "svf"), ("report",), ("bench", "svf")):
        code, _, err = run(capsys, *cmd, "--out", str(afile))
        assert code == 2 and "not a folder" in err and one_line(err)
    assert calls == []


def test_an_unwritable_out_fails_before_any_work(capsys, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr("geode.claims.runner.run_tasks", lambda *a, **k: calls.append(1))
    code, _, err = run(capsys, "reproduce", "svf", "--mode", "smoke", "--out", "/proc/geode-cannot-write-here")
    assert code == 2 and "cannot write results to" in err and one_line(err) and calls == []

    def refuse(self):
        raise PermissionError(13, "Permission denied", str(self.root))

    monkeypatch.setattr("geode.claims.store.ResultStore.ensure_writable", refuse)
    code, _, err = run(capsys, "reproduce", "svf", "--mode", "smoke", "--out", str(tmp_path))
    assert code == 2 and "Permission denied" in err and one_line(err) and calls == []


def test_a_bad_result_file_is_listed_and_the_report_is_still_written(capsys, tmp_path):
    bad = tmp_path / "results" / "svf" / "quick-seed0.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{broken")
    code, _, err = run(capsys, "report", "--out", str(tmp_path))
    assert code == 0 and "skipped:" in err and "cannot read result file" in err and one_line(err)
    assert "## Skipped files" in (tmp_path / "REPORT.md").read_text()


def test_report_on_an_empty_folder_lists_every_paper(capsys, tmp_path):
    code, out, _ = run(capsys, "report", "--out", str(tmp_path))
    assert code == 0
    md = (tmp_path / "REPORT.md").read_text()
    for p in catalog.papers():
        assert f"`{p.slug}`" in md
    assert (tmp_path / "index.html").is_file()
    assert stat.S_IMODE((tmp_path / "index.html").stat().st_mode) & 0o044  # readable by others (umask 022)


def test_show_a_planned_paper(capsys):
    planned = catalog.papers(status="planned")
    if not planned:
        pytest.skip("every paper is implemented")
    code, out, _ = run(capsys, "show", planned[0].slug)
    assert code == 0 and "planned" in out


def test_assets_check_fails_only_for_assets_an_implemented_claim_needs(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GEODE_CACHE", str(tmp_path))
    code, out, err = run(capsys, "assets", "--check", "--json")
    rows = json.loads(out)["assets"]
    needed_missing = [r for r in rows if r["needed_by"] and not r["installed"]]
    assert code == (1 if needed_missing else 0)
    assert {"sklearn-datasets", "smollm2-gguf", "fashion-mnist"} <= {r["asset"] for r in rows}
    assert not list(tmp_path.iterdir())  # --check never writes the cache


@pytest.mark.skipif("svf" not in IMPLEMENTED, reason="svf is not implemented")
def test_reproduce_smoke_then_resume_then_show_then_report(capsys, tmp_path):
    out_dir = str(tmp_path)
    code, out, err = run(capsys, "reproduce", "svf", "--mode", "smoke", "--seeds", "1", "--out", out_dir)
    assert code == 0, err
    assert (tmp_path / "results" / "svf" / "smoke-seed0.json").is_file()
    assert "inconclusive" in out  # one seed of the three a verdict needs
    code, out, err = run(capsys, "reproduce", "svf", "--mode", "smoke", "--seeds", "1", "--out", out_dir)
    assert code == 0 and "already stored" in err
    code, out, _ = run(capsys, "show", "svf", "--out", out_dir)
    assert code == 0 and "smoke-seed0.json" in out and "Verdict over 1 seed(s)" in out
    code, _, _ = run(capsys, "report", "--out", out_dir)
    assert code == 0 and 'id="svf"' in (tmp_path / "index.html").read_text()


@pytest.mark.skipif("virtualrect" not in IMPLEMENTED, reason="virtualrect is not implemented")
def test_seeds_as_a_list_or_a_range_store_exactly_those_seeds(capsys, tmp_path):
    out_dir = str(tmp_path)
    for spec in ("7,8,9", "10-12"):
        args = ("reproduce", "virtualrect", "--mode", "smoke", "--seeds", spec, "--max-seeds", "0", "--jobs", "auto")
        code, _, err = run(capsys, *args, "--out", out_dir)
        assert code == 0, err
    stored = sorted(p.name for p in (tmp_path / "results" / "virtualrect").glob("*.json"))
    assert stored == [f"smoke-seed{s}.json" for s in (10, 11, 12, 7, 8, 9)]
    code, out, _ = run(capsys, "show", "virtualrect", "--out", out_dir, "--seeds", "10-12")
    assert code == 0 and "seeds 10, 11, 12" in out and "smoke-seed7.json" not in out
    code, out, _ = run(capsys, "list", "--json", "--out", out_dir, "--field", "vision3d")
    rows = {r["slug"]: r for r in json.loads(out)}
    assert code == 0 and rows["virtualrect"]["verdict"] and rows["virtualrect"]["key_metric"].startswith("vert_ratio")
    assert rows["gard"]["verdict"] is None  # no results for it in that folder


def test_show_never_prints_control_characters_from_a_result(capsys, tmp_path):
    from geode.claims.runner import Task, execute
    from geode.claims.store import ResultStore

    rec, figs = execute(Task("svf", "smoke", 0))
    rec["summary"] = "\x1b[31mred\x1b[0m [bold]markup[/bold]"
    ResultStore(tmp_path).write(rec, figs)
    code, out, _ = run(capsys, "show", "svf", "--out", str(tmp_path))
    assert code == 0 and "\x1b[31m" not in out and "[bold]markup[/bold]" in out


def test_bench_stores_a_benchmark(capsys, tmp_path):
    code, out, err = run(capsys, "bench", "svf", "--size", "smoke", "--repeats", "1", "--out", str(tmp_path))
    assert code == 0, err
    rec = json.loads((tmp_path / "results" / "svf" / "bench.json").read_text())
    assert rec["slug"] == "svf" and rec["headline"]["baseline"] in ("FCFS", "SJF")


def test_serve_sim_prints_json_metrics_and_rejects_bad_traces(capsys, tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival,prompt_tokens,output_tokens\n0,10,5\n1,20,3\n2,5,50\n")
    code, out, _ = run(capsys, "serve-sim", "--trace", str(trace), "--policy", "svf", "--kv-slots", "1000", "--json")
    metrics = json.loads(out)
    assert code == 0 and metrics["n_finished"] == 3
    assert {"mean_latency", "p50_latency", "p99_latency", "throughput", "preemptions"} <= set(metrics)
    extra = tmp_path / "extra.csv"
    extra.write_text("arrival,prompt_tokens,output_tokens\n0,10,5,7,8\n")
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\xc0\xff\x00")
    for argv, message in [
        (("--trace", str(tmp_path / "missing.csv"), "--kv-slots", "10"), "does not exist"),
        (("--trace", str(tmp_path), "--kv-slots", "10"), "is a folder"),
        (("--trace", str(extra), "--kv-slots", "10"), "5 cells under a 3-column header"),
        (("--trace", str(binary), "--kv-slots", "10"), "binary.csv: not a UTF-8 text file"),
        (("--trace", str(trace), "--kv-slots", "1" + "0" * 30), "kv_slots must be <="),
        (("--kv-slots", "10"), "required: --trace"),
        (("--trace", str(trace), "--kv-slots", "x"), "invalid int value"),
    ]:
        code, _, err = run(capsys, "serve-sim", *argv)
        assert code == 2 and message in err and one_line(err), (argv, err)


_TOKENS = st.sampled_from(
    [
        "list", "show", "reproduce", "report", "bench", "assets", "serve-sim", "--json", "--all", "--mode", "smoke",
        "quick", "turbo", "--seeds", "--jobs", "--timeout", "--out", "--force", "--ray", "--field", "--size",
        "--repeats", "--check", "--trace", "--kv-slots", "--policy", "svf", "sv*", "camel", "nan", "inf", "-1", "0",
        "3", "1e9", "", "x", "\x00", "<script>", "--help", "--version", "adapters", "OUT", "FILE",
    ]
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=st.lists(_TOKENS, max_size=7))
def test_random_argument_lists_never_give_a_traceback(capsys, tmp_path_factory, monkeypatch, argv):
    base = tmp_path_factory.mktemp("fuzz")
    afile = base / "file.csv"
    afile.write_text("arrival,prompt_tokens,output_tokens\n0,1,1\n")
    argv = [str(base / "out") if a == "OUT" else str(afile) if a == "FILE" else a for a in argv]
    monkeypatch.setattr("geode.claims.runner.run_tasks", lambda *a, **k: [])  # never run a real claim here
    monkeypatch.setattr("geode.claims.bench.run_bench", _fake_bench)
    monkeypatch.setattr("geode.cli._needed_assets", lambda: {})
    monkeypatch.chdir(base)
    try:
        code = 0
        main(argv)
    except SystemExit as exc:
        code = exc.code or 0
    err = capsys.readouterr().err
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err, (argv, err)


def _fake_bench(slug, size="quick", *, repeats=None, on_case=None):
    return {"slug": slug, "size": size, "cases": [], "headline": {"case": "c", "baseline": "b", "ratio": 1.0,
            "low": 1.0, "high": 1.0, "memory_ratio": None}}  # fmt: skip


def test_a_report_that_cannot_be_written_is_one_line(capsys, tmp_path, monkeypatch):
    def refuse(path, text):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("geode.claims.report.atomic_write_text", refuse)
    code, _, err = run(capsys, "report", "--out", str(tmp_path))
    assert code == 2 and "cannot write the report" in err and "Permission denied" in err and one_line(err)


def test_serve_sim_reports_an_unreadable_trace_in_one_line(capsys, tmp_path, monkeypatch):
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival,prompt_tokens,output_tokens\n0,10,5\n")

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied", str(trace))

    monkeypatch.setattr("geode.inference.svf.serve_sim.load_trace", refuse)
    code, _, err = run(capsys, "serve-sim", "--trace", str(trace), "--kv-slots", "100")
    assert code == 2 and "cannot read the trace" in err and "Permission denied" in err and one_line(err)
