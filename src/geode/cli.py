"""The ``geode`` command line: list | show | reproduce | report | assets | serve-sim.

Usage errors (an unknown slug, a bad mode, an unreadable result file) print one line to stderr and
exit with code 2, never a traceback. ``geode reproduce`` exits with 1 when a claim ended in an error
or a timeout, 0 otherwise (whatever the verdicts).
"""

from __future__ import annotations

import json
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
_DEFAULT_TIMEOUT = {"smoke": 300.0, "quick": 1200.0, "full": None}
_VERDICT_STYLE = {
    "reproduced": "bold green",
    "partial": "bold yellow",
    "not reproduced": "bold red",
    "error": "bold magenta",
    "timeout": "bold magenta",
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
) -> None:
    """List the papers: slug, field, status and title."""
    chosen = _select(pattern or [], field)
    if as_json:
        sys.stdout.write(json.dumps([p.to_dict() for p in chosen], indent=2) + "\n")
        return
    table = Table(title=f"geode {__version__}: {len(chosen)} papers", title_justify="left")
    for col in ("slug", "field", "status", "title"):
        table.add_column(col, no_wrap=col != "title")
    for p in chosen:
        table.add_row(p.slug, p.field, "[green]implemented[/]" if p.status == "implemented" else "planned", p.title)
    console.print(table)


@app.command()
def show(
    slug: Annotated[str, typer.Argument(help="The paper's slug.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Results folder.")] = Path("geode-results"),
) -> None:
    """Show one paper: its claim, baselines, thresholds and stored results."""
    try:
        paper = catalog.get(slug)
    except KeyError as exc:
        raise UsageFailure(exc.args[0]) from None
    console.print(f"[bold]{paper.title}[/]  ({paper.slug}, field {paper.field}, {paper.status})")
    if paper.status == "planned":
        console.print("No claim check yet: this paper is planned.")
        return
    from geode.claims import load_claim

    c = load_claim(slug)
    console.print(f"[bold]Claim.[/] {c.claim}")
    console.print(f"[bold]Paper's figure.[/] {c.paper_figure}")
    console.print(f"[bold]Baselines.[/] {', '.join(c.baselines)}")
    t = Table("threshold", "rule", "meaning", title="Thresholds (fixed before running)", title_justify="left")
    for th in c.thresholds:
        t.add_row(th.name, f"{th.metric} {th.op} {th.value:g}", th.description)
    console.print(t)
    console.print(f"reproduced when: {c.reproduced or 'all thresholds hold'}; partial when: {c.partial or 'never'}")
    from geode.claims.store import ResultFileError, ResultStore

    store = ResultStore(out)
    folder = store.results_dir / slug
    if folder.is_dir():
        for p in sorted(folder.glob("*.json")):
            try:
                rec = store.read(p)
            except ResultFileError as exc:
                raise UsageFailure(str(exc)) from None
            state = rec["verdict"] if rec["status"] == "ok" else rec["status"]
            console.print(f"  {p.name}: [{_VERDICT_STYLE.get(state, '')}]{state}[/]  {escape(rec.get('summary', ''))}")


