"""A knowledge base: a folder holding settings.toml, the SQLite store and the derived indexes.

SQLite is the single source of truth. The lexical and dense indexes are stamped with the KB version
they reflect and caught up from SQLite's change log (or rebuilt) when they are stale. The embedder is handed in
(ragclinic/wiring.py builds it from the settings); the vector index comes from the VECTOR_INDEXES registry.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from typing import Any

from ragclinic.config import LEGACY_VALUES, SETTINGS_FILE, Settings, write_settings_file
from ragclinic.errors import ConfigError, KnowledgeBaseLocked, StoreError
from ragclinic.models.embedder import Embedder
from ragclinic.models.factory import create_embedder
from ragclinic.store import exact as _exact  # noqa: F401  (registers the "exact" vector index)
from ragclinic.store.db import Database
from ragclinic.store.hnsw import HnswIndex
from ragclinic.store.lexical import TantivyIndex
from ragclinic.store.vector_index import VECTOR_INDEXES
from ragclinic.text.analyzer import analyze_to_string

DB_FILE = "kb.sqlite3"
log = logging.getLogger(__name__)


EmbedderFactory = Callable[[Settings], "Embedder | None"]


class KnowledgeBase:
    def __init__(self, settings: Settings, db: Database, embedder: EmbedderFactory | None = None) -> None:
        """``embedder``: builds the embedder from the settings on first use (default: the registry's by the
        ``embedder`` setting; the wiring hands in its own)."""
        self.settings = settings
        self._make_embedder = embedder or (lambda s: create_embedder(s.embedder))
        self.folder = settings.kb
        self.db = db
        self._lock_fd: int | None = None
        self._embedder: Embedder | None = None
        self._embedder_loaded = False
        self._lexical: TantivyIndex | None = None
        self._lexical_read = -1  # the KB version the lexical searcher was last reloaded at (lexical_current)
        self._dense = None
        self._dense_version = -1
        self.repaired: list[str] = []  # derived indexes found damaged on open and rebuilt from SQLite

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, settings: Settings, *, create: bool = False, sync_indexes: bool = True,
             embedder: EmbedderFactory | None = None) -> "KnowledgeBase":
        folder = settings.kb
        db_path = folder / DB_FILE
        if not db_path.exists():
            if not create:
                raise StoreError(f"no knowledge base at {folder}: run `ragclinic ingest PATH --kb {folder}` first")
            folder.mkdir(parents=True, exist_ok=True)
        kb = cls(settings, Database(db_path), embedder)
        kb._check_defining(created=kb.db.meta("kb_settings") is None)
        if sync_indexes and kb.try_lock():
            try:
                kb.sync_indexes()
            finally:
                kb.unlock()
        return kb

    def _check_defining(self, created: bool) -> None:
        wanted = self.settings.kb_defining()
        if created:
            # The file first: a crash before the row is written just repeats this on the next open.
            write_settings_file(self.folder / SETTINGS_FILE, wanted)
            with self.db.transaction():
                self.db.set_meta("kb_settings", json.dumps(wanted))
            return
        stored = json.loads(self.db.meta("kb_settings") or "{}")
        # a setting that became KB-defining after this KB was made: record the behaviour it was built with
        missing = {k: LEGACY_VALUES.get(k, v) for k, v in wanted.items() if k not in stored}
        if missing:
            with self.db.transaction():
                self.db.set_meta("kb_settings", json.dumps({**stored, **missing}))
            write_settings_file(self.folder / SETTINGS_FILE, missing)
            # the KB was built that way: run with what it holds (later opens read it from settings.toml)
            self.settings = self.settings.model_copy(update=missing)
            stored = {**stored, **missing}
            wanted = {**wanted, **missing}
        bad = {k: (stored[k], wanted[k]) for k in stored if k in wanted and stored[k] != wanted[k]}
        if bad:
            k, (was, now) = next(iter(bad.items()))
            raise ConfigError(
                f"knowledge base {self.folder} was built with {k}={was!r}, but {k}={now!r} was asked for; "
                f"drop the override (flag or RAGCLINIC_{k.upper()}) or ingest into a new --kb folder")

    # ------------------------------------------------------------------ write lock
    def try_lock(self) -> bool:
        fd = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._lock_fd = fd
        return True

    def lock(self) -> None:
        if not self.try_lock():
            raise KnowledgeBaseLocked(f"another ragclinic process is writing to {self.folder}; wait for it to finish")

    def unlock(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    # ------------------------------------------------------------------ models
    @property
    def embedder(self) -> Embedder | None:
        if not self._embedder_loaded:
            self._embedder = self._make_embedder(self.settings)
            self._embedder_loaded = True
        return self._embedder

    # ------------------------------------------------------------------ derived indexes
    def lexical(self) -> TantivyIndex:
        if self._lexical is None:
            try:
                self._lexical = TantivyIndex(self.folder / "lexical")
            except StoreError:
                self._lexical = self._rebuilt_lexical()
        return self._lexical

    def lexical_current(self) -> TantivyIndex:
        """The lexical index for reading, as of the knowledge base's last committed version: a clinic that does not
        sync (the server's readers) reloads its searcher once per new version. tantivy reloads by itself only after
        a delay, so a search right after another clinic's upload missed the new documents, and a replay of an
        answer given meanwhile retrieved something else (issue 32)."""
        ix = self.lexical()
        version = self.db.version
        if version != self._lexical_read:
            ix.reload()
            self._lexical_read = version
        return ix

    def _rebuilt_lexical(self) -> TantivyIndex:
        """The lexical index would not open (a damaged or half-deleted file): set it aside and start a new one,
        which the sync fills from SQLite — only when no other process is writing (it may be mid-commit)."""
        held = self._lock_fd is not None
        if not held and not self.try_lock():
            raise StoreError(f"the lexical index at {self.folder / 'lexical'} cannot be opened while another "
                             f"process writes to the knowledge base; retry when it has finished")
        try:
            aside = self.folder / f"lexical.damaged-{int(time.time())}"
            (self.folder / "lexical").rename(aside)
            log.warning("the lexical index of %s was damaged: moved to %s and rebuilt from the database",
                        self.folder, aside.name)
            self.repaired.append(f"lexical index damaged: moved to {aside.name}, rebuilt from the database")
            return TantivyIndex(self.folder / "lexical")
        finally:
            if not held:
                self.unlock()

    def sync_indexes(self) -> dict[str, str]:
        """Bring every derived index to the current KB version; returns what was done per index."""
        done = {"lexical": self._sync_lexical()}
        if self.settings.embedder != "none":
            done["dense"] = self._sync_hnsw()
        version = self.db.version
        if self.db.oldest_change_version() is not None:
            self.db.prune_changes(version)
        return done

    def _stale_action(self, stamp: int | None) -> str:
        version = self.db.version
        if stamp == version:
            return "fresh"
        if stamp is None or stamp > version or stamp < self.db.pruned_upto():
            return "rebuild"
        return "catch-up"

    def _sync_lexical(self) -> str:
        ix = self.lexical()
        action = self._stale_action(ix.stamp())
        stem = self.settings.lexical_stem
        if action == "rebuild":
            ix.clear()
            ix.add((rid, analyze_to_string(text, stem))
                   for rid, text in self.db.iter_index_texts(self.settings.chunk_context,
                                                          plain=self.settings.index_plain))
        elif action == "catch-up":
            adds, dels = _net_changes(self.db.changes_since(ix.stamp() or 0))
            ix.remove(sorted(dels))
            ix.add((rid, analyze_to_string(text, stem))
                   for rid, text in self.db.iter_index_texts(self.settings.chunk_context, sorted(adds),
                                                          plain=self.settings.index_plain))
        if action != "fresh":
            ix.commit()
            ix.set_stamp(self.db.version)
        return action

    def _uses_hnsw(self) -> bool:
        return self.db.stats()["chunks"] > self.settings.dense_exact_max

    def _sync_hnsw(self, save: bool = True) -> str:
        folder = self.folder / "dense"
        if not self._uses_hnsw():
            shutil.rmtree(folder, ignore_errors=True)
            return "exact"
        s = self.settings
        dim = self.embedder.dim
        loaded = HnswIndex.load(folder, dim, s.hnsw_m, s.hnsw_ef_construction, s.hnsw_ef_search, scan_deleted=False)
        stamp = loaded[1] if loaded else None
        action = self._stale_action(stamp)
        if action == "rebuild":
            ix = VECTOR_INDEXES.create("hnsw", dim, s)
            ids, vecs = self.db.embeddings(dim)
            ix.add(ids, vecs)
        else:
            ix = loaded[0]
            current = self.db.embedded_rowids()
            if action == "fresh":
                ix.set_live(current)
            else:
                adds, dels = _net_changes(self.db.changes_since(stamp))
                ix.set_live((current - adds) | dels)  # what the file held at its stamp
                ix.remove(dels)
                ids, vecs = self.db.embeddings(dim, sorted(adds))
                ix.add(ids, vecs)
        if action != "fresh" and save:
            ix.save(folder, self.db.version)
        self._dense, self._dense_version = ix, self.db.version
        return action

    def dense(self):
        """The dense index for the current KB version (exact below ``dense_exact_max`` chunks, else HNSW)."""
        if self.embedder is None:
            raise ConfigError(f"knowledge base {self.folder} has no dense index (embedder='none')")
        if self._dense is not None and self._dense_version == self.db.version:
            return self._dense
        if self._uses_hnsw():
            # Only a lock holder may replace the file; a reader catches up in memory.
            self._sync_hnsw(save=self._lock_fd is not None)
        else:
            ix = VECTOR_INDEXES.create("exact", self.embedder.dim, self.settings)
            ids, vecs = self.db.embeddings(self.embedder.dim)
            ix.add(ids, vecs)
            self._dense, self._dense_version = ix, self.db.version
        return self._dense

    # ------------------------------------------------------------------ info
    def stats(self) -> dict[str, Any]:
        return self.db.stats()

    def close(self) -> None:
        self.unlock()
        self.db.close()


def _net_changes(changes: list[tuple[int, str, int]]) -> tuple[set[int], set[int]]:
    """Collapse a change log into the rows to add and the rows to delete (the last op per row wins)."""
    last: dict[int, str] = {}
    for _, op, rid in changes:
        last[rid] = op
    adds = {r for r, op in last.items() if op == "add"}
    dels = {r for r, op in last.items() if op == "del"}
    return adds, dels
