"""Run claim checks: in isolated local worker processes (``jobs``) or on a Ray cluster.

Every (slug, mode, seed) task runs in its own process with one BLAS/torch thread, so that a claim
that crashes, hangs or leaks cannot take the run down with it:

- a claim that raises is stored with status ``error`` and its traceback, and the run goes on;
- a claim that exceeds ``timeout`` seconds is killed with its whole process group (helpers it started
  included) and stored with status ``timeout``;
- a worker dies with its parent: ``kill -9`` of ``geode reproduce`` leaves no worker computing
  (``PR_SET_PDEATHSIG`` on Linux, a watchdog thread elsewhere);
- on Ctrl-C (or SIGTERM, which the CLI turns into the same path) the running workers are stopped and every
  finished result is already on disk;
- a task whose successful result of the *current* claim definition is stored is skipped unless
  ``force`` is set, so a run resumes; a stale, failed or unreadable result is re-run;
- a task being run by another process on the same output folder (its lock is held) is skipped;
- a result that cannot be written (full disk, read-only folder) costs that result only: no new task is
  started, the running ones finish, and :class:`StoreWriteError` lists what could not be stored.

Tasks may be given lazily (any iterable); the runner never materialises more than it runs. The worker
computes everything and sends back a record plus PNG bytes; the parent writes them to the
:class:`~geode.claims.store.ResultStore`. The same payload comes back from Ray workers, which may run on
other machines without access to the output folder.
"""

from __future__ import annotations

import collections
import contextlib
import datetime as _dt
import io
import json
import math
import multiprocessing as mp
import os
import platform
import re
import secrets
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import wait as _mp_wait
from typing import Any

from geode.claims.store import SCHEMA_VERSION, ResultFileError, ResultStore, TaskLock, check_slug
from geode.claims.types import MODES

__all__ = ["RunnerUsageError", "StoreWriteError", "Task", "execute", "run_tasks"]

Payload = tuple[dict[str, Any], dict[str, bytes]]
_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


class RunnerUsageError(ValueError):
    """A problem with how the runner was asked to run (Ray missing, a bad or unreachable address)."""


class StoreWriteError(OSError):
    """Some results could not be written; ``unsaved`` holds them and ``dumped`` where they were saved instead."""

    def __init__(self, message: str, unsaved: list[dict[str, Any]], dumped: str | None) -> None:
        super().__init__(message)
        self.unsaved = unsaved
        self.dumped = dumped


@dataclass(frozen=True)
class Task:
    """One claim run: paper ``slug`` in ``mode`` with ``seed``; ``module`` overrides where its claim lives."""

    slug: str
    mode: str
    seed: int
    module: str | None = None

    def __post_init__(self) -> None:
        check_slug(self.slug)
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 10**9:
            raise ValueError(f"seed must be a non-negative int below 1e9; got {self.seed!r}")
        if self.module is not None and not re.fullmatch(r"[A-Za-z_][\w.]*", self.module):
            raise ValueError(f"module must be a dotted Python module name; got {self.module!r}")


def _base_record(task: Task) -> dict[str, Any]:
    from geode import __version__

    return {
        "schema": SCHEMA_VERSION,
        "slug": task.slug,
        "mode": task.mode,
        "seed": task.seed,
        "status": "error",
        "verdict": None,
        "metrics": {},
        "checks": [],
        "table": [],
        "tuned": [],
        "summary": "",
        "notes": [],
        "error": None,
        "wall_s": 0.0,
        "cpu_s": 0.0,
        "run_id": secrets.token_hex(4),
        "started": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "geode_version": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }


