"""kill -9 of an `ingest --ray auto` driver leaves a knowledge base that opens, and a re-run completes it to what a
local ingest gives (its own module: the driver starts its own local Ray runtime, and none of this process's)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

RAGCLINIC = [str(Path(sys.executable).parent / "ragclinic")]  # the installed entry point, beside this python


def _corpus(root: Path) -> None:
    root.mkdir()
    for i in range(300):  # one chunk each, several commits (a Ray commit holds 4 × workers × embed batch chunks)
        (root / f"note{i:03d}.md").write_text(f"# Note {i}\n\nBond {i * 7} pays a coupon of {i % 9} percent "
                                              f"in quarter {i % 4 + 1}.\n", encoding="utf-8")


def _committed(kb: Path) -> int:
    try:
        with sqlite3.connect(f"file:{kb / 'kb.sqlite3'}?mode=ro", uri=True, timeout=1) as db:
            return db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
    except sqlite3.Error:
        return -1


def _ingest(kb: Path, corpus: Path, env: dict, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(RAGCLINIC + ["ingest", str(corpus), "--kb", str(kb), "--json", *extra], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _snapshot(kb: Path) -> tuple:
    from ragclinic import Clinic

    with Clinic.open(kb, llm="none") as c:
        db = c.kb.db
        assert db.integrity_ok()
        chunks = sorted(db.conn.execute("SELECT chunk_id, doc_id, text FROM chunks").fetchall())
        by_rowid = dict(db.conn.execute("SELECT rowid, chunk_id FROM chunks").fetchall())
        ids, vecs = db.embeddings(c.kb.embedder.dim)
        return chunks, {by_rowid[int(i)]: v for i, v in zip(ids, vecs)}, len(c.kb.lexical())


def _kill_all(p: subprocess.Popen) -> None:
    """SIGKILL to the process's whole group (`ragclinic` is a supervisor over the real CLI, which started Ray), and
    wait until every process of it is gone: only then is the knowledge base's lock free."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(p.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError("processes of the killed ingest are still running after 30 s")


@pytest.mark.slow
def test_kill_9_of_a_ray_driver_then_a_rerun_completes_it(tmp_path):
    corpus = tmp_path / "corpus"
    _corpus(corpus)
    env = {**os.environ, "RAGCLINIC_CACHE_DIR": str(tmp_path / "cache-local"), "RAY_USAGE_STATS_ENABLED": "0"}
    local = _ingest(tmp_path / "local", corpus, env)
    assert local.wait(timeout=600) == 0, local.stderr.read().decode()[-2000:]
    want = _snapshot(tmp_path / "local")

    env["RAGCLINIC_CACHE_DIR"] = str(tmp_path / "cache-ray")
    kb = tmp_path / "ray"
    p = _ingest(kb, corpus, env, "--ray", "auto", "--ray-workers", "2")
    deadline = time.monotonic() + 300
    while p.poll() is None and _committed(kb) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert p.poll() is None, "the ingest ended before the kill: the test did not test anything"
    _kill_all(p)  # the command (its supervisor, the driver) and the Ray runtime it started, between two commits
    got = _snapshot(kb)  # opens, integrity ok, the lexical index caught up with what was committed
    assert 0 < len(got[0]) < len(want[0]) and set(got[0]) <= set(want[0]) and got[2] == len(got[0])
    again = _ingest(kb, corpus, env, "--ray", "auto", "--ray-workers", "2")
    try:
        out, err = again.communicate(timeout=600)
    finally:
        _kill_all(again)  # whatever of its Ray runtime is still shutting down
    assert again.returncode == 0, err.decode()[-2000:]
    assert json.loads(out)["failed"] == []
    got = _snapshot(kb)
    assert got[0] == want[0] and got[2] == want[2]
    assert max(float(np.abs(got[1][k] - want[1][k]).max()) for k in want[1]) < 1e-4
