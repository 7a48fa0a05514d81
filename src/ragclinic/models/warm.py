"""A model worker that stays warm between commands: one per user and model configuration, on a Unix socket.

With ``llm_warm_seconds`` > 0 the CLI's one-shot commands (``opt_in()``: ask, chat, diagnose) skip the worker's start
(1–2 s) and find the system turn's KV state kept. The worker listens on ``w-<hash>.sock`` in a 0700 folder of this
user's (``$XDG_RUNTIME_DIR/ragclinic``, else ``<cache_dir>/run``); the hash covers the load request and the code
that would serve it. It holds ``w-<hash>.lock`` while it lives (so only it binds or removes the socket), writes its
stderr to ``w-<hash>.log``, serves worker.py's JSON lines (warm_server.py) (the same ``answer()``) to one client at a time, checks
each peer's uid (SO_PEERCRED; the client checks the worker's), and exits ``llm_warm_seconds`` after its last
client left. A client's first line is its ``load`` request, answered as a fresh worker would (plus ``"warm":
true`` and ``served``); a client that sends no whole line for ``CLIENT_IDLE_S`` is let go (a command that pauses
longer, a chat between questions, finds its connection ended and connects again). A busy worker is waited for
``BUSY_WAIT_S``; that, and any failure to connect, raises :class:`Unavailable` and the service starts a private
worker. Details: docs/architecture.md, "Warm worker".
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from ragclinic.models.process import describe_exit, pump, worker_env

BUSY_WAIT_S = 1.0  # a worker serving another command: wait this long for it, then start a private one
SOCKET_WAIT_S = 15.0  # a worker just started: wait this long for its socket (its model load: llm_call_timeout)
# a client silent this long between its requests (or half-way through one) is let go: it must not hold the worker that
# every other command would use; its next call connects again, which costs milliseconds
CLIENT_IDLE_S = 60.0
_MAX_SOCKET_PATH = 100  # bytes; sockaddr_un holds 108
_opted_in = False
_PACKAGE = Path(__file__).parent.parent  # the ragclinic package folder: the code a warm worker runs


class Unavailable(Exception):
    """No warm worker can serve this command (the reason is the message); the caller starts a private one."""


@dataclass(frozen=True)
class WarmSpec:
    idle_seconds: float
    run_dir: Path


def opt_in() -> None:
    """Let this process's shared model services use a warm worker (the CLI's one-shot commands call this)."""
    global _opted_in
    _opted_in = True


def spec_for(settings) -> WarmSpec | None:
    """The warm worker's spec for a process that opted in, with ``llm_warm_seconds`` > 0 on Linux; else None."""
    seconds = float(getattr(settings, "llm_warm_seconds", 0) or 0)
    if not _opted_in or seconds <= 0 or not hasattr(socket, "SO_PEERCRED"):
        return None
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    return WarmSpec(seconds, Path(xdg) / "ragclinic" if xdg else Path(settings.cache_dir) / "run")


# ---------------------------------------------------------------------------------------------- shared checks
def private_dir(path: Path) -> Path:
    """``path`` as a folder of this user's with mode 0700 (created, or tightened); OSError when it cannot be."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise OSError(f"{path} is not a folder of this user's (a link, or uid {st.st_uid}); remove it")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


def peer_cred(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a Unix socket."""
    pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                         struct.calcsize("3i")))
    return pid, uid


def check_peer(uid: int, own: int | None = None) -> None:
    """PermissionError unless the peer runs as this user."""
    own = os.getuid() if own is None else own
    if uid != own:
        raise PermissionError(f"the peer runs as uid {uid}, not this user's {own}: refused")


def socket_path(spec: WarmSpec, load: dict) -> Path:
    newest = max((p.stat().st_mtime_ns for p in (_PACKAGE / "models").glob("*.py")), default=0)
    ident = json.dumps({"load": load, "python": sys.executable, "code": [str(_PACKAGE), newest]}, sort_keys=True)
    return spec.run_dir / f"w-{hashlib.sha256(ident.encode()).hexdigest()[:20]}.sock"


