"""Clinics for concurrent requests: one language model shared by all (its calls queued, the queue depth a
gauge, a queued call dropped when its client has gone), a few reader clinics for questions and one for
searches and reads (each with its own SQLite connection: a read never waits for an ingest, nor a search for a
question, and each sees the last committed version), one for the background repairs (made when the first is
queued), one writer for ingest."""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ragclinic import cancel
from ragclinic.clinic import Clinic
from ragclinic.config import Settings
from ragclinic.errors import StoreError
from ragclinic.models.llm import Completion, Message, TokenCallback, call_extras
from ragclinic.server.uploads import clean_stale, sources_under

# set by a request whose client disconnected: its model calls not yet started are dropped, the one running stops
# between tokens, and the pipeline stops before its next layer (ragclinic/cancel.py)
CANCELLED = cancel.CURRENT
# set in the background repair's thread (server/repairs.py): its model calls wait while a question's are waiting
BACKGROUND: contextvars.ContextVar[bool] = contextvars.ContextVar("ragclinic_background", default=False)


ClientGone = cancel.Withdrawn  # the request's client disconnected: its work was stopped


class QueuedModel:
    """The shared model: one call at a time, in arrival order, except that a background call (BACKGROUND) lets
    every question's call that is waiting go first; waiting calls counted (``depth``)."""

    def __init__(self, lm, gauge=None) -> None:
        self.lm, self.gauge = lm, gauge
        self.model_id = lm.model_id
        self._turn = threading.Lock()
        self._depth = 0
        self._foreground = 0  # questions' calls waiting or running
        self._count = threading.Lock()

    @property
    def depth(self) -> int:
        return self._depth

    @contextmanager
    def _queued(self) -> Iterator[None]:
        background = BACKGROUND.get()
        self._add(1, 0 if background else 1)
        try:
            gone = CANCELLED.get()
            while not self._take(background):
                if gone is not None and gone.is_set():
                    raise ClientGone("the client disconnected: its queued model call was dropped")
            try:
                if gone is not None and gone.is_set():
                    raise ClientGone("the client disconnected: its queued model call was dropped")
                yield
            finally:
                self._turn.release()
        finally:
            self._add(-1, 0 if background else -1)

    def _take(self, background: bool) -> bool:
        """The model's turn (False after a short wait): a background call takes it only while no question's call
        waits, and gives it back at once when one came in as it took it."""
        if not background:
            return self._turn.acquire(timeout=0.1)
        if self._foreground:
            time.sleep(0.05)
            return False
        if not self._turn.acquire(timeout=0.1):
            return False
        if self._foreground:
            self._turn.release()
            return False
        return True

    def _add(self, n: int, foreground: int) -> None:
        with self._count:
            self._depth += n
            self._foreground += foreground
            if self.gauge is not None:
                self.gauge.set(self._depth)

    def chat(self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0,
             on_token: TokenCallback | None = None, schema: dict | None = None,
             hidden_layers: Sequence[int] = (), logprobs: bool = False) -> Completion:
        with self._queued():
            return self.lm.chat(messages, max_tokens=max_tokens, temperature=temperature, on_token=on_token,
                                schema=schema, **call_extras(hidden_layers, logprobs))

    def next_token_probs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        with self._queued():
            return self.lm.next_token_probs(messages, candidates)

    def count_tokens(self, text: str) -> int:
        counter = getattr(self.lm, "count_tokens", None)
        return counter(text) if counter else len(text.split())


class ClinicPool:
    def __init__(self, settings: Settings, *, readers: int = 2, model=None, gauge=None, on_warning=None) -> None:
        self.settings = settings
        base = Clinic(settings, model=model, on_warning=on_warning) if model is not None else Clinic(
            settings, on_warning=on_warning)
        lm = base.lm
        self.model_flags = base.model_flags
        self.model = QueuedModel(lm, gauge) if lm is not None else None
        self._all: list[Clinic] = []
        self._free = self._make(max(1, readers), on_warning)  # questions (they wait for the model)
        self._search = self._make(1, on_warning)  # searches and reads: never queued behind a question
        self.writer = Clinic(settings, model=self.model, on_warning=on_warning, sync_indexes=False)
        self._bg: "queue.Queue[Clinic] | None" = None  # background repairs' clinic, made on first use
        self._bg_lock = threading.Lock()
        self._on_warning = on_warning
        self._write = threading.Lock()
        self.stale_uploads = self._clean_uploads()

    def _clean_uploads(self) -> list:
        """What killed uploads left under KB/uploads (server/uploads.py), removed as the server starts."""
        root = (self.settings.kb / "uploads").resolve()
        if not root.is_dir():
            return []
        try:
            sources = sources_under(self.writer.kb.db, root)
        except StoreError:  # no knowledge base: no document points anywhere
            sources = set()
        return clean_stale(self.settings.kb, sources)

    def _make(self, n: int, on_warning) -> "queue.Queue[Clinic]":
        free: queue.Queue[Clinic] = queue.Queue()
        for _ in range(n):
            c = Clinic(self.settings, model=self.model, on_warning=on_warning, sync_indexes=False)
            self._all.append(c)
            free.put(c)
        return free

    @contextmanager
    def reader(self) -> Iterator[Clinic]:
        """A clinic for a question (it may wait for the shared model)."""
        c = self._free.get()
        try:
            yield c
        finally:
            self._free.put(c)

    @contextmanager
    def background(self) -> Iterator[Clinic]:
        """The clinic of the background repairs (server/repairs.py: one worker): made on first use, so a repair
        never holds a reader that a question is waiting for."""
        with self._bg_lock:
            if self._bg is None:
                self._bg = self._make(1, self._on_warning)
            c = self._bg.get()
        try:
            yield c
        finally:
            self._bg.put(c)

    @contextmanager
    def searcher(self) -> Iterator[Clinic]:
        """A clinic for a search or a read (traces, pages): no model call, so never behind a question."""
        c = self._search.get()
        try:
            yield c
        finally:
            self._search.put(c)

    @contextmanager
    def writing(self) -> Iterator[Clinic]:
        with self._write:
            yield self.writer

    def close(self) -> None:
        for c in self._all + [self.writer]:
            c.close()
