"""The knowledge base's SQLite schema: the connection (WAL), the tables (the tables, causal-link and graph
stores add theirs), and the migrations from older schema versions."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from ragclinic.errors import StoreError, disk_problem
from ragclinic.store import cases, causal, experiments, graph, learned, tables
from ragclinic.types import Table

SCHEMA_VERSION = 4  # 2: documents.tags; 3: traces; 4: sql_tables (store/tables.py)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
  path TEXT PRIMARY KEY, sha256 TEXT NOT NULL, size INTEGER NOT NULL, mtime REAL NOT NULL,
  documents INTEGER NOT NULL, version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
  doc_id TEXT PRIMARY KEY, path TEXT NOT NULL, record_key TEXT NOT NULL, title TEXT NOT NULL,
  sha256 TEXT NOT NULL, mtime REAL NOT NULL, language TEXT NOT NULL, parser TEXT NOT NULL,
  text TEXT NOT NULL, structure TEXT NOT NULL, metadata TEXT NOT NULL,
  parse_report TEXT NOT NULL, chunk_report TEXT NOT NULL, version INTEGER NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}'  -- JSON object: tenant, version, date, authority, any key=value
);
CREATE INDEX IF NOT EXISTS documents_path ON documents(path);
CREATE TABLE IF NOT EXISTS chunks (
  rowid INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: it labels index entries
  chunk_id TEXT NOT NULL UNIQUE, doc_id TEXT NOT NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL,
  start INTEGER NOT NULL, "end" INTEGER NOT NULL, section TEXT NOT NULL, page INTEGER,
  language TEXT NOT NULL, tokens INTEGER NOT NULL, embedding BLOB, version INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id);
CREATE TABLE IF NOT EXISTS changes (
  version INTEGER NOT NULL, op TEXT NOT NULL CHECK (op IN ('add', 'del')), chunk_rowid INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS changes_version ON changes(version);
CREATE TABLE IF NOT EXISTS traces (  -- query traces (ragclinic.trace): one JSON document each
  id TEXT PRIMARY KEY, debug_round_id TEXT NOT NULL, parent_id TEXT NOT NULL, created REAL NOT NULL,
  query TEXT NOT NULL, route TEXT NOT NULL, data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS traces_created ON traces(created);
CREATE INDEX IF NOT EXISTS traces_round ON traces(debug_round_id);
CREATE TABLE IF NOT EXISTS runs (
  run_id INTEGER PRIMARY KEY AUTOINCREMENT, started REAL NOT NULL, finished REAL,
  status TEXT NOT NULL, summary TEXT
);
"""


def connect(path: Path) -> sqlite3.Connection:
    """A connection with the schema in place; StoreError naming the fix when the file or its disk is unusable."""
    try:
        conn = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode is durable against a killed process (what we promise), not power loss.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.executescript(_SCHEMA + tables.SCHEMA + causal.SCHEMA + graph.SCHEMA + learned.SCHEMA + experiments.SCHEMA
                           + cases.SCHEMA)
        return conn
    except sqlite3.DatabaseError as e:
        if message := disk_problem(e, path.parent):  # the database is fine: its disk is full or read-only
            raise StoreError(message) from None
        raise StoreError(f"{path} is not a usable ragclinic database ({e}); "
                         f"point --kb at another folder or restore a backup") from None


def migrate(db) -> None:
    """Bring ``db`` (store/db.py's Database, being opened) from an older schema up to SCHEMA_VERSION in one
    transaction; a newer schema is refused."""
    found = db.meta("schema_version")
    if found is None:
        db.set_meta("schema_version", str(SCHEMA_VERSION))
    elif int(found) in (1, 2, 3):
        with db.transaction():
            if int(found) == 1:  # schema 1 had no tags: add the column, every document untagged
                db.conn.execute("ALTER TABLE documents ADD COLUMN tags TEXT NOT NULL DEFAULT '{}'")
            # schema 2 → 3 only adds the traces table, which the script above has created; 3 → 4 adds
            # sql_tables: filled here from the tables every document's structure already records
            _backfill_tables(db.conn)
            db.set_meta("schema_version", str(SCHEMA_VERSION))
    elif int(found) != SCHEMA_VERSION:
        raise StoreError(f"{db.path} has schema version {found}; this ragclinic reads {SCHEMA_VERSION}")


def _backfill_tables(conn: sqlite3.Connection) -> None:
    for doc_id, title, structure, version in conn.execute(
            "SELECT doc_id, title, structure, version FROM documents").fetchall():
        found = json.loads(structure).get("tables", [])
        if found:
            tables.write_tables(conn, doc_id, title, [Table(tuple(tuple(r) for r in t["rows"]), t["start"],
                                                            t["end"], t.get("page")) for t in found], version)
