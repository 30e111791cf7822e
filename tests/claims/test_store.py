from __future__ import annotations

import json
import os
import stat
import time

import pytest

from geode.claims.store import ResultFileError, ResultStore, atomic_write_text, validate_record


def _record(slug="_ok", mode="smoke", seed=0, status="ok", **kw):
    rec = {"schema": 2, "slug": slug, "mode": mode, "seed": seed, "status": status, "metrics": {"value": 1.0}}
    rec["verdict"] = "reproduced" if status == "ok" else None
    rec.update(kw)
    return rec


def test_write_and_read_round_trip_with_figures(tmp_path):
    store = ResultStore(tmp_path)
    path = store.write(_record(), {"curve": b"\x89PNG fake"})
    assert path == tmp_path / "results" / "_ok" / "smoke-seed0.json"
    rec = store.read(path)
    assert rec["metrics"] == {"value": 1.0}
    (fig,) = rec["figures"].values()
    assert fig.startswith("results/_ok/smoke-seed0/curve.") and fig.endswith(".png")
    assert (tmp_path / fig).read_bytes() == b"\x89PNG fake"
    assert [r["slug"] for r in store.records()] == ["_ok"]


def test_a_rewrite_never_leaves_the_json_pointing_at_another_runs_figures(tmp_path):
    store = ResultStore(tmp_path)
    store.write(_record(), {"curve": b"old"})
    old = store.get("_ok", "smoke", 0)["figures"]["curve"]
    store.write(_record(), {"curve": b"new"})
    new = store.get("_ok", "smoke", 0)["figures"]["curve"]
    assert new != old and (tmp_path / new).read_bytes() == b"new"
    assert not (tmp_path / old).exists()  # pruned once the new JSON names its own figures


def test_atomic_write_leaves_no_temp_files_and_keeps_the_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "a.json"
    atomic_write_text(target, "old")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_old_temp_files_of_a_killed_writer_are_swept(tmp_path):
    litter = tmp_path / ".a.json.abc123.tmp"
    litter.write_text("half")
    os.utime(litter, (time.time() - 3600, time.time() - 3600))
    atomic_write_text(tmp_path / "a.json", "whole")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_files_follow_the_umask(tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        atomic_write_text(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == mode


def test_state_tells_done_failed_stale_corrupt_and_missing(tmp_path):
    store = ResultStore(tmp_path)
    assert store.state("_ok", "smoke", 0) == "missing"
    store.write(_record(status="error", error="boom"))
    assert store.state("_ok", "smoke", 0) == "failed" and not store.is_done("_ok", "smoke", 0)
    store.write(_record(claim_hash="aaa"))
    assert store.is_done("_ok", "smoke", 0) and store.is_done("_ok", "smoke", 0, "aaa")
    assert store.state("_ok", "smoke", 0, "bbb") == "stale"
    store.path("_ok", "smoke", 0).write_text("{broken")
    assert store.state("_ok", "smoke", 0) == "corrupt"


@pytest.mark.parametrize("slug", ["../../pwned", "a/b", "", "UPPER", ".hidden", "x" * 80])
def test_slugs_that_leave_the_folder_are_rejected(tmp_path, slug):
    with pytest.raises(ValueError, match="slug"):
        ResultStore(tmp_path).path(slug, "smoke", 0)
    with pytest.raises((ValueError, ResultFileError)):
        ResultStore(tmp_path).write(_record(slug=slug))
    assert not list(tmp_path.parent.glob("pwned*"))


@pytest.mark.parametrize("name", ["../../../../figescape", "a/b", "", "x.png", "-x"])
def test_figure_names_that_leave_the_folder_are_rejected(tmp_path, name):
    with pytest.raises(ValueError, match="figure names"):
        ResultStore(tmp_path).write(_record(), {name: b"png"})
    assert not list(tmp_path.parent.rglob("figescape*"))


_MALFORMED = [
    ("claim", "a string"),
    ("table", [1, 2]),
    ("summary", 5),
    ("figures", []),
    ("figures", {"curve": "../../etc/passwd"}),
    ("notes", 5),
    ("claim", {"thresholds": [{"metric": "x", "op": ">", "value": 1}]}),
    ("claim", {"thresholds": [{"name": "t", "metric": "x", "op": "~~", "value": 1}]}),
    ("claim", {"thresholds": [], "reproduced": "__import__('os').system('id')"}),
    ("claim", {"baselines": 5}),
    ("checks", [1]),
    ("error", 5),
    ("tuned", {"a": 1}),
    ("wall_s", "long"),
    ("cpu_s", "lots"),
]


@pytest.mark.parametrize("key, value", _MALFORMED)
def test_every_malformed_field_is_one_clear_error(key, value):
    with pytest.raises(ResultFileError):
        validate_record(_record(**{key: value}))


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "cannot read result file"),
        ("\x00\x00", "cannot read result file"),
        ("[]", "expected a JSON object"),
        (json.dumps({"schema": 1}), "missing field 'slug'"),
        (json.dumps(_record(mode="huge")), "mode 'huge'"),
        (json.dumps(_record(status="ok", verdict="great")), "verdict 'great'"),
        (json.dumps(_record(metrics={"a": "x"})), "metric 'a' is not a finite number"),
    ],
)
def test_unreadable_files_raise_on_read_and_are_skipped_by_a_scan(tmp_path, content, message):
    p = tmp_path / "results" / "_ok" / "smoke-seed0.json"
    p.parent.mkdir(parents=True)
    p.write_text(content)
    with pytest.raises(ResultFileError, match=message):
        ResultStore(tmp_path).read(p)
    scan = ResultStore(tmp_path).scan()
    assert scan.records == [] and len(scan.problems) == 1 and "ignored" in scan.problems[0]


def test_the_location_of_a_file_decides_what_it_is(tmp_path):
    store = ResultStore(tmp_path)
    store.write(_record(slug="svf"))
    folder = tmp_path / "results" / "svf"
    good = (folder / "smoke-seed0.json").read_text()
    (folder / "smoke-seed0 (copy).json").write_text(good)  # a duplicate copy
    (folder / "quick-seed3.json").write_text(good)  # a record whose content says smoke seed 0
    (folder / "notes.json").write_text("{}")
    (tmp_path / "results" / "NotASlug").mkdir()
    scan = store.scan()
    assert [(r["slug"], r["mode"], r["seed"]) for r in scan.records] == [("svf", "smoke", 0)]
    assert len(scan.problems) == 4
    assert any("not what its location says" in p for p in scan.problems)


def test_a_task_lock_is_exclusive_until_released(tmp_path):
    store = ResultStore(tmp_path)
    a = store.lock("_ok", "smoke", 0)
    assert a is not None and store.lock("_ok", "smoke", 0) is None
    assert store.lock("_ok", "smoke", 1) is not None  # another task
    a.release()
    assert store.lock("_ok", "smoke", 0) is not None


def test_ensure_writable_refuses_a_file_and_an_empty_path(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    with pytest.raises(NotADirectoryError):
        ResultStore(f).ensure_writable()
    with pytest.raises(ValueError, match="empty"):
        ResultStore("")
    ResultStore(tmp_path / "new").ensure_writable()
    assert list((tmp_path / "new" / "results").iterdir()) == []
