"""The warm model worker (models/warm.py, warm_server.py): one per user and configuration on a Unix socket, reused by the next
command, gone after its idle time, and never a reason for a command to fail.

These run the scripted fake in a real warm worker process (``python -m ragclinic.models.warm_server``) with a short idle
time in a temporary socket folder; the suite's other tests run with ``RAGCLINIC_LLM_WARM_SECONDS=0``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from ragclinic.errors import ModelCrashed
from ragclinic.models import warm, warm_server
from ragclinic.models.fake_llm import PacedLanguageModel
from ragclinic.models.llm import Message
from ragclinic.models.service import ModelService, ServiceModel

pytestmark = pytest.mark.slow

MSGS = [Message("user", "Is Paris the capital of France?")]
REPLY = "Yes, Paris is the capital of France."
IDLE = 3.0
_peer_cred = warm.peer_cred  # the real one, for the clean-up (some tests replace it)


@pytest.fixture
def run_dir():
    """A short socket folder (a Unix socket path holds 108 bytes); every worker in it is killed afterwards."""
    d = Path(tempfile.mkdtemp(prefix="rcw-")) / "run"
    yield d
    for path in d.glob("*.sock") if d.is_dir() else ():
        sock = warm._dial(path)
        if sock is not None:
            with sock:
                _kill(_peer_cred(sock)[0])
    shutil.rmtree(d.parent, ignore_errors=True)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def service(run_dir: Path, idle: float = IDLE, **options) -> ModelService:
    return ModelService("fake", {}, options={"replies": [REPLY], **options}, label="the fake model",
                        warm=warm.WarmSpec(idle, run_dir))


def _wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not warm._exists(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_second_command_reuses_the_worker_the_first_left_warm(run_dir):
    first = textwrap.dedent(f"""
        import json
        from pathlib import Path
        from ragclinic.models import warm
        from ragclinic.models.llm import Message
        from ragclinic.models.service import ModelService, ServiceModel
        svc = ModelService("fake", {{}}, options={{"replies": [{REPLY!r}]}}, label="the fake model",
                           warm=warm.WarmSpec({IDLE}, Path({str(run_dir)!r})))
        text = ServiceModel(svc).chat([Message("user", "Is Paris the capital of France?")], max_tokens=32).text
        print(json.dumps({{"pid": svc.pid, "starts": svc.starts, "text": text}}))
    """)
    t0 = time.monotonic()
    # captured output: the command ends without waiting for the worker (it holds none of its stdout/stderr)
    done = subprocess.run([sys.executable, "-c", first], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - t0 < 30
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["starts"] == 1 and got["text"] == REPLY
    assert warm._exists(got["pid"])  # outlived the command that started it

    svc = service(run_dir)
    try:
        lm = ServiceModel(svc)
        assert lm.chat(MSGS, max_tokens=32).text == REPLY
        assert svc.pid == got["pid"] and svc.starts == 0 and svc.warm_skipped is None
        assert svc.info["warm"] is True and svc.info["served"] == 1
        assert lm.next_token_probs(MSGS, ["yes", "no"]) == PacedLanguageModel([REPLY]).next_token_probs(
            MSGS, ["yes", "no"])
    finally:
        svc.close()


def test_the_worker_exits_after_its_idle_time_and_removes_its_socket(run_dir):
    svc = service(run_dir, idle=1.0)
    assert ServiceModel(svc).count_tokens("a b c") == 3
    pid, sock = svc.pid, next(run_dir.glob("*.sock"))
    svc.close()
    assert warm._exists(pid)  # a client gone is not the end of the worker
    assert _wait_gone(pid, 10.0)
    assert not sock.exists()
    again = service(run_dir, idle=1.0)  # the next command starts a new one
    try:
        assert again.call({"op": "count", "text": "a b"}) == 2 and again.starts == 1 and again.pid != pid
    finally:
        again.close()


def test_a_stale_socket_file_is_replaced_by_a_fresh_worker(run_dir):
    path = warm.socket_path(warm.WarmSpec(IDLE, run_dir), service(run_dir)._load_request())
    warm.private_dir(run_dir)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # bound and closed: the file stays, nobody listens (a worker killed with -9 leaves this)
    dead.close()
    assert path.exists() and warm._dial(path) is None
    svc = service(run_dir)
    try:
        assert svc.call({"op": "count", "text": "a b c"}) == 3
        assert svc.starts == 1 and svc.info["warm"] is True and svc.warm_skipped is None
    finally:
        svc.close()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_a_warm_worker_killed_mid_call_raises_model_crashed_and_the_next_call_gets_a_fresh_one(run_dir, sig):
    svc = service(run_dir, token_seconds=0.05)
    try:
        lm = ServiceModel(svc)
        lm.count_tokens("start it")
        first = svc.pid
        pieces: list[str] = []

        def kill_on_first_token(piece: str) -> None:
            pieces.append(piece)
            if len(pieces) == 1:
                os.kill(first, sig)

        with pytest.raises(ModelCrashed) as e:
            lm.chat(MSGS, max_tokens=64, on_token=kill_on_first_token)
        assert e.value.reason.startswith("the fake model crashed: " + sig.name)
        assert "warm worker" in e.value.reason and svc.crashes == [e.value.reason]
        assert svc.pid is None
        assert lm.chat(MSGS, max_tokens=64).text == REPLY  # a new warm worker, over the dead one's socket
        assert svc.starts == 2 and svc.pid not in (None, first) and svc.info["warm"] is True
    finally:
        svc.close()


def test_a_second_client_while_the_worker_is_busy_gets_a_private_worker(run_dir, monkeypatch):
    monkeypatch.setattr(warm, "BUSY_WAIT_S", 0.3)
    first, second = service(run_dir), service(run_dir)
    try:
        first.start()
        t0 = time.monotonic()
        assert second.call({"op": "count", "text": "a b"}) == 2
        assert time.monotonic() - t0 < 10
        assert "busy" in second.warm_skipped and second.starts == 1
        assert "warm" not in second.info and second.pid != first.pid  # today's private worker
    finally:
        first.close()
        second.close()


def test_check_peer_refuses_another_uid():
    warm.check_peer(os.getuid())
    with pytest.raises(PermissionError, match="uid 4242"):
        warm.check_peer(4242, own=1000)


def test_the_worker_refuses_a_client_of_another_uid(run_dir, monkeypatch, capsys):
    monkeypatch.setattr(warm, "peer_cred", lambda sock: (1, os.getuid() + 1))
    warm.private_dir(run_dir)
    listener = warm_server._listen(run_dir / "t.sock")
    load = {"name": "fake", "settings": {}, "options": {}}
    server = threading.Thread(target=warm_server.serve, args=(listener, PacedLanguageModel(), {"ok": True}, load, 2.0),
                              daemon=True)
    server.start()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(5)
            client.connect(str(run_dir / "t.sock"))
            try:
                client.sendall((json.dumps({"op": "load", **load}) + "\n").encode())
                assert client.recv(100) == b""  # closed unanswered
            except (BrokenPipeError, ConnectionResetError):
                pass  # closed before the request was written
    finally:
        server.join(5)
        listener.close()
    assert "a client refused: the peer runs as uid" in capsys.readouterr().err


def test_a_client_does_not_talk_to_a_worker_of_another_uid_and_falls_back(run_dir, monkeypatch):
    svc = service(run_dir)
    try:
        svc.start()  # a warm worker listens
        svc.close()
        monkeypatch.setattr(warm, "peer_cred", lambda sock: (1, os.getuid() + 1))
        again = service(run_dir)
        assert again.call({"op": "count", "text": "a b"}) == 2  # the command goes on
        assert "refused" in again.warm_skipped and "warm" not in again.info
        again.close()
    finally:
        svc.close()


def test_the_socket_folder_is_private(run_dir):
    run_dir.mkdir(parents=True, mode=0o755)
    os.chmod(run_dir, 0o755)
    svc = service(run_dir)
    try:
        svc.start()
        assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700  # tightened
        sock = next(run_dir.glob("*.sock"))
        assert stat.S_ISSOCK(sock.stat().st_mode) and stat.S_IMODE(sock.stat().st_mode) == 0o600
    finally:
        svc.close()


def test_a_socket_folder_that_is_a_link_is_refused_and_the_command_gets_a_private_worker(run_dir):
    real = run_dir.parent / "elsewhere"
    real.mkdir(mode=0o700)
    run_dir.symlink_to(real)
    svc = service(run_dir)
    try:
        assert svc.call({"op": "count", "text": "a b"}) == 2
        assert "not a folder of this user's" in svc.warm_skipped and "warm" not in svc.info
        assert not list(real.iterdir())
    finally:
        svc.close()


def test_only_an_opted_in_process_with_a_positive_setting_uses_a_warm_worker(make_settings, monkeypatch):
    monkeypatch.setattr(warm, "_opted_in", False)
    s = make_settings(llm_warm_seconds=60)
    assert make_settings().llm_warm_seconds == 0  # the suite's conftest: no daemons from other tests
    assert warm.spec_for(s) is None  # serve, eval, library callers
    warm.opt_in()
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/4242")
    assert warm.spec_for(s) == warm.WarmSpec(60.0, Path("/run/user/4242/ragclinic"))
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert warm.spec_for(s) == warm.WarmSpec(60.0, s.cache_dir / "run")
    assert warm.spec_for(make_settings(llm_warm_seconds=0)) is None
