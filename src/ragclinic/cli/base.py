"""What every command module shares: the typer app, the consoles, exit codes and the edge where ragclinic's errors
become a one-line message and an exit code. Imports only typer, rich and errors: `ragclinic --help` stays fast."""

from __future__ import annotations

import functools
import json
import sys
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from ragclinic.errors import RagclinicError, disk_problem
from ragclinic.ingest.result import IngestAborted

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
