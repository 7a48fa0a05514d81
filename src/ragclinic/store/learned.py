"""What ``kb learn`` wrote about each chunk (issue 53; ragclinic/learn/ writes it): the questions a user would ask
that the chunk answers and its keywords, each question with the rank its own chunk got for it (the doc2query--
filter: kept only when the chunk ranks high) and its query-side vector.

Derived data like the graph: a chunk is learned once (``learned_chunks`` marks it done, in the same transaction
as its questions), so a killed run resumes where it stopped and generates nothing twice; rows of chunks that are
gone (a changed or removed document) are deleted at the next run; retrieval joins the rows to the live chunks,
so a stale row never answers.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SCHEMA = """
CREATE TABLE IF NOT EXISTS learned_chunks (
  chunk_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, model TEXT NOT NULL, seconds REAL NOT NULL,
  prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, status TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS learned_items (
  chunk_id TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('question', 'keyword')), text TEXT NOT NULL,
  kept INTEGER NOT NULL, rank INTEGER, embedding BLOB
);
CREATE INDEX IF NOT EXISTS learned_items_chunk ON learned_items(chunk_id);
"""


@dataclass(frozen=True)
class Item:
    kind: str  # question | keyword
    text: str
    kept: bool
    rank: int | None = None  # the own chunk's rank for the question (None: not in the filter's depth; keywords)
    vector: np.ndarray | None = None  # a kept question's query-side vector


@dataclass(frozen=True)
class Learned:
    """One chunk's record: what the model wrote, how long it took; status "ok", or "empty" (nothing usable)."""

    chunk_id: str
    doc_id: str
    model: str
    seconds: float
    prompt_tokens: int
    completion_tokens: int
    status: str
    items: tuple[Item, ...] = ()


def write(conn: sqlite3.Connection, rec: Learned) -> None:
    """One chunk's record and items (inside the caller's transaction): replaces what the chunk had."""
    conn.execute("DELETE FROM learned_items WHERE chunk_id = ?", [rec.chunk_id])
    conn.execute("INSERT OR REPLACE INTO learned_chunks VALUES (?,?,?,?,?,?,?)",
                 [rec.chunk_id, rec.doc_id, rec.model, rec.seconds, rec.prompt_tokens, rec.completion_tokens,
                  rec.status])
    conn.executemany("INSERT INTO learned_items VALUES (?,?,?,?,?,?)",
                     [(rec.chunk_id, i.kind, i.text, int(i.kept), i.rank,
                       None if i.vector is None else np.asarray(i.vector, dtype=np.float32).tobytes())
                      for i in rec.items])


def missing(conn: sqlite3.Connection, limit: int) -> list[tuple[str, str, str, str]]:
    """Up to ``limit`` chunks not learned yet, in ingest order: (chunk_id, doc_id, text, language)."""
    return conn.execute("SELECT c.chunk_id, c.doc_id, c.text, c.language FROM chunks c "
                        "WHERE NOT EXISTS (SELECT 1 FROM learned_chunks l WHERE l.chunk_id = c.chunk_id) "
                        "ORDER BY c.rowid LIMIT ?", [limit]).fetchall()


def count_missing(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT COUNT(*) FROM chunks c WHERE NOT EXISTS "
                        "(SELECT 1 FROM learned_chunks l WHERE l.chunk_id = c.chunk_id)").fetchone()[0]


def drop_stale(conn: sqlite3.Connection) -> int:
    """Delete the rows of chunks that are gone; how many chunks' rows went."""
    stale = [r[0] for r in conn.execute("SELECT chunk_id FROM learned_chunks l WHERE NOT EXISTS "
                                        "(SELECT 1 FROM chunks c WHERE c.chunk_id = l.chunk_id)")]
    conn.executemany("DELETE FROM learned_items WHERE chunk_id = ?", [[c] for c in stale])
    conn.executemany("DELETE FROM learned_chunks WHERE chunk_id = ?", [[c] for c in stale])
    return len(stale)


def kept_vectors(conn: sqlite3.Connection) -> tuple[np.ndarray, np.ndarray]:
    """(chunk rowids, vectors) of every kept question of a live chunk, one row per question."""
    rows = conn.execute("SELECT c.rowid, i.embedding FROM learned_items i JOIN chunks c ON c.chunk_id = i.chunk_id "
                        "WHERE i.kind = 'question' AND i.kept = 1 AND i.embedding IS NOT NULL ORDER BY c.rowid"
                        ).fetchall()
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
    return (np.array([r for r, _ in rows], dtype=np.int64),
            np.stack([np.frombuffer(b, dtype=np.float32) for _, b in rows]))


def kept_texts(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    """(chunk rowid, its kept questions and keywords joined) for every live learned chunk that has any."""
    rows = conn.execute("SELECT c.rowid, i.text FROM learned_items i JOIN chunks c ON c.chunk_id = i.chunk_id "
                        "WHERE i.kept = 1 ORDER BY c.rowid").fetchall()
    out: dict[int, list[str]] = {}
    for rowid, text in rows:
        out.setdefault(rowid, []).append(text)
    return [(r, "\n".join(t)) for r, t in out.items()]


def items_of(conn: sqlite3.Connection, chunk_ids: Sequence[str]) -> dict[str, list[dict]]:
    """chunk id → its items (kind, text, kept, rank), for the trace and ``kb learn --show``."""
    if not chunk_ids:
        return {}
    sql = ("SELECT chunk_id, kind, text, kept, rank FROM learned_items WHERE chunk_id IN (SELECT value FROM "
           "json_each(?)) ORDER BY rowid")
    out: dict[str, list[dict]] = {}
    for c, kind, text, kept, rank in conn.execute(sql, [json.dumps(list(chunk_ids))]):
        out.setdefault(c, []).append({"kind": kind, "text": text, "kept": bool(kept), "rank": rank})
    return out


def stats(conn: sqlite3.Connection) -> dict:
    """Chunks learned (of all), questions written and kept, keywords, seconds and tokens spent."""
    chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    learned, seconds, pt, ct = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(seconds), 0), COALESCE(SUM(prompt_tokens), 0), "
        "COALESCE(SUM(completion_tokens), 0) FROM learned_chunks l WHERE EXISTS "
        "(SELECT 1 FROM chunks c WHERE c.chunk_id = l.chunk_id)").fetchone()
    q, kept, kw = conn.execute(
        "SELECT COALESCE(SUM(kind = 'question'), 0), COALESCE(SUM(kind = 'question' AND kept = 1), 0), "
        "COALESCE(SUM(kind = 'keyword'), 0) FROM learned_items").fetchone()
    return {"chunks": chunks, "learned": learned, "questions": q, "questions_kept": kept, "keywords": kw,
            "seconds": round(seconds, 1), "prompt_tokens": pt, "completion_tokens": ct,
            "seconds_per_chunk": round(seconds / learned, 2) if learned else None}
