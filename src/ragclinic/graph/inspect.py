"""What ``ragclinic kb graph`` shows: the graph's size, its top entities, its communities, one entity's
neighbourhood; and the GraphML export (igraph's writer) for users who look at it in their own tools."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ragclinic.errors import ConfigError
from ragclinic.graph import communities as comm
from ragclinic.graph.extract import normalise
from ragclinic.store import graph as store


def size(conn: sqlite3.Connection) -> dict:
    one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    levels = dict(conn.execute("SELECT level, COUNT(*) FROM graph_communities GROUP BY level"))
    return {"entities": one("SELECT COUNT(DISTINCT entity) FROM graph_mentions"),
            "mentions": one("SELECT COUNT(*) FROM graph_mentions"),
            "relations": one("SELECT COUNT(*) FROM (SELECT DISTINCT source, target FROM graph_relations)"),
            "relation_rows": one("SELECT COUNT(*) FROM graph_relations"),
            "chunks_extracted": one("SELECT COUNT(*) FROM graph_chunks"),
            "chunks_pending": store.count_missing(conn),
            "communities": {f"level{k}": v for k, v in sorted(levels.items())},
            "dirty_entities": one("SELECT COUNT(*) FROM graph_dirty")}


def top_entities(conn: sqlite3.Connection, limit: int = 15) -> list[dict]:
    g = comm.load(conn)
    degree = g.degree()
    member = store.community_of(conn, list(g.names))
    ranked = sorted(g.names, key=lambda e: (-g.chunks[e], -degree.get(e, 0.0), e))[:limit]
    return [{"entity": e, "name": g.names[e], "type": g.types[e], "chunks": g.chunks[e], "documents": g.docs[e],
             "degree": round(degree.get(e, 0.0), 2), "community": member.get(e, ""), "hub": e in g.hubs}
            for e in ranked]


def find_entity(conn: sqlite3.Connection, name: str) -> tuple[str | None, list[str]]:
    """(the entity key ``name`` means, other candidates): the exact normalised name, else the most mentioned
    entity whose name contains it."""
    for key in (normalise(name), normalise(name, "phrase")):
        if conn.execute("SELECT 1 FROM graph_mentions WHERE entity = ? LIMIT 1", [key]).fetchone():
            return key, []
    like = [r[0] for r in conn.execute(
        "SELECT entity FROM graph_mentions WHERE entity LIKE ? GROUP BY entity ORDER BY COUNT(*) DESC LIMIT 6",
        [f"%{normalise(name)}%"])]
    return (like[0], like[1:]) if like else (None, [])


def neighbourhood(conn: sqlite3.Connection, entity: str, limit: int = 20) -> dict:
    """One entity: its names, types, chunks, community and the entities it is related to (weight, relation types,
    a description and the chunks that state it)."""
    names = [r[0] for r in conn.execute(
        "SELECT name FROM graph_mentions WHERE entity = ? GROUP BY name ORDER BY COUNT(*) DESC", [entity])]
    types = [r[0] for r in conn.execute(
        "SELECT type FROM graph_mentions WHERE entity = ? GROUP BY type ORDER BY COUNT(*) DESC", [entity])]
    chunks = [r[0] for r in conn.execute("SELECT DISTINCT chunk_id FROM graph_mentions WHERE entity = ?", [entity])]
    docs = [r[0] for r in conn.execute("SELECT DISTINCT doc_id FROM graph_mentions WHERE entity = ?", [entity])]
    rows = conn.execute(
        "SELECT CASE WHEN source = ? THEN target ELSE source END AS other, SUM(weight), GROUP_CONCAT(DISTINCT type), "
        "MAX(description), GROUP_CONCAT(DISTINCT chunk_id) FROM graph_relations WHERE source = ? OR target = ? "
        "GROUP BY other ORDER BY SUM(weight) DESC, other LIMIT ?", [entity, entity, entity, limit]).fetchall()
    display = dict(conn.execute("SELECT entity, name FROM graph_mentions WHERE entity IN "
                                f"({','.join('?' * len(rows))}) GROUP BY entity", [r[0] for r in rows])) if rows else {}
    community = store.community_of(conn, [entity]).get(entity, "")
    return {"entity": entity, "names": names, "types": types, "chunks": chunks, "documents": docs,
            "community": community,
            "neighbours": [{"entity": o, "name": display.get(o, o), "weight": round(w, 2), "relations": t.split(","),
                            "description": d, "chunks": c.split(",")} for o, w, t, d, c in rows]}


def report(conn: sqlite3.Connection, entity: str | None = None, top: int = 15) -> dict:
    """The ``kb graph --json`` object."""
    mode = (conn.execute("SELECT value FROM meta WHERE key = 'graph_mode'").fetchone() or [""])[0]
    if not mode:
        raise ConfigError("this knowledge base has no graph; build it with: ragclinic ingest DOCS --kb DIR --graph")
    out = {"mode": mode, "size": size(conn), "top_entities": top_entities(conn, top),
           "communities": [{k: v for k, v in c.to_json().items() if k != "members"} | {"members": list(c.members[:8])}
                           for c in store.communities(conn)]}
    if entity is not None:
        key, others = find_entity(conn, entity)
        if key is None:
            raise ConfigError(f"no entity named {entity!r} in the graph; `ragclinic kb graph` lists the top entities")
        out["entity"] = neighbourhood(conn, key) | {"query": entity, "other_matches": others}
    return out


def export_graphml(conn: sqlite3.Connection, path: Path) -> dict:
    """Write the entity graph (every entity, hubs included; edges with summed weights) as GraphML; → counts."""
    igraph, _ = comm.leiden()
    g = comm.load(conn)
    names = sorted(g.names)
    index = {e: i for i, e in enumerate(names)}
    member = store.community_of(conn, names)
    ig = igraph.Graph(n=len(names), edges=[(index[a], index[b]) for a, b in g.edges])
    ig.vs["key"] = names
    ig.vs["label"] = [g.names[e] for e in names]
    ig.vs["type"] = [g.types[e] for e in names]
    ig.vs["chunks"] = [g.chunks[e] for e in names]
    ig.vs["documents"] = [g.docs[e] for e in names]
    ig.vs["community"] = [member.get(e, "") for e in names]
    ig.es["weight"] = list(g.edges.values())
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ig.write_graphml(str(path))
    return {"path": str(path), "nodes": len(names), "edges": len(g.edges)}
