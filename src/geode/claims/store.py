"""The result store: one JSON file per (paper, mode, seed), PNG figures beside it, written atomically.

Layout under the output folder (default ``./geode-results``)::

    results/<slug>/<mode>-seed<k>.json            one claim run
    results/<slug>/<mode>-seed<k>/<fig>.<id>.png  its figures (``<id>`` ties them to the JSON that names them)
    results/<slug>/bench.json                     the paper's benchmark (``geode bench``)
    REPORT.md, index.html                         written by ``geode report``

Guarantees:

- A file is written to a temporary file in the same folder, flushed and renamed over the target, so an
  interrupted run never leaves a half-written result; files get the permissions the umask allows (0644 by
  default), as any other file the user writes.
- Figures are written before their JSON and carry the run's id in their name; the JSON is the marker that
  the run finished, and figures no JSON names are removed after the next write. A JSON never points at
  another run's figures.
- The location of a file is the truth: a record is accepted only under ``results/<slug>/<mode>-seed<k>.json``
  with the same slug, mode and seed inside; anything else is reported as a problem and ignored. Slugs and
  figure names are checked, so nothing is written outside the output folder.
- A lock per task (``flock`` on a hidden file, released by the kernel if the process dies) lets two runs
  share an output folder without running the same task twice.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import secrets
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geode.claims.types import FIGURE_NAME, MODES, VERDICTS, parse_rule
from geode.claims.verdict import Rules

__all__ = [
    "SLUG",
    "STATUSES",
    "ResultFileError",
    "ResultStore",
    "Scan",
    "atomic_write_bytes",
    "atomic_write_text",
    "validate_record",
]

SCHEMA_VERSION = 3  # 3: claim descriptions carry floors, arms, ablations, tuned methods (protocol v3)
_READABLE_SCHEMAS = (1, 2, 3)  # schema 1 (no claim hash) is read, and is always stale
STATUSES: tuple[str, ...] = ("ok", "error", "timeout")
SLUG = re.compile(r"_?[a-z0-9][a-z0-9-]{0,63}")
"""What a paper slug may be (``_`` starts the harness's own test claims)."""
_RESULT_NAME = re.compile(r"(smoke|quick|full)-seed(0|[1-9][0-9]{0,8})\.json")
_REQUIRED = {"schema": int, "slug": str, "mode": str, "seed": int, "status": str, "metrics": dict}
_STALE_TMP_S = 600.0


class ResultFileError(ValueError):
    """A result file that cannot be read or does not follow the schema."""


def _umask() -> int:
    try:  # Linux: read it without changing it (os.umask() would race with other threads)
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _sweep_tmp(folder: Path, name: str) -> None:
    """Remove temporary files of ``name`` left by a process killed in the middle of a write."""
    now = time.time()
    with contextlib.suppress(OSError):
        for p in folder.glob(f".{name}.*.tmp"):
            with contextlib.suppress(OSError):
                if now - p.stat().st_mtime > _STALE_TMP_S:
                    p.unlink()


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: temp file in the same folder, fsync, rename.

    The file gets mode ``0o666 & ~umask``. On any error the temp file is removed and the old file (if
    any) is left as it was; the ``OSError`` propagates.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _sweep_tmp(path.parent, path.name)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically; a character UTF-8 cannot hold (a lone surrogate, e.g. from
    an undecodable file name) is written as ``?`` rather than failing the whole file."""
    atomic_write_bytes(path, text.encode("utf-8", errors="replace"))


def check_slug(slug: Any) -> str:
    """``slug`` if it is a valid slug; ``ValueError`` otherwise (it becomes a folder name)."""
    if not isinstance(slug, str) or not SLUG.fullmatch(slug):
        raise ValueError(f"slug must be lower-case letters, digits and '-' (or start with '_'); got {slug!r}")
    return slug


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


MAX_DEPTH = 32
"""How deeply a stored record may nest lists and objects."""
MAX_TEXT = 200_000
"""The longest string a stored record may hold (characters)."""


def check_plain(obj: Any, where: str = "result", depth: int = 0) -> None:
    """Check that ``obj`` is plain JSON data a report can render: every number finite and within the float range,
    every string valid Unicode (no lone surrogate) and at most :data:`MAX_TEXT` characters, every key a string,
    nesting at most :data:`MAX_DEPTH` deep. Raises :class:`ResultFileError` naming what is wrong.

    Run on every record at write and at read, so ``report``, ``show`` and ``reproduce`` only ever see records
    that passed it (the rest are one line under "Skipped files").
    """
    if depth > MAX_DEPTH:
        raise ResultFileError(f"{where}: nested more than {MAX_DEPTH} levels deep")
    if obj is None or isinstance(obj, bool):
        return
    if isinstance(obj, int):
        if abs(obj) > 2**1023:
            raise ResultFileError(f"{where}: an integer beyond the float range")
        return
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise ResultFileError(f"{where}: a number that is not finite")
        return
    if isinstance(obj, str):
        if len(obj) > MAX_TEXT:
            raise ResultFileError(f"{where}: a text of {len(obj)} characters (at most {MAX_TEXT})")
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError:
            raise ResultFileError(f"{where}: a text that is not valid Unicode (a lone surrogate)") from None
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, str):
                raise ResultFileError(f"{where}: a key that is not a string")
            check_plain(k, where, depth + 1)
            check_plain(v, where, depth + 1)
        return
    if isinstance(obj, (list, tuple)):
        for v in obj:
            check_plain(v, where, depth + 1)
        return
    raise ResultFileError(f"{where}: a value of type {type(obj).__name__}")


def _parse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def load_json(text: str, where: str) -> Any:
    """Parse JSON text, refusing NaN/Infinity and turning every parse failure (deep nesting included) into
    :class:`ResultFileError`."""
    try:
        return json.loads(text, parse_constant=_parse_constant)
    except (ValueError, RecursionError, OverflowError) as exc:
        raise ResultFileError(f"cannot read {where}: {str(exc)[:200]}") from None


def _check(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise ResultFileError(f"{where}: {what}")


def _check_rows(rows: Any, where: str, name: str) -> None:
    _check(isinstance(rows, list), where, f"field {name!r} must be a list of objects")
    for row in rows:
        _check(isinstance(row, dict), where, f"field {name!r} must be a list of objects")
        for v in row.values():
            _check(v is None or isinstance(v, (str, int, float, bool)), where, f"a cell of {name!r} is not plain")


def _check_claim(claim: Any, where: str) -> None:
    _check(isinstance(claim, dict), where, "field 'claim' must be an object")
    for key in ("claim", "paper_figure", "key_metric", "doc", "title", "field", "slug"):
        _check(isinstance(claim.get(key, ""), str), where, f"claim field {key!r} must be a string")
    for key in ("baselines", "timing_metrics", "assets"):
        v = claim.get(key, [])
        _check(
            isinstance(v, list) and all(isinstance(x, str) for x in v), where, f"claim field {key!r} must list strings"
        )
    _check(isinstance(claim.get("thresholds", []), list), where, "claim field 'thresholds' must be a list")
    try:
        if claim.get("thresholds"):
            Rules.from_dict(claim)
        else:  # a description without thresholds judges nothing, but its rules must still parse
            for key in ("reproduced", "partial", "validity"):
                if claim.get(key) is not None:
                    parse_rule(claim[key], set(), key)
    except (ValueError, TypeError) as exc:
        raise ResultFileError(f"{where}: claim definition: {exc}") from None
    ms = claim.get("min_seeds", 1)
    _check(isinstance(ms, int) and not isinstance(ms, bool) and 1 <= ms <= 100, where, "claim min_seeds is malformed")


def validate_record(rec: Any, where: str = "result") -> dict[str, Any]:
    """Check a result record against the whole schema; raise :class:`ResultFileError` naming what is wrong."""
    _check(isinstance(rec, dict), where, f"expected a JSON object, got {type(rec).__name__}")
    check_plain(rec, where)
    for key, typ in _REQUIRED.items():
        _check(key in rec, where, f"missing field {key!r}")
        _check(
            isinstance(rec[key], typ) and not isinstance(rec[key], bool),
            where,
            f"field {key!r} must be {typ.__name__}",
        )
    _check(rec["schema"] in _READABLE_SCHEMAS, where, f"schema {rec['schema']} is not one of {_READABLE_SCHEMAS}")
    _check(bool(SLUG.fullmatch(rec["slug"])), where, f"slug {rec['slug']!r} is not a valid slug")
    _check(rec["mode"] in MODES, where, f"mode {rec['mode']!r} is not one of {MODES}")
    _check(0 <= rec["seed"] < 10**9, where, f"seed {rec['seed']} is out of range")
    _check(rec["status"] in STATUSES, where, f"status {rec['status']!r} is not one of {STATUSES}")
    if rec["status"] == "ok":
        _check(rec.get("verdict") in VERDICTS, where, f"verdict {rec.get('verdict')!r} is not one of {VERDICTS}")
    for k, v in rec["metrics"].items():
        _check(_is_number(v) and math.isfinite(v), where, f"metric {k!r} is not a finite number")
    for key in ("summary", "claim_hash", "run_id", "started", "geode_version"):
        _check(isinstance(rec.get(key, ""), str), where, f"field {key!r} must be a string")
    _check(rec.get("error") is None or isinstance(rec["error"], str), where, "field 'error' must be a string or null")
    for key in ("wall_s", "cpu_s"):
        _check(_is_number(rec.get(key, 0.0)), where, f"field {key!r} must be a number")
    notes = rec.get("notes", [])
    _check(
        isinstance(notes, list) and all(isinstance(n, str) for n in notes), where, "field 'notes' must list strings"
    )
    for key in ("table", "tuned"):
        _check_rows(rec.get(key, []), where, key)
    checks = rec.get("checks", [])
    _check(isinstance(checks, list) and all(isinstance(c, dict) for c in checks), where, "field 'checks' is malformed")
    figs = rec.get("figures", {})
    _check(isinstance(figs, dict), where, "field 'figures' must be an object")
    prefix = f"results/{rec['slug']}/{rec['mode']}-seed{rec['seed']}/"
    for name, rel in figs.items():
        _check(bool(FIGURE_NAME.fullmatch(str(name))), where, f"figure name {name!r} is not allowed")
        _check(
            isinstance(rel, str) and rel.startswith(prefix) and _FIG_FILE.fullmatch(rel[len(prefix) :]) is not None,
            where,
            f"figure path {rel!r} is not a figure of this result",
        )
    if "claim" in rec:
        _check_claim(rec["claim"], where)
    return rec


_FIG_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}(\.[0-9a-f]{8,32})?\.png")


@dataclass
class Scan:
    """Every readable result under a store, and one line per file that was skipped."""

    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class TaskLock:
    """An exclusive, non-blocking lock on one task (``flock``; the kernel releases it if the process dies)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666 & ~_umask())
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                return False
            raise
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None


