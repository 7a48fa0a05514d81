"""The `ragclinic` command: one module per command group; domain errors become exit codes here."""

from __future__ import annotations

import functools
import json
import sys
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from ragclinic.errors import RagclinicError, disk_problem

app = typer.Typer(help="ragclinic: retrieval-augmented generation that diagnoses and repairs itself.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
out = Console()
err = Console(stderr=True)

EXIT_FAILED = 1  # some input failed (ingest), or --strict stopped
EXIT_ERROR = 2  # bad usage, bad settings, unusable knowledge base


def fail(message: str, code: int = EXIT_ERROR) -> typer.Exit:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)  # "[ray]" in a message is text
    return typer.Exit(code)


def handle_errors(fn):
    """Turn ragclinic's errors into a one-line message and an exit code at the edge."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from ragclinic.ingest.result import IngestAborted

        try:
            return fn(*args, **kwargs)
        except IngestAborted as e:
            raise fail(str(e), EXIT_FAILED) from None
        except RagclinicError as e:
            raise fail(str(e)) from None
        except Exception as e:  # a full or read-only disk surfaces as OSError, sqlite3 or tantivy errors
            if message := disk_problem(e, kwargs.get("kb")):
                raise fail(message) from None
            raise

    return wrapper


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _register() -> None:
    # each command module imports only typer, rich and these CLI helpers at the top; what a command needs (the
    # pipeline, numpy, the store, pydantic settings) it imports when it runs: --help stays fast (issue 33), and
    # tests/cli/test_cold_start.py fails when a heavy module is imported here again
    from ragclinic.cli import ask, check, demo, diagnose, eval, ingest, kb, serve, trace  # noqa: F401  (each module adds its commands)


# Options whose value may be left out ("ingest --graph" means "--graph fast"): click can do this, typer cannot.
OPTIONAL_VALUES = {"--graph": ("fast", ("fast", "model"))}


def with_optional_values(args: list[str]) -> list[str]:
    """``args`` with the default value inserted after an option of OPTIONAL_VALUES given without one: when it is
    last, or followed by another option or an existing path (a word that is neither stays its value, so a typo
    gets the option's own error)."""
    from pathlib import Path

    out: list[str] = []
    for i, a in enumerate(args):
        out.append(a)
        if a in OPTIONAL_VALUES:
            default, values = OPTIONAL_VALUES[a]
            nxt = args[i + 1] if i + 1 < len(args) else None
            if nxt is None or (nxt not in values and (nxt.startswith("-") or Path(nxt).exists())):
                out.append(default)
    return out


def main() -> None:
    _register()
    app(args=with_optional_values(sys.argv[1:]))


_register()
