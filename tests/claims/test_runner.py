from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import geode.claims._testing  # noqa: F401  (registers the toy claims)
from geode.claims.runner import RunnerUsageError, StoreWriteError, Task, check_ray_address, execute, run_tasks
from geode.claims.store import ResultStore

M = "geode.claims._testing"


def _task(slug, seed=0, mode="smoke"):
    return Task(slug, mode, seed, M)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pids, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def _wait_pids(folder: Path, n: int, seconds: float = 60) -> list[int]:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        files = [p for p in folder.iterdir() if not p.name.startswith(".")]
        if len(files) >= n:
            return [int(x) for p in files for x in p.read_text().split()]
        time.sleep(0.1)
    raise AssertionError(f"the workers did not start within {seconds} s")


def test_execute_in_process_produces_a_verdict_a_hash_and_png():
    rec, figs = execute(_task("_ok"))
    assert rec["status"] == "ok" and rec["verdict"] == "reproduced"
    assert rec["claim"]["slug"] == "_ok" and rec["claim"]["thresholds"][0]["name"] == "big"
    assert rec["claim_hash"] == rec["claim"]["hash"]
    assert figs["curve"].startswith(b"\x89PNG")
    assert rec["table"] == [{"method": "toy", "value": 1.0, "n": 3}]


def test_cpu_time_is_recorded_apart_from_wall_time():
    rec, _ = execute(_task("_spins"))
    assert rec["status"] == "ok"
    assert rec["cpu_s"] >= 0.3  # the claim's own computing
    assert rec["wall_s"] - rec["cpu_s"] >= 0.45  # its 0.5 s of sleep costs no CPU


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
    assert (tmp_path / store.get("_ok", "smoke", 0)["figures"]["curve"]).is_file()


def test_tasks_are_consumed_lazily():
    def endless():
        seed = 0
        while True:
            yield _task("_ok", seed)
            seed += 1

    store_calls = []

    class Store(ResultStore):
        def write(self, record, figures=None):
            store_calls.append(record["seed"])
            if len(store_calls) == 2:
                raise KeyboardInterrupt
            return super().write(record, figures)

    with pytest.raises(KeyboardInterrupt):
        run_tasks(endless(), Store(Path(os.environ.get("TMPDIR", "/tmp")) / f"geode-lazy-{os.getpid()}"), jobs=1)
    assert store_calls == [0, 1]


def test_stored_results_are_skipped_unless_forced_and_stale_ones_rerun(tmp_path):
    store = ResultStore(tmp_path)
    skipped, notes = [], []
    run_tasks([_task("_ok")], store, timeout=60)
    first = store.get("_ok", "smoke", 0)["started"]
    assert run_tasks([_task("_ok")], store, on_skip=lambda t, why: skipped.append(why)) == []
    assert skipped == ["stored"] and store.get("_ok", "smoke", 0)["started"] == first
    assert len(run_tasks([_task("_ok")], store, force=True)) == 1
    p = store.path("_ok", "smoke", 0)
    p.write_text(p.read_text().replace(store.get("_ok", "smoke", 0)["claim_hash"], "0" * 16))
    assert len(run_tasks([_task("_ok")], store, on_note=notes.append)) == 1
    assert "older claim definition" in notes[0]
    p.write_text("{broken")
    assert len(run_tasks([_task("_ok")], store, on_note=notes.append)) == 1
    assert "unreadable" in notes[1]


def test_a_task_whose_lock_is_held_is_skipped(tmp_path):
    store = ResultStore(tmp_path)
    held = store.lock("_ok", "smoke", 0)
    skipped = []
    assert run_tasks([_task("_ok"), _task("_ok", 1)], store, on_skip=lambda t, why: skipped.append((t.seed, why)))
    assert skipped == [(0, "running elsewhere")] and store.get("_ok", "smoke", 0) is None
    held.release()


def test_a_failed_write_costs_one_result_not_the_finished_ones(tmp_path):
    class Flaky(ResultStore):
        def write(self, record, figures=None):
            if record["seed"] == 1:
                raise OSError(28, "No space left on device")
            return super().write(record, figures)

    store = Flaky(tmp_path)
    with pytest.raises(StoreWriteError, match="No space left") as exc:
        run_tasks([_task("_ok", s) for s in range(4)], store, jobs=2, timeout=60)
    assert store.is_done("_ok", "smoke", 0)
    assert [r["seed"] for r in exc.value.unsaved] == [1]
    assert exc.value.dumped and Path(exc.value.dumped).is_file()
    os.unlink(exc.value.dumped)
    # no new task starts after the failure: at most the one already running (jobs=2) is stored besides seed 0
    assert len(list((tmp_path / "results" / "_ok").glob("*.json"))) <= 2


