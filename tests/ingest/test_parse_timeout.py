"""parse_timeout_s: a document whose parsing and chunking overruns is stopped, its file fails with the reason, the
other files are ingested; SIGTERM during a long parse ends the command and its parse worker at once (issue 32).

The slow input is real: pysbd's list passes cost ~15 µs a character on text made of list items ("a) one b) two"),
so a 3 MB file takes most of a minute to parse and chunk here (it is linear, not stuck: pysbd sees bounded windows)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ragclinic.ingest import isolate
from ragclinic.ingest.runner import ingest
from ragclinic.store.kb import KnowledgeBase

SLOW = "Items a) one b) two c) three. " * 100_000  # 3 MB in one paragraph


def _slow_corpus(root):
    root.mkdir()
    (root / "list.txt").write_text(SLOW)
    (root / "notes.md").write_text("# Notes\n\nBonds pay coupons. Prices fall when rates rise.\n")
    return root


def test_a_parse_that_overruns_is_stopped_and_fails_its_file_only(make_settings, tmp_path):
    root = _slow_corpus(tmp_path / "docs")
    kb = KnowledgeBase.open(make_settings(parse_timeout_s=1.5), create=True)
    kb.lock()
    try:
        t0 = time.perf_counter()
        r = ingest(kb, [root])
        elapsed = time.perf_counter() - t0
    finally:
        kb.close()
    assert r.added == 1 and [f["path"] for f in r.failed] == [str(root / "list.txt")]
    assert "parse_timeout_s=1.5" in r.failed[0]["reason"] and "RAGCLINIC_PARSE_TIMEOUT_S" in r.failed[0]["reason"]
    assert elapsed < 20, elapsed  # the writer lock was held for the limit and a little, not for the whole parse
    assert not any(w.alive() and w.busy for w in isolate._all)  # the overrunning worker was killed


def _mixed_corpus(root):
    from ragclinic.demo.writers import write_pdf

    root.mkdir()
    (root / "bonds.md").write_text("# Bonds\n\nThe risk-free rate is a riskless return.\n\n## Yields\n\n"
                                   "| term | yield |\n|---|---|\n| 1y | 4.1 |\n| 5y | 3.9 |\n", encoding="utf-8")
    (root / "rag.txt").write_bytes("检索增强生成先检索相关段落，再让语言模型作答。".encode("gbk"))
    (root / "recs.jsonl").write_text('{"_id": "a", "text": "Alpha about bonds."}\n{"_id": "b", "text": "Beta."}\n')
    (root / "prices.csv").write_text("product,price\nKettle,25.50\nToaster,40\n")
    write_pdf(root / "paper.pdf", title="Coupons", paragraphs=["Coupons are paid twice a year.", "Duration falls."],
              table=[["term", "yield"], ["1y", "4.1"]])
    return root


def test_the_worker_is_reused_and_gives_the_same_documents_as_parsing_in_process(make_settings, tmp_path):
    root = _mixed_corpus(tmp_path / "docs")
    chunks = {}
    for timeout in (0, 120):
        kb = KnowledgeBase.open(make_settings(kb=tmp_path / f"kb{timeout}", parse_timeout_s=timeout), create=True)
        kb.lock()
        try:
            r = ingest(kb, [root])
            assert r.failed == [] and r.added == 6
            chunks[timeout] = sorted(kb.db.conn.execute("SELECT chunk_id, text, tokens FROM chunks").fetchall())
        finally:
            kb.close()
    assert chunks[0] == chunks[120] and chunks[0]
    workers = {id(w) for w in isolate._idle}
    kb = KnowledgeBase.open(make_settings(kb=tmp_path / "kb-again"), create=True)
    kb.lock()
    try:
        ingest(kb, [root])
    finally:
        kb.close()
    assert workers and {id(w) for w in isolate._idle} == workers  # the next ingest used the same process


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = []
        for task in os.listdir(f"/proc/{p}/task") if os.path.isdir(f"/proc/{p}/task") else []:
            try:  # a child is listed under the thread that started it (the worker: a spawner thread)
                with open(f"/proc/{p}/task/{task}/children") as f:
                    kids += [int(x) for x in f.read().split()]
            except FileNotFoundError:
                continue
        out += kids
        todo += kids
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode()
    except FileNotFoundError:
        return ""


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ", 1)[1].startswith("Z"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for the worker's PID")
def test_sigterm_during_a_long_parse_ends_the_ingest_and_its_worker_at_once(tmp_path):
    root = _slow_corpus(tmp_path / "docs")
    kb = tmp_path / "kb"
    env = {k: v for k, v in os.environ.items() if k != "RAGCLINIC_NO_SUPERVISOR"}
    cmd = [sys.executable, "-c", "import sys; from ragclinic.cli.entry import main; sys.argv[0] = 'ragclinic'; main()",
           "ingest", str(root / "list.txt"), "--kb", str(kb), "--embedder", "fake", "--json"]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    worker = None
    while worker is None:
        assert p.poll() is None and time.monotonic() < deadline, p.stderr.read().decode()[-2000:]
        worker = next((k for k in _descendants(p.pid) if "ragclinic.ingest.parse_worker" in _cmdline(k)), None)
        time.sleep(0.05)
    time.sleep(1.0)  # well into the parse
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    p.wait(15)
    assert time.monotonic() - t0 < 5
    assert _gone(worker, 5), "the parse worker outlived SIGTERM of the command"
    (root / "small.md").write_text("# Small\n\nA short note about bonds.\n")
    again = subprocess.run(cmd[:4] + [str(root / "small.md")] + cmd[5:], env=env, capture_output=True, timeout=120)
    assert again.returncode == 0, again.stderr.decode()[-2000:]  # the writer lock is free
    assert json.loads(again.stdout)["added"] == 1


def test_a_worker_that_cannot_start_means_parsing_in_process_not_failing_every_file(make_settings, tmp_path,
                                                                                      monkeypatch):
    import sys as _sys

    root = _mixed_corpus(tmp_path / "docs")
    monkeypatch.setattr(isolate, "_idle", [])
    monkeypatch.setattr(isolate.sys, "executable", _sys.executable + "-missing")  # the Popen itself fails
    kb = KnowledgeBase.open(make_settings(), create=True)
    kb.lock()
    try:
        r = ingest(kb, [root])
    finally:
        kb.close()
    assert r.failed == [] and r.added == 6


def test_a_worker_that_dies_on_a_file_fails_that_file_and_the_next_gets_a_new_one(make_settings, tmp_path):
    import threading

    from ragclinic.errors import ParseError
    from ragclinic.ingest.discover import read_source

    root = _slow_corpus(tmp_path / "docs")
    settings = make_settings()
    w = isolate.take()
    try:
        w.begin(settings, {})
        pid = w.proc.pid
        threading.Timer(1.0, os.kill, (pid, signal.SIGSEGV)).start()  # as a native crash in a parser would
        with pytest.raises(ParseError, match=r"parser process died on this file \(SIGSEGV\)"):
            list(w.events(read_source(root / "list.txt", settings.max_file_size), {}, 60, threading.Event()))
        items = list(w.events(read_source(root / "notes.md", settings.max_file_size), {}, 60, threading.Event()))
        assert w.proc.pid != pid and type(items[-1]).__name__ == "_FileDone" and len(items) == 2
    finally:
        isolate.give_back(w)
