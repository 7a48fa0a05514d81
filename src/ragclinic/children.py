"""Child processes that die with their parent, whatever kills it (``kill -9`` included): the command's child
under the supervisor (``cli/entry.py``) and the ingest's parse worker (``ingest/isolate.py``). An orphan would go
on ingesting at full CPU, hold the knowledge base's writer lock or a server's port (issue 32)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time


def die_with_parent(parent: int) -> None:
    """End this process with SIGKILL when ``parent`` dies, whatever kills it (``kill -9`` included)."""
    if not _pdeathsig(signal.SIGKILL):
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="ragclinic-parent-watch").start()
    if os.getppid() != parent:  # it died before the request above took effect
        os._exit(128 + signal.SIGKILL)


def _pdeathsig(sig: int) -> bool:
    """Linux's PR_SET_PDEATHSIG for this process; False where it is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(1, int(sig), 0, 0, 0) == 0  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int, every: float = 0.5) -> None:
    while os.getppid() == parent:
        time.sleep(every)
    os._exit(128 + signal.SIGKILL)
