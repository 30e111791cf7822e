from __future__ import annotations

import json

import pytest

from geode import catalog
from geode.cli import main

IMPLEMENTED = [p.slug for p in catalog.papers(status="implemented")]


def run(capsys, *argv):
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
        raise SystemExit(0)
    out = capsys.readouterr()
    return exc.value.code or 0, out.out, out.err


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
        (("reproduce", "--all", "--seeds", "0"), "--seeds must be >= 1"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(capsys, argv, message):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_unreadable_result_file_is_a_one_line_error(capsys, tmp_path):
    bad = tmp_path / "results" / "svf" / "quick-seed0.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{broken")
    code, _, err = run(capsys, "report", "--out", str(tmp_path))
    assert code == 2 and "cannot read result file" in err and len(err.strip().splitlines()) == 1


def test_report_on_an_empty_folder_lists_every_paper(capsys, tmp_path):
    code, out, _ = run(capsys, "report", "--out", str(tmp_path))
    assert code == 0
    md = (tmp_path / "REPORT.md").read_text()
    for p in catalog.papers():
        assert f"`{p.slug}`" in md
    assert (tmp_path / "index.html").is_file()


def test_show_a_planned_paper(capsys):
    planned = catalog.papers(status="planned")
    if not planned:
        pytest.skip("every paper is implemented")
    code, out, _ = run(capsys, "show", planned[0].slug)
    assert code == 0 and "planned" in out


def test_assets_check_reports_without_preparing(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GEODE_CACHE", str(tmp_path))
    code, out, _ = run(capsys, "assets", "--check")
    from geode.data.assets import asset_status

    assert code == (1 if any(path is None for _, path in asset_status()) else 0)
    assert "sklearn-datasets" in out and "smollm2-gguf" in out
    assert not list(tmp_path.iterdir())  # --check never writes the cache


@pytest.mark.skipif(not IMPLEMENTED, reason="no implemented paper yet")
def test_reproduce_smoke_then_resume_then_report(capsys, tmp_path):
    slug = IMPLEMENTED[0]
    code, out, err = run(capsys, "reproduce", slug, "--mode", "smoke", "--out", str(tmp_path))
    assert code == 0, err
    assert (tmp_path / "results" / slug / "smoke-seed0.json").is_file()
    code, out, err = run(capsys, "reproduce", slug, "--mode", "smoke", "--out", str(tmp_path))
    assert code == 0 and "already stored" in err
    code, out, _ = run(capsys, "show", slug, "--out", str(tmp_path))
    assert code == 0 and "smoke-seed0.json" in out
    code, _, _ = run(capsys, "report", "--out", str(tmp_path))
    assert code == 0 and f'id="{slug}"' in (tmp_path / "index.html").read_text()


def test_serve_sim_prints_json_metrics_and_rejects_bad_traces(capsys, tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival,prompt_tokens,output_tokens\n0,10,5\n1,20,3\n2,5,50\n")
    code, out, _ = run(capsys, "serve-sim", "--trace", str(trace), "--policy", "svf", "--kv-slots", "1000", "--json")
    metrics = json.loads(out)
    assert code == 0 and metrics["n_finished"] == 3
    assert {"mean_latency", "p50_latency", "p99_latency", "throughput", "preemptions"} <= set(metrics)
    code, _, err = run(capsys, "serve-sim", "--trace", str(tmp_path / "missing.csv"), "--kv-slots", "10")
    assert code == 2 and "does not exist" in err and len(err.strip().splitlines()) == 1