def execute(task: Task) -> Payload:
    """Run one task in this process and return ``(record, figures_png)``; never raises for claim errors."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    from geode.core.random import seed_everything, set_single_thread

    set_single_thread()
    record = _base_record(task)
    figures: dict[str, bytes] = {}
    t0, c0 = time.perf_counter(), _cpu_seconds()
    try:
        from geode.claims.registry import load_claim

        claim = load_claim(task.slug, task.module)
        record["claim"] = claim.describe()
        record["claim_hash"] = record["claim"]["hash"]
        set_single_thread()  # again: the claim's module may have imported torch
        if "torch" in sys.modules:
            record["torch"] = sys.modules["torch"].__version__
        seed_everything(task.seed)
        outcome = claim.run(task.mode, task.seed)
        from geode.claims.types import Outcome

        if not isinstance(outcome, Outcome):
            raise TypeError(f"run() must return an Outcome; got {type(outcome).__name__}")
        verdict, checks = claim.verdict(outcome)
        record.update(
            status="ok",
            verdict=verdict,
            metrics=outcome.metrics,
            checks=checks,
            table=outcome.table,
            tuned=outcome.tuned,
            summary=outcome.summary,
            notes=list(outcome.notes),
        )
        if outcome.figures:
            import matplotlib.pyplot as plt

            for name, fig in outcome.figures.items():
                buf = io.BytesIO()
                fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
                plt.close(fig)
                figures[name] = buf.getvalue()
        from geode.claims.store import check_plain

        check_plain(record, f"the result of {task.slug} {task.mode} seed {task.seed}")  # storable, or an error
    except Exception:  # a claim's failure is a result, recorded with its traceback
        record = {**_base_record(task), "run_id": record["run_id"], "started": record["started"]}
        record["error"] = traceback.format_exc(limit=30)
        figures = {}
    record["wall_s"] = round(time.perf_counter() - t0, 3)
    record["cpu_s"] = round(_cpu_seconds() - c0, 3)
    return record, figures


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and its reaped children.

    Stored beside the wall time: on a loaded, shared machine the wall time of a claim can grow several-fold
    while its CPU time stays put, so the CPU time is what a time budget is checked against.
    """
    own = time.process_time()
    with contextlib.suppress(ImportError, OSError):
        import resource

        ch = resource.getrusage(resource.RUSAGE_CHILDREN)
        own += ch.ru_utime + ch.ru_stime
    return own


def _die_with_parent(parent_pid: int) -> None:
    """Make this worker a process-group leader that dies when its parent does."""
    with contextlib.suppress(OSError):
        os.setsid()  # own process group: a timeout kills the worker and whatever it started
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)

    def watch() -> None:  # a backstop where PDEATHSIG is unavailable
        while True:
            time.sleep(0.5)
            if os.getppid() != parent_pid:
                with contextlib.suppress(OSError):
                    os.killpg(0, signal.SIGKILL)
                os._exit(1)

    threading.Thread(target=watch, name="geode-parent-watch", daemon=True).start()


def _child(task: Task, conn: Any, parent_pid: int) -> None:
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    try:
        payload = execute(task)
    except BaseException:  # pragma: no cover - execute() already catches claim errors
        rec = _base_record(task)
        rec["error"] = traceback.format_exc()
        payload = (rec, {})
    try:
        conn.send(payload)
        conn.close()
    except (BrokenPipeError, OSError):  # the parent is gone: nobody to tell
        os._exit(1)


def _failure(task: Task, status: str, message: str, wall_s: float) -> dict[str, Any]:
    rec = _base_record(task)
    rec.update(status=status, error=message, wall_s=round(wall_s, 3))
    return rec


def _kill_group(proc: Any) -> None:
    """Kill a worker and its process group (it called setsid, so its group id is its pid)."""
    with contextlib.suppress(OSError, ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError, ValueError):
        proc.kill()
    proc.join(5)


