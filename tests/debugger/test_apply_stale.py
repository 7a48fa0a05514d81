"""`diagnose --apply` killed with `kill -9` while its copy of the knowledge base exists: the hidden copy
(`.KB.fix-…`) is removed by the next apply, and a copy whose maker is alive (a concurrent apply) is left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from helpers import BOND_DOCS, build_kb
from ragclinic import Clinic

REFUND = "# Refunds\n\nThe refund window for returned goods is 45 days from delivery.\n"
Q = "How long is the refund window for returned goods?"

# A real apply in a process of its own; it holds still once its copy of the knowledge base is made (the moment a
# kill -9 leaves the copy behind) and says where the copy is.
APPLY = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from ragclinic import Clinic
    from ragclinic.debugger import apply as ap
    from ragclinic.debugger.base import Expectation, Fix

    folder, said = Path(sys.argv[1]), Path(sys.argv[2])
    real = ap.snapshot

    def snapshot(src, dest):
        real(src, dest)
        said.write_text(str(dest))
        time.sleep(600)

    ap.snapshot = snapshot
    with Clinic.open(folder / "kb", model=None, llm="none", embedder="fake", judge="llm",
                     cache_dir=folder / "cache") as c:
        trace = c.trace(c.ask("How long is the refund window for returned goods?", doctor=False).trace_id)
        doc = c.kb.db.conn.execute("SELECT doc_id FROM documents WHERE path LIKE '%refunds.md'").fetchone()[0]
        ap.apply(c.pipeline, trace, [Fix("tag it 2020", retag={doc: {"year": "2020"}})],
                 Expectation((("45 days",),)), others=0)
""")


@pytest.fixture
def folder(tmp_path):
    kb = build_kb(tmp_path, {**BOND_DOCS, "refunds.md": REFUND}, meta={"refunds.md": {"year": "2019"}})
    kb.close()
    return tmp_path


def _start_apply(folder, name: str):
    """An apply in a child process, held still with its copy made → (the process, the copy's folder)."""
    said = folder / f"{name}.copy"
    proc = subprocess.Popen([sys.executable, "-c", APPLY, str(folder), str(said)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not said.exists() or not said.read_text():
        if proc.poll() is not None:
            pytest.fail(f"the apply ended before making its copy: {proc.stderr.read().decode()[-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the apply made no copy within 120 s")
        time.sleep(0.1)
    copy = type(folder)(said.read_text())
    assert copy.is_dir() and copy.name.startswith(".kb.fix-")
    return proc, copy


def test_a_copy_left_by_a_killed_apply_is_removed_by_the_next_and_a_live_ones_is_kept(folder):
    killed, stale = _start_apply(folder, "killed")
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(30)
    assert stale.is_dir()  # kill -9: no finally ran, the copy is left behind
    live, busy = _start_apply(folder, "live")
    try:
        with Clinic.open(folder / "kb", model=None, llm="none", embedder="fake", judge="llm",
                         cache_dir=folder / "cache") as c:
            d = c.diagnose(Q, ["45 days"], scope={"year": "2020"}, apply=True, others=0)
            assert d.applied.verdict == "fixed"
        assert not stale.exists()  # its maker is dead: removed at the start of the next apply
        assert busy.is_dir() and (busy / "kb.sqlite3").is_file()  # its maker is alive: left alone
    finally:
        live.kill()
        live.wait(30)
    from ragclinic.debugger.apply import clean_stale_copies

    assert clean_stale_copies(folder / "kb") == [busy] and not busy.exists()  # once the maker is gone, it goes
    assert not list(folder.glob(".kb.fix-*"))
