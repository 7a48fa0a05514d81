"""The knowledge graph's steps in the query layers (issue 20; reason/graph.py has the rules and the graph reads):
the scope layer's expansion, the gate's global / mixed step, the generate layer's listed points. Each records what
it did for the trace; each is a no-op in a knowledge base without a graph."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ragclinic.pipeline.generate import check_claims
from ragclinic.pipeline.reason import graph as graph_path
from ragclinic.pipeline.reason import need
from ragclinic.pipeline.reason.collection import collection_passages, family, shared_names
from ragclinic.pipeline.retrieve.filters import resolve
from ragclinic.types import AskState
from ragclinic.types import Hit, Passage
from ragclinic.graph.sync import enabled
from ragclinic.pipeline.scope.instructions import sanitize
from ragclinic.verify.instructions import detector_for
from ragclinic.text.lang import language_of


def expand_passages(ctx, state: AskState, passages: list[Passage]) -> dict | None:
    """Graph expansion (reason/graph.py) for a question that is not global, in a KB with a graph: the chunks 1–2
    hops from the entities it names join ``passages`` (marked ``graph``); → the scope span's record."""

    s, q = ctx.settings, state.request.question
    if not s.graph_expand or not enabled(ctx.kb) or graph_path.classify(q, s.graph_global_threshold).kind == "global":
        return None
    admit = admission(ctx, state)
    hits, record = graph_path.expand(ctx.kb, q, passages, s.graph_expand, admit=admit)
    docs = ctx.kb.db.doc_infos([h.chunk.doc_id for h in hits])
    for h in hits:
        doc = docs.get(h.chunk.doc_id)
        if doc is not None and admit(h.rowid, h.chunk.id, doc.doc_id) and (clean := _clean(ctx, h, doc)) is not None:
            passages.append(Passage(len(passages) + 1, clean, doc, marks=("graph",)))
    return record


def admission(ctx, state: AskState) -> "Admission":
    """(rowid, chunk id, doc id) → whether a chunk the graph reached may enter this question's context: inside its
    scope (the search's pre-filter never saw these chunks), carrying the tags the caller enforces (a key's tenant),
    not quarantined. The graph steps see the graph through it (reason/graph_scope.py): expansion and the map step
    use and record only what admitted chunks state, so nothing outside reaches the context or the trace."""
    req = state.request
    allowed = None
    if state.allowed_chunks is not None or req.scope_pairs or req.enforced:
        allowed = resolve(ctx.kb.db, req.scope, newest_only=ctx.settings.scope_newest_version).allowed
    return Admission(ctx.kb.db, allowed, frozenset(req.quarantine), tuple(req.enforced),
                     bool(req.scope_pairs or req.enforced))


@dataclass
class Admission:
    db: Any
    allowed: set[int] | None  # the chunk rowids the question's scope admits; None: every chunk
    quarantined: frozenset[str]
    enforced: tuple[tuple[str, str], ...]
    scoped: bool = True  # the caller's scope or tenant restricts what it may see (not only the version policy)
    _docs: dict = field(default_factory=dict)

    def document(self, doc_id: str) -> bool:
        """Whether the question may read any chunk of the document (its title may shape the answer)."""
        if self.allowed is None and not self.enforced:
            return True
        rows = self.db.conn.execute("SELECT rowid, chunk_id FROM chunks WHERE doc_id = ?", [doc_id]).fetchall()
        return any(self(rowid, chunk_id, doc_id) for rowid, chunk_id in rows)

    def __call__(self, rowid: int, chunk_id: str, doc_id: str) -> bool:
        if chunk_id in self.quarantined or (self.allowed is not None and rowid not in self.allowed):
            return False
        if self.enforced:
            if doc_id not in self._docs:
                self._docs.update(self.db.doc_infos([doc_id]))
            doc = self._docs.get(doc_id)
            return doc is not None and all(doc.tags.get(k) == v for k, v in self.enforced)
        return True


def _clean(ctx, hit: Hit, doc) -> Hit | None:
    """The chunk with planted instructions cut out, as the scope layer does for searched chunks; None when nothing
    else is left."""

    if not ctx.settings.strip_instructions:
        return hit
    clean, _ = sanitize(ctx.kb.db.conn, hit, doc, detector_for(ctx.settings.instruction_detector))
    return clean


def _clean_points(ctx, mapped):
    """The map step's points without those from a chunk holding a planted instruction (the point's sentence may be
    the instruction; a cut text would no longer match its sentence numbers): such a chunk is left out whole."""
    ids = list({p.chunk_id for m in mapped for p in m.points})
    hits = {h.chunk.id: h for h in graph_path.hits_of(ctx.kb, ids)}
    docs = ctx.kb.db.doc_infos([h.chunk.doc_id for h in hits.values()])
    ok = {c for c, h in hits.items() if h.chunk.doc_id in docs and _clean(ctx, h, docs[h.chunk.doc_id]) is h}
    out = []
    for m in mapped:
        points = tuple(p for p in m.points if p.chunk_id in ok)
        if points:
            out.append(replace(m, points=points))
    return out


