"""Communities of the entity graph (Leiden, through ``leidenalg`` + ``igraph``) and their summaries.

- The graph: entities that name something (any type but ``phrase``) and noun phrases found in two chunks or more;
  an entity in more than ``HUB_SHARE`` of the documents (the company every report names) is left out of the
  partition — it would glue every community into one — but stays in the graph. Edges: co-occurrence weights summed.
- Incremental: only the communities holding an entity whose mentions changed (``graph_dirty``), with the new
  entities and their unassigned neighbours, are partitioned again; the others keep their rows and summaries. A
  community's id is a hash of its members, so an unchanged community keeps its summary.
- Hierarchical: above ``HIERARCHY_MIN`` level-0 communities, Leiden runs again on the graph of communities
  (edges: the weights between their members); level 1 is recomputed whole (it is small), summaries reused by id.
- Summaries: extractive — the sentences that name the most members, from as many documents as possible, each
  citing its chunk — or written by the model over those sentences (``model`` mode; graph/model.py).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ragclinic.errors import ConfigError
from ragclinic.store import graph as store
from ragclinic.store.graph import Community, Point
from ragclinic.text.sentences import split_sentences

HUB_SHARE = 0.5  # an entity in more than this share of the documents (when there are ≥ HUB_MIN_DOCS) is a hub
HUB_MIN_DOCS = 6
MIN_SIZE = 2  # smaller parts are not communities
MAX_SIZE = 40  # Leiden's max_comm_size: a summary of five sentences cannot speak for more
HIERARCHY_MIN = 30
POINTS = 5
FULL_SHARE = 0.5  # more dirty entities than this share of the graph: partition it all again
SEED = 20


def leiden():
    try:
        import igraph  # on use: the graph extra
        import leidenalg  # on use: the graph extra
    except ImportError:
        raise ConfigError("the knowledge graph needs leidenalg and igraph: pip install -e '.[graph]'") from None
    return igraph, leidenalg


@dataclass
class EntityGraph:
    names: dict[str, str]  # key → display name (the most frequent spelling)
    types: dict[str, str]
    chunks: dict[str, int]  # key → chunks it is in
    docs: dict[str, int]  # key → documents it is in
    edges: dict[tuple[str, str], float]
    n_docs: int
    hubs: set[str] = field(default_factory=set)

    def nodes(self) -> list[str]:
        return [e for e in self.names if e not in self.hubs]

    def degree(self) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for (a, b), w in self.edges.items():
            out[a] += w
            out[b] += w
        return out


def load(conn: sqlite3.Connection) -> EntityGraph:
    """The entity graph as stored (filtered as the module docstring says)."""
    names: dict[str, tuple[int, str]] = {}
    types: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for entity, name, kind, n in conn.execute(
            "SELECT entity, name, type, COUNT(*) FROM graph_mentions GROUP BY entity, name, type"):
        if entity not in names or n > names[entity][0]:
            names[entity] = (n, name)
        types[entity][kind] += n
    stats = {e: (c, d) for e, c, d in conn.execute(
        "SELECT entity, COUNT(DISTINCT chunk_id), COUNT(DISTINCT doc_id) FROM graph_mentions GROUP BY entity")}
    kind_of = {e: max(t.items(), key=lambda kv: (kv[1], kv[0]))[0] for e, t in types.items()}
    keep = {e for e in names if kind_of[e] != "phrase" or stats[e][0] >= 2}
    edges: dict[tuple[str, str], float] = {}
    for a, b, w in conn.execute("SELECT source, target, SUM(weight) FROM graph_relations GROUP BY source, target"):
        if a in keep and b in keep and a != b:
            key = (a, b) if a < b else (b, a)
            edges[key] = edges.get(key, 0.0) + w
    n_docs = conn.execute("SELECT COUNT(DISTINCT doc_id) FROM graph_chunks").fetchone()[0]
    g = EntityGraph({e: names[e][1] for e in keep}, {e: kind_of[e] for e in keep},
                    {e: stats[e][0] for e in keep}, {e: stats[e][1] for e in keep}, edges, n_docs)
    if n_docs >= HUB_MIN_DOCS:
        g.hubs = {e for e in keep if g.docs[e] > HUB_SHARE * n_docs}
    return g


def partition(g: EntityGraph, nodes: Sequence[str]) -> list[list[str]]:
    """Leiden (modularity, seeded) on the sub-graph of ``nodes``: the parts of at least MIN_SIZE, members most
    connected first. A part above MAX_SIZE is partitioned again on its own sub-graph (leidenalg's
    ``max_comm_size`` is not kept by its aggregation: parts of 4,000 came back on SciFact), and one Leiden cannot
    split is cut in runs of its members, most connected first."""
    igraph, leidenalg = leiden()
    nodes = sorted(set(nodes) - g.hubs)
    index = {e: i for i, e in enumerate(nodes)}
    pairs = [(index[a], index[b], w) for (a, b), w in g.edges.items() if a in index and b in index]
    if not pairs:
        return []
    ig = igraph.Graph(n=len(nodes), edges=[(a, b) for a, b, _ in pairs])
    ig.es["weight"] = [w for _, _, w in pairs]
    strength = ig.strength(weights="weight")
    out = []
    for members in _split(ig, list(range(len(nodes))), leidenalg, 0):
        if len(members) >= MIN_SIZE:
            out.append([nodes[i] for i in sorted(members, key=lambda i: (-strength[i], nodes[i]))])
    return out


def _split(ig, vertices: list[int], leidenalg, depth: int) -> list[list[int]]:
    sub = ig.induced_subgraph(vertices)
    parts = leidenalg.find_partition(sub, leidenalg.ModularityVertexPartition, weights="weight", seed=SEED,
                                     n_iterations=-1, max_comm_size=MAX_SIZE)
    out = []
    for part in parts:
        members = [vertices[i] for i in part]
        if len(members) <= MAX_SIZE:
            out.append(members)
        elif len(parts) > 1 and depth < 4:
            out += _split(ig, members, leidenalg, depth + 1)
        else:  # Leiden keeps it whole: runs of MAX_SIZE, most connected first
            strength = ig.strength(members, weights="weight")
            ranked = [m for _, m in sorted(zip(strength, members), key=lambda x: (-x[0], x[1]))]
            out += [ranked[i:i + MAX_SIZE] for i in range(0, len(ranked), MAX_SIZE)]
    return out


def community_id(level: int, members: Sequence[str]) -> str:
    return f"c{level}-" + hashlib.sha1("\n".join(sorted(members)).encode()).hexdigest()[:12]


@dataclass
class RefreshResult:
    communities: int = 0  # level 0, after
    recomputed: int = 0  # new or changed level-0 communities
    kept: int = 0
    removed: int = 0
    level1: int = 0
    full: bool = False

    def to_json(self) -> dict:
        return dict(self.__dict__)


Summarizer = Callable[[str, list[str], list[Point]], tuple[str, str]]  # (title, names, points) → (summary, by)


def refresh(db, *, embed: Callable[[list[str]], np.ndarray] | None = None,
            summarize: Summarizer | None = None, full: bool = False) -> RefreshResult:
    """Recompute the communities the dirty entities touch (all when ``full``, when there are none yet, or when
    most of the graph changed) and write them with their summaries in one transaction (``db``: the knowledge
    base's Database; the KB version is bumped when a community changed, so cached answers are not reused)."""
    conn = db.conn
    dirty = store.dirty_entities(conn)
    old = store.communities(conn, level=0)
    res = RefreshResult()
    if not dirty and old and not full:
        res.communities = res.kept = len(old)
        return res
    g = load(conn)
    member_of = {e: c.community_id for c in old for e in c.members}
    if full or not old or len(dirty) > FULL_SHARE * max(1, len(g.names)):
        res.full, affected, nodes = True, {c.community_id for c in old}, g.nodes()
    else:
        affected = {member_of[e] for e in dirty if e in member_of}
        nodes = {e for c in old if c.community_id in affected for e in c.members if e in g.names}
        new = {e for e in dirty if e in g.names and e not in member_of}
        nodes |= new
        for a, b in g.edges:  # a new entity's neighbours that were in no community join the re-partition
            if a in new and b not in member_of:
                nodes.add(b)
            elif b in new and a not in member_of:
                nodes.add(a)
    parts = partition(g, list(nodes))
    old_ids = {c.community_id for c in old}
    fresh = [(community_id(0, p), p) for p in parts]
    keep_ids = {cid for cid, _ in fresh if cid in old_ids}
    added = [_community(conn, g, cid, 0, p, embed, summarize) for cid, p in fresh if cid not in old_ids]
    removed = (affected - keep_ids) | {c.community_id for c in old if not all(e in g.names for e in c.members)} - keep_ids
    level0 = [c for c in old if c.community_id not in removed] + added
    level1, parents = _level1(conn, g, level0, embed, summarize)
    with db.transaction():
        if removed or added or {c.community_id for c in store.communities(conn, level=1)} != \
                {c.community_id for c in level1}:
            db.bump()
        store.replace_communities(conn, removed, added)
        old1 = {c.community_id for c in store.communities(conn, level=1)}
        new1 = {c.community_id for c in level1}
        store.replace_communities(conn, old1 - new1, [c for c in level1 if c.community_id not in old1])
        store.set_parents(conn, {c.community_id: parents.get(c.community_id, "") for c in level0})
        store.clear_dirty(conn, dirty)
    res.communities, res.recomputed, res.removed = len(level0), len(added), len(removed)
    res.kept, res.level1 = len(level0) - len(added), len(level1)
    return res


def _level1(conn, g: EntityGraph, level0: list[Community], embed, summarize) -> tuple[list[Community], dict]:
    """Communities of communities, when there are many; (level-1 communities, level-0 id → parent id)."""
    if len(level0) <= HIERARCHY_MIN:
        return [], {}
    owner = {e: c.community_id for c in level0 for e in c.members}
    between: dict[tuple[str, str], float] = defaultdict(float)
    for (a, b), w in g.edges.items():
        ca, cb = owner.get(a), owner.get(b)
        if ca and cb and ca != cb:
            between[(ca, cb) if ca < cb else (cb, ca)] += w
    meta = EntityGraph({c.community_id: c.title for c in level0}, {}, {}, {}, dict(between), 0)
    by_id = {c.community_id: c for c in level0}
    out, parents = [], {}
    old = {c.community_id: c for c in store.communities(conn, level=1)}
    for part in partition(meta, list(by_id)):
        members = [e for cid in part for e in by_id[cid].members]
        cid = community_id(1, members)
        if cid in old:
            out.append(old[cid])
        else:
            points = [p for child in part for p in by_id[child].points[:2]][:POINTS]
            out.append(_made(cid, 1, [g.names.get(e, e) for e in members], members, points, embed, summarize))
        parents.update({child: cid for child in part})
    return out, parents


def _community(conn, g: EntityGraph, cid: str, level: int, members: list[str], embed, summarize) -> Community:
    points = summary_points(conn, members)
    return _made(cid, level, [g.names[e] for e in members], members, points, embed, summarize)


def _made(cid, level, names, members, points, embed, summarize) -> Community:
    title = community_title(names)
    summary, by = summarize(title, names, points) if summarize else (extractive_summary(title, points),
                                                                    "extractive")
    vec = None
    if embed is not None:
        vec = np.asarray(embed([f"{title}\n{summary}"])[0], np.float32).tobytes()
    return Community(cid, level, "", title, tuple(members), summary, tuple(points), by, vec)


def community_title(names: list[str]) -> str:
    """A community's title: its three most connected members' names."""
    top = names[:3]
    sep = "、" if any(not n.isascii() for n in top) else ", "
    return sep.join(top)


def extractive_summary(title: str, points: Sequence[Point]) -> str:
    return f"{title}: " + " ".join(p.text for p in points)


def summary_points(conn: sqlite3.Connection, members: Sequence[str], limit: int = POINTS) -> list[Point]:
    """The sentences naming the most members (greedy: each adds the most members not yet covered, a document
    already used counts half), most central member first on ties; each cites its chunk."""
    if not members:
        return []
    rank = {e: i for i, e in enumerate(members)}
    found: dict[tuple[str, int], set[str]] = defaultdict(set)
    docs: dict[str, str] = {}
    for i in range(0, len(members), 500):
        part = list(members[i:i + 500])
        for chunk_id, doc_id, entity, sentence in conn.execute(
                f"SELECT chunk_id, doc_id, entity, sentence FROM graph_mentions WHERE entity IN "
                f"({','.join('?' * len(part))})", part):
            found[(chunk_id, sentence)].add(entity)
            docs[chunk_id] = doc_id
    covered: set[str] = set()
    used_docs: dict[str, int] = defaultdict(int)
    chosen: list[tuple[str, int]] = []
    texts = store.chunk_texts(conn, {c for c, _ in found})
    sentences = {}
    for chunk_id, (text, lang) in texts.items():
        spans = split_sentences(text, language="zh" if lang == "zh" else None)
        sentences[chunk_id] = [" ".join(text[a:b].split()) for a, b in spans]
    candidates = {k: v for k, v in found.items() if k[1] < len(sentences.get(k[0], ())) and
                  statement(sentences[k[0]][k[1]])}
    while candidates and len(chosen) < limit:
        def gain(key):
            ents = candidates[key]
            new = len(ents - covered) + 0.25 * len(ents & covered)
            return (new / (1 + used_docs[docs[key[0]]]), -min(rank[e] for e in ents), key)

        best = max(candidates, key=gain)
        if gain(best)[0] <= 0.25 and chosen:
            break
        chosen.append(best)
        covered |= candidates.pop(best)
        used_docs[docs[best[0]]] += 1
    return [Point(sentences[chunk_id][idx], chunk_id, docs[chunk_id]) for chunk_id, idx in chosen]


def statement(sentence: str) -> bool:
    """A sentence, not a heading or a title line: ends like a sentence, or is long."""
    return sentence.rstrip()[-1:] in ".!?。！？；;:：)）\"”" or len(sentence.split()) >= 12 or \
        (not sentence.isascii() and len(sentence) >= 25)
