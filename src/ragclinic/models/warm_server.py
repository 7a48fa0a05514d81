"""The warm worker's side (models/warm.py is the client's): started by a client as ``python -m
ragclinic.models.warm_server``, it holds the lock, listens on the socket and serves worker.py's JSON lines to one
client at a time until none has come for its idle seconds. The peer checks are warm.py's (one place to trust).

A line that is not a request (``null``, ``[]``, JSON nested too deep to read, a request without its fields) is
answered with an error and the worker reads the next; a client that sends no whole line for ``client_idle`` seconds
(``warm.CLIENT_IDLE_S``), or stops reading its replies as long, is let go, so that it cannot hold the worker."""

from __future__ import annotations

import errno
import faulthandler
import fcntl
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

from ragclinic.models import warm
from ragclinic.models.worker import answer
from ragclinic.models.worker import load as load_model

# a request holds a prompt (a 128k-token context is about 1 MB of JSON): a line longer than this is not one
MAX_LINE_BYTES = 64 << 20


class BadRequest(ValueError):
    """A line that is not a request; the client is told why (its error reply) and the worker goes on."""


def serve(listener: socket.socket, model, hello: dict, load: dict, idle: float,
          client_idle: float | None = None) -> None:
    """Serve clients one at a time until none has come for ``idle`` seconds; each may wait ``client_idle`` seconds
    (default ``warm.CLIENT_IDLE_S``) between its requests."""
    client_idle = warm.CLIENT_IDLE_S if client_idle is None else client_idle
    listener.settimeout(idle)
    served = 0
    while True:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            return
        with conn:
            conn.settimeout(client_idle)
            try:
                warm.check_peer(warm.peer_cred(conn)[1])
            except OSError as e:  # PermissionError included
                print(f"ragclinic warm worker: a client refused: {e}", file=sys.stderr, flush=True)
                continue
            _session(conn, model, {**hello, "served": served}, load, client_idle)
            served += 1


class _Lines:
    """A client's lines, each to come whole within ``timeout`` seconds of being waited for: a client that sends
    nothing, or half a line, or a byte at a time, is let go (``TimeoutError``)."""

    def __init__(self, conn: socket.socket, timeout: float) -> None:
        self.conn, self.timeout, self.buf = conn, timeout, bytearray()

    def next(self) -> bytes | None:
        """The next line, without its newline; None when the client has closed its end."""
        deadline, seen = time.monotonic() + self.timeout, 0
        while (end := self.buf.find(b"\n", seen)) < 0:
            seen = len(self.buf)
            if seen > MAX_LINE_BYTES:
                raise BadRequest(f"a request line is longer than {MAX_LINE_BYTES} bytes")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no whole request line within {self.timeout:g} s")
            self.conn.settimeout(left)
            data = self.conn.recv(1 << 16)
            if not data:
                return None
            self.buf += data
        line = bytes(self.buf[:end])
        del self.buf[:end + 1]
        self.conn.settimeout(self.timeout)  # the replies: a client that stops reading them is let go too
        return line


def _parse(line: bytes) -> dict:
    """The request on ``line``; BadRequest, saying what is wrong, for anything else."""
    try:
        req = json.loads(line)
    except RecursionError:  # the C decoder's depth limit: "[[[[…" 100,000 deep
        raise BadRequest("the request is nested too deeply to be one") from None
    except ValueError as e:  # UnicodeDecodeError included
        raise BadRequest(f"the request is not JSON ({e})") from None
    if not isinstance(req, dict) or not isinstance(req.get("op"), str):
        raise BadRequest(f'a request is a JSON object with an "op" string, not {line[:60].decode(errors="replace")!r}')
    return req


def _session(conn: socket.socket, model, hello: dict, load: dict, client_idle: float) -> None:
    """One client's requests, each answered — a bad one with an error — until it quits, goes or falls silent."""
    def send(obj: dict) -> None:
        conn.sendall((json.dumps(obj) + "\n").encode())  # ASCII: json.dumps escapes the rest

    def refuse(e: Exception) -> None:
        send({"ok": False, "error": f"{type(e).__name__}: {e}", "kind": type(e).__name__})

    lines, loaded = _Lines(conn, client_idle), False
    try:
        while (line := lines.next()) is not None:
            try:
                req = _parse(line)
                if req["op"] == "quit":
                    return
                if req["op"] == "load":
                    if {k: req.get(k) for k in ("name", "settings", "options")} != load:
                        raise ValueError("this warm worker serves another model configuration")
                    loaded = True
                    send(hello)
                elif not loaded:
                    raise RuntimeError("no model is loaded; send a load request first")
                else:
                    send({"ok": True, "result": answer(model, req, lambda piece: send({"token": piece}))})
            except OSError:
                raise
            except Exception as e:  # noqa: BLE001 - reported to the client, which raises ModelError
                refuse(e)
    except BadRequest as e:  # a line too long: what follows cannot be read as requests
        try:
            refuse(e)
        except OSError:
            pass
    except OSError as e:  # gone mid-reply, or silent for client_idle (TimeoutError): the next client
        if isinstance(e, TimeoutError):
            print(f"ragclinic warm worker: a client let go: {e}", file=sys.stderr, flush=True)


def _listen(path: Path) -> socket.socket:
    try:
        path.unlink()  # a stale socket: this process holds the lock, so no live worker owns it
    except FileNotFoundError:
        pass
    old = os.umask(0o077)
    try:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    listener.listen(16)
    return listener


def main(argv: list[str] | None = None) -> int:
    args = json.loads((argv or sys.argv)[1])
    path, idle, load = Path(args["socket"]), float(args["idle"]), args["load"]
    client_idle = float(args.get("client_idle", warm.CLIENT_IDLE_S))
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    lock = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES):
            return 0  # another worker serves this socket
        raise
    try:
        os.ftruncate(2, 0)  # the log (stderr, opened for appending) is this worker's
    except OSError:
        pass  # stderr is not a file (started by hand)
    faulthandler.enable(sys.stderr)  # a native crash leaves its Python stack in the log
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the socket is removed on the way out
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    listener = _listen(path)
    ino = os.stat(path).st_ino
    try:
        t0 = time.perf_counter()
        model, backend = load_model(load["name"], load.get("settings", {}), load.get("options", {}))
        hello = {"ok": True, "model_id": model.model_id, "backend": backend, "pid": os.getpid(),
                 "seconds": round(time.perf_counter() - t0, 3), "warm": True}
        print(f"ragclinic warm worker {os.getpid()}: {model.model_id} on {path}, exits after {idle:g} s idle",
              file=sys.stderr, flush=True)
        serve(listener, model, hello, {k: load.get(k) for k in ("name", "settings", "options")}, idle, client_idle)
    finally:
        try:
            if os.stat(path).st_ino == ino:
                path.unlink()
        except OSError:
            pass
        listener.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
