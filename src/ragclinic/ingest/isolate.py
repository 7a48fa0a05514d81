"""Parsing and chunking in a child process, so that a file that takes too long can be stopped (``parse_timeout_s``).

Python cannot stop CPU-bound work in a thread: a regex or a pure-Python parser loop holds the interpreter lock and
never returns to the code that could raise, and the main thread cannot even run a signal handler meanwhile — a
900 KB one-token file held a core for over 7 minutes and ignored SIGTERM (issue 32). A process can be killed at
any moment, so the producer thread hands each file to a parse worker (``ingest/parse_worker.py``) and waits at most
``parse_timeout_s`` for each document; on overrun the worker is killed, the file is reported as failed with the
reason, and the next file gets a fresh worker. A native crash in a parser is contained the same way (the file
fails; the ingest goes on).

One worker per ingest at a time, kept after the run for the next one in the same process (a server's uploads):
starting one costs ~0.4 s of imports. It reads nothing from the knowledge base and writes nothing (the bytes come
from the parent, the documents go back through a pipe), holds no descriptor of the parent's (the writer lock stays
with the parent) and dies with the process that started it (Linux ``PR_SET_PDEATHSIG``, else a thread that
watches its parent; see ``ragclinic/children.py``).
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from types import MappingProxyType

from ragclinic.errors import ParseError
from ragclinic.models.process import describe_exit

POLL_S = 0.2  # how often a wait looks at the producer's stop flag
START_S = 120.0  # a worker that has not imported the parsers by then is not going to
IDLE_KEPT = 1  # idle workers kept per process


def read_only(d: dict) -> MappingProxyType:
    return MappingProxyType(d)


def _reduce_mapping(m: MappingProxyType):
    return read_only, (dict(m),)  # the type itself cannot be pickled by name


# Chunks and documents carry read-only metadata mappings, which plain pickle refuses.
ForkingPickler.register(MappingProxyType, _reduce_mapping)

# PR_SET_PDEATHSIG fires when the *thread* that started a child exits, not its process: workers are started
# from this one long-lived thread, since a producer thread ends with its ingest while its worker is kept.
_spawner = ThreadPoolExecutor(1, thread_name_prefix="ragclinic-parse-spawn")
_lock = threading.Lock()
_idle: list["ParseWorker"] = []
_all: "set[ParseWorker]" = set()


class ParseTimeout(ParseError):
    """A file's parsing and chunking overran ``parse_timeout_s``; the worker doing it was killed."""


class ParseWorker:
    """The parent's end of one worker process: ``begin`` a run, then ``events`` per file."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.inbox: Connection | None = None  # worker → parent
        self.outbox: Connection | None = None  # parent → worker
        self.busy = False

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        cmd = [sys.executable, "-m", "ragclinic.ingest.parse_worker", str(to_child), str(from_child),
               str(os.getpid())]
        env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
        try:
            self.proc = _spawner.submit(subprocess.Popen, cmd, pass_fds=(to_child, from_child), env=env,
                                        stdin=subprocess.DEVNULL).result()
        except BaseException:
            os.close(from_parent)
            os.close(to_parent)
            raise
        finally:
            os.close(to_child)
            os.close(from_child)
        self.outbox = Connection(from_parent, readable=False)
        self.inbox = Connection(to_parent, writable=False)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()
            from ragclinic.ingest.parse.ocr_scratch import drop_scratch  # on use: not the parsers at import

            drop_scratch(self.proc.pid)  # the worker's OCR files, now it is gone
        for conn in (self.inbox, self.outbox):
            if conn is not None:
                conn.close()
        self.proc = self.inbox = self.outbox = None
        self.busy = False

    # ------------------------------------------------------------------ work
    def begin(self, settings, known_docs: dict[str, str]) -> None:
        """A new run: the settings and the stored documents' hashes (to skip unchanged text) go to the worker,
        started now if it is not running (OSError when it cannot be)."""
        self._run = (settings, known_docs)
        if not self.alive():
            self.kill()
            self.start()
        self._send_run()

    def _send_run(self) -> None:
        """Send the run and wait until the worker is ready (it has imported the parsers): a worker that
        cannot start is found here, once, not as a failure of every file."""
        try:
            self.outbox.send(("run", *self._run))
            if not self.inbox.poll(START_S):
                raise OSError(f"the parse worker did not answer within {START_S:g} s")
            reply = self.inbox.recv()
        except (EOFError, OSError) as e:
            code = self.proc.poll() if self.proc is not None else None
            self.kill()
            raise OSError(f"the parse worker did not start ({_exit(code) if code is not None else e})") from None
        if reply != ("ready",):
            self.kill()
            raise OSError(f"the parse worker answered {reply!r} to its start")

    def events(self, source, tags: dict[str, str], timeout: float, stop: threading.Event):
        """What ``runner.file_events`` yields for ``source``, computed in the worker; ParseTimeout when one
        document (the whole file, for formats of one document) takes over ``timeout`` seconds — between two pages
        read by OCR, for a scan (each page also bounded by ``ocr_page_seconds``)."""
        if not self.alive():  # the last file's worker was killed (an overrun) or died
            self.kill()
            self.start()
            self._send_run()
        self.busy = True
        try:
            self.outbox.send(("file", source, tags))
        except OSError:  # it died since the last file: the reason is found below, at the end of its pipe
            pass
        deadline = time.monotonic() + timeout
        while True:
            msg = self._next(deadline, timeout, stop)
            if msg is None:  # stopped by the consumer: the work in flight is thrown away
                self.kill()
                return
            if msg[0] == "done":
                self.busy = False
                return
            deadline = time.monotonic() + timeout
            if msg[0] == "beat":  # a page read by OCR: a long scan is working, not hung
                continue
            yield msg[1]

    def _next(self, deadline: float, timeout: float, stop: threading.Event):
        while not self.inbox.poll(POLL_S):
            if stop.is_set():
                return None
            if time.monotonic() > deadline:
                self.kill()
                raise ParseTimeout(f"parsing and chunking took longer than parse_timeout_s={timeout:g} s and was "
                                   f"stopped; split the file, or raise RAGCLINIC_PARSE_TIMEOUT_S")
        try:
            return self.inbox.recv()
        except (EOFError, OSError):
            code = self.proc.wait() if self.proc is not None else None
            self.kill()
            raise ParseError(f"the parser process died on this file ({_exit(code)}); the other files go on") from None


def _exit(code: int | None) -> str:
    return describe_exit(code)


def take() -> ParseWorker:
    """An idle worker of this process, or a new one (started on first use)."""
    with _lock:
        while _idle:
            w = _idle.pop()
            if w.alive():
                return w
            w.kill()
        w = ParseWorker()
        _all.add(w)
        return w


def give_back(w: ParseWorker) -> None:
    """Keep ``w`` for the next ingest when it is alive and idle, else end it."""
    with _lock:
        if w.alive() and not w.busy and len(_idle) < IDLE_KEPT:
            _idle.append(w)
            return
        _all.discard(w)
    w.kill()


@atexit.register
def close_all() -> None:
    """End every worker of this process (idle or not)."""
    with _lock:
        workers = list(_all)
        _all.clear()
        _idle.clear()
    for w in workers:
        w.kill()
