"""`ragclinic check`: what to run after set-up, or when something seems off."""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from ragclinic.cli.base import app, err, handle_errors, out, print_json
from ragclinic.cli.options import JsonOption


@app.command("check")
@handle_errors
def check_cmd(json_out: bool = JsonOption) -> None:
    """Check the install: Python and package versions; the CPU's features and the llama.cpp CPU variant in
    use (never one with AMX kernels); each model's files and sha256; that each model loads and gives one
    token / one embedding (timed); and that a tiny knowledge base in a temporary folder ingests and answers
    offline. Exit code 0 when every check passes, 1 otherwise; each failed check names the fix.

    `--json` prints {"ok": bool, "checks": [{"name", "ok", "detail", "seconds"}]}.
    """
    from ragclinic.config import Settings  # on use: pydantic settings
    from ragclinic.clinic.health import run_checks  # on use: when the command runs (fast --help)

    settings = Settings.load(None)
    results = []
    if json_out:
        results = list(run_checks(settings))
        print_json({"ok": all(r.ok for r in results), "checks": [r.to_json() for r in results]})
    else:
        with err.status("checking…") as status:
            for r in run_checks(settings, lambda name: status.update(f"checking {name}… ({len(results)} done)")):
                results.append(r)
        t = Table("check", "", "detail", "seconds", box=None, padding=(0, 1))
        for r in results:
            t.add_row(r.name, "[green]ok[/]" if r.ok else "[bold red]FAIL[/]", escape(r.detail), f"{r.seconds:.1f}")
        out.print(t)
        bad = [r for r in results if not r.ok]
        out.print("[green]all checks passed[/]" if not bad else
                  f"[bold red]{len(bad)} check(s) failed:[/] {', '.join(r.name for r in bad)}")
    if not all(r.ok for r in results):
        raise typer.Exit(1)