def global_step(ctx, state: AskState, decision, scored):
    """Global and mixed questions. With need routing (reason/need.py: the cue rules, or a set question whose
    evidence spans documents) they take the documents path (collection.py: the best passage of each document the
    question ranges over; a mixed one keeps its top passages first), with the graph's communities beside it when
    the KB has a graph. Without it (before issue 55), the cue rules send them, in a KB with a graph, to the map step
    over the communities (a global question is answered from them alone, a mixed one from them and the chunks).
    Either way a global question is answered, never refused first. → (decision, passages, the gate span's
    ``graph`` record)."""

    s, q = ctx.settings, state.request.question
    scope_of = graph_path.classify(q, s.graph_global_threshold)
    kind = "global" if state.request.graph_route == "global" and scope_of.kind == "specific" else scope_of.kind
    wanted, named = None, ([], "")
    if s.need_routing and decision.route != "clarify" and decision.path != "tools":
        if kind != "specific" or need.asks_set(q):  # the titles are read for set or global questions only
            named = family(ctx.kb.db, q, admission(ctx, state).document)
        wanted = need.global_need(q, kind, state.hits, scope_of.entities, len(named[0]), decision.route == "refuse")
    by_need = wanted is not None
    kind = wanted.kind if by_need else kind
    record = {**scope_of.to_json(), "kind": kind, "graph": enabled(ctx.kb), "communities": [], "path": "chunks"}
    if wanted is not None:
        record["need"] = wanted.to_json()
    if kind == "specific" or (not record["graph"] and not by_need) or decision.route == "clarify" \
            or decision.path == "tools":
        return decision, scored, record
    if by_need:
        return _documents(ctx, state, decision, scored, kind, record, named)
    k = s.graph_communities_k * (2 if state.request.graph_route == "global" else 1)
    mapped = _clean_points(ctx, graph_path.community_evidence(ctx.kb, q, k, admit=admission(ctx, state)))
    record["communities"] = [m.to_json() for m in mapped]
    if not mapped:
        return decision, scored, record
    if kind == "global":
        found = graph_path.community_passages(ctx.kb, mapped, 1)
    else:
        # a community point the chunks already hold marks that passage (shown whole); the others are added
        points = graph_path.community_passages(ctx.kb, mapped, 1)
        of = {p.chunk.id: next(m for m in p.marks if m.startswith("community=")) for p in points}
        found = [replace(p, marks=p.marks + (of[p.chunk.id],)) if p.chunk.id in of else p for p in scored]
        have = {p.chunk.id for p in scored}
        found += graph_path.renumber([p for p in points if p.chunk.id not in have], len(scored) + 1)
    if not found:
        return decision, scored, record
    record["path"] = "communities" if kind == "global" else "chunks+communities"
    why = f"{kind} question: mapped over {len(mapped)} communit{'y' if len(mapped) == 1 else 'ies'}"
    evidence = max(decision.evidence_score if kind == "mixed" else 0.0, max(m.relevance for m in mapped))
    return _answer(decision, kind, why, evidence), found, record


def _answer(decision, kind: str, why: str, evidence: float):
    """The gate's decision turned into an answer on the global / mixed path."""
    reason = why if decision.route != "answer" or kind == "global" else f"{decision.reason}; {why}"
    return replace(decision, route="answer", reason=reason, path=kind, path_why=why,
                   evidence_score=round(min(1.0, evidence), 4))


COMMUNITY_EXTRA = 2  # community passages the documents path adds when the KB has a graph


def _documents(ctx, state: AskState, decision, scored, kind: str, record: dict, named: tuple[list[str], str]):
    """The documents path (collection.py) for a question global by need; a mixed one keeps its top three scored
    passages first. With a graph, up to ``COMMUNITY_EXTRA`` chunks of the most relevant communities that the
    documents do not hold join them."""
    admit = admission(ctx, state)
    found, rec = collection_passages(ctx, state, admit, lambda h, d: _clean(ctx, h, d), named)
    record["collection"] = rec
    if kind == "mixed":
        have = {p.chunk.id for p in scored[:3]}
        found = list(scored[:3]) + [p for p in found if p.chunk.id not in have]
    if record["graph"]:
        mapped = _clean_points(ctx, graph_path.community_evidence(ctx.kb, state.request.question,
                                                                  ctx.settings.graph_communities_k, admit=admit))
        record["communities"] = [m.to_json() for m in mapped]
        have = {p.chunk.id for p in found}
        extra = [p for p in graph_path.community_passages(ctx.kb, mapped, 1) if p.chunk.id not in have]
        found += extra[:COMMUNITY_EXTRA]
    if not found:
        return decision, scored, record
    found = graph_path.renumber(found)
    record["path"] = "documents" + ("+communities" if record["communities"] else "")
    docs = len({p.chunk.doc_id for p in found})
    why = f"{kind} question: the best passages of {docs} documents ({record['need']['why']})"
    decided = _answer(decision, kind, why, max(decision.evidence_score, 0.5))
    if note := shared_names(found, language_of(state.request.question)):
        record["shared_names"] = note
        decided = replace(decided, notes=decided.notes + (note,))
    return decided, found, record


GLOBAL_POINTS = 10  # map-step points listed under a global answer


def with_points(ctx, state: AskState, text: str, claims, flags: list[str]):
    """A global answer lists the map step's points it rests on, each cited (a small model's reduce names two or
    three of them; the list keeps the breadth the communities gave). Points the answer already quotes are not
    repeated. The claims are checked again on the whole text. On the documents path the answer rests on whole
    passages, and the few community points beside them are context, not a list to append."""

    if any("collection" in p.marks for p in state.passages):
        return text, claims
    seen = " ".join(text.split())
    lines = []
    for p in state.passages:
        for point in (graph_path.point_excerpt(p) or "").split(" … "):
            if point and point not in seen and len(lines) < GLOBAL_POINTS:
                lines.append(f"- {point.rstrip()} [{p.n}]")
                seen += " " + point
    if not lines:
        return text, claims
    head = "文档中的要点：" if language_of(state.request.question) == "zh" else "Points from the documents:"
    text = f"{text}\n{head}\n" + "\n".join(lines)
    flags.append(f"graph_points: {len(lines)} point(s) of the communities listed under the answer")
    return text, check_claims(text, state.passages, ctx.judge, ctx.settings, state.request.question)