# ---------------------------------------------------------------------------------------------- the client
class WarmWorker:
    """A connection to a warm worker, with what ModelService asks of a worker (service._Worker's methods)."""

    def __init__(self, sock: socket.socket, pid: int, proc: subprocess.Popen | None, log_path: Path) -> None:
        self.sock, self.pid, self.proc, self.log_path = sock, pid, proc, log_path
        self.replies: queue.Queue = queue.Queue()
        self.stderr_tail: deque = deque(maxlen=30)
        self.info: dict = {}
        self._gone = False
        self._rf = sock.makefile("r", encoding="utf-8", newline="\n")
        self._wf = sock.makefile("w", encoding="utf-8", newline="\n")
        threading.Thread(target=self._read, daemon=True, name="ragclinic-warm-replies").start()

    def _read(self) -> None:
        pump(self._rf, self.replies)
        self._gone = True

    def alive(self) -> bool:
        if self._gone:
            return False
        return self.proc.poll() is None if self.proc is not None else _exists(self.pid)

    def send(self, line: str) -> None:
        self._wf.write(line)
        self._wf.flush()

    def kill(self) -> None:
        """A hung or garbled worker: killed, so that the next command starts a fresh one."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._shutdown()

    def ended(self) -> str:
        """Why the connection ended: the exit status where this process started the worker. A worker that closed
        the connection but lives is killed (its state is suspect)."""
        deadline = time.monotonic() + 2.0
        while self.alive_process() and time.monotonic() < deadline:
            time.sleep(0.02)
        if self.alive_process():
            self.kill()
        code = self.proc.wait() if self.proc is not None else None
        self.stderr_tail.extend(_tail(self.log_path))
        what = describe_exit(code) if self.proc is not None else "it ended"
        return f"{what} (the warm worker, pid {self.pid}; its log: {self.log_path})"

    def alive_process(self) -> bool:
        return self.proc.poll() is None if self.proc is not None else _exists(self.pid)

    def stop(self, kill: bool = False) -> None:
        """Disconnect; the worker lives on for the next command (a call cut short ends there: its replies fail)."""
        if not kill:
            try:
                self.send(json.dumps({"op": "quit"}) + "\n")
            except (OSError, ValueError):
                pass
        self.close()

    def close(self) -> None:
        self._shutdown()
        for f in (self._wf, self._rf, self.sock):
            try:
                f.close()
            except (OSError, ValueError):
                pass

    def _shutdown(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def handshake(self, load: dict, wait: float) -> dict:
        """Send the load request; the worker's reply within ``wait`` seconds (longer while our own worker loads)."""
        self.send(json.dumps(load) + "\n")
        deadline = time.monotonic() + wait
        while True:
            if self.proc is not None and self.proc.poll() is not None:  # ours lost the race to another start
                deadline = min(deadline, time.monotonic() + BUSY_WAIT_S)
            try:
                line = self.replies.get(timeout=max(0.0, min(0.1, deadline - time.monotonic())))
                break
            except queue.Empty:
                if time.monotonic() >= deadline:
                    raise Unavailable(f"the warm worker (pid {self.pid}) is busy: no reply within {wait:g} s")
        if not isinstance(line, str):
            raise Unavailable(f"the warm worker (pid {self.pid}) closed the connection; its log: {self.log_path}")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise Unavailable(f"the warm worker refused: {reply.get('error')}")
        return reply


def connect(spec: WarmSpec, load: dict, *, load_timeout: float) -> tuple[WarmWorker, bool]:
    """A connection to the user's warm worker for ``load`` (started if there is none) and whether this call started
    it. Unavailable, with the reason, when none can serve."""
    try:
        path = socket_path(spec, load)
        if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
            raise Unavailable(f"the socket path {path} is longer than a Unix socket allows")
        private_dir(spec.run_dir)
        sock, proc = _dial(path), None
        if sock is None:
            proc = _spawn(spec, path, load)
            sock = _dial_started(path, proc)
        try:
            pid, uid = peer_cred(sock)
            check_peer(uid)
            w = WarmWorker(sock, pid, proc if proc is not None and proc.pid == pid else None,
                           path.with_suffix(".log"))
        except BaseException:
            sock.close()
            raise
        try:
            reply = w.handshake(load, load_timeout if w.proc is not None else BUSY_WAIT_S)
        except BaseException:
            w.close()
            raise
    except (OSError, ValueError) as e:
        raise Unavailable(f"{type(e).__name__}: {e}") from None
    w.info = {k: reply.get(k) for k in ("model_id", "backend", "seconds", "pid", "warm", "served")}
    return w, w.proc is not None


def _dial(path: Path) -> socket.socket | None:
    """Connected to the socket at ``path``; None when there is none or nobody listens (a stale file)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        return sock
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    except BaseException:
        sock.close()
        raise


def _dial_started(path: Path, proc: subprocess.Popen) -> socket.socket:
    deadline = time.monotonic() + SOCKET_WAIT_S
    while time.monotonic() < deadline:
        sock = _dial(path)
        if sock is not None:
            return sock
        code = proc.poll()
        if code not in (None, 0):  # 0: another start won the race; its socket comes
            raise Unavailable(f"the warm worker ended starting ({describe_exit(code)}); its log: "
                              f"{path.with_suffix('.log')}")
        if code == 0:  # the winner may be a worker going idle (its socket gone, its lock not yet): do not wait long
            deadline = min(deadline, time.monotonic() + BUSY_WAIT_S)
        time.sleep(0.02)
    raise Unavailable(f"the warm worker made no socket within {SOCKET_WAIT_S:g} s")


def _spawn(spec: WarmSpec, path: Path, load: dict) -> subprocess.Popen:
    """Start a worker in a session of its own, with no stdin/stdout of the command's (a caller reading the
    command's output to its end must not wait for the worker)."""
    env = worker_env()
    src = str(_PACKAGE.parent)  # the same code as this process
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    args = json.dumps({"socket": str(path), "idle": spec.idle_seconds, "load": load, "client_idle": CLIENT_IDLE_S})
    with open(path.with_suffix(".log"), "ab") as log:
        os.chmod(log.name, 0o600)
        return subprocess.Popen([sys.executable, "-m", "ragclinic.models.warm_server", args], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, env=env, cwd=str(spec.run_dir), start_new_session=True,
                                close_fds=True)


def _exists(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"  # a zombie has ended
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:
            return True


def _tail(path: Path, lines: int = 30) -> list[str]:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 8192))
            return f.read().decode("utf-8", "replace").splitlines()[-lines:]
    except OSError:
        return []
