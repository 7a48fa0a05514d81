"""A copy of a knowledge base to change without touching the original (the debugger's ``diagnose --apply``): the
database through SQLite's online backup (consistent while readers use the original), the settings file, the
search indexes and the forecast; not the answer cache (its answers would be the original's), the lock or uploads
(the copy's documents point at the same source files)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from ragclinic.errors import StoreError

KEPT = ("settings.toml", "forecast.json")
INDEXES = ("lexical", "dense")


def snapshot(folder: Path, dest: Path) -> Path:
    """Copy the knowledge base at ``folder`` to ``dest`` (which must not exist); returns ``dest``."""
    src_db = folder / "kb.sqlite3"
    if not src_db.is_file():
        raise StoreError(f"no knowledge base at {folder} to copy")
    if dest.exists():
        raise StoreError(f"{dest} exists: a snapshot needs a new folder")
    dest.mkdir(parents=True)
    try:
        src = sqlite3.connect(f"file:{src_db}?mode=ro", uri=True)
        try:
            out = sqlite3.connect(dest / "kb.sqlite3")
            try:
                src.backup(out)
            finally:
                out.close()
        finally:
            src.close()
        for name in KEPT:
            if (folder / name).is_file():
                shutil.copy2(folder / name, dest / name)
        for name in INDEXES:
            if (folder / name).is_dir():
                shutil.copytree(folder / name, dest / name)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return dest
