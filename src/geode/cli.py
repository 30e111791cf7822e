"""The ``geode`` command line: list | show | reproduce | report | bench | assets | serve-sim.

Usage errors (an unknown slug, a bad mode or count, an output folder that cannot be written, a Ray address
that cannot be reached) print one line to stderr and exit with code 2, never a traceback, before any work
starts. ``geode reproduce`` exits with 1 when a claim ended in an error or a timeout or a result could not
be stored, 130 on Ctrl-C and 143 on SIGTERM (finished results are kept either way), 0 otherwise (whatever
the verdicts). Unreadable or misplaced result files are listed on one line each and skipped.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from geode import __version__, catalog

app = typer.Typer(
    help="geode: the methods of 57 NeurIPS 2026 papers, each with an honest claim check.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
console = Console()
err_console = Console(stderr=True)

_MODES = ("smoke", "quick", "full")
MAX_SEEDS = 1000
DEFAULT_MAX_SEEDS = 5
"""Seeds a claim may reach by adding while its verdict is underpowered (README: what it costs)."""
MAX_JOBS = 256
_DEFAULT_TIMEOUT = {"smoke": 300.0, "quick": 1200.0, "full": None}
_VERDICT_STYLE = {
    "reproduced": "bold green",
    "partial": "bold yellow",
    "not reproduced": "bold red",
    "error": "bold magenta",
    "timeout": "bold magenta",
    "inconclusive": "bold blue",
    "stale": "yellow",
}


class UsageFailure(Exception):
    """A user error that ends the command with one line on stderr and exit code 2."""


def _select(patterns: list[str], field: str | None) -> list[catalog.Paper]:
    if field is not None and field not in catalog.FIELDS:
        raise UsageFailure(f"unknown field {field!r}; fields: {', '.join(catalog.FIELDS)}")
    if not patterns:
        return catalog.papers(field)
    try:
        return catalog.select(patterns, field)
    except KeyError as exc:
        raise UsageFailure(exc.args[0]) from None


@app.command("list")
def list_(
    pattern: Annotated[list[str] | None, typer.Argument(help="Slugs or wildcards, e.g. 'sd*'.")] = None,
    field: Annotated[str | None, typer.Option("--field", "-f", help="Only this field.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list of objects.")] = False,
    out: Annotated[
        str | None, typer.Option("--out", "-o", help="A results folder: add each paper's verdict and key metric.")
    ] = None,
) -> None:
    """List the papers: slug, field, status and title (and, with --out, the verdict and key metric)."""
    chosen = _select(pattern or [], field)
    results = _results_by_slug(_out_folder(out, must_exist=True)) if out is not None else None
    if as_json:
        rows = []
        for p in chosen:
            row: dict[str, Any] = p.to_dict()
            if results is not None:
                r = results.get(p.slug)
                row["verdict"] = r.evaluation.label if r is not None and r.evaluation else (r.state if r else None)
                row["key_metric"] = r.key_metric_text() if r is not None else ""
            rows.append(row)
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table(title=f"geode {__version__}: {len(chosen)} papers", title_justify="left")
    cols = ["slug", "field", "status", "title"] + (["verdict", "key metric"] if results is not None else [])
    for col in cols:
        table.add_column(col, no_wrap=col not in ("title", "key metric"))
    for p in chosen:
        row_cells = [p.slug, p.field, "[green]implemented[/]" if p.status == "implemented" else "planned", p.title]
        if results is not None:
            r = results.get(p.slug)
            label = r.evaluation.label if r is not None and r.evaluation else (r.state if r else "")
            style = _VERDICT_STYLE.get(r.state if r else "", "")
            row_cells += [
                f"[{style}]{escape(label)}[/]" if style else escape(label),
                escape(r.key_metric_text() if r else ""),
            ]
        table.add_row(*row_cells)
    console.print(table)


def _results_by_slug(folder: Path) -> dict[str, Any]:
    """The report's summary of every paper with results in ``folder``, by slug."""
    from geode.claims.report import current_claims, summarize
    from geode.claims.store import ResultStore

    scan = ResultStore(folder).scan()
    slugs = sorted({r["slug"] for r in scan.records if not r["slug"].startswith("_")})
    claims, errors = current_claims(slugs)
    return {r.paper.slug: r for r in summarize(scan.records, claims, load_errors=errors) if r.mode}


_SHOWN = 300
"""The most characters of one stored text ``show`` prints (a terminal folds a long unbroken word slowly)."""


