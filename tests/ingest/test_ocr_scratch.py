"""The parse worker's OCR scratch folder (pytesseract's temporary files): a folder of each worker's own, those of
workers that are gone removed when the next starts, a running process's folder left alone."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from ragclinic.ingest.parse.ocr_scratch import SCRATCH_PREFIX, drop_scratch, own_scratch


def test_a_dead_workers_files_are_cleared_and_a_live_ones_kept(tmp_path, monkeypatch):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = tmp_path / f"{SCRATCH_PREFIX}{gone.pid}"
    dead.mkdir()
    (dead / "tess_abc.PNG").write_bytes(b"x" * 100)
    live = tmp_path / f"{SCRATCH_PREFIX}{os.getppid()}"  # this test's parent: alive
    live.mkdir()
    other = tmp_path / "ragclinic-ocr-notes"  # not a pid: not ours to remove
    other.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", None)
    mine = own_scratch(str(tmp_path))
    assert mine == str(tmp_path / f"{SCRATCH_PREFIX}{os.getpid()}") and tempfile.gettempdir() == mine
    assert not dead.exists() and live.is_dir() and other.is_dir()
    with tempfile.NamedTemporaryFile(prefix="tess_") as f:
        assert os.path.dirname(f.name) == mine


def test_the_parent_drops_an_ended_workers_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = tmp_path / f"{SCRATCH_PREFIX}4242"
    folder.mkdir()
    (folder / "tess_x.txt").write_text("page")
    drop_scratch(4242)
    assert not folder.exists()
    drop_scratch(4242)  # already gone: nothing to do, no error