@contextlib.contextmanager
def _sigint_blocked_in_children() -> Iterator[None]:
    """Block SIGINT in this thread while a worker is spawned, so the worker is born with it blocked.

    A Ctrl-C during the worker's start-up then never gives it a ``KeyboardInterrupt`` traceback (the worker
    later ignores SIGINT: the parent handles Ctrl-C and stops it). The parent loses nothing: a SIGINT that
    arrives meanwhile stays pending and is delivered when the mask is restored (or to another thread, and
    Python raises it in the main thread as usual).
    """
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class _Scheduler:
    """Hands out the tasks that need running, one at a time, under their locks; counts the rest.

    Tasks added with :meth:`add` (seeds added to an underpowered claim) go before the remaining given ones.
    ``on_done(task, why)`` is called for every task that ends: run (``"ran"``) or skipped.
    """

    def __init__(
        self,
        tasks: Iterable[Task],
        store: ResultStore,
        force: bool,
        on_skip: Callable[[Task, str], None] | None,
        on_note: Callable[[str], None] | None,
        more: Callable[[Task], Iterable[Task]] | None = None,
    ) -> None:
        self._it = iter(tasks)
        self.more = more
        self._added: collections.deque[Task] = collections.deque()
        self.store = store
        self.force = force
        self.on_skip = on_skip
        self.on_note = on_note
        self.skipped = 0
        self.exhausted = False
        self.failure: str | None = None  # why no further task could be started
        self._hashes: dict[tuple[str, str | None], str | None] = {}

    def add(self, tasks: Iterable[Task]) -> None:
        """Run these tasks next (before the rest of the given ones)."""
        self._added.extend(tasks)

    def _hash(self, task: Task) -> str | None:
        key = (task.slug, task.module)
        if key not in self._hashes:
            try:
                from geode.claims.registry import load_claim

                self._hashes[key] = load_claim(task.slug, task.module).definition_hash()
            except Exception:  # the worker will record why the claim cannot load
                self._hashes[key] = None
        return self._hashes[key]

    def _pending(self) -> Iterator[Task]:
        while True:
            if self._added:
                yield self._added.popleft()
                continue
            nxt = next(self._it, None)
            if nxt is None:
                return
            yield nxt

    def next(self) -> tuple[Task, TaskLock] | None:
        """The next task to run with its lock held, or None when there is none left (for now)."""
        for task in self._pending():
            digest = self._hash(task)
            state = "missing" if self.force else self.store.state(task.slug, task.mode, task.seed, digest)
            if state == "done":
                self._skip(task, "stored")
                continue
            try:
                lock = self.store.lock(task.slug, task.mode, task.seed)
            except OSError as exc:  # a lock that cannot be created (a read-only folder, no inodes left): like a
                # result that cannot be written, it costs only what has not started
                self.failure = f"cannot lock {task.slug} {task.mode} seed {task.seed}: {exc.strerror or exc}"
                if self.on_note is not None:
                    self.on_note(self.failure)
                self.exhausted = True
                return None
            if lock is None:
                self._skip(task, "running elsewhere")
                continue
            if not self.force and self.store.is_done(task.slug, task.mode, task.seed, digest):
                lock.release()  # another run finished it while we looked
                self._skip(task, "stored")
                continue
            if state in ("stale", "corrupt") and self.on_note is not None:
                what = "from an older claim definition" if state == "stale" else "unreadable or malformed"
                self.on_note(f"{task.slug} {task.mode} seed {task.seed}: the stored result is {what}; re-running")
            return task, lock
        self.exhausted = True
        return None

    def _skip(self, task: Task, why: str) -> None:
        self.skipped += 1
        if self.on_skip is not None:
            self.on_skip(task, why)
        if why == "stored":  # a task another run holds has not ended: its claim is left to that run
            self.ended(task)

    def ended(self, task: Task) -> None:
        """A task ended (ran or was skipped): queue what ``more`` adds for it."""
        if self.more is not None:
            self.add(self.more(task))


