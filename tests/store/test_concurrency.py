"""Concurrent use of one knowledge base (issue 19, part 4): questions asked while another process ingests are
answered from the last committed version without "database is locked"; a second ingest is refused by the writer
lock with a message that says what to do; once the first ingest ends, everything it committed is there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from typer.testing import CliRunner

from helpers import BOND_DOCS, plugin_cli_script, register_slowfake
from ragclinic.cli.main import app
from ragclinic.config import Settings
from ragclinic.ingest.runner import ingest
from ragclinic.pipeline.runner import Pipeline
from ragclinic.store.kb import KnowledgeBase

CHILD = plugin_cli_script("""
    time.sleep(0.01 * len(texts))
    return super()._embed(texts)
""")


def _corpus(root, n=80):
    root.mkdir(parents=True)
    for i in range(n):
        paras = "\n\n".join(f"Paragraph {j} of report {i} is about the harbour of town {i} and its {j} cranes."
                            for j in range(40))
        (root / f"report{i:02d}.md").write_text(f"# Report {i}\n\n{paras}\n")


def _committed(kb) -> int:
    return kb.db.conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]


def test_ask_during_an_ingest_and_a_second_ingest_is_refused(tmp_path):
    register_slowfake()
    base = tmp_path / "base"
    base.mkdir()
    for name, text in BOND_DOCS.items():
        (base / name).write_text(text, encoding="utf-8")
    kb_dir = tmp_path / "kb"
    settings = Settings.load(kb_dir, cache_dir=tmp_path / "cache", embedder="slowfake", llm="none", judge="llm")
    kb = KnowledgeBase.open(settings, create=True)
    kb.lock()
    ingest(kb, [base])
    kb.unlock()
    before = kb.stats()["documents"]

    script = tmp_path / "child.py"
    script.write_text(CHILD)
    _corpus(tmp_path / "more")
    env = {**os.environ, "RAGCLINIC_CACHE_DIR": str(tmp_path / "cache")}
    child = subprocess.Popen([sys.executable, str(script), "ingest", str(tmp_path / "more"), "--kb", str(kb_dir),
                              "--embedder", "slowfake", "--json"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while _committed(kb) <= before and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)  # until the child has committed a first batch (it holds the writer lock)
        assert child.poll() is None, "the child ingest ended before the test could overlap it"
        second = CliRunner().invoke(app, ["ingest", str(base), "--kb", str(kb_dir), "--embedder", "slowfake"])
        assert second.exit_code != 0 and "another ragclinic process is writing" in second.output
        asked, seen_docs = 0, set()
        pipe = Pipeline(kb)
        while child.poll() is None and asked < 200:
            state, _ = pipe.ask("What is the risk-free rate?")  # never "database is locked"
            assert state.answer is not None and state.passages
            fresh = KnowledgeBase.open(settings)  # a reader that opens mid-ingest sees a committed version
            try:
                seen_docs.add(fresh.stats()["documents"])
                assert fresh.stats()["documents"] >= before
            finally:
                fresh.close()
            asked += 1
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err.decode()[-2000:]
        assert asked >= 3, "too few questions overlapped the ingest to say anything"
        print(f"questions during the ingest: {asked}; committed versions seen: {sorted(seen_docs)}")
        result = json.loads(out)
        reopened = KnowledgeBase.open(settings)
        try:
            assert reopened.stats()["documents"] == before + result["added"]
            assert reopened.db.integrity_ok()
        finally:
            reopened.close()
    finally:
        if child.poll() is None:
            child.kill()
        kb.close()
