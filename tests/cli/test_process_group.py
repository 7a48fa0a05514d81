"""`kill -9` of the PID a command prints (the supervisor's, cli/entry.py) ends the whole command: the child doing
the work dies with it, so a server's port is free at once and an ingest's writer lock is released — the re-run
the README promises resumes instead of "another ragclinic process is writing" (issue 32)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from helpers import plugin_cli_script, register_slowfake

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for the child's PID")

SLOW = "time.sleep(0.1 * len(texts))\nreturn super()._embed(texts)"  # 200 notes: ~20 s of embedding


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(x) for x in f.read().split()]


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ", 1)[1].startswith("Z"):  # a zombie has let go of everything
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _wait_for_child(p: subprocess.Popen, within: float = 60.0) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert p.poll() is None, p.stderr.read().decode()[-2000:] if p.stderr else "the command ended"
        kids = _children(p.pid)
        if kids:
            return kids[0]
        time.sleep(0.05)
    raise AssertionError("the supervisor started no child")


def _script(tmp_path) -> str:
    script = tmp_path / "cli.py"
    script.write_text(plugin_cli_script(SLOW, entry="ragclinic.cli.entry"), encoding="utf-8")
    return str(script)


def _corpus(root, n: int) -> None:
    root.mkdir()
    for i in range(n):
        (root / f"note{i:03d}.md").write_text(f"# Note {i}\n\n" + f"Harbour {i} has {i + 3} cranes and a pier. " * 8,
                                              encoding="utf-8")


def test_kill_9_of_the_ingest_pid_stops_its_child_and_the_rerun_resumes(tmp_path):
    register_slowfake()
    _corpus(tmp_path / "docs", 200)
    kb = tmp_path / "kb"
    env = {k: v for k, v in os.environ.items() if k != "RAGCLINIC_NO_SUPERVISOR"}
    cmd = [sys.executable, _script(tmp_path), "ingest", str(tmp_path / "docs"), "--kb", str(kb), "--json"]
    p = subprocess.Popen(cmd + ["--embedder", "slowfake"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child = _wait_for_child(p)
    time.sleep(2.5)  # into embedding: an orphan would go on for ~15 s more
    assert p.poll() is None, "the ingest finished before it could be killed: make the corpus larger"
    p.send_signal(signal.SIGKILL)
    p.wait(30)
    try:
        assert _gone(child), f"the ingest's child {child} outlived kill -9 of the command's PID {p.pid}"
    finally:
        _kill(child)
    again = subprocess.run(cmd, env=env, capture_output=True, timeout=600)
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    done = json.loads(again.stdout)
    assert done["failed"] == [] and done["added"] + done["updated"] + done["unchanged"] == 200


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_kill_9_of_the_pid_serve_prints_frees_the_port(tmp_path):
    from ragclinic import Clinic

    _corpus(tmp_path / "docs", 3)
    kb = tmp_path / "kb"
    with Clinic.open(kb, llm="none", embedder="fake") as c:
        c.ingest(tmp_path / "docs")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "RAGCLINIC_NO_SUPERVISOR"}
    p = subprocess.Popen([sys.executable, _script(tmp_path), "serve", "--kb", str(kb), "--port", str(port),
                          "--llm", "none"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child = _wait_for_child(p)
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                assert json.loads(r.read())["ok"]
            break
        except OSError:
            assert p.poll() is None and time.monotonic() < deadline, p.stderr.read().decode()[-2000:]
            time.sleep(0.2)
    p.send_signal(signal.SIGKILL)
    p.wait(30)
    try:
        assert _gone(child), f"the server's child {child} outlived kill -9 of {p.pid}"
    finally:
        _kill(child)  # else an orphan holds the port and the stderr pipe read below
    banner = p.stderr.read().decode()
    assert f"pid {p.pid}" in banner, banner  # the PID it prints is the one that ends everything
    with socket.socket() as s:  # the port is free: a restart can bind it (as uvicorn does, with SO_REUSEADDR
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # for the health check's TIME_WAIT)
        s.bind(("127.0.0.1", port))
        s.listen()
