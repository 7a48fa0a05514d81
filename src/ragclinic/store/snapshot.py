"""A copy of a knowledge base to change without touching the original (the debugger's ``diagnose --apply``), and
putting a changed copy in the original's place (``--keep``).

The copy: the search indexes first, then the database through SQLite's online backup (consistent while readers use
the original; the indexes are then no newer than it, and catch up on open), the settings file, the forecast and the
uploaded files; not the answer cache (its answers would be the original's) or the lock."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from ragclinic.errors import StoreError

KEPT = ("settings.toml", "forecast.json")
FOLDERS = ("lexical", "dense", "uploads")


def snapshot(folder: Path, dest: Path) -> Path:
    """Copy the knowledge base at ``folder`` to ``dest`` (which must not exist); returns ``dest``."""
    src_db = folder / "kb.sqlite3"
    if not src_db.is_file():
        raise StoreError(f"no knowledge base at {folder} to copy")
    if dest.exists():
        raise StoreError(f"{dest} exists: a snapshot needs a new folder")
    dest.mkdir(parents=True)
    try:
        for name in FOLDERS:
            if (folder / name).is_dir():
                shutil.copytree(folder / name, dest / name)
        src = sqlite3.connect(src_db.resolve().as_uri() + "?mode=ro", uri=True)
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
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return dest


def carry(original: Path, copy: Path) -> None:
    """What the original holds that a rebuilt copy lacks: every trace with its ratings, the forecast, uploads."""
    for name in ("forecast.json",):
        if (original / name).is_file() and not (copy / name).exists():
            shutil.copy2(original / name, copy / name)
    if (original / "uploads").is_dir() and not (copy / "uploads").exists():
        shutil.copytree(original / "uploads", copy / "uploads")
    _traces(original, copy)


def _traces(original: Path, copy: Path) -> None:
    """Every trace of the original into the copy (the original's rows win: ratings given since the copy was made)."""
    conn = sqlite3.connect((copy / "kb.sqlite3").resolve().as_uri(), uri=True)  # so ATTACH reads a URI too
    try:
        conn.execute("ATTACH DATABASE ? AS o", [(original / "kb.sqlite3").resolve().as_uri() + "?mode=ro"])
        with conn:
            conn.execute("INSERT OR REPLACE INTO traces SELECT * FROM o.traces")
        conn.execute("DETACH DATABASE o")
    finally:
        conn.close()


def swap(original: Path, copy: Path, aside: Path) -> None:
    """``copy`` in ``original``'s place, the original moved to ``aside`` (kept); the original put back when the
    second rename fails. The caller holds the original's write lock and has checked nothing changed meanwhile."""
    if aside.exists():
        raise StoreError(f"{aside} exists: nothing was swapped")
    original.rename(aside)
    try:
        copy.rename(original)
    except BaseException:
        aside.rename(original)
        raise
