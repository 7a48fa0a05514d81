"""kill -9 while scans are being read by OCR (issue 39): the knowledge base opens whole, the tesseract processes
of the killed ingest end on their own within a page's time, and re-running completes it to what a clean run
gives and clears the temporary files the killed worker left."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import time

import psutil
import pytest
from PIL import Image, ImageDraw, ImageFont

from helpers import plugin_cli_script, register_slowfake
from ragclinic.config import Settings
from ragclinic.store.kb import KnowledgeBase

CHILD = plugin_cli_script("return super()._embed(texts)")


def _scan(i: int) -> bytes:
    img = Image.new("L", (1400, 900), 255)
    d, font = ImageDraw.Draw(img), ImageFont.load_default(size=34)
    for j in range(8):
        d.text((60, 60 + j * 95), f"Scan {i}, line {j}: valve {i * 10 + j} opens at {j + 1}.5 bar.", font=font, fill=0)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def _corpus(root):
    root.mkdir()
    for i in range(5):
        (root / f"scan{i}.png").write_bytes(_scan(i))
    for i in range(10):
        (root / f"note{i}.md").write_text(f"# Note {i}\n\nNote {i} says the pump {i} runs at {i * 100} rpm.\n")


def _cmd(script, kb, corpus):
    return [sys.executable, str(script), "ingest", str(corpus), "--kb", str(kb), "--embedder", "slowfake", "--json"]


def _tesseracts(pid: int) -> list[psutil.Process]:
    try:
        return [c for c in psutil.Process(pid).children(recursive=True) if "tesseract" in c.name()]
    except psutil.NoSuchProcess:
        return []


def _snapshot(kb_dir):
    kb = KnowledgeBase.open(Settings.load(kb_dir, embedder="slowfake"))
    try:
        assert kb.db.integrity_ok()
        docs = sorted(r[0] for r in kb.db.conn.execute("SELECT doc_id, text FROM documents"))
        chunks = sorted(r[0] for r in kb.db.conn.execute("SELECT chunk_id FROM chunks"))
        return {"docs": docs, "chunks": chunks, "lexical": len(kb.lexical())}
    finally:
        kb.close()


@pytest.mark.slow
def test_kill_minus_9_during_ocr_then_rerun_equals_a_clean_run(tmp_path):
    if not shutil.which("tesseract"):
        pytest.fail("needs Tesseract: make install")
    register_slowfake()
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    corpus = tmp_path / "corpus"
    _corpus(corpus)
    scratch = tmp_path / "tmp"  # the temporary folder of every process: pytesseract's files are found there
    scratch.mkdir()
    env = {**os.environ, "RAGCLINIC_CACHE_DIR": str(tmp_path / "cache"), "TMPDIR": str(scratch)}
    clean = tmp_path / "clean"
    subprocess.run(_cmd(script, clean, corpus), env=env, check=True, capture_output=True, timeout=600)
    want = _snapshot(clean)

    crashed = tmp_path / "crashed"
    p = subprocess.Popen(_cmd(script, crashed, corpus), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline, running = time.monotonic() + 120, []
    while p.poll() is None and time.monotonic() < deadline and not running:
        running = _tesseracts(p.pid)
        time.sleep(0.02)
    assert running, "the ingest ended before it ran tesseract"
    p.send_signal(signal.SIGKILL)
    p.wait()
    gone, alive = psutil.wait_procs(running, timeout=Settings().ocr_page_seconds)
    assert not alive, f"tesseract outlived the killed ingest past ocr_page_seconds: {alive}"

    left = [f.name for f in scratch.glob("ragclinic-ocr-*/tess_*")]
    assert left, "the killed ingest left no temporary files to clear: the test no longer tests that"

    partial = _snapshot(crashed)  # opens, passes the integrity check, its indexes caught up
    assert set(partial["docs"]) <= set(want["docs"]) and set(partial["chunks"]) <= set(want["chunks"])
    assert partial["lexical"] == len(partial["chunks"])
    subprocess.run(_cmd(script, crashed, corpus), env=env, check=True, capture_output=True, timeout=600)
    assert _snapshot(crashed) == want
    assert not list(scratch.glob("ragclinic-ocr-*")), "the killed worker's temporary files were not cleared"
