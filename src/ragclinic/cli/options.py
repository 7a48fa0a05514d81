"""Options shared by several commands (their defaults live in Settings; None here means "not given")."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

KbOption = typer.Option(None, "--kb", help="Knowledge-base folder \\[default: ./.ragclinic, or $RAGCLINIC_KB].",
                        show_default=False)
JsonOption = typer.Option(False, "--json", help="Print one JSON object on stdout.")

OptPath = Optional[Path]
