"""What the model service's private worker (service.py) and the warm worker's client (warm.py) share about a
worker process: the environment it starts with, how its end is described, and the threads that read its output."""

from __future__ import annotations

import os
import queue
import signal
from collections import deque

EOF = object()  # put on a worker's reply queue when its output ends


def describe_exit(code: int | None) -> str:
    """``-11`` → "SIGSEGV"; a plain exit code → "exit code 3"."""
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return name + (" (killed: out of memory, or by another process)" if -code == signal.SIGKILL else "")
    return f"exit code {code}"


def worker_env() -> dict:
    """The environment a worker process starts with."""
    env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    for var in ("GGML_BACKEND_PATH", "LLAMA_CPP_LIB_PATH", "LD_PRELOAD"):
        env.pop(var, None)  # each could bring in a llama.cpp / ggml build other than ragclinic's
    return env


def pump(stream, replies: "queue.Queue") -> None:
    """Each line of ``stream`` onto ``replies``, then EOF."""
    try:
        for line in stream:
            replies.put(line)
    except (OSError, ValueError):
        pass
    replies.put(EOF)


def drain(stream, tail: deque) -> None:
    """Keep the last lines of ``stream`` (a worker's stderr, for the crash report)."""
    try:
        for line in stream:
            tail.append(line.rstrip("\n"))
    except (OSError, ValueError):
        pass
