"""Pictures the server draws on request — a source page beside a passage read by OCR (ui_scans.py), the health
plot (ui_health.py) — bounded three ways, so that one request (a 30000 × 30000 pt PDF page) or a flood of them
cannot take the server's memory: the drawing function bounds its own pixels (page_image.py: at most
``MAX_SIDE`` a side, a picture over ``MAX_PIXELS`` refused); at most ``at_once`` are drawn at a time (one more
waits up to ``wait_s``, then gets 429 with Retry-After); and what was drawn is kept in a small cache (LRU,
``cache_bytes`` in all, by what it was drawn from), so asking for the same picture again draws nothing."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

from ragclinic.server.errors import busy

RETRY_AFTER_S = 2


class Renders:
    def __init__(self, at_once: int = 2, cache_bytes: int = 32 << 20, wait_s: float = 2.0) -> None:
        self.at_once, self.cache_bytes, self.wait_s = at_once, cache_bytes, wait_s
        self._slots = threading.BoundedSemaphore(at_once)
        self._cache: OrderedDict[Hashable, bytes] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()
        self.drawn = 0  # pictures drawn (not taken from the cache): for tests and the bench

    def get(self, key: Hashable, draw: Callable[[], bytes | None]) -> bytes | None:
        """The picture for ``key``: from the cache, else ``draw()`` in one of the slots (None is not kept)."""
        if (hit := self._cached(key)) is not None:
            return hit
        if not self._slots.acquire(timeout=self.wait_s):
            raise busy("drawing pictures", RETRY_AFTER_S, f"{self.at_once} at once")
        try:
            if (hit := self._cached(key)) is not None:  # drawn by the request this one waited for
                return hit
            out = draw()
            self.drawn += 1
        finally:
            self._slots.release()
        if out is not None:
            self._keep(key, out)
        return out

    def _cached(self, key: Hashable) -> bytes | None:
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
            return hit

    def _keep(self, key: Hashable, data: bytes) -> None:
        if len(data) > self.cache_bytes // 4:
            return  # one picture may not push out most of the others
        with self._lock:
            if key in self._cache:
                return
            self._cache[key] = data
            self._held += len(data)
            while self._held > self.cache_bytes:
                _, old = self._cache.popitem(last=False)
                self._held -= len(old)
