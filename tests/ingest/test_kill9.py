"""kill -9 at any point of an ingest leaves a KB that opens; re-running completes it exactly."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from helpers import plugin_cli_script, register_slowfake
from ragclinic.config import Settings
from ragclinic.store.kb import KnowledgeBase

# A child process that registers a slow fake embedder (the plugin path the built-ins use) and runs the CLI.
CHILD = plugin_cli_script("""
    time.sleep(0.004 * len(texts))
    return super()._embed(texts)
""")


def _corpus(root):
    root.mkdir()
    for i in range(30):
        paras = "\n\n".join(f"Paragraph {j} of file {i} talks about topic {i * 7 + j} and rate {j}. "
                            f"It has a second sentence with detail {i}-{j}." for j in range(30))
        (root / f"doc{i:02d}.md").write_text(f"# File {i}\n\n{paras}\n")
    with open(root / "records.jsonl", "w") as f:
        for i in range(300):
            f.write(json.dumps({"_id": f"r{i}", "title": f"Record {i}",
                                "text": f"Record {i} describes bond {i} with yield {i / 10:.1f} percent."}) + "\n")


def _committed_docs(kb) -> int:
    try:
        db = sqlite3.connect(f"file:{kb / 'kb.sqlite3'}?mode=ro", uri=True, timeout=1)
        try:
            return db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return -1  # not created yet


def _run(script, kb, corpus, env, kill_at_docs=None):
    """Run the CLI ingest; with ``kill_at_docs``, SIGKILL it once that many documents are committed."""
    cmd = [sys.executable, str(script), "ingest", str(corpus), "--kb", str(kb), "--embedder", "slowfake", "--json"]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if kill_at_docs is None:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()[-2000:]
        return json.loads(out)
    deadline = time.monotonic() + 120
    while p.poll() is None and _committed_docs(kb) < kill_at_docs and time.monotonic() < deadline:
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    p.wait()
    return _committed_docs(kb)


def _snapshot(kb_dir):
    settings = Settings.load(kb_dir, embedder="slowfake")
    kb = KnowledgeBase.open(settings)
    try:
        assert kb.db.integrity_ok()
        ids = sorted(r[0] for r in kb.db.conn.execute("SELECT chunk_id FROM chunks"))
        docs = sorted(r[0] for r in kb.db.conn.execute("SELECT doc_id FROM documents"))
        emb_missing = kb.db.conn.execute("SELECT COUNT(*) FROM chunks WHERE embedding IS NULL").fetchone()[0]
        return {"docs": docs, "chunks": ids, "lexical": len(kb.lexical()), "missing": emb_missing,
                "stats": {k: v for k, v in kb.stats().items() if k != "version"}}
    finally:
        kb.close()


@pytest.mark.slow
def test_kill_minus_9_then_rerun_equals_clean_run(tmp_path):
    register_slowfake()  # the parent opens the KBs too, so it needs the plugin
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    corpus = tmp_path / "corpus"
    _corpus(corpus)
    env = {**os.environ, "RAGCLINIC_CACHE_DIR": str(tmp_path / "cache-clean")}
    clean = tmp_path / "clean"
    _run(script, clean, corpus, env)
    want = _snapshot(clean)
    assert want["stats"]["documents"] == 330 and want["missing"] == 0

    crashed = tmp_path / "crashed"
    env["RAGCLINIC_CACHE_DIR"] = str(tmp_path / "cache-crash")
    # Kill points: right after the KB exists, between commits early and late, and after the last document
    # commit (during the file records / index sync). Each kill is followed by an open that must work.
    killed_at = []
    for at_docs in (0, 40, 200, 330):
        killed_at.append(_run(script, crashed, corpus, env, kill_at_docs=at_docs))
        partial = _snapshot(crashed)  # opens, passes integrity check, indexes caught up
        assert set(partial["chunks"]) <= set(want["chunks"])
        assert set(partial["docs"]) <= set(want["docs"])
        assert partial["lexical"] == len(partial["chunks"])
    assert any(0 < k < 330 for k in killed_at)  # at least one kill landed between commits
    final = _run(script, crashed, corpus, env)
    assert final["failed"] == []
    got = _snapshot(crashed)
    assert got == want
    db = sqlite3.connect(crashed / "kb.sqlite3")
    statuses = [r[0] for r in db.execute("SELECT status FROM runs ORDER BY run_id")]
    db.close()
    # each killed run is marked by the next one, never left "running" (issue 32)
    assert statuses[-1] == "ok" and "running" not in statuses and "interrupted" in statuses
