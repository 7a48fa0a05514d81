"""kill -9 during `ask` (issue 19, part 3): at random points of a question answered by a slow model, the process
is killed; the knowledge base and its traces always open, every stored trace is complete (its answer, its
spans), and the documents committed before are all there."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from helpers import BOND_DOCS, build_kb, plugin_cli_script
from ragclinic.config import Settings
from ragclinic.store.kb import KnowledgeBase
from ragclinic.trace.store import list_traces, load_trace

# A child that registers a slow scripted model ("slowllm": one word every 50 ms) and runs the CLI.
CHILD = plugin_cli_script("return super()._embed(texts)", imports="""
    from ragclinic.models.llm import LANGUAGE_MODELS
    from ragclinic.models.fake_llm import PacedLanguageModel

    @LANGUAGE_MODELS.register("slowllm")
    def _slow(settings):
        return PacedLanguageModel(["The risk-free rate is the return on an investment with no default risk, "
                                   "and treasury bills are its usual proxy [1]."], token_seconds=0.05, yes_prob=0.9)
""")


@pytest.mark.slow
def test_kill_minus_9_during_ask_leaves_only_complete_traces(tmp_path):
    kb = build_kb(tmp_path, BOND_DOCS, embedder="fake")
    docs = kb.stats()["documents"]
    kb.close()
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "RAGCLINIC_CACHE_DIR": str(tmp_path / "cache"), "RAGCLINIC_NO_SUPERVISOR": "1"}
    rng, killed, finished = random.Random(19), 0, 0
    for _ in range(8):
        p = subprocess.Popen([sys.executable, str(script), "ask", "What is the risk-free rate?", "--kb",
                              str(tmp_path / "kb"), "--llm", "slowllm", "--no-cache", "--json"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.3, 3.0))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            killed += 1
        out, err = p.communicate(timeout=60)
        if p.returncode == 0:
            finished += 1
        else:
            assert p.returncode == -signal.SIGKILL, err.decode()[-1500:]
    assert killed >= 3, f"only {killed} of 8 runs were killed mid-question"
    kb = KnowledgeBase.open(Settings.load(tmp_path / "kb", cache_dir=tmp_path / "cache", embedder="fake"))
    try:
        assert kb.db.integrity_ok() and kb.stats()["documents"] == docs
        rows = list_traces(kb.db, limit=500)
        assert len({r["debug_round_id"] for r in rows}) >= finished  # every question that finished was kept
        for row in rows:
            t = load_trace(kb.db, row["id"])  # every stored trace loads whole: an answer and its layers
            assert t.answer is not None and t.answer.route in ("answer", "refuse", "clarify"), row["id"]
            assert [s.layer for s in t.spans if s.layer in ("retrieve", "scope", "gate", "generate")], row["id"]
        print(f"kill -9 during ask: {killed} killed, {finished} finished, {len(rows)} traces stored, all complete")
    finally:
        kb.close()