def test_interrupt_keeps_finished_results_and_stops_workers(tmp_path):
    store = ResultStore(tmp_path)

    def on_result(rec):
        raise KeyboardInterrupt  # as if Ctrl-C arrived right after the first result

    with pytest.raises(KeyboardInterrupt):
        run_tasks([_task("_ok"), _task("_hangs")], store, jobs=2, timeout=60, on_result=on_result)
    assert store.is_done("_ok", "smoke", 0)
    assert store.get("_hangs", "smoke", 0) is None
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_timeout_kills_the_workers_whole_process_group(tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv("GEODE_TEST_PIDS", str(pids))
    (rec,) = run_tasks([_task("_sleeper")], ResultStore(tmp_path / "out"), timeout=8)
    assert rec["status"] == "timeout"
    worker, helper = _wait_pids(pids, 1)
    assert _wait_gone([worker, helper], 5) == []


_PARENT = textwrap.dedent(
    """
    import signal
    import sys
    import geode.claims._testing
    # a shell that starts a job in the background (`cmd &`) leaves SIGINT ignored; Ctrl-C is what we test
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from geode.cli import _sigterm_as_interrupt
    from geode.claims.runner import Task, run_tasks
    from geode.claims.store import ResultStore
    try:
        with _sigterm_as_interrupt():
            run_tasks([Task("_sleeper", "smoke", s, "geode.claims._testing") for s in range(2)],
                      ResultStore(sys.argv[1]), jobs=2, timeout=600)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(143)
    """
)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_workers_die_with_their_parent(tmp_path, sig):
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {**os.environ, "GEODE_TEST_PIDS": str(pids)}
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, str(tmp_path / "out")], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        workers = _wait_pids(pids, 2)[0::2]
        parent.send_signal(sig)
        rc = parent.wait(30)
        assert _wait_gone(workers, 8) == [], "workers outlived their parent"
        if sig != signal.SIGKILL:  # SIGTERM takes the Ctrl-C path
            assert rc == 143 and "interrupted" in parent.stdout.read()
    finally:
        parent.kill()
        for line in pids.iterdir():
            for pid in map(int, line.read_text().split()):
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)


def test_same_seed_gives_identical_metrics_across_processes(tmp_path):
    a = run_tasks([_task("_ok", seed=4)], ResultStore(tmp_path / "a"))[0]["metrics"]
    b = run_tasks([_task("_ok", seed=4)], ResultStore(tmp_path / "b"))[0]["metrics"]
    assert a == b


def test_arguments_are_validated(tmp_path):
    with pytest.raises(ValueError, match="mode must be one of"):
        Task("_ok", "medium", 0)
    with pytest.raises(ValueError, match="seed must be"):
        Task("_ok", "smoke", -1)
    with pytest.raises(ValueError, match="slug"):
        Task("../../../pwned", "smoke", 0)
    with pytest.raises(ValueError, match="jobs must be"):
        run_tasks([], ResultStore(tmp_path), jobs=0)
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="timeout must be"):
            run_tasks([], ResultStore(tmp_path), timeout=bad)


@pytest.mark.parametrize("address", ["bogus-address", "http://x:1", "host:99999", "ray://:12"])
def test_malformed_ray_addresses_are_refused(address):
    with pytest.raises(RunnerUsageError, match="--ray must be"):
        check_ray_address(address)


def test_an_unreachable_ray_address_is_refused_quickly():
    t0 = time.monotonic()
    with pytest.raises(RunnerUsageError, match="cannot reach"):
        check_ray_address("127.0.0.1:1", connect_timeout=2)
    assert time.monotonic() - t0 < 5


def test_a_missing_ray_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(RunnerUsageError, match="ray extra"):
        run_tasks([_task("_ok")], ResultStore(tmp_path), ray_address="local")


@pytest.mark.needs_ray
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray extra not installed")
def test_runs_on_a_local_ray_cluster(tmp_path):
    store = ResultStore(tmp_path)
    from geode.claims.seeds import SeedAdder

    noisy = [_task("_noisy", seed=s) for s in range(3)]  # underpowered on seeds 0-2: a fourth seed is added
    tasks = [_task("_ok"), _task("_raises"), _task("_seeded", seed=1), *noisy]
    recs = run_tasks(tasks, store, jobs=2, ray_address="local", more=SeedAdder(store, noisy, 5).done)
    status = {r["slug"]: (r["status"], r["verdict"]) for r in recs if r["slug"] != "_noisy"}
    assert status == {"_ok": ("ok", "reproduced"), "_raises": ("error", None), "_seeded": ("ok", "partial")}
    assert (tmp_path / store.get("_ok", "smoke", 0)["figures"]["curve"]).is_file()
    assert sorted((r["seed"], r["status"]) for r in recs if r["slug"] == "_noisy") == [(s, "ok") for s in range(4)]
