"""Questions being answered (issue 51): at most ``max_concurrent_asks_per_key`` for one key (or one address,
without keys) and ``max_concurrent_asks`` in all — one more gets 429 with Retry-After before any work starts —
run on a pool of that many threads (never a thread per request). A question's slot is held while its work
runs, not while its response is read: a client that leaves frees it as soon as the work stops (between layers,
or at the model's next token: ragclinic/cancel.py)."""

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
WATCH_S = 0.25  # how often a question answered as one JSON object looks whether its client is still there


class Asks:
    def __init__(self, overall: int, per_key: int) -> None:
        self.overall, self.per_key = overall, per_key
        self.pool = ThreadPoolExecutor(max_workers=overall, thread_name_prefix="ragclinic-ask")
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
            return self.pool.submit(run)
        except RuntimeError:  # the server is stopping
            self.release(holder)
            raise

    async def answer(self, holder: str, is_disconnected: Callable[[], Any], fn: Callable[[], Any]) -> Any:
        """``fn()`` for a request answered with one JSON object (slot taken): its client watched meanwhile, and
        the work stopped when it leaves."""
        gone = threading.Event()
        future = asyncio.wrap_future(self.submit(holder, gone, fn))
        try:
            while True:
                done, _ = await asyncio.wait({future}, timeout=WATCH_S)
                if done:
                    return future.result()
                if await is_disconnected():
                    gone.set()
        finally:
            gone.set()  # however this ends (the client gone, the response cancelled): nothing more for it

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def holder_of(request, who) -> str:
    """Whose slots a request takes: its key's, else (keyless mode) its address's."""
    return f"key:{who.key_id}" if who.key_id else f"address:{client_address(request)}"