class ResultStore:
    """Results of claim runs under one output folder.

    Parameters
    ----------
    root : path
        The output folder; created on first write.
    """

    def __init__(self, root: str | os.PathLike[str] = "geode-results") -> None:
        if str(root) == "":
            raise ValueError("the output folder must not be an empty path")
        self.root = Path(root)

    @property
    def results_dir(self) -> Path:
        return self.root / "results"

    def path(self, slug: str, mode: str, seed: int) -> Path:
        """Where the result of (slug, mode, seed) lives."""
        check_slug(slug)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 10**9:
            raise ValueError(f"seed must be an int in [0, 1e9); got {seed!r}")
        return self.results_dir / slug / f"{mode}-seed{seed}.json"

    def figure_dir(self, slug: str, mode: str, seed: int) -> Path:
        return self.path(slug, mode, seed).with_suffix("")

    def bench_path(self, slug: str) -> Path:
        """Where the benchmark of paper ``slug`` lives."""
        return self.results_dir / check_slug(slug) / "bench.json"

    def ensure_writable(self) -> None:
        """Create the results folder and prove that a file can be written there; ``OSError`` if not.

        Called before any work starts, so that a bad ``--out`` costs nothing.
        """
        if self.root.exists() and not self.root.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(self.root))
        self.results_dir.mkdir(parents=True, exist_ok=True)
        probe = self.results_dir / f".write-probe-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            probe.write_bytes(b"geode")
        finally:
            with contextlib.suppress(OSError):
                probe.unlink()

    def read(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """Read and validate one result file; :class:`ResultFileError` if unreadable or malformed."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ResultFileError(f"cannot read result file {path}: {exc}") from None
        return validate_record(load_json(text, f"result file {path}"), where=str(path))

    def get(self, slug: str, mode: str, seed: int) -> dict[str, Any] | None:
        """The stored result, or None when there is none."""
        p = self.path(slug, mode, seed)
        return self.read(p) if p.is_file() else None

    def state(self, slug: str, mode: str, seed: int, claim_hash: str | None = None) -> str:
        """``"done"``, ``"missing"``, ``"failed"`` (error/timeout), ``"stale"`` (another claim definition: slug
        or revision) or ``"corrupt"`` (unreadable or malformed)."""
        p = self.path(slug, mode, seed)
        try:
            if not p.is_file():
                return "missing"
        except OSError:
            return "corrupt"
        try:
            rec = self.read(p)
        except ResultFileError:
            return "corrupt"
        if rec["slug"] != slug or rec["mode"] != mode or rec["seed"] != seed:
            return "corrupt"
        if rec["status"] != "ok":
            return "failed"
        if claim_hash is not None and rec.get("claim_hash") != claim_hash:
            return "stale"
        return "done"

    def is_done(self, slug: str, mode: str, seed: int, claim_hash: str | None = None) -> bool:
        """True when a successful result of the current claim definition (if given) is stored."""
        return self.state(slug, mode, seed, claim_hash) == "done"

    def lock(self, slug: str, mode: str, seed: int) -> TaskLock | None:
        """Take the task's lock; None when another process holds it."""
        p = self.path(slug, mode, seed)
        lock = TaskLock(p.parent / f".{p.stem}.lock")
        return lock if lock.acquire() else None

    def write(self, record: Mapping[str, Any], figures: Mapping[str, bytes] | None = None) -> Path:
        """Store one result: PNG figures first, then the JSON record (atomically). Returns the JSON path.

        The stored copy gets ``figures`` (relative paths), ``run_id`` and ``schema``; a ``dict`` passed as
        ``record`` is updated with them too, so it matches what was stored.
        """
        rec = dict(record)
        slug, mode, seed = rec.get("slug"), rec.get("mode"), rec.get("seed")
        p = self.path(slug, mode, seed)  # type: ignore[arg-type]
        run_id = rec.get("run_id") or secrets.token_hex(4)
        if not (isinstance(run_id, str) and re.fullmatch(r"[0-9a-f]{8,32}", run_id)):
            raise ValueError(f"run_id must be 8-32 lower-case hex digits; got {run_id!r}")
        rec["run_id"] = run_id
        rel: dict[str, str] = {}
        fdir = p.with_suffix("")
        for name, png in (figures or {}).items():
            if not (isinstance(name, str) and FIGURE_NAME.fullmatch(name)):
                raise ValueError(f"figure names must be ASCII letters, digits, - or _; got {name!r}")
            atomic_write_bytes(fdir / f"{name}.{run_id}.png", png)
            rel[name] = f"results/{slug}/{mode}-seed{seed}/{name}.{run_id}.png"
        rec["figures"] = rel
        rec.setdefault("schema", SCHEMA_VERSION)
        validate_record(rec)
        atomic_write_text(p, json.dumps(rec, indent=2, sort_keys=True, allow_nan=False) + "\n")
        if isinstance(record, dict):
            record.update(figures=rec["figures"], run_id=run_id, schema=rec["schema"])
        if fdir.is_dir():  # figures of earlier runs of this task: no JSON names them any more
            keep = {Path(r).name for r in rel.values()}
            for old in fdir.glob("*.png"):
                if old.name not in keep:
                    with contextlib.suppress(OSError):
                        old.unlink()
        return p

    def scan(self, slug: str | None = None) -> Scan:
        """Every valid result at its own location (of paper ``slug`` only, if given); every other file, and every
        folder that cannot be read, is one line in ``problems``.

        A record counts only under ``results/<slug>/<mode>-seed<k>.json`` with matching contents.
        """
        out = Scan()
        try:
            if not self.results_dir.is_dir():
                return out
            folders = sorted(self.results_dir.iterdir()) if slug is None else [self.results_dir / check_slug(slug)]
        except OSError as exc:
            out.problems.append(f"cannot list {self.results_dir}: {exc.strerror or exc}")
            return out
        for folder in folders:
            if folder.name.startswith(".") or not folder.is_dir():
                continue
            if not SLUG.fullmatch(folder.name):
                out.problems.append(f"{folder}: not a paper folder; ignored")
                continue
            try:  # os.listdir, not glob: glob hides an unreadable folder as an empty one
                files = sorted(folder / n for n in os.listdir(folder) if n.endswith(".json"))
            except OSError as exc:
                out.problems.append(f"cannot read {folder}: {exc.strerror or exc}; its results are not used")
                continue
            for p in files:
                if p.name == "bench.json":
                    continue
                m = _RESULT_NAME.fullmatch(p.name)
                if not m:
                    out.problems.append(f"{p}: not a result file name (<mode>-seed<k>.json); ignored")
                    continue
                try:
                    rec = self.read(p)
                except ResultFileError as exc:
                    out.problems.append(f"{exc}; ignored")
                    continue
                where = (folder.name, m.group(1), int(m.group(2)))
                if (rec["slug"], rec["mode"], rec["seed"]) != where:
                    out.problems.append(
                        f"{p}: holds {rec['slug']} {rec['mode']} seed {rec['seed']}, "
                        "not what its location says; ignored"
                    )
                    continue
                out.records.append(rec)
        return out

    def records(self) -> Iterator[dict[str, Any]]:
        """Every valid result at its own location (see :meth:`scan` for the skipped files)."""
        yield from self.scan().records
