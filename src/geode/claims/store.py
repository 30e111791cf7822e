"""The result store: one JSON file per (paper, mode, seed), PNG figures beside it, written atomically.

Layout under the output folder (default ``./geode-results``)::

    results/<slug>/<mode>-seed<k>.json
    results/<slug>/<mode>-seed<k>/<figure>.png
    REPORT.md, index.html                       (written by ``geode report``)

A result file is written to a temporary file in the same folder, flushed to disk and renamed over
the target, so an interrupted run never leaves a half-written result. Figures are written before
their JSON, which is the marker that the run finished.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from geode.claims.types import MODES, VERDICTS

__all__ = ["STATUSES", "ResultFileError", "ResultStore", "atomic_write_bytes", "atomic_write_text"]

SCHEMA_VERSION = 1
STATUSES: tuple[str, ...] = ("ok", "error", "timeout")
_REQUIRED = {"schema": int, "slug": str, "mode": str, "seed": int, "status": str, "metrics": dict}


class ResultFileError(ValueError):
    """A result file that cannot be read or does not follow the schema."""


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: temp file in the same folder, fsync, rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def validate_record(rec: Any, where: str = "result") -> dict[str, Any]:
    """Check a result record against the schema; raise :class:`ResultFileError` naming what is wrong."""
    if not isinstance(rec, dict):
        raise ResultFileError(f"{where}: expected a JSON object, got {type(rec).__name__}")
    for key, typ in _REQUIRED.items():
        if key not in rec:
            raise ResultFileError(f"{where}: missing field {key!r}")
        if not isinstance(rec[key], typ) or isinstance(rec[key], bool):
            raise ResultFileError(f"{where}: field {key!r} must be {typ.__name__}")
    if rec["schema"] != SCHEMA_VERSION:
        raise ResultFileError(f"{where}: schema {rec['schema']} is not {SCHEMA_VERSION}")
    if rec["mode"] not in MODES:
        raise ResultFileError(f"{where}: mode {rec['mode']!r} is not one of {MODES}")
    if rec["status"] not in STATUSES:
        raise ResultFileError(f"{where}: status {rec['status']!r} is not one of {STATUSES}")
    if rec["status"] == "ok" and rec.get("verdict") not in VERDICTS:
        raise ResultFileError(f"{where}: verdict {rec.get('verdict')!r} is not one of {VERDICTS}")
    for k, v in rec["metrics"].items():
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise ResultFileError(f"{where}: metric {k!r} is not a number")
    return rec


class ResultStore:
    """Results of claim runs under one output folder.

    Parameters
    ----------
    root : path
        The output folder; created on first write.
    """

    def __init__(self, root: str | os.PathLike[str] = "geode-results") -> None:
        self.root = Path(root)

    @property
    def results_dir(self) -> Path:
        return self.root / "results"

    def path(self, slug: str, mode: str, seed: int) -> Path:
        """Where the result of (slug, mode, seed) lives."""
        return self.results_dir / slug / f"{mode}-seed{seed}.json"

    def figure_dir(self, slug: str, mode: str, seed: int) -> Path:
        return self.results_dir / slug / f"{mode}-seed{seed}"

    def read(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """Read and validate one result file; :class:`ResultFileError` if unreadable."""
        path = Path(path)
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ResultFileError(f"cannot read result file {path}: {exc}") from None
        return validate_record(rec, where=str(path))

    def get(self, slug: str, mode: str, seed: int) -> dict[str, Any] | None:
        """The stored result, or None when there is none."""
        p = self.path(slug, mode, seed)
        return self.read(p) if p.is_file() else None

    def is_done(self, slug: str, mode: str, seed: int) -> bool:
        """True when a successful (status ``ok``) result is stored; errors and timeouts are retried."""
        p = self.path(slug, mode, seed)
        if not p.is_file():
            return False
        try:
            return self.read(p)["status"] == "ok"
        except ResultFileError:
            return False

    def write(self, record: Mapping[str, Any], figures: Mapping[str, bytes] | None = None) -> Path:
        """Store one result: PNG figures first, then the JSON record (atomically). Returns the JSON path."""
        rec = dict(record)
        slug, mode, seed = rec["slug"], rec["mode"], int(rec["seed"])
        rel: dict[str, str] = {}
        if figures:
            fdir = self.figure_dir(slug, mode, seed)
            for name, png in figures.items():
                atomic_write_bytes(fdir / f"{name}.png", png)
                rel[name] = f"results/{slug}/{mode}-seed{seed}/{name}.png"
        rec["figures"] = rel
        rec.setdefault("schema", SCHEMA_VERSION)
        validate_record(rec)
        p = self.path(slug, mode, seed)
        atomic_write_text(p, json.dumps(rec, indent=2, sort_keys=True, allow_nan=False) + "\n")
        return p

    def records(self) -> Iterator[dict[str, Any]]:
        """Every stored result (raises :class:`ResultFileError` on the first unreadable one)."""
        if not self.results_dir.is_dir():
            return
        for p in sorted(self.results_dir.glob("*/*.json")):
            yield self.read(p)
