"""Scope filters: which chunks a query may see, resolved to chunk rowids *before* the search.

The resolved set is handed to the indexes as their pre-filter, so a chunk outside the scope is never
scored, never ranked and can never reach the gate — filtering after the search would let it take a
top-k slot and could leak it.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
from dataclasses import dataclass

from ragclinic.errors import ConfigError
from ragclinic.store.db import Database



@dataclass(frozen=True)
class Scope:
    doc_ids: tuple[str, ...] = ()  # document ids, or JSONL record keys
    paths: tuple[str, ...] = ()  # glob patterns over the source path ("*/policies/*.pdf")
    tags: tuple[tuple[str, str], ...] = ()  # tenant, version, authority, any key: all must match
    date_from: dt.date | None = None  # on the "date" tag, else the file's modification date
    date_to: dt.date | None = None

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
    if scope.unrestricted:
        return None
    docs = [d for d, p, k, m, t in db.scope_rows() if scope.matches(d, p, k, m, t)]
    return db.chunk_rowids_of(docs)


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
