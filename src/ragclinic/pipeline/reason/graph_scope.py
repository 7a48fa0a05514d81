"""What of the knowledge graph one question may see (issue 32). The graph is built over every document of the
knowledge base, so its entities, relations and communities mix tenants; a question whose scope is restricted (a
tenant's key, scope filters) may use — and record in its trace — only what chunks inside its scope state:

- an entity is known when a chunk it may read mentions it (so ``question_entities`` says nothing of other tenants);
- a relation counts only through a chunk it may read (expansion's paths and added chunks stay inside);
- a community is seen through its members those chunks name, split into the groups that relations those chunks
  state link (the partition was computed from every tenant's relations), each titled with its names, ranked by its
  summary points from those chunks (the stored title, summary and its vector are written from every tenant's text:
  not used).

``admit`` is the scope layer's ``graph_steps.Admission``: ``allowed`` is the set of chunk rowids the question's scope
admits (None: no restriction), ``scoped`` whether a scope or a tenant made it, and calling it says whether one chunk
may be read (chunks are always checked one by one; entities and communities are narrowed only when ``scoped``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from ragclinic.store import graph as store

Admit = Callable[[int, str, str], bool]
SCAN = 20_000  # rows of one entity's mentions or relations looked through for visible ones (bounded work)


class Sight:
    def __init__(self, conn, admit: Admit | None = None) -> None:
        self.conn, self.admit = conn, admit
        self._chunk_ok: dict[str, bool] = {}
        self._entities: dict[str, str] | None = None

    @property
    def restricted(self) -> bool:
        """Whether the question's scope leaves out some chunks (a tenant's key, a scope filter; the newest-version
        policy alone does not: the older versions are the same caller's documents)."""
        return (self.admit is not None and getattr(self.admit, "allowed", None) is not None
                and getattr(self.admit, "scoped", True))

    def chunks(self, chunk_ids: Iterable[str]) -> set[str]:
        """Those of ``chunk_ids`` the question may read."""
        ids = list(dict.fromkeys(chunk_ids))
        if self.admit is None:
            return set(ids)
        todo = [c for c in ids if c not in self._chunk_ok]
        for i in range(0, len(todo), 500):
            part = todo[i:i + 500]
            self._chunk_ok.update({c: False for c in part})
            for rowid, chunk_id, doc_id in self.conn.execute(
                    f"SELECT rowid, chunk_id, doc_id FROM chunks WHERE chunk_id IN ({','.join('?' * len(part))})", part):
                self._chunk_ok[chunk_id] = bool(self.admit(rowid, chunk_id, doc_id))
        return {c for c in ids if self._chunk_ok[c]}

    def entities(self) -> dict[str, str] | None:
        """Entity key → a name as a readable chunk writes it, for a restricted question; None: every entity."""
        if not self.restricted:
            return None
        if self._entities is None:
            rows = sorted(self.admit.allowed)
            found: dict[str, str] = {}
            for i in range(0, len(rows), 500):
                part = rows[i:i + 500]
                for entity, name, rowid, chunk_id, doc_id in self.conn.execute(
                        "SELECT m.entity, m.name, c.rowid, c.chunk_id, c.doc_id FROM graph_mentions m JOIN chunks c "
                        f"ON c.chunk_id = m.chunk_id WHERE c.rowid IN ({','.join('?' * len(part))})", part):
                    if entity not in found and self.admit(rowid, chunk_id, doc_id):
                        found[entity] = name
            self._entities = found
        return self._entities

    def knows(self, entity: str) -> bool:
        """Whether a chunk the question may read mentions ``entity``."""
        if self._entities is not None:
            return entity in self._entities
        rows = [r[0] for r in self.conn.execute("SELECT chunk_id FROM graph_mentions WHERE entity = ? LIMIT ?",
                                                [entity, 1 if self.admit is None else SCAN])]
        return bool(self.chunks(rows)) if self.admit is not None else bool(rows)

    def relations(self, entity: str, limit: int = 400) -> list[tuple[str, str, float]]:
        """(the other entity, chunk id, weight) of ``entity``'s relations stated in chunks the question may read."""
        rows = self.conn.execute("SELECT CASE WHEN source = ? THEN target ELSE source END, chunk_id, weight FROM "
                                 "graph_relations WHERE source = ? OR target = ? LIMIT ?",
                                 [entity, entity, entity, limit if self.admit is None else SCAN]).fetchall()
        if self.admit is None:
            return rows
        ok = self.chunks(r[1] for r in rows)
        return [r for r in rows if r[1] in ok][:limit]

    def communities(self, found: Iterable[store.Community],
                    title: Callable[[list[str]], str]) -> list[store.Community]:
        """The communities as the question sees them (``community``), in their order."""
        return [part for c in found for part in self.community(c, title)]

    def community(self, c: store.Community, title: Callable[[list[str]], str]) -> list[store.Community]:
        """``c`` as a restricted question sees it: its members that readable chunks name, split into the groups
        that relations stated in readable chunks link (which members share a community was computed from every
        tenant's relations: shown whole, it would tell the question that someone links them), each titled with
        its members' names and given the summary points from readable chunks that name them; no summary or
        vector (written from every member's chunks). [] when it names no member the question may see; ``[c]``
        for an unrestricted question. A part's id is ``c``'s, with ``.N`` when there are several."""
        seen = self.entities()
        if seen is None:
            return [c]
        members = [m for m in c.members if m in seen]
        if not members:
            return []
        parts = self._linked(members)
        ok = self.chunks(p.chunk_id for p in c.points)
        points = [p for p in c.points if p.chunk_id in ok]
        named = self._named(points) if len(parts) > 1 else {}
        out = []
        for i, part in enumerate(parts):
            keep = set(part)
            out.append(replace(
                c, community_id=c.community_id if len(parts) == 1 else f"{c.community_id}.{i + 1}",
                title=title([seen[m] for m in part]), members=tuple(part), summary="", embedding=None,
                points=tuple(p for j, p in enumerate(points) if len(parts) == 1 or named[j] & keep)))
        return out

    def _linked(self, members: list[str]) -> list[list[str]]:
        """``members`` split into the groups that relations stated in readable chunks connect, each in
        ``members``' order, the groups in the order of their first member."""
        parent = {m: m for m in members}

        def root(m: str) -> str:
            while parent[m] != m:
                parent[m] = m = parent[parent[m]]
            return m

        edges: list[tuple[str, str, str]] = []
        for i in range(0, len(members), 500):
            part = members[i:i + 500]
            edges += [r for r in self.conn.execute(
                f"SELECT source, target, chunk_id FROM graph_relations WHERE source IN ({','.join('?' * len(part))}) "
                "LIMIT ?", [*part, SCAN]) if r[1] in parent and r[0] != r[1]]
        ok = self.chunks(e[2] for e in edges)
        for a, b, chunk_id in edges:
            if chunk_id in ok:
                parent[root(a)] = root(b)
        groups: dict[str, list[str]] = {}
        for m in members:
            groups.setdefault(root(m), []).append(m)
        return list(groups.values())

    def _named(self, points: list[store.Point]) -> list[set[str]]:
        """For each point, the entities its sentence names (by the names its chunk's mentions write), else every
        entity its chunk mentions."""
        ids = list({p.chunk_id for p in points})
        names: dict[str, list[tuple[str, str]]] = {}
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            for chunk_id, entity, name in self.conn.execute(
                    f"SELECT chunk_id, entity, name FROM graph_mentions WHERE chunk_id IN ({','.join('?' * len(part))})",
                    part):
                names.setdefault(chunk_id, []).append((entity, name))
        out = []
        for p in points:
            mentioned = names.get(p.chunk_id, [])
            low = p.text.lower()
            out.append({e for e, n in mentioned if n.lower() in low} or {e for e, _ in mentioned})
        return out
