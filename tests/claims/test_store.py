from __future__ import annotations

import json
import os

import pytest

from geode.claims.store import ResultFileError, ResultStore, atomic_write_text


def _record(slug="_ok", mode="smoke", seed=0, status="ok", **kw):
    rec = {"schema": 1, "slug": slug, "mode": mode, "seed": seed, "status": status, "metrics": {"value": 1.0}}
    rec["verdict"] = "reproduced" if status == "ok" else None
    rec.update(kw)
    return rec


def test_write_and_read_round_trip_with_figures(tmp_path):
    store = ResultStore(tmp_path)
    path = store.write(_record(), {"curve": b"\x89PNG fake"})
    assert path == tmp_path / "results" / "_ok" / "smoke-seed0.json"
    rec = store.read(path)
    assert rec["metrics"] == {"value": 1.0}
    assert rec["figures"] == {"curve": "results/_ok/smoke-seed0/curve.png"}
    assert (tmp_path / rec["figures"]["curve"]).read_bytes() == b"\x89PNG fake"
    assert [r["slug"] for r in store.records()] == ["_ok"]


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


def test_is_done_only_for_successful_results(tmp_path):
    store = ResultStore(tmp_path)
    assert not store.is_done("_ok", "smoke", 0)
    store.write(_record(status="error", error="boom"))
    assert not store.is_done("_ok", "smoke", 0)
    store.write(_record())
    assert store.is_done("_ok", "smoke", 0)


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "cannot read result file"),
        ("[]", "expected a JSON object"),
        (json.dumps({"schema": 1}), "missing field 'slug'"),
        (json.dumps(_record(mode="huge")), "mode 'huge'"),
        (json.dumps(_record(status="ok", verdict="great")), "verdict 'great'"),
        (json.dumps(_record(metrics={"a": "x"})), "metric 'a' is not a number"),
    ],
)
def test_unreadable_or_malformed_files_raise_a_clear_error(tmp_path, content, message):
    p = tmp_path / "results" / "_ok" / "smoke-seed0.json"
    p.parent.mkdir(parents=True)
    p.write_text(content)
    with pytest.raises(ResultFileError, match=message):
        ResultStore(tmp_path).read(p)
    with pytest.raises(ResultFileError):
        list(ResultStore(tmp_path).records())


def test_writing_rejects_records_that_break_the_schema(tmp_path):
    with pytest.raises(ResultFileError):
        ResultStore(tmp_path).write(_record(status="finished"))
