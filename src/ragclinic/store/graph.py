"""The knowledge graph's tables (issue 20; ragclinic/graph/ builds them): entity mentions and relations per chunk,
with their source chunk ids, and the communities over them with their summaries.

The graph is derived data like the indexes: ``graph/sync.py`` extracts the chunks that have no graph rows yet (a
changed document's new chunks; every chunk when ``--graph`` is first given), deletes the rows of chunks that are gone,
and marks the entities whose mentions changed as dirty, each batch in one transaction; the communities holding a
dirty entity are then recomputed. So a ``kill -9`` costs a catch-up, never a wrong graph.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

SCHEMA = """
CREATE TABLE IF NOT EXISTS graph_chunks (chunk_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, mode TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS graph_mentions (
  chunk_id TEXT NOT NULL, doc_id TEXT NOT NULL, entity TEXT NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL,
  sentence INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS graph_mentions_chunk ON graph_mentions(chunk_id);
CREATE INDEX IF NOT EXISTS graph_mentions_entity ON graph_mentions(entity);
CREATE TABLE IF NOT EXISTS graph_relations (
  chunk_id TEXT NOT NULL, doc_id TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL, type TEXT NOT NULL,
  description TEXT NOT NULL, weight REAL NOT NULL, confidence REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS graph_relations_chunk ON graph_relations(chunk_id);
CREATE INDEX IF NOT EXISTS graph_relations_source ON graph_relations(source);
CREATE INDEX IF NOT EXISTS graph_relations_target ON graph_relations(target);
CREATE TABLE IF NOT EXISTS graph_dirty (entity TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS graph_communities (
  community_id TEXT PRIMARY KEY, level INTEGER NOT NULL, parent TEXT NOT NULL, title TEXT NOT NULL,
  members TEXT NOT NULL, size INTEGER NOT NULL, summary TEXT NOT NULL, points TEXT NOT NULL,
  summary_by TEXT NOT NULL, embedding BLOB
);
CREATE TABLE IF NOT EXISTS graph_membership (entity TEXT NOT NULL, community_id TEXT NOT NULL, level INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS graph_membership_entity ON graph_membership(entity);
"""


@dataclass(frozen=True)
class Mention:
    entity: str  # the normalised key entities are merged by
    name: str  # as written (the most frequent spelling names the entity)
    type: str  # fast: name, acronym, phrase, person, location, organisation; model: the schema's six types
    sentence: int  # index of the sentence in the chunk (text split by text/sentences.py)


@dataclass(frozen=True)
class Relation:
    source: str
    target: str
    type: str  # fast: "co-occurs"; model: the model's relation name
    description: str
    weight: float = 1.0
    confidence: float = 1.0


@dataclass(frozen=True)
class ChunkGraph:
    """What extraction found in one chunk."""

    chunk_id: str
    doc_id: str
    mentions: tuple[Mention, ...] = ()
    relations: tuple[Relation, ...] = ()


def write_chunk_graphs(conn: sqlite3.Connection, graphs: Sequence[ChunkGraph], mode: str) -> None:
    """Store chunks' extractions (inside the caller's transaction); their entities become dirty."""
    dirty: set[str] = set()
    for g in graphs:
        conn.execute("INSERT OR REPLACE INTO graph_chunks VALUES (?,?,?)", [g.chunk_id, g.doc_id, mode])
        conn.executemany("INSERT INTO graph_mentions VALUES (?,?,?,?,?,?)",
                         [(g.chunk_id, g.doc_id, m.entity, m.name, m.type, m.sentence) for m in g.mentions])
        conn.executemany("INSERT INTO graph_relations VALUES (?,?,?,?,?,?,?,?)",
                         [(g.chunk_id, g.doc_id, r.source, r.target, r.type, r.description, r.weight, r.confidence)
                          for r in g.relations])
        dirty.update(m.entity for m in g.mentions)
    conn.executemany("INSERT OR IGNORE INTO graph_dirty VALUES (?)", [[e] for e in dirty])


def drop_chunks(conn: sqlite3.Connection, chunk_ids: Sequence[str]) -> None:
    """Forget chunks' graph rows (the chunks are gone); their entities become dirty."""
    for i in range(0, len(chunk_ids), 500):
        part = list(chunk_ids[i:i + 500])
        marks = ",".join("?" * len(part))
        conn.execute(f"INSERT OR IGNORE INTO graph_dirty SELECT DISTINCT entity FROM graph_mentions "
                     f"WHERE chunk_id IN ({marks})", part)
        for table in ("graph_mentions", "graph_relations", "graph_chunks"):
            conn.execute(f"DELETE FROM {table} WHERE chunk_id IN ({marks})", part)


def stale_chunks(conn: sqlite3.Connection) -> list[str]:
    """Chunk ids with graph rows whose chunk is no longer in the knowledge base."""
    return [r[0] for r in conn.execute(
        "SELECT chunk_id FROM graph_chunks WHERE chunk_id NOT IN (SELECT chunk_id FROM chunks)")]


def missing_chunks(conn: sqlite3.Connection, limit: int | None = None) -> list[tuple[str, str, str, str]]:
    """(chunk_id, doc_id, text, language) of chunks not extracted yet, in document order."""
    sql = ("SELECT chunk_id, doc_id, text, language FROM chunks WHERE chunk_id NOT IN "
           "(SELECT chunk_id FROM graph_chunks) ORDER BY doc_id, ordinal")
    if limit:
        sql += f" LIMIT {int(limit)}"
    return list(conn.execute(sql))


def chunk_texts(conn: sqlite3.Connection, chunk_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
    """chunk id → (text, language), for the chunks that still exist."""
    ids, out = list(chunk_ids), {}
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        out.update((c, (t, lang)) for c, t, lang in conn.execute(
            f"SELECT chunk_id, text, language FROM chunks WHERE chunk_id IN ({','.join('?' * len(part))})", part))
    return out


def count_missing(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT COUNT(*) FROM chunks WHERE chunk_id NOT IN (SELECT chunk_id FROM graph_chunks)"
                        ).fetchone()[0]


def dirty_entities(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT entity FROM graph_dirty")}


def clear_dirty(conn: sqlite3.Connection, entities: Iterable[str]) -> None:
    conn.executemany("DELETE FROM graph_dirty WHERE entity = ?", [[e] for e in entities])


# ---------------------------------------------------------------------------- communities
@dataclass(frozen=True)
class Point:
    """One sentence of a community summary and the chunk it comes from (its citation)."""

    text: str
    chunk_id: str
    doc_id: str


@dataclass(frozen=True)
class Community:
    community_id: str  # "c{level}-" + a hash of the sorted members: the same members, the same id
    level: int  # 0 = Leiden on the entity graph; 1 = Leiden on the graph of level-0 communities
    parent: str
    title: str
    members: tuple[str, ...]  # entity keys, most connected first
    summary: str
    points: tuple[Point, ...]
    summary_by: str  # "extractive" or the model's id
    embedding: bytes | None = None

    @property
    def size(self) -> int:
        return len(self.members)

    def to_json(self) -> dict:
        return {"id": self.community_id, "level": self.level, "parent": self.parent, "title": self.title,
                "size": self.size, "members": list(self.members), "summary": self.summary,
                "summary_by": self.summary_by,
                "points": [{"text": p.text, "chunk_id": p.chunk_id, "doc_id": p.doc_id} for p in self.points]}


def communities(conn: sqlite3.Connection, level: int | None = None,
                ids: Sequence[str] | None = None) -> list[Community]:
    sql, args = "SELECT community_id, level, parent, title, members, summary, points, summary_by, embedding " \
                "FROM graph_communities", []
    where = []
    if level is not None:
        where.append("level = ?")
        args.append(level)
    if ids is not None:
        if not ids:
            return []
        where.append(f"community_id IN ({','.join('?' * len(ids))})")
        args += list(ids)
    if where:
        sql += " WHERE " + " AND ".join(where)
    out = []
    for cid, lvl, parent, title, members, summary, points, by, emb in conn.execute(sql + " ORDER BY size DESC, "
                                                                                      "community_id", args):
        out.append(Community(cid, lvl, parent, title, tuple(json.loads(members)), summary,
                             tuple(Point(**p) for p in json.loads(points)), by, emb))
    return out


def replace_communities(conn: sqlite3.Connection, removed: Iterable[str], added: Sequence[Community]) -> None:
    """Swap communities (inside the caller's transaction): ``removed`` ids go, ``added`` come, with membership."""
    gone = list(removed)
    conn.executemany("DELETE FROM graph_communities WHERE community_id = ?", [[c] for c in gone])
    conn.executemany("DELETE FROM graph_membership WHERE community_id = ?", [[c] for c in gone])
    for c in added:
        conn.execute("INSERT OR REPLACE INTO graph_communities VALUES (?,?,?,?,?,?,?,?,?,?)",
                     [c.community_id, c.level, c.parent, c.title, json.dumps(list(c.members), ensure_ascii=False),
                      c.size, c.summary, json.dumps([p.__dict__ for p in c.points], ensure_ascii=False),
                      c.summary_by, c.embedding])
        conn.execute("DELETE FROM graph_membership WHERE community_id = ?", [c.community_id])
        conn.executemany("INSERT INTO graph_membership VALUES (?,?,?)",
                         [(e, c.community_id, c.level) for e in c.members])


def set_parents(conn: sqlite3.Connection, parents: dict[str, str]) -> None:
    conn.executemany("UPDATE graph_communities SET parent = ? WHERE community_id = ?",
                     [(p, c) for c, p in parents.items()])


def community_of(conn: sqlite3.Connection, entities: Sequence[str], level: int = 0) -> dict[str, str]:
    out: dict[str, str] = {}
    for i in range(0, len(entities), 500):
        part = list(entities[i:i + 500])
        q = (f"SELECT entity, community_id FROM graph_membership WHERE level = ? AND entity IN "
             f"({','.join('?' * len(part))})")
        out.update(dict(conn.execute(q, [level, *part])))
    return out
