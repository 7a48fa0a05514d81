"""Scope filters: which chunks a query may see, resolved to chunk rowids *before* the search.

The resolved set is handed to the indexes as their pre-filter, so a chunk outside the scope is never
scored, never ranked and can never reach the gate — filtering after the search would let it take a
top-k slot and could leak it.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
from dataclasses import dataclass

from ragclinic.errors import ConfigError
from ragclinic.pipeline.scope.policies import superseded
from ragclinic.store.db import Database


@dataclass(frozen=True)
class Scope:
    doc_ids: tuple[str, ...] = ()  # document ids, or JSONL record keys
    paths: tuple[str, ...] = ()  # glob patterns over the source path ("*/policies/*.pdf")
    tags: tuple[tuple[str, str], ...] = ()  # tenant, version, authority, any key: all must match
    date_from: dt.date | None = None  # on the "date" tag, else the file's modification date
    date_to: dt.date | None = None

    def require(self, pairs: tuple[tuple[str, str], ...]) -> "Scope":
        """This scope and these tags too (a server key's tenant): a request that names another value of the
        same key then matches nothing, as if those documents did not exist."""
        return Scope(self.doc_ids, self.paths, tuple(sorted(set(self.tags) | set(pairs))), self.date_from,
                     self.date_to) if pairs else self

    @property
    def unrestricted(self) -> bool:
        return not (self.doc_ids or self.paths or self.tags or self.date_from or self.date_to)

    @classmethod
    def parse(cls, pairs: dict[str, str]) -> "Scope":
        """From ``--scope key=value`` pairs: doc, path, from, to (YYYY-MM-DD); any other key is a tag."""
        docs, paths, tags = [], [], []
        date_from = date_to = None
        for key, value in pairs.items():
            if key == "doc":
                docs.append(value)
            elif key == "path":
                paths.append(value)
            elif key in ("from", "to"):
                day = _date(value, f"--scope {key}={value}")
                date_from, date_to = (day, date_to) if key == "from" else (date_from, day)
            else:
                tags.append((key, value))
        return cls(tuple(docs), tuple(paths), tuple(sorted(tags)), date_from, date_to)

    def matches(self, doc_id: str, path: str, record_key: str, mtime: float, tags: dict[str, str]) -> bool:
        if self.doc_ids and doc_id not in self.doc_ids and record_key not in self.doc_ids:
            return False
        if self.paths and not any(fnmatch.fnmatch(path, p) for p in self.paths):
            return False
        if any(tags.get(k) != v for k, v in self.tags):
            return False
        if self.date_from or self.date_to:
            day = _doc_date(tags, mtime)
            if day is None or (self.date_from and day < self.date_from) or (self.date_to and day > self.date_to):
                return False
        return True


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


def _date(value: str, where: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        raise ConfigError(f"{where}: {value!r} is not a date; use YYYY-MM-DD") from None


def _doc_date(tags: dict[str, str], mtime: float) -> dt.date | None:
    if "date" in tags:
        try:
            return dt.date.fromisoformat(tags["date"][:10])
        except ValueError:
            return None  # a malformed date tag matches no date range rather than a wrong one
    return dt.datetime.fromtimestamp(mtime, dt.timezone.utc).date()
