"""The hostile re-audit of 2026-12-02 (``shared/audits/2026-12-02/reliability.md``), F1-F8, each as a test; and a
property test that hostile result files never make ``report``, ``show``, ``list --out`` or ``reproduce`` end in a
traceback.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import geode.claims._testing  # noqa: F401
from geode.claims.runner import StoreWriteError, Task, execute, run_tasks
from geode.claims.store import ResultFileError, ResultStore
from geode.cli import main

M = "geode.claims._testing"


def run(capsys, *argv):
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
        raise SystemExit(0)
    out = capsys.readouterr()
    return exc.value.code or 0, out.out, out.err


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A results folder holding svf's smoke seeds 0 and 5."""
    folder = tmp_path_factory.mktemp("base")
    store = ResultStore(folder)
    for seed in (0, 5):
        store.write(*execute(Task("svf", "smoke", seed)))
    return folder


@pytest.fixture
def folder(base, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(base, out)
    return out


def _edit(folder: Path, fn) -> Path:
    p = folder / "results" / "svf" / "smoke-seed0.json"
    p.write_text(fn(p.read_text()))
    return p


def _all_ok(capsys, folder: Path, reproduce: bool = True) -> None:
    """report, show, list --out (and reproduce) end with exit 0, the bad file one 'skipped' line, no traceback."""
    code, _, err = run(capsys, "report", "--out", str(folder))
    assert code == 0 and "skipped:" in err and "Traceback" not in err
    assert "Skipped files" in (folder / "REPORT.md").read_text(encoding="utf-8")
    code, out, err = run(capsys, "show", "svf", "--out", str(folder))
    assert code == 0 and "skipped:" in err and "Traceback" not in out + err
    code, _, _ = run(capsys, "list", "--out", str(folder), "--json")
    assert code == 0
    if reproduce:  # the bad file is re-run, the folder is not refused
        code, _, err = run(
            capsys, "reproduce", "svf", "--mode", "smoke", "--seeds", "1", "--max-seeds", "0", "--out", str(folder)
        )
        assert code == 0 and "unreadable or malformed; re-running" in err


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s.replace('"metrics": {', '"metrics": {"zz": 1' + "0" * 400 + ", ", 1),  # F1a: a huge integer
        lambda s: s.replace('"summary": ', '"zz": ' + "[" * 100000 + "]" * 100000 + ', "summary": ', 1),  # F1b
    ],
    ids=["F1a-huge-integer", "F1b-deep-nesting"],
)
def test_F1_a_huge_number_or_deep_nesting_is_one_skipped_line(capsys, folder, edit):
    _edit(folder, edit)
    _all_ok(capsys, folder)


def test_F1c_a_huge_stored_threshold_is_one_skipped_line(capsys, folder):
    def edit(s):
        r = json.loads(s)
        r["claim"]["thresholds"][0]["value"] = 10**400
        return json.dumps(r)

    _edit(folder, edit)
    _all_ok(capsys, folder, reproduce=False)


def test_F2_a_lone_surrogate_is_refused_at_write_and_skipped_at_read(capsys, folder, tmp_path):
    rec, figs = execute(Task("svf", "smoke", 1))
    rec["summary"] = b"caf\xe9".decode("utf-8", "surrogateescape")
    with pytest.raises(ResultFileError, match="lone surrogate"):
        ResultStore(tmp_path / "w").write(rec, figs)
    _edit(folder, lambda s: s.replace('"summary": "', '"summary": "\\ud800 ', 1))
    _all_ok(capsys, folder, reproduce=False)


@pytest.mark.parametrize(
    "bench",
    [
        '{"headline": {"ratio": 1.5}, "cases": 5}',
        '{"cases": [{"baselines": 5}]}',
        '{"headline": [1]}',
        "[1]",
        '{"cases": [{"baselines": [], "targets": [{"metric": "speed", "op": ">=", "value": 1}]}]}',
        '{"cases": [{"baselines": [], "targets": [{"metric": "ratio", "op": ">=", "value": 1, "met": "yes"}]}]}',
        '{"cases": [{"baselines": [], "targets": {"metric": "ratio"}}]}',
    ],
)
def test_F3_a_malformed_bench_json_is_a_skipped_line(capsys, folder, bench):
    (folder / "results" / "svf" / "bench.json").write_text(bench)
    code, _, err = run(capsys, "report", "--out", str(folder))
    assert code == 0 and "bench.json" in err and "Traceback" not in err


def test_F4_a_failing_benchmark_costs_only_its_paper(capsys, tmp_path, monkeypatch):
    import geode.claims.bench as bench

    def fake(slug, size, repeats=None):
        if slug == "msa":
            raise RuntimeError("injected")
        return {
            "slug": slug,
            "size": size,
            "cases": [],
            "headline": {"case": "c", "ratio": 1.0, "low": 1.0, "high": 1.0, "baseline": "b", "memory_ratio": None},
        }

    monkeypatch.setattr(bench, "run_bench", fake)
    code, _, err = run(capsys, "bench", "msa", "svf", "virtualrect", "--size", "smoke", "--out", str(tmp_path))
    assert code == 1 and "msa" in err and "injected" in err and "Traceback" not in err
    for slug in ("svf", "virtualrect"):
        assert json.loads((tmp_path / "results" / slug / "bench.json").read_text())["headline"]["ratio"] == 1.0
    assert "injected" in json.loads((tmp_path / "results" / "msa" / "bench.json").read_text())["error"]


