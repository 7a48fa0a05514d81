"""`ragclinic kb learn`: the knowledge base learns its own documents (issue 53, docs/learn.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ragclinic.cli.base import err, handle_errors, out, print_json
from ragclinic.cli.kb import kb_app
from ragclinic.cli.options import JsonOption, KbOption


@kb_app.command("learn")
@handle_errors
def learn(kb: Optional[Path] = KbOption,
          llm: Optional[str] = typer.Option(None, "--llm", show_default=False,
                                            help="The model that writes the questions: local (default, 1.5B) | "
                                                 "local-small (0.5B, faster) | openai (a bigger model on a server, "
                                                 "RAGCLINIC_OPENAI_*)."),
          budget_s: Optional[float] = typer.Option(None, "--budget-s", min=1, show_default=False,
                                                   help="Stop after this many seconds; the next run goes on from there."),
          max_chunks: Optional[int] = typer.Option(None, "--max-chunks", min=1, show_default=False,
                                                   help="Learn at most this many chunks this run."),
          stats_only: bool = typer.Option(False, "--stats", help="Only say how far learning has got; learn nothing."),
          ray: Optional[str] = typer.Option(None, "--ray", metavar="ADDRESS|auto", show_default=False,
                                            help="Write the questions with the model on each worker of a Ray cluster "
                                                 "(auto: a local runtime for this run); ranking and storing stay "
                                                 "here. Needs the ray extra: pip install -e '.[ray]' (docs/scale.md)."),
          ray_workers: int = typer.Option(0, "--ray-workers", min=0, help="Ray workers (0: one per CPU of the cluster)."),
          json_out: bool = JsonOption) -> None:
    """For each chunk not learned yet, the model writes the questions a user would ask that the chunk answers, and
    keywords; a question is kept when its chunk ranks high for it. They fit the gate's threshold and the query
    adapter, and retrieval ranks by them with learned_retrieval on (off by default). Safe to stop (kill
    it): a re-run goes on with the chunks not done, nothing is written twice. With --json, progress goes to stderr
    as JSON lines ({"done": N, "total": M}) and the result to stdout."""
    from ragclinic.clinic import Clinic  # on use: when the command runs (fast --help)
    from ragclinic.store import learned as store  # on use: the store (fast --help)

    settings = {"llm": llm} if llm else {}
    with Clinic.open(kb, **({"model": None} if stats_only or ray else {}), **settings) as c:
        if stats_only:
            s = store.stats(c.kb.db.conn)
            print_json(s) if json_out else _print_stats(s)
            return
        with _progress(json_out) as tick:
            res = c.learn(on_progress=tick, budget_s=budget_s, max_chunks=max_chunks, ray=ray, ray_workers=ray_workers)
        s = store.stats(c.kb.db.conn)
    if json_out:
        print_json({**res.to_json(), "kb": s})
        return
    out.print(f"learned {res.learned} chunk(s) in {res.seconds:.1f} s with {res.model}: {res.questions} questions "
              f"written, {res.kept} kept (their chunk ranks high for them), {res.keywords} keywords; "
              f"{res.dropped} chunk(s) gone dropped; {res.remaining} still to learn"
              + (f" (stopped: {res.stopped}; run it again to go on)" if res.remaining else ""), highlight=False)
    _print_stats(s)


def _print_stats(s: dict) -> None:
    t = Table(show_header=False, title="what the knowledge base has learned", box=None)
    for k, v in s.items():
        t.add_row(k.replace("_", " "), "—" if v is None else str(v))
    out.print(t)


class _progress:  # noqa: N801 - a context manager, like open()
    """A bar on stderr; with --json, one JSON line per chunk on stderr."""

    def __init__(self, json_out: bool) -> None:
        self.json_out = json_out

    def __enter__(self):
        if self.json_out:
            return lambda done, total: print(json.dumps({"done": done, "total": total}), file=sys.stderr, flush=True)
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn  # on use: rich's progress bars

        self.bar = Progress(TextColumn("learning"), BarColumn(), TextColumn("{task.completed}/{task.total} chunks"),
                            TimeRemainingColumn(), console=err, transient=True)
        self.bar.__enter__()
        self.task = self.bar.add_task("learn", total=None)
        return lambda done, total: self.bar.update(self.task, completed=done, total=total)

    def __exit__(self, *exc):
        if not self.json_out:
            self.bar.__exit__(*exc)
        return False
