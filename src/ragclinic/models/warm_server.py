"""The warm worker's side (models/warm.py is the client's): started by a client as ``python -m
ragclinic.models.warm_server``, it holds the lock, listens on the socket and serves worker.py's JSON lines to one
client at a time until none has come for its idle seconds. The peer checks are warm.py's (one place to trust)."""

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


def serve(listener: socket.socket, model, hello: dict, load: dict, idle: float) -> None:
    """Serve clients one at a time until none has come for ``idle`` seconds."""
    listener.settimeout(idle)
    served = 0
    while True:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            return
        with conn:
            conn.settimeout(None)
            try:
                warm.check_peer(warm.peer_cred(conn)[1])
            except OSError as e:  # PermissionError included
                print(f"ragclinic warm worker: a client refused: {e}", file=sys.stderr, flush=True)
                continue
            _session(conn, model, {**hello, "served": served}, load)
            served += 1


def _session(conn: socket.socket, model, hello: dict, load: dict) -> None:
    rf = conn.makefile("r", encoding="utf-8", newline="\n")
    wf = conn.makefile("w", encoding="utf-8", newline="\n")

    def send(obj: dict) -> None:
        wf.write(json.dumps(obj) + "\n")
        wf.flush()

    loaded = False
    try:
        for line in rf:
            req = json.loads(line)
            op = req.get("op")
            if op == "quit":
                return
            try:
                if op == "load":
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
                send({"ok": False, "error": f"{type(e).__name__}: {e}", "kind": type(e).__name__})
    except (OSError, ValueError):
        pass  # the client went away mid-reply (or sent garbage): the next one
    finally:
        for f in (wf, rf):
            try:
                f.close()
            except (OSError, ValueError):
                pass


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
        serve(listener, model, hello, {k: load.get(k) for k in ("name", "settings", "options")}, idle)
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
