"""The parse worker's scratch folder for OCR: pytesseract writes each page it hands tesseract, and tesseract its
output, as temporary files, and removes them when the call returns; a worker killed in the middle (kill -9, a
parse time-out) leaves them. Each worker's go in a folder of its own, ``$TMPDIR/ragclinic-ocr-<pid>``, removed by
its parent when it ends (``drop_scratch``) or, when the parent was killed too, by the next worker
(``own_scratch``)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

SCRATCH_PREFIX = "ragclinic-ocr-"  # + the pid: a parse worker's folder for pytesseract's temporary files


def own_scratch(root: str | None = None) -> str:
    """Temporary files of this process (pytesseract's page images and tesseract's output) in a folder of its own,
    ``<tmp>/ragclinic-ocr-<pid>``, and the folders of processes that are gone removed: a parse worker killed while
    reading a page leaves its files behind; its parent removes them (``drop_scratch``), or, when the parent was
    killed too, the next worker. For the parse worker, a process of its own: it sets ``tempfile.tempdir``. Returns
    the folder."""
    root = root or tempfile.gettempdir()
    for entry in os.scandir(root):  # a parent killed with its worker leaves the worker's folder: cleared here
        pid = entry.name[len(SCRATCH_PREFIX):]
        if entry.name.startswith(SCRATCH_PREFIX) and pid.isdigit() and entry.is_dir() and not _alive(int(pid)):
            shutil.rmtree(entry.path, ignore_errors=True)
    mine = os.path.join(root, f"{SCRATCH_PREFIX}{os.getpid()}")
    os.makedirs(mine, exist_ok=True)
    tempfile.tempdir = mine
    atexit.register(shutil.rmtree, mine, True)
    return mine


def drop_scratch(pid: int) -> None:
    """The folder of a parse worker that has ended (its parent killed it: a time-out, the end of an ingest)."""
    shutil.rmtree(os.path.join(tempfile.gettempdir(), f"{SCRATCH_PREFIX}{pid}"), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
