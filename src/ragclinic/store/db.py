"""SQLite (WAL) store: the single source of truth of a knowledge base.

Every write is one transaction that also bumps the KB version and logs which chunk rows were added
or deleted, so the derived indexes (lexical, dense) can catch up from the log after a crash.
A ``kill -9`` at any point leaves the last committed transaction; nothing half-written is visible.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from ragclinic.store import causal, schema, tables
from ragclinic.text.headers import index_text
from ragclinic.types import Chunk, ChunkReport, DocInfo, ParsedDocument, ParseReport


class Database:
    """The knowledge base's SQLite file (schema and migrations: schema.py): its reads and transactional writes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._depth = 0
        self.conn = schema.connect(path)
        schema.migrate(self)

    # ------------------------------------------------------------------ transactions
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Nestable: the outer level is BEGIN IMMEDIATE/COMMIT, inner levels are savepoints."""
        name = f"sp{self._depth}"
        self.conn.execute("BEGIN IMMEDIATE" if self._depth == 0 else f"SAVEPOINT {name}")
        self._depth += 1
        try:
            yield
        except BaseException:
            self._depth -= 1
            self.conn.execute("ROLLBACK" if self._depth == 0 else f"ROLLBACK TO {name}")
            if self._depth:
                self.conn.execute(f"RELEASE {name}")
            raise
        self._depth -= 1
        self.conn.execute("COMMIT" if self._depth == 0 else f"RELEASE {name}")

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", [key, value])

    @property
    def version(self) -> int:
        return int(self.meta("kb_version") or 0)

    def bump(self) -> int:
        """A new KB version without a chunk change (inside the caller's transaction): derived answers such as the
        knowledge graph's communities changed, so cached answers must not be reused."""
        return self._bump()

    def _bump(self) -> int:
        v = self.version + 1
        self.set_meta("kb_version", str(v))
        return v

    # ------------------------------------------------------------------ reads
    def file_index(self) -> dict[str, tuple[str, int]]:
        return {p: (s, n) for p, s, n in self.conn.execute("SELECT path, sha256, documents FROM files")}

    def all_doc_shas(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT doc_id, sha256 FROM documents"))

    def doc_ids_for_path(self, path: str) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT doc_id FROM documents WHERE path = ?", [path])]

    def stats(self) -> dict[str, int]:
        docs = self.conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
        chunks = self.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        return {"documents": docs, "chunks": chunks, "version": self.version}

    def documents(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT d.doc_id, d.path, d.record_key, d.title, d.language, d.parser, d.version, "
            "(SELECT COUNT(*) FROM chunks c WHERE c.doc_id = d.doc_id) FROM documents d ORDER BY d.path, d.record_key")
        keys = ("doc_id", "path", "record_key", "title", "language", "parser", "version", "chunks")
        return [dict(zip(keys, r)) for r in rows]

    def find_documents(self, ref: str) -> list[dict[str, Any]]:
        """Documents matching a doc id, a path, or a record key (for ``kb report DOC``)."""
        rows = self.conn.execute(
            "SELECT doc_id, path, record_key, title, parse_report, chunk_report FROM documents "
            "WHERE doc_id = ? OR path = ? OR record_key = ? OR path || '#' || record_key = ? "
            "ORDER BY path, record_key", [ref, ref, ref, ref])
        keys = ("doc_id", "path", "record_key", "title", "parse_report", "chunk_report")
        out = []
        for r in rows:
            d = dict(zip(keys, r))
            d["parse_report"] = json.loads(d["parse_report"])
            d["chunk_report"] = json.loads(d["chunk_report"])
            out.append(d)
        return out

    def chunk_texts(self, rowids: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for i in range(0, len(rowids), 500):
            part = list(rowids[i:i + 500])
            q = f"SELECT rowid, text FROM chunks WHERE rowid IN ({','.join('?' * len(part))})"
            out.update(self.conn.execute(q, part))
        return out

    def chunk_rows(self, rowids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Chunks with their document's path and title, by rowid."""
        out: dict[int, dict[str, Any]] = {}
        keys = ("rowid", "chunk_id", "doc_id", "text", "start", "end", "section", "page", "path", "title")
        for i in range(0, len(rowids), 500):
            part = list(rowids[i:i + 500])
            q = ('SELECT c.rowid, c.chunk_id, c.doc_id, c.text, c.start, c."end", c.section, c.page, d.path, '
                 f"d.title FROM chunks c JOIN documents d USING (doc_id) WHERE c.rowid IN ({','.join('?' * len(part))})")
            for row in self.conn.execute(q, part):
                d = dict(zip(keys, row))
                d["section"] = json.loads(d["section"])
                out[d["rowid"]] = d
        return out

    def chunks_by_rowid(self, rowids: Sequence[int]) -> dict[int, Chunk]:
        """Chunks (the layer type) by rowid; rows deleted meanwhile are absent."""
        out: dict[int, Chunk] = {}
        for i in range(0, len(rowids), 500):
            part = list(rowids[i:i + 500])
            q = ('SELECT rowid, chunk_id, doc_id, text, start, "end", section, page, language, tokens, ordinal '
                 f"FROM chunks WHERE rowid IN ({','.join('?' * len(part))})")
            for rid, cid, doc, text, start, end, section, page, lang, tokens, ordinal in self.conn.execute(q, part):
                out[rid] = Chunk(id=cid, doc_id=doc, text=text, start=start, end=end,
                                 section=tuple(json.loads(section)), page=page, language=lang, tokens=tokens,
                                 ordinal=ordinal)
        return out

    def iter_chunk_texts(self) -> Iterator[tuple[int, str]]:
        yield from self.conn.execute("SELECT rowid, text FROM chunks ORDER BY rowid")

    def iter_index_texts(self, context: bool, rowids: Sequence[int] | None = None, plain: bool = False
                         ) -> Iterator[tuple[int, str]]:
        """(rowid, text the indexes see): the chunk text, with its contextual header when ``context``, without its
        Markdown markup when ``plain``."""
        sql = ("SELECT c.rowid, c.text, c.section, d.title FROM chunks c JOIN documents d ON d.doc_id = c.doc_id")
        batches = [None] if rowids is None else [list(rowids[i:i + 500]) for i in range(0, len(rowids), 500)]
        for part in batches:
            q = sql + (" ORDER BY c.rowid" if part is None else
                       f" WHERE c.rowid IN ({','.join('?' * len(part))}) ORDER BY c.rowid")
            for rid, text, section, title in self.conn.execute(q, part or []):
                yield rid, index_text(text, title, json.loads(section), context, keep_markup=not plain)

    def embeddings(self, dim: int, rowids: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, vectors) of all embedded chunks, or of the given rows that still exist."""
        if rowids is None:
            rows = self.conn.execute("SELECT rowid, embedding FROM chunks WHERE embedding IS NOT NULL ORDER BY rowid")
        else:
            rows = []
            for i in range(0, len(rowids), 500):
                part = list(rowids[i:i + 500])
                rows += self.conn.execute(
                    f"SELECT rowid, embedding FROM chunks WHERE embedding IS NOT NULL AND rowid IN "
                    f"({','.join('?' * len(part))}) ORDER BY rowid", part).fetchall()
        ids, vecs = [], []
        for rid, blob in rows:
            ids.append(rid)
            vecs.append(np.frombuffer(blob, dtype=np.float32))
        if not ids:
            return np.zeros(0, np.int64), np.zeros((0, dim), np.float32)
        return np.asarray(ids, np.int64), np.stack(vecs)

    def embedded_rowids(self) -> set[int]:
        return {r[0] for r in self.conn.execute("SELECT rowid FROM chunks WHERE embedding IS NOT NULL")}

    def changes_since(self, version: int) -> list[tuple[int, str, int]]:
        return list(self.conn.execute(
            "SELECT version, op, chunk_rowid FROM changes WHERE version > ? ORDER BY version, rowid", [version]))

    def oldest_change_version(self) -> int | None:
        row = self.conn.execute("SELECT MIN(version) FROM changes").fetchone()
        return row[0]

    def prune_changes(self, upto_version: int) -> None:
        """Forget log entries every derived index has applied (keeps the log from growing forever)."""
        with self.transaction():
            self.conn.execute("DELETE FROM changes WHERE version <= ?", [upto_version])
            self.set_meta("changes_pruned_upto", str(max(upto_version, int(self.meta("changes_pruned_upto") or 0))))

    def pruned_upto(self) -> int:
        return int(self.meta("changes_pruned_upto") or 0)

    # ------------------------------------------------------------------ writes
    def write_document(self, doc: ParsedDocument, preport: ParseReport, chunks: Sequence[Chunk],
                       creport: ChunkReport, vectors: np.ndarray | None,
                       tags: dict[str, str] | None = None, causal_links: bool = False) -> tuple[int, int]:
        """Replace one document's row and chunks inside the caller's transaction.

        Chunks whose id is unchanged keep their row (and index entries); returns (added, deleted).
        """
        version = self._bump()
        old = dict(self.conn.execute("SELECT chunk_id, rowid FROM chunks WHERE doc_id = ?", [doc.doc_id]))
        new_ids = {c.id for c in chunks}
        gone = [rid for cid, rid in old.items() if cid not in new_ids]
        self._delete_chunk_rows(gone, version)
        structure = {"sections": [asdict(s) for s in doc.sections], "tables": [asdict(t) for t in doc.tables],
                     "pages": [asdict(p) for p in doc.pages]}
        self.conn.execute(
            "INSERT OR REPLACE INTO documents (doc_id, path, record_key, title, sha256, mtime, language, parser, "
            "text, structure, metadata, parse_report, chunk_report, version, tags) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [doc.doc_id, doc.path, doc.record_key, doc.title, doc.sha256, doc.mtime, doc.language, doc.parser,
             doc.text, json.dumps(structure, ensure_ascii=False), json.dumps(dict(doc.metadata), ensure_ascii=False),
             json.dumps(preport.to_dict(), ensure_ascii=False), json.dumps(creport.to_dict(), ensure_ascii=False),
             version, _tags_json(tags)])
        tables.write_tables(self.conn, doc.doc_id, doc.title, doc.tables, version)
        if causal_links:
            causal.write_links(self.conn, doc.doc_id, chunks)
        added = 0
        for i, c in enumerate(chunks):
            if c.id in old:
                # Same text, same id: keep the row and its index entries, refresh where it now sits.
                self.conn.execute(
                    'UPDATE chunks SET ordinal = ?, start = ?, "end" = ?, section = ?, page = ? WHERE chunk_id = ?',
                    [c.ordinal, c.start, c.end, json.dumps(list(c.section), ensure_ascii=False), c.page, c.id])
                continue
            blob = None if vectors is None else np.asarray(vectors[i], np.float32).tobytes()
            cur = self.conn.execute(
                'INSERT INTO chunks (chunk_id, doc_id, ordinal, text, start, "end", section, page, language, '
                "tokens, embedding, version) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [c.id, c.doc_id, c.ordinal, c.text, c.start, c.end, json.dumps(list(c.section), ensure_ascii=False),
                 c.page, c.language, c.tokens, blob, version])
            self.conn.execute("INSERT INTO changes VALUES (?, 'add', ?)", [version, cur.lastrowid])
            added += 1
        return added, len(gone)

    def retag_path(self, path: str, tags: dict[str, str]) -> int:
        """Give every document of ``path`` these tags (inside the caller's transaction); returns how many changed.

        Tags change what a scope filter lets through, so a change bumps the KB version even though no
        chunk changes.
        """
        new = _tags_json(tags)
        rows = [r[0] for r in self.conn.execute("SELECT doc_id FROM documents WHERE path = ? AND tags != ?",
                                                [path, new])]
        if rows:
            version = self._bump()
            self.conn.executemany("UPDATE documents SET tags = ?, version = ? WHERE doc_id = ?",
                                  [(new, version, d) for d in rows])
        return len(rows)

    def scope_rows(self, tags: Sequence[tuple[str, str]] = (), doc_ids: Sequence[str] = ()
                   ) -> list[tuple[str, str, str, float, dict[str, str]]]:
        """(doc_id, path, record_key, mtime, tags) of the documents that have all ``tags`` and, when given,
        one of ``doc_ids`` (as id or record key): what scope filters match on, narrowed inside SQLite."""
        where, args = [], []
        for key, value in tags:
            where.append("json_extract(tags, ?) = ?")
            args += ['$."' + key.replace('"', '""') + '"', value]
        if doc_ids:
            marks = ",".join("?" * len(doc_ids))
            where.append(f"(doc_id IN ({marks}) OR record_key IN ({marks}))")
            args += [*doc_ids, *doc_ids]
        sql = "SELECT doc_id, path, record_key, mtime, tags FROM documents"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [(d, p, k, m, json.loads(t)) for d, p, k, m, t in self.conn.execute(sql, args)]

    def doc_infos(self, doc_ids: Sequence[str]) -> dict[str, DocInfo]:
        out: dict[str, DocInfo] = {}
        ids = list(dict.fromkeys(doc_ids))
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            q = f"SELECT doc_id, path, title, tags FROM documents WHERE doc_id IN ({','.join('?' * len(part))})"
            for d, p, t, tags in self.conn.execute(q, part):
                out[d] = DocInfo(d, p, t, json.loads(tags))
        return out

    def chunk_rowids_of(self, doc_ids: Sequence[str]) -> set[int]:
        out: set[int] = set()
        for i in range(0, len(doc_ids), 500):
            part = list(doc_ids[i:i + 500])
            q = f"SELECT rowid FROM chunks WHERE doc_id IN ({','.join('?' * len(part))})"
            out.update(r[0] for r in self.conn.execute(q, part))
        return out

    def delete_documents(self, doc_ids: Sequence[str]) -> int:
        """Remove documents and their chunks (inside the caller's transaction); returns chunks removed."""
        if not doc_ids:
            return 0
        version = self._bump()
        removed = 0
        for doc_id in doc_ids:
            rows = [r[0] for r in self.conn.execute("SELECT rowid FROM chunks WHERE doc_id = ?", [doc_id])]
            self._delete_chunk_rows(rows, version)
            self.conn.execute("DELETE FROM documents WHERE doc_id = ?", [doc_id])
            tables.drop_tables(self.conn, [doc_id])
            causal.drop_links(self.conn, [doc_id])
            removed += len(rows)
        return removed

    def _delete_chunk_rows(self, rowids: Sequence[int], version: int) -> None:
        for rid in rowids:
            self.conn.execute("DELETE FROM chunks WHERE rowid = ?", [rid])
            self.conn.execute("INSERT INTO changes VALUES (?, 'del', ?)", [version, rid])

    def record_file(self, path: str, sha256: str, size: int, mtime: float, documents: int) -> None:
        self.conn.execute("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?)",
                          [path, sha256, size, mtime, documents, self.version])

    def forget_file(self, path: str) -> None:
        self.conn.execute("DELETE FROM files WHERE path = ?", [path])

    def known_paths(self) -> list[str]:
        rows = self.conn.execute("SELECT path FROM files UNION SELECT DISTINCT path FROM documents")
        return [r[0] for r in rows]

    # ------------------------------------------------------------------ runs
    def start_run(self) -> int:
        """A new "running" row (its summary holds the PID). The caller holds the writer lock, so a row still
        "running" belongs to a process that died before it finished (``kill -9``, a crash, power loss): it
        becomes "interrupted" (issue 32: such rows stayed "running" for ever)."""
        note = json.dumps({"interrupted": "the process ended before the run finished (killed or crashed); "
                                          "what it committed is kept, re-running the same ingest completes it"})
        with self.transaction():
            self.conn.execute("UPDATE runs SET status = 'interrupted', summary = json_patch(COALESCE(summary, "
                              "'{}'), ?) WHERE status = 'running'", [note])
            cur = self.conn.execute("INSERT INTO runs (started, status, summary) VALUES (?, 'running', ?)",
                                    [time.time(), json.dumps({"pid": os.getpid()})])
        return int(cur.lastrowid)

    def finish_run(self, run_id: int, status: str, summary: dict[str, Any]) -> None:
        summary = {**summary, "pid": os.getpid()}
        self.conn.execute("UPDATE runs SET finished = ?, status = ?, summary = ? WHERE run_id = ?",
                          [time.time(), status, json.dumps(summary, ensure_ascii=False), run_id])

    def integrity_ok(self) -> bool:
        return self.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def close(self) -> None:
        self.conn.close()


def _tags_json(tags: dict[str, str] | None) -> str:
    return json.dumps(dict(sorted((tags or {}).items())), ensure_ascii=False)
