"""`ragclinic ingest PATH...`"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ragclinic.cli.base import EXIT_FAILED, app, err, handle_errors, out, print_json
from ragclinic.cli.options import JsonOption, KbOption
from ragclinic.ingest.result import IngestAborted, IngestResult

if TYPE_CHECKING:  # imported where used: `ragclinic --help` imports this module (issue 33)
    from ragclinic.clinic import Clinic

# Settings.max_file_size's default, for the help text without importing pydantic at --help (issue 33);
# tests/cli/test_cold_start.py checks that the two agree
MAX_FILE_SIZE_DEFAULT = 100 * 1024 * 1024


@app.command("ingest")
@handle_errors
def ingest_cmd(
    paths: List[Path] = typer.Argument(..., help="Files and folders (searched recursively) to ingest.",
                                       show_default=False),
    kb: Optional[Path] = KbOption,
    json_out: bool = JsonOption,
    sync: bool = typer.Option(False, "--sync", help="Remove documents whose source files are gone."),
    reparse: bool = typer.Option(False, "--reparse", help="Parse unchanged files again (after changing a parse "
                                                          "setting such as keep_hyphens)."),
    strict: bool = typer.Option(False, "--strict", help="Stop at the first failure and keep nothing from this run."),
    max_file_size: Optional[int] = typer.Option(
        None, "--max-file-size", show_default=False,
        help=f"Refuse files larger than N bytes \\[default: {MAX_FILE_SIZE_DEFAULT}]."),
    tag: List[str] = typer.Option([], "--tag", metavar="KEY=VALUE", show_default=False,
                                  help="Tag every document of this run (repeatable): tenant, version, date, "
                                       "authority or any key; FILE.meta.json sidecars override per file."),
    causal: bool = typer.Option(False, "--causal", help="Also extract the cause → effect links documents state (for "
                                "\"why\" questions); the KB keeps doing so. Add --reparse for documents already in."),
    graph: Optional[str] = typer.Option(
        None, "--graph", metavar="[fast|model]", show_default=False,
        help="Also build the knowledge graph (entities, relations, communities) for questions about the whole "
             "collection; the KB keeps it current. fast (the default when no mode is given): rules, about a "
             "millisecond a chunk; model: the language model extracts (tens of seconds a chunk here; docs/graph.md)."),
    embedder: Optional[str] = typer.Option(None, "--embedder",
                                           help="e5 | wordllama (fast) | none (lexical only); fixed when the KB is created.",
                                           show_default=False),
    ray: Optional[str] = typer.Option(None, "--ray", metavar="ADDRESS|auto", show_default=False,
                                      help="Parse, chunk and embed on a Ray cluster (auto: a local runtime started for "
                                           "this run); the commit stays here. Needs the ray extra: "
                                           "pip install -e '.[ray]'. Worth it only for large corpora (docs/scale.md)."),
    ray_workers: int = typer.Option(0, "--ray-workers", min=0, help="Ray workers (0: one per CPU of the cluster)."),
) -> None:
    """Parse, chunk, embed and index documents (PDF, DOCX, HTML, Markdown, text, JSONL, CSV/TSV, XLSX).

    Unchanged files are skipped; changed files replace their old chunks.

    Exit code 0 when every file was ingested or unchanged, 1 when some failed (each is listed with its reason).
    """
    from ragclinic.clinic import Clinic  # on use: when the command runs (fast --help)

    tags = parse_pairs(tag, "--tag")
    extra: dict = {"causal_links": True} if causal else {}
    if graph is not None:
        from ragclinic.graph.sync import check_mode  # on use: when the command runs (fast --help)

        extra["graph"] = check_mode(graph)
    clinic = Clinic.open(kb, max_file_size=max_file_size, embedder=embedder, sync_indexes=False, **extra)
    try:
        if json_out:
            result = clinic.ingest(paths, tags, sync, strict=strict, reparse=reparse, ray=ray, ray_workers=ray_workers)
        else:
            result = ingest_with_progress(clinic, paths, sync, strict, tags, reparse, ray=ray, ray_workers=ray_workers)
    except IngestAborted as e:  # --strict keeps nothing (Clinic.ingest removed a knowledge base it created)
        if json_out:
            print_json({**IngestResult().to_json(), "failed": [{"path": e.path, "reason": e.reason}]})
        raise
    finally:
        clinic.close()
    learning = _learn_in_background(clinic.settings) if result.added or result.updated else None
    if json_out:
        print_json({**result.to_json(), **({"learning": learning} if learning else {})})
    else:
        print_summary(result)
        if learning:
            out.print(f"learning the new chunks in the background (pid {learning['pid']}, log {learning['log']}); "
                      f"`ragclinic kb learn --stats` says how far it has got", highlight=False)
    if result.failed or (result.files == 0 and result.removed == 0):
        if not result.failed:
            hidden = f" ({len(result.skipped)} hidden entr{'y was' if len(result.skipped) == 1 else 'ies were'} " \
                     "skipped: name a hidden file on its own to ingest it)" if result.skipped else ""
            err.print(f"nothing was ingested: no supported files found under the given paths{hidden}")
        raise typer.Exit(EXIT_FAILED)


def _learn_in_background(settings) -> dict | None:
    """With ``learn_after_ingest``: `kb learn` started as a process of its own that outlives this command (the
    knowledge base answers meanwhile; a second one started while it runs stops at once: one run at a time)."""
    if not settings.learn_after_ingest or settings.llm == "none":
        return None
    import subprocess  # on use: only with learn_after_ingest
    import sys  # on use: only with learn_after_ingest

    log = settings.kb / "learn.log"
    with log.open("ab") as f:
        p = subprocess.Popen([sys.executable, "-c", "from ragclinic.cli.entry import main; main()", "kb", "learn",
                              "--kb", str(settings.kb), "--json"],
                             stdout=f, stderr=f, stdin=subprocess.DEVNULL, start_new_session=True)
    return {"pid": p.pid, "log": str(log)}


def parse_pairs(values: list[str], flag: str) -> dict[str, str]:
    """``["k=v", ...]`` → dict; a value without "=" is a usage error naming it."""
    out: dict[str, str] = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"{v!r} is not KEY=VALUE (e.g. {flag} tenant=acme)", param_hint=flag)
        out[key.strip()] = value.strip()
    return out


def ingest_with_progress(clinic: Clinic, paths: list[Path], sync: bool, strict: bool,
                         tags: dict[str, str] | None = None, reparse: bool = False, **ray) -> IngestResult:
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,  # on use: rich's progress bars
                               TimeElapsedColumn, TimeRemainingColumn)  # on use: rich, needed only for this output

    columns = [TextColumn("[bold]ingest"), BarColumn(bar_width=16), MofNCompleteColumn(), TextColumn("docs"),
               TextColumn("{task.fields[rates]}"), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn()]
    with Progress(*columns, console=err, transient=False) as bar:
        task = bar.add_task("ingest", total=None, rates="")

        def update(p) -> None:
            elapsed = max(bar.tasks[0].elapsed or 1e-9, 1e-9)
            bar.update(task, total=p.total, completed=p.done,
                       rates=f"{p.files_done}/{p.files_total} files {p.files_done / elapsed:.1f}/s "
                             f"{p.chunks / elapsed:.1f} chunks/s")

        graph_task = None

        def graph_update(done: int, total: int) -> None:
            nonlocal graph_task
            if graph_task is None:
                graph_task = bar.add_task("graph", total=total, rates="graph: entities and relations")
            bar.update(graph_task, total=total, completed=done)

        return clinic.ingest(paths, tags, sync, strict=strict, reparse=reparse, on_progress=update,
                             on_graph_progress=graph_update, **ray)


def print_summary(r: IngestResult) -> None:
    t = Table(title="ingest", show_header=True)
    for col in ("added", "updated", "unchanged", "removed", "failed", "chunks", "seconds"):
        t.add_column(col, justify="right")
    t.add_row(str(r.added), str(r.updated), str(r.unchanged), str(r.removed), str(len(r.failed)),
              str(r.chunks), f"{r.seconds:.1f}")
    out.print(t)
    if r.graph:
        c = r.graph["communities"]
        out.print(f"graph ({r.graph['mode']}): {r.graph['extracted']} chunk(s) extracted, {r.graph['dropped']} dropped; "
                  f"{c.get('communities', 0)} communities ({c.get('recomputed', 0)} recomputed, {c.get('kept', 0)} "
                  f"kept), {r.graph['seconds_extract'] + r.graph['seconds_communities']:.1f} s", highlight=False)
    for f in r.failed:
        out.print(f"[red]failed[/] {escape(f['path'])}: {escape(f['reason'])}", highlight=False)
    for f in r.skipped:
        out.print(f"[yellow]skipped[/] {escape(f['path'])}: {escape(f['reason'])}", highlight=False)
