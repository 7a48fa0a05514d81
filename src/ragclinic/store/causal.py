"""Stored cause → effect links (issue 17 §3; text/causal.py extracts them): one row per link, with its chunk, written
in the same transaction as the document's chunks and deleted with them. Only in a knowledge base ingested with
``--causal`` (the ``causal_links`` meta flag; every later ingest keeps extracting). The links of every tenant share
the table: a question reads those of the chunks its scope admits (``links_in``, reason/causal.py)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Sequence

from ragclinic.text.causal import extract

SCHEMA = """
CREATE TABLE IF NOT EXISTS causal_links (
  doc_id TEXT NOT NULL, chunk_id TEXT NOT NULL, cause TEXT NOT NULL, effect TEXT NOT NULL, cue TEXT NOT NULL,
  hedged INTEGER NOT NULL, sentence TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS causal_links_doc ON causal_links(doc_id);
CREATE INDEX IF NOT EXISTS causal_links_chunk ON causal_links(chunk_id);
"""


def write_links(conn: sqlite3.Connection, doc_id: str, chunks: Sequence) -> int:
    conn.execute("DELETE FROM causal_links WHERE doc_id = ?", [doc_id])
    rows = [(doc_id, c.id, link.cause, link.effect, link.cue, int(link.hedged), link.sentence)
            for c in chunks for link in extract(c.text)]
    conn.executemany("INSERT INTO causal_links VALUES (?,?,?,?,?,?,?)", rows)
    return len(rows)


def drop_links(conn: sqlite3.Connection, doc_ids: Sequence[str]) -> None:
    conn.executemany("DELETE FROM causal_links WHERE doc_id = ?", [[d] for d in doc_ids])


def links_of(conn: sqlite3.Connection, chunk_ids: Sequence[str] | None = None) -> list[dict]:
    """The links (of ``chunk_ids`` when given): cause, effect, cue, hedged, sentence, chunk_id, doc_id."""
    sql = "SELECT doc_id, chunk_id, cause, effect, cue, hedged, sentence FROM causal_links"
    args: list = []
    if chunk_ids is not None:
        if not chunk_ids:
            return []
        sql += f" WHERE chunk_id IN ({','.join('?' * len(chunk_ids))})"
        args = list(chunk_ids)
    return [{"doc_id": d, "chunk_id": c, "cause": ca, "effect": e, "cue": cu, "hedged": bool(h), "sentence": s}
            for d, c, ca, e, cu, h, s in conn.execute(sql, args)]


def links_in(conn: sqlite3.Connection, rowids: Collection[int] | None, limit: int) -> list[tuple[int, dict]] | None:
    """(chunk rowid, link) for the links of the chunks with ``rowids`` (every chunk's when None), as ``links_of``
    gives them; None when there are more than ``limit``. The rowids go in as one JSON array: a tenant's 100,000
    chunks are one query through the chunks' primary key and the links' chunk index, not 200."""
    sql = ("SELECT c.rowid, l.doc_id, l.chunk_id, l.cause, l.effect, l.cue, l.hedged, l.sentence FROM causal_links l "
           "JOIN chunks c ON c.chunk_id = l.chunk_id")
    args: list = []
    if rowids is not None:
        if not rowids:
            return []
        sql += " WHERE c.rowid IN (SELECT value FROM json_each(?))"
        args.append(json.dumps(sorted(rowids)))
    rows = conn.execute(sql + " LIMIT ?", [*args, limit + 1]).fetchall()
    if len(rows) > limit:
        return None
    return [(r, {"doc_id": d, "chunk_id": c, "cause": ca, "effect": e, "cue": cu, "hedged": bool(h), "sentence": s})
            for r, d, c, ca, e, cu, h, s in rows]
