"""Scope filters: which chunks a query may see, resolved to chunk rowids *before* the search.

The resolved set is handed to the indexes as their pre-filter, so a chunk outside the scope is never
scored, never ranked and can never reach the gate — filtering after the search would let it take a
top-k slot and could leak it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ragclinic.pipeline.retrieve.versions import superseded
from ragclinic.store.db import Database
from ragclinic.types import Scope


def allowed_rowids(db: Database, scope: Scope) -> set[int] | None:
    """The chunk rows inside ``scope``; None when the scope restricts nothing (search everything)."""
    return resolve(db, scope, newest_only=False).allowed


@dataclass(frozen=True)
class Resolution:
    """What a query may search: chunk rows (None = everything) and the documents the policies excluded."""

    allowed: set[int] | None
    docs_in_scope: int | None  # None when unrestricted and nothing was excluded
    excluded: dict[str, str]  # doc_id → reason ("version 1 is superseded by version 2 (handbook)")


_SUPERSEDED_CACHE: dict[tuple[str, int], dict[str, str]] = {}


def resolve(db: Database, scope: Scope, newest_only: bool = True) -> Resolution:
    """Filters first, then the newest-version policy over what the filters let through."""
    sup = _superseded(db) if newest_only else {}
    if scope.unrestricted and not sup:
        return Resolution(None, None, {})
    rows = db.scope_rows(scope.tags, scope.doc_ids)  # exact fields narrowed in SQL, the rest checked here
    docs = [d for d, p, k, m, t in rows if scope.matches(d, p, k, m, t)]
    if newest_only and not scope.unrestricted:
        # policies judge only what the filters admitted: --scope version=1 keeps version 1
        titles = db.doc_infos(docs)
        sup = superseded([(d, titles[d].title, titles[d].tags) for d in docs if d in titles])
    kept = [d for d in docs if d not in sup]
    return Resolution(db.chunk_rowids_of(kept), len(kept), {d: sup[d] for d in docs if d in sup})


def _superseded(db: Database) -> dict[str, str]:
    key = (str(db.path), db.version)
    if key not in _SUPERSEDED_CACHE:
        rows = db.conn.execute("SELECT doc_id, title, tags FROM documents WHERE tags LIKE '%\"version\"%'")
        if len(_SUPERSEDED_CACHE) > 32:
            _SUPERSEDED_CACHE.clear()
        _SUPERSEDED_CACHE[key] = superseded([(d, t, json.loads(tags)) for d, t, tags in rows])
    return _SUPERSEDED_CACHE[key]