def _run_local(
    sched: _Scheduler,
    jobs: int,
    timeout: float | None,
    emit: Callable[[dict[str, Any], dict[str, bytes], Task], None],
    stop: Callable[[], bool],
) -> None:
    ctx = mp.get_context("spawn")
    running: dict[Any, tuple[Task, Any, float, TaskLock]] = {}  # conn -> (task, process, start, lock)
    env_before = {k: os.environ.get(k) for k in _THREAD_VARS}
    for k in env_before:  # children inherit the environment: one thread each
        os.environ[k] = "1"
    parent = os.getpid()

    def finish(conn: Any, record: dict[str, Any], figures: dict[str, bytes]) -> None:
        task, proc, start, lock = running.pop(conn)
        with contextlib.suppress(OSError):
            conn.close()
        try:
            emit(record, figures, task)
        finally:
            lock.release()

    try:
        while True:
            while not stop() and len(running) < jobs:
                nxt = sched.next()
                if nxt is None:
                    break
                task, lock = nxt
                parent_conn, child_conn = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_child, args=(task, child_conn, parent), daemon=True)
                try:
                    with _sigint_blocked_in_children():
                        proc.start()
                        running[parent_conn] = (task, proc, time.monotonic(), lock)
                except BaseException:  # Ctrl-C in the middle of a start: stop what was started
                    if getattr(proc, "_popen", None) is not None:
                        _kill_group(proc)
                    running.pop(parent_conn, None)
                    lock.release()
                    raise
                finally:
                    child_conn.close()
            if not running:
                break
            for conn in _mp_wait(list(running), timeout=0.2):
                task, proc, start, _ = running[conn]
                try:
                    record, figures = conn.recv()
                except (EOFError, OSError):
                    proc.join(5)
                    msg = f"worker died with exit code {proc.exitcode}"
                    record, figures = _failure(task, "error", msg, time.monotonic() - start), {}
                proc.join(5)
                finish(conn, record, figures)
            if timeout is not None:
                now = time.monotonic()
                for conn, (task, proc, start, _) in list(running.items()):
                    if now - start > timeout:
                        _kill_group(proc)
                        finish(conn, _failure(task, "timeout", f"no result within {timeout:g} s", now - start), {})
    finally:
        for conn, (_task, proc, _start, lock) in running.items():  # Ctrl-C or an error: stop the workers
            _kill_group(proc)
            with contextlib.suppress(OSError):
                conn.close()
            lock.release()
        for k, v in env_before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def check_ray_address(address: str, connect_timeout: float = 5.0) -> None:
    """Refuse a malformed or unreachable Ray address quickly, with one clear message.

    ``"local"`` and ``"auto"`` are accepted as they are; ``host:port`` and ``ray://host:port`` must name a
    port that accepts a TCP connection within ``connect_timeout`` seconds (Ray itself would retry for
    minutes).
    """
    if address in ("local", "auto"):
        return
    m = re.fullmatch(r"(?:ray://)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.\-]+):(\d{1,5})", address)
    if not m or not 0 < int(m.group(2)) < 65536:
        raise RunnerUsageError(f"--ray must be 'local', 'auto', HOST:PORT or ray://HOST:PORT; got {address!r}")
    host, port = m.group(1).strip("[]"), int(m.group(2))
    try:
        with socket.create_connection((host, port), timeout=connect_timeout):
            pass
    except OSError as exc:
        raise RunnerUsageError(
            f"cannot reach a Ray cluster at {address} within {connect_timeout:g} s: {exc.strerror or exc}"
        ) from None


def _run_ray(
    sched: _Scheduler,
    address: str,
    jobs: int | None,
    timeout: float | None,
    emit: Callable[[dict[str, Any], dict[str, bytes], Task], None],
    stop: Callable[[], bool],
) -> None:
    try:
        import ray
    except ImportError:
        raise RunnerUsageError("running on Ray needs the ray extra: pip install 'geode[ray]'") from None
    check_ray_address(address)
    started_here = False
    if not ray.is_initialized():
        env = {"env_vars": {k: "1" for k in _THREAD_VARS} | {"MPLBACKEND": "Agg"}}
        try:
            if address == "local":
                ray.init(num_cpus=jobs, include_dashboard=False, runtime_env=env, log_to_driver=False)
            else:
                ray.init(address=address, runtime_env=env, log_to_driver=False)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise RunnerUsageError(f"cannot start or join Ray at {address!r}: {exc}") from None
        started_here = True
    in_flight: dict[Any, tuple[Task, float, TaskLock]] = {}
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(execute)
        limit = jobs or max(1, int(ray.cluster_resources().get("CPU", 1)))
        while True:
            while not stop() and len(in_flight) < limit:
                nxt = sched.next()
                if nxt is None:
                    break
                task, lock = nxt
                in_flight[remote.remote(task)] = (task, time.monotonic(), lock)
            if not in_flight:
                break
            done, _ = ray.wait(list(in_flight), num_returns=1, timeout=0.2)
            for ref in done:
                task, start, lock = in_flight.pop(ref)
                try:
                    record, figures = ray.get(ref)
                except Exception as exc:  # worker crash, serialisation error, ...
                    record, figures = (
                        _failure(task, "error", f"ray task failed: {exc!r}", time.monotonic() - start),
                        {},
                    )
                try:
                    emit(record, figures, task)
                finally:
                    lock.release()
            if timeout is not None:
                now = time.monotonic()
                for ref, (task, start, lock) in list(in_flight.items()):
                    if now - start > timeout:
                        ray.cancel(ref, force=True)
                        del in_flight[ref]
                        try:
                            emit(_failure(task, "timeout", f"no result within {timeout:g} s", now - start), {}, task)
                        finally:
                            lock.release()
    finally:
        for ref, (_task, _start, lock) in in_flight.items():
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
            lock.release()
        if started_here:
            ray.shutdown()


