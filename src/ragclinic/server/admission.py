"""Questions being answered (issue 51): at most ``max_concurrent_asks_per_key`` for one key (or one address,
without keys) and ``max_concurrent_asks`` in all — one more gets 429 with Retry-After before any work starts —
run on a pool of that many threads (never a thread per request). A question's slot is held while its work
runs, not while its response is read: a stream's client that leaves frees it as soon as the work stops (between
layers, or at the model's next token: ragclinic/cancel.py)."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ragclinic import cancel
from ragclinic.server.errors import busy
from ragclinic.server.sessions import client_address

RETRY_AFTER_S = 2


class Asks:
    def __init__(self, overall: int, per_key: int) -> None:
        self.overall, self.per_key = overall, per_key
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._by: Counter[str] = Counter()
        self.running = 0

    def admit(self, holder: str) -> None:
        """Take a slot for ``holder`` (a key's id or an address), or raise 429 (``errors.busy``)."""
        with self._lock:
            if self._by[holder] >= self.per_key:
                raise busy(f"{self.per_key} questions of this key", RETRY_AFTER_S, "max_concurrent_asks_per_key")
            if self.running >= self.overall:
                raise busy(f"{self.overall} questions", RETRY_AFTER_S, "max_concurrent_asks")
            self._by[holder] += 1
            self.running += 1

    def release(self, holder: str) -> None:
        with self._lock:
            self._by[holder] -= 1
            if self._by[holder] <= 0:
                del self._by[holder]
            self.running -= 1

    def submit(self, holder: str, gone: threading.Event, fn: Callable[[], Any]) -> Future:
        """``fn()`` on the pool, with ``gone`` as its request's cancel event; the slot (taken) is freed after it."""
        def run() -> Any:
            cancel.CURRENT.set(gone)
            try:
                return fn()
            finally:
                self.release(holder)

        try:
            return self._executor().submit(run)
        except RuntimeError:  # the server is stopping
            self.release(holder)
            raise

    def _executor(self) -> ThreadPoolExecutor:
        """The pool, started on first use — again after ``close`` when the same app is served once more (a
        second lifespan: tests, an embedding host that restarts it)."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.overall, thread_name_prefix="ragclinic-ask")
            return self._pool

    async def answer(self, holder: str, fn: Callable[[], Any]) -> Any:
        """``fn()`` for a request answered with one JSON object (slot taken). Its client is not watched: through
        the server's middleware a dropped connection is not seen before the response (a known limit, docs/server.md);
        only a stream's client that leaves stops its work."""
        return await asyncio.wrap_future(self.submit(holder, threading.Event(), fn))

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def holder_of(request, who) -> str:
    """Whose slots a request takes: its key's, else (keyless mode) its address's."""
    return f"key:{who.key_id}" if who.key_id else f"address:{client_address(request)}"