def _clean(text: Any, limit: int | None = None) -> str:
    """Stored text made safe for a terminal: control characters (ANSI escapes included) removed, characters a
    terminal cannot encode (lone surrogates) replaced, and at most ``limit`` characters kept."""
    out = _CONTROL.sub("", str(text)).encode("utf-8", errors="replace").decode("utf-8")
    if limit is not None and len(out) > limit:
        out = out[:limit] + f"... ({len(out) - limit} more characters)"
    return out


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _out_folder(out: str, *, must_exist: bool = False) -> Path:
    """The ``--out`` folder; a usage failure for an empty path, a file, or (if asked) a missing folder."""
    if not out.strip():
        raise UsageFailure("--out must name a folder; got an empty path")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise UsageFailure(f"--out {out} is not a folder")
    if must_exist and not path.is_dir():
        raise UsageFailure(f"no results folder {out} (run geode reproduce --out {out} first)")
    return path


def _state_of(rec: dict[str, Any]) -> str:
    return rec["verdict"] if rec["status"] == "ok" else rec["status"]


@app.command()
def show(
    slug: Annotated[str, typer.Argument(help="The paper's slug.")],
    out: Annotated[str, typer.Option("--out", "-o", help="Results folder.")] = "geode-results",
    seeds: Annotated[
        str | None,
        typer.Option("--seeds", "-s", help="Judge only these stored seeds: a count (3: seeds 0-2), 7,8,9 or 10-12."),
    ] = None,
) -> None:
    """Show one paper: its claim, thresholds, floors and controls, and the verdict over its stored seeds."""
    try:
        paper = catalog.get(slug)
    except KeyError as exc:
        raise UsageFailure(exc.args[0]) from None
    folder = _out_folder(out)
    console.print(f"[bold]{escape(paper.title)}[/]  ({paper.slug}, field {paper.field}, {paper.status})")
    if paper.status == "planned":
        console.print("No claim check yet: this paper is planned.")
        return
    _print_use_it(slug)
    from geode.claims import load_claim

    c = load_claim(slug)
    console.print(f"[bold]Claim.[/] {escape(c.claim)}")
    console.print(f"[bold]Paper's figure.[/] {escape(c.paper_figure)}")
    console.print(f"[bold]Baselines.[/] {escape(', '.join(c.baselines))}")
    _print_definition(c)
    from geode.claims.report import summarize
    from geode.claims.store import ResultStore

    scan = ResultStore(folder).scan(slug) if folder.is_dir() else None
    for problem in scan.problems if scan else []:
        err_console.print(f"skipped: {_clean(problem)}", markup=False, highlight=False)
    recs = scan.records if scan else []
    if seeds is not None:
        from geode.claims.seeds import parse_seeds

        try:
            wanted = set(parse_seeds(seeds))
        except ValueError as exc:
            raise UsageFailure(str(exc)) from None
        recs = [r for r in recs if r["seed"] in wanted]
    if not recs:
        console.print(f"No stored results in {escape(str(folder))}" + (" for those seeds." if seeds else "."))
        return
    (row,) = [r for r in summarize(recs, {slug: c.describe()}) if r.paper.slug == slug]
    from geode.claims.verdict import evaluate

    for rec in sorted(recs, key=lambda r: (r["mode"], r["seed"])):
        state, stale = _state_of(rec), ""
        if rec["status"] == "ok":  # judged now, by the current definition: a stored verdict is never trusted
            state = evaluate(c.rules, [rec["metrics"]], tuned=[rec.get("tuned") or []], single=True).verdict
            stale = "" if rec.get("claim_hash") == c.definition_hash() else " (stale)"
        name = f"{rec['mode']}-seed{rec['seed']}.json"
        summary = escape(_clean(rec.get("summary", ""), _SHOWN))
        console.print(f"  {name}: [{_VERDICT_STYLE.get(state, '')}]{state}[/]{stale}  {summary}")
    style = _VERDICT_STYLE.get(row.state, "")
    label = row.evaluation.label if row.evaluation else row.state
    used = ", ".join(str(s) for s in row.seeds) or "none"
    console.print(
        f"[bold]Verdict over {len(row.records)} seed(s) of {row.mode or 'no current mode'} (seeds {used}):[/] "
        f"[{style}]{escape(label)}[/]"
    )
    ev = row.evaluation
    if ev is None:
        return
    for reason in ev.reasons:
        console.print(f"  inconclusive: {escape(reason)}")
    for flag in ev.flags:
        console.print(f"  [yellow]flag:[/] {escape(flag)}")
    from geode.claims.report import _ablation_text, _coverage_rows, _measured_text, _needs_text, _state_text

    t = Table("threshold", "role", "needs / on", "measured [90% interval]", "state", "idea ablation", "control")
    for ch in ev.checks:
        st = _state_text(ch)
        colour = "green" if st == "passed" else ("red" if st == "failed" else "yellow")
        t.add_row(
            ch["name"],
            ch["role"],
            escape(_needs_text(ch)),
            escape(_measured_text(ch)),
            f"[{colour}]{escape(st)}[/]",
            escape(_ablation_text(ch)),
            escape(ch["discrimination"]),
        )
    console.print(t)
    cov = Table("method", "kind", "protocol check", title="Tuning coverage and learned arms", title_justify="left")
    for r in _coverage_rows(row):
        cov.add_row(*(escape(x) for x in r))
    console.print(cov)