def _dump_unsaved(unsaved: list[dict[str, Any]]) -> str | None:
    """Save results that could not be stored to a file in the temp folder; its path, or None."""
    try:
        fd, path = tempfile.mkstemp(prefix="geode-unsaved-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(unsaved, fh, indent=1, allow_nan=False, default=str)
        return path
    except (OSError, ValueError):
        return None


def run_tasks(
    tasks: Iterable[Task],
    store: ResultStore,
    *,
    jobs: int | None = None,
    timeout: float | None = None,
    force: bool = False,
    ray_address: str | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    on_skip: Callable[[Task, str], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    more: Callable[[Task], Iterable[Task]] | None = None,
) -> list[dict[str, Any]]:
    """Run claim tasks and store their results; return the records produced by this call.

    Parameters
    ----------
    tasks : iterable of Task
        Consumed lazily.
    store : ResultStore
        Where results are written (atomically, one by one as they finish).
    jobs : int, optional
        Worker processes at once, one thread each (None: 1); on Ray, tasks in flight (None: the cluster's CPUs).
    timeout : float, optional
        Seconds per task before it is killed and recorded as ``timeout``.
    force : bool
        Re-run tasks that already have a successful stored result.
    ray_address : str, optional
        ``"local"`` (start a Ray instance in this process), ``"auto"`` or a cluster address.
    on_result : callable, optional
        Called with each record as soon as it is stored.
    on_skip : callable, optional
        Called with each task not run and why (``"stored"``, ``"running elsewhere"``).
    on_note : callable, optional
        Called with one-line notes (a stale or unreadable result replaced, a result that could not be written).
    more : callable, optional
        Called with each task that ended (stored or skipped); the tasks it returns run next (e.g.
        :meth:`geode.claims.seeds.SeedAdder.done`, which adds a seed to an underpowered claim).

    Raises
    ------
    StoreWriteError
        After the run, if some results could not be written (they are dumped to a temp file when possible).
    RunnerUsageError
        Ray is missing, or its address is malformed or unreachable.
    """
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= 1024):
        raise ValueError(f"jobs must be an int in [1, 1024]; got {jobs!r}")
    if timeout is not None and (isinstance(timeout, bool) or not (timeout > 0 and not math.isnan(timeout))):
        raise ValueError(f"timeout must be > 0 seconds; got {timeout!r}")
    produced: list[dict[str, Any]] = []
    unsaved: list[dict[str, Any]] = []
    write_error: list[str] = []
    sched = _Scheduler(tasks, store, force, on_skip, on_note, more)

    def emit(record: dict[str, Any], figures: dict[str, bytes], task: Task) -> None:
        try:
            try:
                store.write(record, figures)
            except ResultFileError as exc:  # a record the store refuses is stored as the error it is
                record = _failure(task, "error", f"the result could not be stored as it was: {exc}", record["wall_s"])
                figures = {}
                store.write(record, figures)
        except OSError as exc:  # a full disk or a read-only folder: keep the record, start nothing new
            unsaved.append(record)
            msg = f"cannot store {record['slug']} {record['mode']} seed {record['seed']}: {exc.strerror or exc}"
            write_error.append(msg)
            if on_note is not None:
                on_note(msg)
            return
        produced.append(record)
        if on_result is not None:
            on_result(record)
        sched.ended(task)

    def stop() -> bool:
        return bool(write_error) or sched.failure is not None

    if ray_address:
        _run_ray(sched, ray_address, jobs, timeout, emit, stop)
    else:
        _run_local(sched, jobs or 1, timeout, emit, stop)
    if unsaved or sched.failure is not None:
        if not unsaved:
            raise StoreWriteError(f"{sched.failure}; the tasks already running finished and were stored", [], None)
        dumped = _dump_unsaved(unsaved)
        where = f"; they are saved in {dumped}" if dumped else ""
        raise StoreWriteError(
            f"{len(unsaved)} result(s) could not be stored ({write_error[0]}){where}", unsaved, dumped
        )
    return produced
