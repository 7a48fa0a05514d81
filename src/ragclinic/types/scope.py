"""The scope a question may search: document ids, path globs, tags and a date range (``--scope key=value``).

pipeline/retrieve/filters.py resolves it to chunk rows before the search."""

from __future__ import annotations

import datetime as dt
import fnmatch
from dataclasses import dataclass

from ragclinic.errors import ConfigError


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