def _print_use_it(slug: str) -> None:
    """The import line, the public names with one line each, and the paper's doctested example.

    Code is highlighted on a terminal only: piped or redirected, it is printed as plain text (pygments'
    lexing costs more than the rest of ``show``), and it is never wrapped, so it can be copied back.
    """
    from geode.usage import usage

    def code(text: str, lexer: str) -> None:
        if console.is_terminal:
            from rich.syntax import Syntax

            console.print(Syntax(text, lexer, theme="ansi_dark", background_color="default"), soft_wrap=True)
        else:
            console.print(text, markup=False, highlight=False, soft_wrap=True)

    u = usage(slug)
    console.print("[bold]Use it.[/]")
    code(u.import_line, "python")
    names = Table(show_header=False, box=None, padding=(0, 2))
    for name, summary in u.names:
        names.add_row(name, escape(summary))
    console.print(names)
    if u.example:
        console.print(f"[bold]Example[/] (the doctest of {u.module}):")
        code(u.example, "pycon")
    console.print()


def _print_definition(c: Any) -> None:
    """The thresholds and floors of a claim as fixed before running, and its rules."""
    t = Table(
        "threshold",
        "rule",
        "arms / needs",
        "idea ablation",
        "negative control",
        "meaning",
        title="Thresholds and floors (fixed before running)",
        title_justify="left",
    )
    floors = {f.name for f in c.floors}
    for th in (*c.thresholds, *c.floors):
        from geode.claims.report import _rule_text

        if th.name in floors:
            scope = "floor on " + (", ".join(th.arms) if th.arms else "the bed")
        else:
            needs = c.rules.required_floors(th)
            scope = f"arms {', '.join(th.arms) if th.arms is not None else 'all'}; needs {', '.join(needs) or '-'}"
        t.add_row(
            th.name,
            escape(_rule_text(th.to_dict())),
            escape(scope),
            escape(th.ablation or ""),
            escape(", ".join(th.controls) or "none"),
            escape(th.description),
        )
    console.print(t)
    r = c.rules
    console.print(
        f"reproduced when: {escape(r.reproduced or 'all verdict thresholds hold')}; partial when: "
        f"{escape(r.partial or 'never')}; seeds needed: {r.min_seeds}"
        + (f" ({escape(c.replication)})" if c.replication else "")
        + f"; agreement: {r.agreement:.0%} of the seeds"
    )
    console.print(
        f"method: {escape(', '.join(r.method) or 'not declared')}; "
        f"tuned: {escape(', '.join(r.tuned) or 'none declared')}"
        + (f"; nothing to tune: {escape(', '.join(r.untuned))}" if r.untuned else "")
    )


def _fmt_num(x: Any) -> str:
    return "n/a" if x is None else f"{x:.4g}"


def _jobs(jobs: str | None, ray: str | None = None) -> int | None:
    """``--jobs``: a count, or ``auto`` for every core of this machine (of the cluster, on Ray)."""
    if jobs is None:
        return None
    if jobs.strip().lower() == "auto":
        return None if ray else (os.cpu_count() or 1)  # on Ray, auto is the cluster's CPUs
    try:
        return int(jobs)
    except ValueError:
        raise UsageFailure(f"--jobs must be a whole number or 'auto'; got {jobs!r}") from None


