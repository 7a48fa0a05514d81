"""The warm worker's side of the socket (models/warm_server.py) against clients that misbehave (issue 51): a line
that is not a request gets an error reply and the worker serves on; a client that falls silent — nothing sent, half a
line, a byte now and then — is let go, so that it cannot hold the worker every other command would use.

The worker's ``serve`` runs in a thread with the scripted fake model (as test_warm.py's peer check does); the last test
runs a real warm worker process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest

from ragclinic.models import warm, warm_server
from ragclinic.models.fake_llm import PacedLanguageModel
from ragclinic.models.service import ModelService, ServiceModel

pytestmark = pytest.mark.slow

LOAD = {"name": "fake", "settings": {}, "options": {}}


@pytest.fixture
def worker():
    """A warm worker's ``serve`` in a thread on a short socket path: (path, thread); it exits 1.5 s after its last
    client, and is waited for."""
    d = Path(tempfile.mkdtemp(prefix="rcw-"))
    listener = warm_server._listen(d / "t.sock")
    server = threading.Thread(target=warm_server.serve, args=(listener, PacedLanguageModel(), {"ok": True}, LOAD, 1.5),
                              kwargs={"client_idle": 0.5}, daemon=True)
    server.start()
    yield d / "t.sock", server
    server.join(10)
    listener.close()
    shutil.rmtree(d, ignore_errors=True)


def _connect(path: Path) -> socket.socket:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(5)
    client.connect(str(path))
    return client


def _ask(client: socket.socket, line: bytes) -> dict:
    """Send one line; the worker's one reply line (an empty dict when it closed the connection instead)."""
    client.sendall(line + b"\n")
    got = b""
    while not got.endswith(b"\n"):
        piece = client.recv(1 << 16)
        if not piece:
            return {}
        got += piece
    return json.loads(got)


def _served(path: Path) -> None:
    """A well-behaved client is served: load, a request, quit."""
    with _connect(path) as client:
        assert _ask(client, json.dumps({"op": "load", **LOAD}).encode()) == {"ok": True, "served": 1}
        assert _ask(client, b'{"op": "count", "text": "a b"}') == {"ok": True, "result": 2}
        client.sendall(b'{"op": "quit"}\n')


BAD_LINES = {
    "null": b"null",
    "a list": b"[]",
    "a string": b'"x"',
    "a number": b"42",
    "not JSON": b"{not json",
    "not UTF-8": b'{"op": "\xc3("}',
    "nested 100,000 deep": b"[" * 100_000 + b"]" * 100_000,
    "an object without op": b'{"a": 1}',
    "op not a string": b'{"op": 5}',
    "an unknown op": b'{"op": "dance"}',
    "chat without its fields": b'{"op": "chat"}',
    "chat with wrong-typed fields": b'{"op": "chat", "messages": "x", "max_tokens": "a"}',
}


@pytest.mark.parametrize("line", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_a_line_that_is_not_a_request_gets_an_error_reply_and_the_worker_serves_on(worker, line):
    path, server = worker
    with _connect(path) as client:
        assert _ask(client, json.dumps({"op": "load", **LOAD}).encode())["ok"]
        reply = _ask(client, line)
        assert reply.get("ok") is False and reply["error"], reply
        assert _ask(client, b'{"op": "count", "text": "a b c"}') == {"ok": True, "result": 3}  # the same client
        client.sendall(b'{"op": "quit"}\n')
    _served(path)  # and the next one
    assert server.is_alive()


def test_a_bad_line_before_the_load_request_gets_an_error_reply_too(worker):
    path, _ = worker
    with _connect(path) as client:
        reply = _ask(client, b"null")
        assert reply["ok"] is False and '"op" string' in reply["error"] and reply["kind"] == "BadRequest"
    _served(path)


def _dribble(client: socket.socket) -> None:
    """A byte now and then, never a whole line."""
    try:
        while True:
            client.sendall(b" ")
            time.sleep(0.1)
    except OSError:
        pass


@pytest.mark.parametrize("sends", ["nothing", "half a line", "a byte now and then"])
def test_a_client_that_falls_silent_is_let_go_and_the_next_one_served(worker, sends):
    path, server = worker
    idle = _connect(path)  # served first: the worker reads its lines
    try:
        if sends == "half a line":
            idle.sendall(b'{"op": "lo')
        elif sends == "a byte now and then":
            threading.Thread(target=_dribble, args=(idle,), daemon=True).start()
        t0 = time.monotonic()
        _served(path)  # queued behind the silent one until the worker lets it go (client_idle 0.5 s)
        assert time.monotonic() - t0 < 4
        try:
            assert idle.recv(100) == b""  # closed on it
        except ConnectionResetError:
            pass
    finally:
        idle.close()
    assert server.is_alive()


def test_a_command_that_pauses_past_the_client_time_out_connects_again(monkeypatch):
    """A chat between questions: the warm worker lets the quiet connection go; the next call connects again to the
    same worker — no crash, no private worker."""
    monkeypatch.setattr(warm, "CLIENT_IDLE_S", 0.5)  # passed to the worker it starts
    run_dir = Path(tempfile.mkdtemp(prefix="rcw-")) / "run"
    svc = ModelService("fake", {}, options={"replies": ["Yes."]}, label="the fake model",
                       warm=warm.WarmSpec(3.0, run_dir))
    lm, pid = ServiceModel(svc), None
    try:
        assert lm.count_tokens("a b c") == 3
        pid = svc.pid
        time.sleep(1.5)
        assert lm.count_tokens("a b") == 2
        assert svc.pid == pid and svc.starts == 1 and svc.crashes == [] and svc.info["served"] == 1
    finally:
        svc.close()
        if pid is not None and warm._exists(pid):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(run_dir.parent, ignore_errors=True)