def test_F5_a_lock_that_cannot_be_created_lets_the_running_task_finish(tmp_path, monkeypatch):
    store = ResultStore(tmp_path)
    real = ResultStore.lock

    def lock(self, slug, mode, seed):
        if slug == "_ok":
            raise PermissionError(13, "Permission denied")
        return real(self, slug, mode, seed)

    monkeypatch.setattr(ResultStore, "lock", lock)
    tasks = [Task("_spins", "smoke", 0, M), Task("_ok", "smoke", 0, M), Task("_ok", "smoke", 1, M)]
    with pytest.raises(StoreWriteError, match="cannot lock _ok smoke seed 0: Permission denied"):
        run_tasks(tasks, store, jobs=2)
    assert store.get("_spins", "smoke", 0)["status"] == "ok"  # the running task finished and was stored


def test_F6_show_judges_each_seed_by_the_current_definition_never_the_stored_verdict(capsys, folder):
    from geode.claims import load_claim
    from geode.claims.verdict import evaluate

    rec = json.loads((folder / "results" / "svf" / "smoke-seed0.json").read_text())
    now = evaluate(load_claim("svf").rules, [rec["metrics"]], tuned=[rec["tuned"]], single=True).verdict
    forged = "reproduced" if now != "reproduced" else "not reproduced"
    _edit(folder, lambda s: json.dumps({**json.loads(s), "verdict": forged}))
    code, out, _ = run(capsys, "show", "svf", "--out", str(folder))
    assert code == 0 and f"smoke-seed0.json: {now}" in out and f"smoke-seed0.json: {forged}" not in out


def test_F7_an_unreadable_paper_folder_is_a_skipped_line(capsys, folder, monkeypatch):
    import geode.claims.store as store_mod

    real = store_mod.os.listdir

    def listdir(path):
        if Path(path).name == "svf":
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(store_mod.os, "listdir", listdir)
    code, _, err = run(capsys, "report", "--out", str(folder))
    assert code == 0 and "cannot read" in err and "svf" in err
    code, _, err = run(capsys, "show", "svf", "--out", str(folder))
    assert code == 0 and "cannot read" in err


def test_F8_show_prints_a_long_unbroken_summary_quickly(capsys, folder):
    _edit(folder, lambda s: json.dumps({**json.loads(s), "summary": "x" * 100_000}))
    t0 = time.perf_counter()
    code, out, _ = run(capsys, "show", "svf", "--out", str(folder))
    assert code == 0 and time.perf_counter() - t0 < 30 and "more characters" in " ".join(out.split())


# ------------------------------------------------------------------------------------------- property test
_HOSTILE_VALUES = st.one_of(
    st.integers(min_value=-(10**500), max_value=10**500),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=50),
    st.sampled_from(["\ud800", "\x1b[31m", "<script>alert(1)</script>", "x" * 300_000, "NaN", ""]),
    st.recursive(st.none() | st.booleans() | st.integers(), lambda c: st.lists(c, max_size=3), max_leaves=6),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
_FIELDS = ["metrics", "summary", "notes", "table", "tuned", "claim", "verdict", "status", "seed", "figures", "wall_s"]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    field=st.sampled_from(_FIELDS),
    value=_HOSTILE_VALUES,
    nest=st.integers(0, 3),
    raw=st.sampled_from(["plain", "nan", "deep"]),
)
@example(field="metrics", value=10**400, nest=0, raw="plain")
@example(field="summary", value="\ud800", nest=0, raw="plain")
@example(field="notes", value=[], nest=0, raw="deep")
def test_hostile_result_files_never_end_in_a_traceback(capsys, base, tmp_path_factory, field, value, nest, raw):
    folder = tmp_path_factory.mktemp("hostile")
    shutil.copytree(base, folder, dirs_exist_ok=True)
    p = folder / "results" / "svf" / "smoke-seed0.json"
    rec = json.loads(p.read_text())
    for _ in range(nest):
        value = [value]
    if field == "metrics":
        rec["metrics"]["zz"] = value
    else:
        rec[field] = value
    text = json.dumps(rec)
    if raw == "nan":  # a NaN token, which JSON does not allow
        text = text.replace('"wall_s": ', '"wall_s": NaN, "w": ', 1)
    elif raw == "deep":  # nesting far past the parser's recursion limit
        text = text.replace('"wall_s": ', '"deep": ' + "[" * 50000 + "]" * 50000 + ', "wall_s": ', 1)
    p.write_text(text, encoding="utf-8", errors="surrogatepass")
    for argv in (
        ("report", "--out", str(folder)),
        ("show", "svf", "--out", str(folder)),
        ("list", "--out", str(folder)),
        ("reproduce", "svf", "--mode", "smoke", "--seeds", "5-5", "--max-seeds", "0", "--out", str(folder)),
    ):
        t0 = time.perf_counter()
        code, out, err = run(capsys, *argv)
        assert "Traceback" not in out + err, argv
        assert code == 0 or (code == 2 and len(err.strip().splitlines()) == 1), (argv, code, err[-500:])
        assert time.perf_counter() - t0 < 60, argv