@app.command()
def reproduce(
    slugs: Annotated[list[str] | None, typer.Argument(help="Slugs or wildcards of implemented papers.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every implemented paper.")] = False,
    mode: Annotated[str, typer.Option("--mode", "-m", help="smoke, quick or full.")] = "quick",
    seeds: Annotated[int, typer.Option("--seeds", "-s", help="Run seeds 0..K-1.")] = 1,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Worker processes, one thread each.")] = 1,
    ray: Annotated[str | None, typer.Option("--ray", help="Run on Ray: 'local', 'auto' or an address.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Results folder.")] = Path("geode-results"),
    force: Annotated[bool, typer.Option("--force", help="Re-run what is already stored.")] = False,
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Seconds per run (default: smoke 300, quick 1200, full none).")
    ] = None,
) -> None:
    """Run the claim checks of implemented papers and store their results."""
    if mode not in _MODES:
        raise UsageFailure(f"unknown mode {mode!r}; modes: {', '.join(_MODES)}")
    if seeds < 1:
        raise UsageFailure(f"--seeds must be >= 1; got {seeds}")
    if jobs < 1:
        raise UsageFailure(f"--jobs must be >= 1; got {jobs}")
    if timeout is not None and timeout <= 0:
        raise UsageFailure(f"--timeout must be > 0; got {timeout}")
    if not slugs and not all_:
        raise UsageFailure("name papers to reproduce (slugs or wildcards), or pass --all")
    chosen = catalog.papers() if all_ else _select(slugs or [], None)
    implemented = [p for p in chosen if p.status == "implemented"]
    planned = [p.slug for p in chosen if p.status == "planned"]
    if not all_ and planned and len(planned) == len(chosen):
        raise UsageFailure(f"no claim check yet (planned): {', '.join(planned)}")
    if planned:
        err_console.print(f"[dim]skipping {len(planned)} planned paper(s) without a claim check[/]")
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from geode.claims.runner import Task, run_tasks
    from geode.claims.store import ResultFileError, ResultStore

    tasks = [Task(p.slug, mode, s) for p in implemented for s in range(seeds)]
    store = ResultStore(out)
    records: list[dict[str, Any]] = []
    with Progress(
        TextColumn("[bold]reproduce[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err_console
    ) as progress:
        bar = progress.add_task("claims", total=len(tasks))

        def on_start(n_run: int, n_skip: int) -> None:
            progress.update(bar, total=n_run)
            if n_skip:
                progress.console.print(f"[dim]{n_skip} run(s) already stored in {out} (use --force to redo)[/]")

        def on_result(rec: dict[str, Any]) -> None:
            records.append(rec)
            state = rec["verdict"] if rec["status"] == "ok" else rec["status"]
            progress.console.print(
                f"{rec['slug']:<22} {rec['mode']:<6} seed {rec['seed']}  "
                f"[{_VERDICT_STYLE.get(state, '')}]{state}[/]  ({rec['wall_s']:.1f} s)  "
                f"{escape(rec.get('summary', ''))}"
            )
            progress.advance(bar)

        try:
            run_tasks(
                tasks,
                store,
                jobs=jobs,
                timeout=timeout if timeout is not None else _DEFAULT_TIMEOUT[mode],
                force=force,
                ray_address=ray,
                on_start=on_start,
                on_result=on_result,
            )
        except ResultFileError as exc:
            raise UsageFailure(str(exc)) from None
        except KeyboardInterrupt:
            progress.stop()
            err_console.print(f"interrupted: {len(records)} finished result(s) are stored in {out}")
            raise typer.Exit(130) from None
    failed = sum(r["status"] != "ok" for r in records)
    console.print(
        f"{len(records)} run(s) stored in {out}; {failed} error(s)/timeout(s). Next: geode report --out {out}"
    )
    if failed:
        raise typer.Exit(1)


@app.command()
def report(out: Annotated[Path, typer.Option("--out", "-o", help="Results folder.")] = Path("geode-results")) -> None:
    """Write REPORT.md and index.html for the stored results."""
    from geode.claims.report import write_report
    from geode.claims.store import ResultFileError, ResultStore

    try:
        md, page = write_report(ResultStore(out))
    except ResultFileError as exc:
        raise UsageFailure(str(exc)) from None
    console.print(f"wrote {md} and {page}")


@app.command()
def assets(
    check: Annotated[bool, typer.Option("--check", help="Only report; exit 1 if an asset is missing.")] = False,
) -> None:
    """Which offline assets are installed; prepares the SmolLM2 safetensors cache when its GGUF is present."""
    from geode.data.assets import asset_status
    from geode.models.pretrained import smollm2_cache_dir

    table = Table(
        "asset", "installed", "holds", "where / how to install", title="Offline assets", title_justify="left"
    )
    missing = 0
    for a, path in asset_status():
        missing += path is None
        table.add_row(a.name, "[green]yes[/]" if path else "[red]no[/]", a.holds, str(path) if path else a.install)
    console.print(table)
    cache = smollm2_cache_dir()
    have_cache = (cache / "config.json").is_file()
    console.print(f"SmolLM2 safetensors cache: {cache} ({'ready' if have_cache else 'not prepared'})")
    if check:
        if missing:
            raise typer.Exit(1)
        return
    from geode.models.pretrained import prepare_smollm2_cache, smollm2_gguf_path

    if not have_cache and smollm2_gguf_path() is not None:
        console.print("preparing the SmolLM2 cache (dequantising the GGUF once, about a minute) ...")
        try:
            console.print(f"ready: {prepare_smollm2_cache()}")
        except ImportError as exc:
            raise UsageFailure(str(exc)) from None


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
    except Exception as exc:  # click usage errors (typer may vendor click): one line, exit 2
        if callable(getattr(exc, "format_message", None)) and hasattr(exc, "exit_code"):
            err_console.print(f"geode: error: {exc.format_message()}", highlight=False, markup=False, soft_wrap=True)
            sys.exit(2)
        raise


if __name__ == "__main__":  # pragma: no cover
    main()
