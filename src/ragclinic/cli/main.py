"""The `ragclinic` command: one module per command group (each adds its commands to the app in cli/base.py)."""

from __future__ import annotations

import sys
from pathlib import Path

# each command module imports only typer, rich and the CLI's helpers at the top; what a command needs (the pipeline,
# numpy, the store, pydantic settings) it imports when it runs: --help stays fast (issue 33), and
# tests/cli/test_cold_start.py fails when a heavy module is imported here again
from ragclinic.cli import (ask, cases, check, demo, diagnose, doctor, eval, experiment, ingest, kb, learn,  # noqa: F401
                           serve, trace)  # (each adds its commands)
from ragclinic.cli.base import app

__all__ = ["app", "main", "with_optional_values"]

# Options whose value may be left out ("ingest --graph" means "--graph fast"): click can do this, typer cannot.
OPTIONAL_VALUES = {"--graph": ("fast", ("fast", "model"))}


def with_optional_values(args: list[str]) -> list[str]:
    """``args`` with the default value inserted after an option of OPTIONAL_VALUES given without one: when it is
    last, or followed by another option or an existing path (a word that is neither stays its value, so a typo
    gets the option's own error)."""
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
    app(args=with_optional_values(sys.argv[1:]))