def _check_counts(seeds: int, jobs: int | None, timeout: float | None) -> None:
    if not 1 <= seeds <= MAX_SEEDS:
        raise UsageFailure(f"--seeds must be >= 1 and <= {MAX_SEEDS}; got {seeds}")
    if jobs is not None and not 1 <= jobs <= MAX_JOBS:
        raise UsageFailure(f"--jobs must be >= 1 and <= {MAX_JOBS}; got {jobs}")
    if timeout is not None and (math.isnan(timeout) or timeout <= 0):
        raise UsageFailure(f"--timeout must be a number of seconds > 0; got {timeout}")


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Any:
    """SIGTERM takes the Ctrl-C path: stop the workers, keep what finished, exit 143."""
    import signal

    def handler(signum: int, frame: Any) -> None:
        raise _Terminated

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, delivered as an interrupt."""


@app.command()
def reproduce(
    slugs: Annotated[list[str] | None, typer.Argument(help="Slugs or wildcards of implemented papers.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every implemented paper.")] = False,
    mode: Annotated[str, typer.Option("--mode", "-m", help="smoke, quick or full.")] = "quick",
    seeds: Annotated[
        str, typer.Option("--seeds", "-s", help="A count (3: seeds 0-2), a list (7,8,9) or a range (10-12).")
    ] = "3",
    max_seeds: Annotated[
        int,
        typer.Option(
            "--max-seeds",
            help="Add seeds to a claim while its verdict is underpowered, up to this many of the mode (no more: 0).",
        ),
    ] = DEFAULT_MAX_SEEDS,
    jobs: Annotated[
        str | None,
        typer.Option(
            "--jobs", "-j", help="Worker processes, one thread each, or 'auto' (every core); default 1; Ray: its CPUs."
        ),
    ] = None,
    ray: Annotated[str | None, typer.Option("--ray", help="Run on Ray: 'local', 'auto' or an address.")] = None,
    out: Annotated[str, typer.Option("--out", "-o", help="Results folder.")] = "geode-results",
    force: Annotated[bool, typer.Option("--force", help="Re-run what is already stored.")] = False,
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Seconds per run (default: smoke 300, quick 1200, full none).")
    ] = None,
) -> None:
    """Run the claim checks of implemented papers and store their results (seeds 0-2 by default).

    A claim whose verdict is inconclusive only because a deciding threshold is unresolved (its interval still
    contains its bound) gets one more seed at a time, up to --max-seeds seeds of the mode.
    """
    if mode not in _MODES:
        raise UsageFailure(f"unknown mode {mode!r}; modes: {', '.join(_MODES)}")
    from geode.claims.seeds import parse_seeds

    try:
        seed_list = parse_seeds(seeds)
    except ValueError as exc:
        raise UsageFailure(str(exc)) from None
    n_jobs = _jobs(jobs, ray)
    _check_counts(len(seed_list), n_jobs, timeout)
    if not 0 <= max_seeds <= MAX_SEEDS:
        raise UsageFailure(f"--max-seeds must be >= 0 and <= {MAX_SEEDS}; got {max_seeds}")
    if not slugs and not all_:
        raise UsageFailure("name papers to reproduce (slugs or wildcards), or pass --all")
    chosen = catalog.papers() if all_ else _select(slugs or [], None)
    implemented = [p for p in chosen if p.status == "implemented"]
    planned = [p.slug for p in chosen if p.status == "planned"]
    if not all_ and planned and len(planned) == len(chosen):
        raise UsageFailure(f"no claim check yet (planned): {', '.join(planned)}")
    folder = _out_folder(out)
    from geode.claims.store import ResultStore

    store = ResultStore(folder)
    try:
        store.ensure_writable()
    except OSError as exc:
        raise UsageFailure(f"cannot write results to {out}: {exc.strerror or exc}") from None
    if ray:
        import importlib.util

        from geode.claims.runner import RunnerUsageError, check_ray_address

        if importlib.util.find_spec("ray") is None:
            raise UsageFailure("running on Ray needs the ray extra: pip install 'geode[ray]'")
        try:
            check_ray_address(ray)
        except RunnerUsageError as exc:
            raise UsageFailure(str(exc)) from None
    if n_jobs is not None and n_jobs > (os.cpu_count() or 1) and not ray:
        err_console.print(f"[dim]note: --jobs {n_jobs} is more than this machine's {os.cpu_count()} CPUs[/]")
    if planned:
        err_console.print(f"[dim]skipping {len(planned)} planned paper(s) without a claim check[/]")
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from geode.claims.runner import RunnerUsageError, StoreWriteError, Task, run_tasks
    from geode.claims.seeds import SeedAdder

    def tasks() -> Any:  # lazily: never more Task objects than are running
        for p in implemented:
            for s in seed_list:
                yield Task(p.slug, mode, s)

    total = len(implemented) * len(seed_list)
    requested = [Task(p.slug, mode, s) for p in implemented for s in seed_list]
    records: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    with Progress(
        TextColumn("[bold]reproduce[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=err_console,
    ) as progress:
        bar = progress.add_task("claims", total=total)

        def on_skip(task: Any, why: str) -> None:
            skipped[why] = skipped.get(why, 0) + 1
            progress.update(bar, total=max(total - sum(skipped.values()), 1))

        def on_note(msg: str) -> None:
            progress.console.print(f"[yellow]{escape(_clean(msg))}[/]")

        def on_add(task: Any, unresolved: list[str]) -> None:
            nonlocal total
            total += 1
            progress.update(bar, total=max(total - sum(skipped.values()), 1))
            progress.console.print(
                f"[blue]{task.slug}: underpowered ({escape(', '.join(unresolved))}); adding seed {task.seed}[/]"
            )

        adder = SeedAdder(store, requested, max_seeds, on_add) if max_seeds > 0 else None

        def on_result(rec: dict[str, Any]) -> None:
            records.append(rec)
            state = _state_of(rec)
            progress.console.print(
                f"{rec['slug']:<22} {rec['mode']:<6} seed {rec['seed']}  "
                f"[{_VERDICT_STYLE.get(state, '')}]{state}[/]  "
                f"({rec['wall_s']:.1f} s, cpu {rec.get('cpu_s', 0.0):.1f} s)  "
                f"{escape(_clean(rec.get('summary', '')))}"
            )
            progress.advance(bar)

        try:
            with _sigterm_as_interrupt():
                run_tasks(
                    tasks(),
                    store,
                    jobs=n_jobs,
                    timeout=timeout if timeout is not None else _DEFAULT_TIMEOUT[mode],
                    force=force,
                    ray_address=ray,
                    on_result=on_result,
                    on_skip=on_skip,
                    on_note=on_note,
                    more=adder.done if adder is not None else None,
                )
        except RunnerUsageError as exc:
            raise UsageFailure(str(exc)) from None
        except StoreWriteError as exc:
            progress.stop()
            err_console.print(f"geode: error: {exc}", markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None
        except KeyboardInterrupt as exc:
            progress.stop()
            what = "terminated" if isinstance(exc, _Terminated) else "interrupted"
            err_console.print(f"{what}: {len(records)} finished result(s) are stored in {out}")
            raise typer.Exit(143 if isinstance(exc, _Terminated) else 130) from None
    if skipped.get("stored"):
        err_console.print(f"[dim]{skipped['stored']} run(s) already stored in {escape(out)} (use --force to redo)[/]")
    if skipped.get("running elsewhere"):
        err_console.print(f"[dim]{skipped['running elsewhere']} run(s) skipped: another run holds their lock[/]")
    _print_verdicts(store, [p.slug for p in implemented], mode)
    failed = sum(r["status"] != "ok" for r in records)
    cpu = sum(float(r.get("cpu_s", 0.0)) for r in records)
    console.print(
        f"{len(records)} run(s) stored in {escape(out)} ({cpu / 60:.1f} CPU minutes); {failed} error(s)/timeout(s). "
        f"Next: geode report --out {escape(out)}"
    )
    if failed:
        raise typer.Exit(1)


def _print_verdicts(store: Any, slugs: list[str], mode: str) -> None:
    """One line per paper: the verdict over all stored seeds of ``mode`` under the current claim."""
    from geode.claims.report import current_claims, summarize

    recs = [r for slug in slugs for r in store.scan(slug).records if r["mode"] == mode]
    if not recs:
        return
    claims, errors = current_claims(sorted({r["slug"] for r in recs}))
    for row in summarize(recs, claims, load_errors=errors):
        if row.paper.slug not in slugs or not row.mode:
            continue
        ev = row.evaluation
        extra = ""
        if ev is not None:
            seeds = ", ".join(str(x) for x in row.seeds)
            extra = f"  (seeds {seeds}" + (", unstable" if ev.unstable else "") + ")"
            if ev.reasons:
                extra += "  " + "; ".join(ev.reasons)
        style = _VERDICT_STYLE.get(row.state, "")
        label = ev.label if ev is not None else row.state
        console.print(f"[bold]{row.paper.slug:<22}[/] [{style}]{escape(label)}[/]{escape(extra)}")


@app.command()
def report(out: Annotated[str, typer.Option("--out", "-o", help="Results folder.")] = "geode-results") -> None:
    """Write REPORT.md and index.html for the stored results (bad files are listed and skipped)."""
    folder = _out_folder(out, must_exist=True)
    from geode.claims.report import write_report
    from geode.claims.store import ResultStore

    try:
        md, page, problems = write_report(ResultStore(folder))
    except OSError as exc:
        raise UsageFailure(f"cannot write the report into {out}: {exc.strerror or exc}") from None
    for problem in problems:
        err_console.print(f"skipped: {_clean(problem)}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"wrote {escape(str(md))} and {escape(str(page))}")


@app.command()
def bench(
    slugs: Annotated[
        list[str] | None, typer.Argument(help="Slugs or wildcards (default: every paper with one).")
    ] = None,
    size: Annotated[str, typer.Option("--size", help="smoke, quick or full.")] = "quick",
    repeats: Annotated[
        int | None, typer.Option("--repeats", help="Interleaved repetitions (default by size).")
    ] = None,
    out: Annotated[str, typer.Option("--out", "-o", help="Results folder.")] = "geode-results",
    as_json: Annotated[bool, typer.Option("--json", help="Print the records as JSON.")] = False,
) -> None:
    """Benchmark each paper's hot path against its strongest baseline; store results/<slug>/bench.json."""
    from geode.claims.bench import BENCH_SIZES, has_bench, run_bench, write_bench
    from geode.claims.store import ResultStore

    if size not in BENCH_SIZES:
        raise UsageFailure(f"unknown size {size!r}; sizes: {', '.join(BENCH_SIZES)}")
    if repeats is not None and not 1 <= repeats <= 1000:
        raise UsageFailure(f"--repeats must be >= 1 and <= 1000; got {repeats}")
    chosen = _select(slugs or [], None) if slugs else catalog.papers(status="implemented")
    with_bench = [p.slug for p in chosen if p.status == "implemented" and has_bench(p.slug)]
    if not with_bench:
        raise UsageFailure("no benchmark among the chosen papers")
    store = ResultStore(_out_folder(out))
    try:
        store.ensure_writable()
    except OSError as exc:
        raise UsageFailure(f"cannot write results to {out}: {exc.strerror or exc}") from None
    records = []
    failed: list[str] = []
    with _sigterm_as_interrupt():
        for slug in with_bench:
            try:
                rec = run_bench(slug, size, repeats=repeats)
            except KeyboardInterrupt as exc:
                what = "terminated" if isinstance(exc, _Terminated) else "interrupted"
                err_console.print(f"{what}: {len(records)} benchmark(s) stored in {out}")
                raise typer.Exit(143 if isinstance(exc, _Terminated) else 130) from None
            except Exception as exc:  # one paper's failing benchmark costs that paper only
                import traceback

                failed.append(slug)
                rec = {
                    "slug": slug,
                    "size": size,
                    "error": traceback.format_exc(limit=20),
                    "started": "",
                    "cases": [],
                }
                err_console.print(f"{slug:<22} error: {_clean(exc)[:300]}", markup=False, highlight=False)
            try:
                write_bench(store, rec)
            except OSError as exc:
                raise UsageFailure(f"cannot write results to {out}: {exc.strerror or exc}") from None
            records.append(rec)
            if "error" in rec:
                continue
            if not as_json:
                h = rec["headline"]
                mem = "" if h["memory_ratio"] is None else f", memory {h['memory_ratio']:.2f}x"
                console.print(
                    f"{slug:<22} {escape(h['case'])}: {h['ratio']:.2f}x [{h['low']:.2f}-{h['high']:.2f}] vs "
                    f"{escape(h['baseline'])}{mem}"
                )
                for case in rec["cases"]:
                    for t in case.get("targets", []):
                        from geode.claims.bench import met_text, target_text

                        got = "not measured" if t["measured"] is None else f"{t['measured']:.3g}x"
                        console.print(
                            f"{'':<22} target {target_text(t)} vs {escape(t['baseline'])} ({escape(case['name'])}): "
                            f"{got}, {met_text(t['met'])}",
                            highlight=False,
                        )
    if as_json:
        sys.stdout.write(json.dumps(records, indent=2, default=float) + "\n")
    if failed:
        err_console.print(f"{len(failed)} benchmark(s) failed: {', '.join(failed)} (their errors are in bench.json)")
        raise typer.Exit(1)


