"""Shared by the benchmarks: print the result and, with --out, write it as JSON."""

from __future__ import annotations

import json
from pathlib import Path


def emit(result: dict, out: Path | None) -> None:
    print(json.dumps(result, indent=1))
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1))
