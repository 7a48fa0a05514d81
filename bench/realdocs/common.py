"""What the real-document probes share: their command-line arguments and the answerable questions of a split."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def parser(doc: str) -> argparse.ArgumentParser:
    """--kb, --questions and --split (dev, heldout or all), described by the script's first docstring line."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--kb", type=Path, required=True)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--split", choices=("dev", "heldout", "all"), default="dev")
    return ap


def answerable(path: Path, split: str) -> list[dict]:
    """The question file's answerable questions of ``split`` ("all": both halves)."""
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return [r for r in rows if not r.get("expect_refusal") and (split == "all" or r.get("split") == split)]