@app.command()
def assets(
    check: Annotated[
        bool, typer.Option("--check", help="Only report; exit 1 if an asset an implemented claim needs is missing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the table as JSON.")] = False,
) -> None:
    """Which offline assets are installed; prepares the SmolLM2 safetensors cache when its GGUF is present."""
    from geode.data.assets import asset_status
    from geode.models.pretrained import smollm2_cache_dir

    needed = _needed_assets()
    rows = []
    for a, path in asset_status():
        rows.append(
            {
                "asset": a.name,
                "installed": path is not None,
                "needed_by": needed.get(a.name, []),
                "holds": a.holds,
                "where": str(path) if path else None,
                "install": a.install,
            }
        )
    cache = smollm2_cache_dir()
    have_cache = (cache / "config.json").is_file()
    missing = [r for r in rows if not r["installed"] and r["needed_by"]]
    if as_json:
        sys.stdout.write(json.dumps({"assets": rows, "smollm2_cache": str(cache), "ready": have_cache}, indent=2))
        sys.stdout.write("\n")
    else:
        table = Table(
            "asset",
            "installed",
            "needed by",
            "holds",
            "where / how to install",
            title="Offline assets",
            title_justify="left",
        )
        for r in rows:
            table.add_row(
                r["asset"],
                "[green]yes[/]" if r["installed"] else "[red]no[/]",
                escape(", ".join(r["needed_by"])),
                escape(r["holds"]),
                escape(r["where"] or r["install"]),
            )
        console.print(table, soft_wrap=True)
        console.print(f"SmolLM2 safetensors cache: {escape(str(cache))} ({'ready' if have_cache else 'not prepared'})")
    if check:
        if missing:
            err_console.print("missing, and needed: " + ", ".join(r["asset"] for r in missing), markup=False)
            raise typer.Exit(1)
        return
    from geode.models.pretrained import prepare_smollm2_cache, smollm2_gguf_path

    if not have_cache and smollm2_gguf_path() is not None:
        console.print("preparing the SmolLM2 cache (dequantising the GGUF once, about a minute) ...")
        try:
            console.print(f"ready: {prepare_smollm2_cache()}")
        except ImportError as exc:
            raise UsageFailure(str(exc)) from None


