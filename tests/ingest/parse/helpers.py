"""Shared helpers for the parse tests: read a file into a SourceFile, parse it, check offsets."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ragclinic.config import Settings
from ragclinic.ingest.parse import parse_source
from ragclinic.ingest.parse.base import markdown_table
from ragclinic.types import Parsed, ParsedDocument, RecordError, SourceFile


def source_of(path: Path) -> SourceFile:
    path = Path(path).resolve()
    data = path.read_bytes()
    return SourceFile(path, data, hashlib.sha256(data).hexdigest(), path.stat().st_mtime, len(data))


def parse_all(path: Path, settings: Settings | None = None) -> list[Parsed | RecordError]:
    return list(parse_source(source_of(path), settings or Settings()))


def parse_one(path: Path, settings: Settings | None = None) -> Parsed:
    results = parse_all(path, settings)
    assert len(results) == 1 and isinstance(results[0], Parsed), results
    return results[0]


def assert_spans_valid(doc: ParsedDocument) -> None:
    """The offset contract every parser must keep."""
    n = len(doc.text)
    for s in doc.sections:
        assert 0 <= s.start < s.end <= n, s
        assert doc.text[s.start:s.end].startswith(s.path[-1]), (s, doc.text[s.start:s.start + 40])
        assert len(s.path) >= 1 and s.level >= 1
    for t in doc.tables:
        assert 0 <= t.start < t.end <= n, t
        assert doc.text[t.start:t.end] == markdown_table(t.rows)
    if doc.pages:
        assert doc.pages[0].start == 0 and doc.pages[-1].end == n
        for a, b in zip(doc.pages, doc.pages[1:]):
            assert a.end == b.start and a.start <= a.end and b.number == a.number + 1
    assert doc.text == doc.text.strip()
