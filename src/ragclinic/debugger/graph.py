"""The graph probe (issue 20 §5): in a knowledge base with a graph, what the graph knew of the expected answer.

In order: **entity missing** (the expected answer is written in the chunks but the extractor made no entity of it),
**relation missing** (the question's entities and the answer's are in the graph, but no relation within two hops
joins them, so expansion could not reach it), **community summary missing the point** (a global or mixed question:
the expected answer is in a community's chunks, but the map step's points for it did not carry it — or that
community was not among those mapped). ``None`` when the knowledge base has no graph. "Written" and "carried" are
judged as eval matches answers (text/answers.py ``locate``).
"""

from __future__ import annotations

from ragclinic.debugger.base import Case, Fix, LayerReport, fault, ok
from ragclinic.graph.extract import normalise
from ragclinic.pipeline.reason import question_entities
from ragclinic.graph.sync import enabled
from ragclinic.text.answers import locate, locate_any

FIX_ENTITY = ("the fast extractor takes capitalised names, acronyms, two-word noun phrases and jieba's proper nouns "
              "for entities; re-ingest with --graph model to have the language model extract typed entities")
FIX_RELATION = ("the two are never named in one sentence (fast mode relates what one sentence names); --graph model "
                "extracts relations the text states across sentences")
FIX_POINTS = "map more of each community: raise graph_communities_k (RAGCLINIC_GRAPH_COMMUNITIES_K)"
FIX_MAPPED = "the community holding it was not among those mapped: raise graph_communities_k, or ask with its words"


def probe_graph(case: Case) -> LayerReport | None:

    kb = case.kb
    if not enabled(kb):
        return None
    conn = kb.db.conn
    span = case.trace.span("gate")
    g = (span.output.graph if span is not None and span.output is not None else None) or {}
    answers = case.expect.texts
    known = lambda key: conn.execute("SELECT 1 FROM graph_mentions WHERE entity = ? LIMIT 1",  # noqa: E731
                                     [key]).fetchone() is not None
    q_keys = [k for k in question_entities(case.trace.query) if known(k)]
    evidence = {"kind": g.get("kind", ""), "path": g.get("path", ""), "question_entities": q_keys,
                "communities": [c["id"] for c in g.get("communities", [])]}
    holding = _chunks_with(conn, answers)
    written = [a for a in answers if holding[a]]
    keys = [normalise(a) for a in written if known(normalise(a)) or known(normalise(a, "phrase"))]
    if written and not keys and all(len(a) >= 2 for a in written):
        where = holding[written[0]][:3]
        return fault(f"entity missing: {written[0]!r} is written in {len(where)} chunk(s) but is no entity of the "
                     f"graph", FIX_ENTITY, Fix("rebuild the graph with --graph model", graph="model"), chunks=where,
                     **evidence)
    if keys and q_keys and g.get("kind") != "global":
        reach = _within(conn, q_keys, 2)
        if not any(k in reach for k in keys):
            return fault(f"relation missing: no relation within two hops joins {', '.join(q_keys)} and {keys[0]!r}",
                         FIX_RELATION, Fix("rebuild the graph with --graph model", graph="model"),
                         answer_entity=keys[0], **evidence)
    if answers and g.get("path") not in (None, "", "chunks"):
        shown = " ".join(p["text"] for c in g.get("communities", []) for p in c["points"])
        if ids := (g.get("collection") or {}).get("chunks"):  # the documents path (issue 55): its passages too
            shown += " " + " ".join(t for t, in conn.execute(
                f"SELECT text FROM chunks WHERE chunk_id IN ({','.join('?' * len(ids))})", list(ids)))
        if locate_any(answers, shown) is None:
            holder = _community_holding(conn, written, holding)
            mapped = set(evidence["communities"])
            if holder and holder in mapped:
                return fault(f"community summary missing the point: community {holder} holds {written[0]!r}, but "
                             f"the points mapped from it do not", FIX_POINTS, _more_communities(case), community=holder,
                             **evidence)
            if holder:
                return fault(f"community {holder} holds {written[0]!r} but was not mapped", FIX_MAPPED,
                             _more_communities(case), community=holder, **evidence)
    return ok("the graph holds what the answer needs" if keys or not answers else "nothing the graph could add",
              **evidence)


def _more_communities(case: Case) -> Fix:
    k = min(30, max(case.pipeline.settings.graph_communities_k * 2, type(case.kb.settings).model_fields[
        "graph_communities_k"].default))
    return Fix(f"map {k} communities (graph_communities_k)", settings={"graph_communities_k": k})


def _chunks_with(conn, answers: list[str], limit: int = 20) -> dict[str, list[str]]:
    """Each answer → up to ``limit`` chunks that state it; only the chunks of documents that state it are read."""
    docs = conn.execute("SELECT doc_id, text FROM documents ORDER BY rowid").fetchall()
    out: dict[str, list[str]] = {a: [] for a in answers}
    for a, found in out.items():
        for doc_id, text in docs:
            if len(found) >= limit:
                break
            if locate(a, text) is not None:
                found.extend(c for c, t in conn.execute("SELECT chunk_id, text FROM chunks WHERE doc_id = ? ORDER BY "
                                                         "ordinal", [doc_id]) if locate(a, t) is not None)
        del found[limit:]
    return out


def _within(conn, seeds: list[str], hops: int) -> set[str]:
    seen, frontier = set(seeds), set(seeds)
    for _ in range(hops):
        nxt = set()
        for e in frontier:
            nxt.update(r[0] for r in conn.execute(
                "SELECT CASE WHEN source = ? THEN target ELSE source END FROM graph_relations WHERE source = ? OR "
                "target = ? LIMIT 2000", [e, e, e]))
        frontier = nxt - seen
        seen |= nxt
    return seen


def _community_holding(conn, answers: list[str], holding: dict[str, list[str]]) -> str:
    """The level-0 community most of whose members' chunks hold one of ``answers`` (``holding``: their chunks)."""
    for a in answers:
        chunks = holding[a]
        if not chunks:
            continue
        rows = conn.execute(
            "SELECT b.community_id, COUNT(*) FROM graph_mentions m JOIN graph_membership b ON b.entity = m.entity "
            f"AND b.level = 0 WHERE m.chunk_id IN ({','.join('?' * len(chunks))}) GROUP BY b.community_id "
            "ORDER BY COUNT(*) DESC LIMIT 1", chunks).fetchone()
        if rows:
            return rows[0]
    return ""