def _needed_assets() -> dict[str, list[str]]:
    """Asset name -> the implemented claims that declare it (``register(..., assets=...)``)."""
    from geode.claims.report import current_claims

    claims, _ = current_claims([p.slug for p in catalog.papers(status="implemented")])
    needed: dict[str, list[str]] = {}
    for slug, d in claims.items():
        for a in d.get("assets", []):
            needed.setdefault(a, []).append(slug)
    return needed


@app.command(
    "serve-sim",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
)
def serve_sim(ctx: typer.Context) -> None:
    """Replay your CSV trace through the LLM serving simulator: --trace F.csv --policy svf --kv-slots M [--json]."""
    from geode.inference.svf.serve_sim import main as serve_sim_main

    code = serve_sim_main(list(ctx.args))
    if code:
        raise typer.Exit(code)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        console.print(__version__)
        raise typer.Exit()


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``geode`` script."""
    try:
        rv = app(args=argv, standalone_mode=False)
        # with standalone_mode=False click returns the code of a typer.Exit instead of raising it
        if isinstance(rv, int) and rv:
            sys.exit(rv)
    except UsageFailure as exc:
        err_console.print(f"geode: error: {exc}", highlight=False, markup=False, soft_wrap=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(130)
    except OSError as exc:  # the environment (a folder, a disk), not a bug: one line
        where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        err_console.print(f"geode: error:{where} {exc.strerror or exc}", highlight=False, markup=False, soft_wrap=True)
        sys.exit(2)
    except Exception as exc:  # click usage errors (typer may vendor click): one line, exit 2
        if callable(getattr(exc, "format_message", None)) and hasattr(exc, "exit_code"):
            err_console.print(f"geode: error: {exc.format_message()}", highlight=False, markup=False, soft_wrap=True)
            sys.exit(2)
        raise


if __name__ == "__main__":  # pragma: no cover
    main()
