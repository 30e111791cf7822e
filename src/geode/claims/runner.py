"""Run claim checks: in isolated local worker processes (``jobs``) or on a Ray cluster.

Every (slug, mode, seed) task runs in its own process with one BLAS/torch thread, so that a claim
that crashes, hangs or leaks cannot take the run down with it:

- a claim that raises is stored with status ``error`` and its traceback, and the run goes on;
- a claim that exceeds ``timeout`` seconds is killed and stored with status ``timeout``;
- on Ctrl-C the running workers are stopped and every finished result is already on disk;
- a task whose successful result is stored is skipped unless ``force`` is set, so a run resumes.

The worker computes everything and sends back a record plus PNG bytes; the parent writes them to the
:class:`~geode.claims.store.ResultStore`. The same payload comes back from Ray workers, which may run
on other machines without access to the output folder.
"""

from __future__ import annotations

import datetime as _dt
import io
import multiprocessing as mp
import os
import platform
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import wait as _mp_wait
from typing import Any

from geode.claims.store import SCHEMA_VERSION, ResultStore
from geode.claims.types import MODES

__all__ = ["Task", "execute", "run_tasks"]

Payload = tuple[dict[str, Any], dict[str, bytes]]


@dataclass(frozen=True)
class Task:
    """One claim run: paper ``slug`` in ``mode`` with ``seed``; ``module`` overrides where its claim lives."""

    slug: str
    mode: str
    seed: int
    module: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative int; got {self.seed!r}")


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
        "summary": "",
        "notes": [],
        "error": None,
        "wall_s": 0.0,
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
    t0 = time.perf_counter()
    try:
        from geode.claims.registry import load_claim

        claim = load_claim(task.slug, task.module)
        record["claim"] = claim.describe()
        set_single_thread()  # again: the claim's module may have imported torch
        if "torch" in sys.modules:
            record["torch"] = sys.modules["torch"].__version__
        seed_everything(task.seed)
        outcome = claim.run(task.mode, task.seed)
        from geode.claims.types import Outcome

        if not isinstance(outcome, Outcome):
            raise TypeError(f"run() must return an Outcome; got {type(outcome).__name__}")
        verdict, checks = claim.verdict(outcome.metrics)
        record.update(
            status="ok",
            verdict=verdict,
            metrics=outcome.metrics,
            checks=checks,
            table=outcome.table,
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
    except Exception:  # a claim's failure is a result, recorded with its traceback
        record["status"] = "error"
        record["verdict"] = None
        record["error"] = traceback.format_exc(limit=30)
        figures = {}
    record["wall_s"] = round(time.perf_counter() - t0, 3)
    return record, figures


def _child(task: Task, conn: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    try:
        payload = execute(task)
    except BaseException:  # pragma: no cover - execute() already catches claim errors
        rec = _base_record(task)
        rec["error"] = traceback.format_exc()
        payload = (rec, {})
    conn.send(payload)
    conn.close()


def _failure(task: Task, status: str, message: str, wall_s: float) -> dict[str, Any]:
    rec = _base_record(task)
    rec.update(status=status, error=message, wall_s=round(wall_s, 3))
    return rec


def _run_local(
    tasks: Sequence[Task],
    jobs: int,
    timeout: float | None,
    emit: Callable[[dict[str, Any], dict[str, bytes]], None],
) -> None:
    ctx = mp.get_context("spawn")
    pending = list(tasks)
    running: dict[Any, tuple[Task, Any, float]] = {}  # conn -> (task, process, start)
    env_before = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    for k in env_before:  # children inherit the environment: one thread each
        os.environ[k] = "1"
    try:
        while pending or running:
            while pending and len(running) < jobs:
                task = pending.pop(0)
                parent_conn, child_conn = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_child, args=(task, child_conn), daemon=True)
                proc.start()
                child_conn.close()
                running[parent_conn] = (task, proc, time.monotonic())
            ready = _mp_wait(list(running), timeout=0.2)
            for conn in ready:
                task, proc, start = running.pop(conn)
                try:
                    record, figures = conn.recv()
                except (EOFError, OSError):
                    proc.join(5)
                    record, figures = (
                        _failure(
                            task, "error", f"worker died with exit code {proc.exitcode}", time.monotonic() - start
                        ),
                        {},
                    )
                conn.close()
                proc.join(5)
                emit(record, figures)
            if timeout is not None:
                now = time.monotonic()
                for conn, (task, proc, start) in list(running.items()):
                    if now - start > timeout:
                        proc.kill()
                        proc.join(5)
                        conn.close()
                        del running[conn]
                        emit(_failure(task, "timeout", f"no result within {timeout:g} s", now - start), {})
    finally:
        for conn, (_task, proc, _start) in running.items():  # Ctrl-C or an error in emit: stop the workers
            proc.kill()
            proc.join(5)
            conn.close()
        for k, v in env_before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run_ray(
    tasks: Sequence[Task],
    address: str,
    jobs: int | None,
    timeout: float | None,
    emit: Callable[[dict[str, Any], dict[str, bytes]], None],
) -> None:
    try:
        import ray
    except ImportError:
        raise ImportError("running on Ray needs the ray extra: pip install 'geode[ray]'") from None
    started_here = False
    if not ray.is_initialized():
        env = {"env_vars": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"}}
        if address == "local":
            ray.init(num_cpus=jobs or None, include_dashboard=False, runtime_env=env, log_to_driver=False)
        else:
            ray.init(address=address, runtime_env=env, log_to_driver=False)
        started_here = True
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(execute)
        limit = jobs or max(1, int(ray.cluster_resources().get("CPU", 1)))
        pending = list(tasks)
        in_flight: dict[Any, tuple[Task, float]] = {}
        while pending or in_flight:
            while pending and len(in_flight) < limit:
                task = pending.pop(0)
                in_flight[remote.remote(task)] = (task, time.monotonic())
            done, _ = ray.wait(list(in_flight), num_returns=1, timeout=0.2)
            for ref in done:
                task, start = in_flight.pop(ref)
                try:
                    record, figures = ray.get(ref)
                except Exception as exc:  # worker crash, serialisation error, ...
                    record, figures = (
                        _failure(task, "error", f"ray task failed: {exc!r}", time.monotonic() - start),
                        {},
                    )
                emit(record, figures)
            if timeout is not None:
                now = time.monotonic()
                for ref, (task, start) in list(in_flight.items()):
                    if now - start > timeout:
                        ray.cancel(ref, force=True)
                        del in_flight[ref]
                        emit(_failure(task, "timeout", f"no result within {timeout:g} s", now - start), {})
    finally:
        if started_here:
            ray.shutdown()


def run_tasks(
    tasks: Sequence[Task],
    store: ResultStore,
    *,
    jobs: int = 1,
    timeout: float | None = None,
    force: bool = False,
    ray_address: str | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run claim tasks and store their results; return the records produced by this call.

    Parameters
    ----------
    tasks : sequence of Task
    store : ResultStore
        Where results are written (atomically, one by one as they finish).
    jobs : int
        Worker processes at once (one thread each); on Ray, tasks in flight (default: cluster CPUs).
    timeout : float, optional
        Seconds per task before it is killed and recorded as ``timeout``.
    force : bool
        Re-run tasks that already have a successful stored result.
    ray_address : str, optional
        ``"local"`` (start a Ray instance in this process), ``"auto"`` or a cluster address.
    on_start : callable, optional
        Called once with (number of tasks to run, number skipped).
    on_result : callable, optional
        Called with each record as soon as it is stored.
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an int >= 1; got {jobs!r}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds; got {timeout!r}")
    todo = [t for t in tasks if force or not store.is_done(t.slug, t.mode, t.seed)]
    if on_start is not None:
        on_start(len(todo), len(tasks) - len(todo))
    produced: list[dict[str, Any]] = []

    def emit(record: dict[str, Any], figures: dict[str, bytes]) -> None:
        store.write(record, figures)
        produced.append(record)
        if on_result is not None:
            on_result(record)

    if not todo:
        return produced
    if ray_address:
        _run_ray(todo, ray_address, jobs if jobs > 1 else None, timeout, emit)
    else:
        _run_local(todo, jobs, timeout, emit)
    return produced
