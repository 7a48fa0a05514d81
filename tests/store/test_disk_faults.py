"""A full disk and a read-only knowledge base (issue 19, part 3): a clear error naming the path and what to do,
nothing committed lost, and the knowledge base opens and completes once the disk is writable again. Runs on a
small tmpfs mounted for the test (it needs the right to mount; without it the test says so and skips)."""

from __future__ import annotations

import subprocess

import pytest
from typer.testing import CliRunner

from ragclinic.cli.main import app
from ragclinic.config import Settings
from ragclinic.store.kb import KnowledgeBase

runner = CliRunner()


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()}): the full-disk test needs it")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _remount(mnt, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(mnt)], check=True, capture_output=True)


def _corpus(root):
    root.mkdir()
    for i in range(60):
        (root / f"d{i}.md").write_text(f"# Doc {i}\n\n" + "\n\n".join(
            f"Paragraph {j} of doc {i} is about harbour {j}, its cranes and ships. " * 3 for j in range(60)))


def _open(kb_dir, cache):
    return KnowledgeBase.open(Settings.load(kb_dir, cache_dir=cache, embedder="fake"))


def test_full_disk_then_read_only(small_disk, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path / "cache"))
    _corpus(tmp_path / "docs")
    kb_dir = small_disk / "kb"
    full = runner.invoke(app, ["ingest", str(tmp_path / "docs"), "--kb", str(kb_dir), "--embedder", "fake"])
    assert full.exit_code != 0
    flat = " ".join(full.output.split())
    assert "no space left on the disk that holds the knowledge base at" in flat and "free some space" in flat

    _remount(small_disk, "size=30m")
    kb = _open(kb_dir, tmp_path / "cache")  # opens; derived indexes are rebuilt from what SQLite committed
    try:
        assert kb.db.integrity_ok()
        committed = kb.stats()["documents"]
    finally:
        kb.close()
    done = runner.invoke(app, ["ingest", str(tmp_path / "docs"), "--kb", str(kb_dir), "--embedder", "fake", "--json"])
    assert done.exit_code == 0, done.output
    kb = _open(kb_dir, tmp_path / "cache")
    try:
        assert kb.stats()["documents"] == 60 >= committed
        chunks = kb.stats()["chunks"]
    finally:
        kb.close()

    _remount(small_disk, "ro")
    for args in (["ask", "Which harbour has cranes?", "--llm", "none"], ["ingest", str(tmp_path / "docs")]):
        r = runner.invoke(app, [*args, "--kb", str(kb_dir)])
        assert r.exit_code != 0
        flat = " ".join(r.output.split())
        assert "read-only file system" in flat and str(kb_dir) in flat, flat
    _remount(small_disk, "rw")
    kb = _open(kb_dir, tmp_path / "cache")
    try:
        assert kb.db.integrity_ok() and kb.stats()["documents"] == 60 and kb.stats()["chunks"] == chunks
    finally:
        kb.close()
