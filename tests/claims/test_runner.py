from __future__ import annotations

import importlib.util

import pytest

import geode.claims._testing  # noqa: F401  (registers the toy claims)
from geode.claims.runner import Task, execute, run_tasks
from geode.claims.store import ResultStore

M = "geode.claims._testing"


def _task(slug, seed=0):
    return Task(slug, "smoke", seed, M)


def test_execute_in_process_produces_a_verdict_and_png():
    rec, figs = execute(_task("_ok"))
    assert rec["status"] == "ok" and rec["verdict"] == "reproduced"
    assert rec["claim"]["slug"] == "_ok" and rec["claim"]["thresholds"][0]["name"] == "big"
    assert figs["curve"].startswith(b"\x89PNG")
    assert rec["table"] == [{"method": "toy", "value": 1.0, "n": 3}]


def test_execute_records_an_error_with_its_traceback():
    rec, figs = execute(_task("_raises"))
    assert rec["status"] == "error" and rec["verdict"] is None and figs == {}
    assert "this claim fails on purpose" in rec["error"] and "Traceback" in rec["error"]


def test_errors_timeouts_and_dead_workers_are_recorded_and_the_run_goes_on(tmp_path):
    store = ResultStore(tmp_path)
    tasks = [_task("_raises"), _task("_hangs"), _task("_dies"), _task("_ok")]
    recs = run_tasks(tasks, store, jobs=2, timeout=6)
    status = {r["slug"]: r["status"] for r in recs}
    assert status == {"_raises": "error", "_hangs": "timeout", "_dies": "error", "_ok": "ok"}
    assert "exit code 3" in store.get("_dies", "smoke", 0)["error"]
    assert store.get("_hangs", "smoke", 0)["wall_s"] >= 6
    assert (tmp_path / "results" / "_ok" / "smoke-seed0" / "curve.png").is_file()


def test_stored_results_are_skipped_unless_forced(tmp_path):
    store = ResultStore(tmp_path)
    seen = []
    run_tasks([_task("_ok")], store, timeout=60)
    first = store.get("_ok", "smoke", 0)["started"]
    assert run_tasks([_task("_ok")], store, on_start=lambda n, k: seen.append((n, k))) == []
    assert seen == [(0, 1)]
    assert store.get("_ok", "smoke", 0)["started"] == first
    recs = run_tasks([_task("_ok")], store, force=True)
    assert len(recs) == 1


def test_interrupt_keeps_finished_results_and_stops_workers(tmp_path):
    store = ResultStore(tmp_path)

    def on_result(rec):
        raise KeyboardInterrupt  # as if Ctrl-C arrived right after the first result

    with pytest.raises(KeyboardInterrupt):
        run_tasks([_task("_ok"), _task("_hangs")], store, jobs=2, timeout=60, on_result=on_result)
    assert store.is_done("_ok", "smoke", 0)
    assert store.get("_hangs", "smoke", 0) is None
    assert not list(tmp_path.rglob("*.tmp"))


def test_same_seed_gives_identical_metrics_across_processes(tmp_path):
    a = run_tasks([_task("_ok", seed=4)], ResultStore(tmp_path / "a"))[0]["metrics"]
    b = run_tasks([_task("_ok", seed=4)], ResultStore(tmp_path / "b"))[0]["metrics"]
    assert a == b


def test_arguments_are_validated(tmp_path):
    with pytest.raises(ValueError, match="mode must be one of"):
        Task("_ok", "medium", 0)
    with pytest.raises(ValueError, match="seed must be"):
        Task("_ok", "smoke", -1)
    with pytest.raises(ValueError, match="jobs must be"):
        run_tasks([], ResultStore(tmp_path), jobs=0)
    with pytest.raises(ValueError, match="timeout must be"):
        run_tasks([], ResultStore(tmp_path), timeout=0)


@pytest.mark.needs_ray
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray extra not installed")
def test_runs_on_a_local_ray_cluster(tmp_path):
    store = ResultStore(tmp_path)
    recs = run_tasks([_task("_ok"), _task("_raises"), _task("_seeded", seed=1)], store, jobs=2, ray_address="local")
    status = {r["slug"]: (r["status"], r["verdict"]) for r in recs}
    assert status == {"_ok": ("ok", "reproduced"), "_raises": ("error", None), "_seeded": ("ok", "partial")}
    assert (tmp_path / "results" / "_ok" / "smoke-seed0" / "curve.png").is_file()
