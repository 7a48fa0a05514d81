"""Questions about the whole collection (issue 20): the question's scope, graph expansion, community evidence.

- ``classify``: specific / global / mixed, by rules (cue phrases EN and ZH for "across these documents", "main
  risks", "which ... appear in more than one", "总结", "哪些 ... 不止一份"; against them a number, a year, "when",
  "how much") combined into a score, and a threshold chosen on the dev half of bench/graph/questions.jsonl. A
  global-scoring question that names an entity is mixed.
- ``expand`` (specific and mixed): when the question names an entity (or noun phrase) of the graph that none of the
  top chunks mentions, the named entities are followed one hop (a relation of a named entity) or two (named — X —
  another named entity); the chunks stating those relations that bring a missing entity join the context, at most
  ``graph_expand``. A question whose entities the search already found gains nothing (no noise for specific ones).
- ``community_evidence`` (global and mixed): the communities most relevant to the question (e5 similarity of their
  summary, and the question's words in it) — the map step takes the summary sentences of each that bear on the
  question, as passages citing their chunks; the generator's reduce step writes one cited answer over them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from ragclinic.graph.communities import community_title, statement
from ragclinic.graph.extract import chinese_entities, english_entities, normalise
from ragclinic.pipeline.generate.points import point_excerpt  # noqa: F401  (the global step reads it here)
from ragclinic.pipeline.reason.graph_scope import Sight
from ragclinic.store import graph as store
from ragclinic.text.lang import language_of
from ragclinic.text.sentences import split_sentences
from ragclinic.text.support import content_terms, weighted_coverage
from ragclinic.types import Hit, Passage

# (pattern, weight): what makes a question about the collection rather than one fact
_GLOBAL_CUES = [
    (r"\bacross (?:these|the|all|both|every|multiple|several|different)\b", 2.5),
    (r"\b(?:these|the|all|both|our|multiple|several|different) (?:documents?|reports?|files?|contracts?|sources?|"
     r"texts?|papers?|articles?|records?|minutes|updates|agreements)\b", 1.5),
    (r"\b(?:summari[sz]e|summary|overview|overall|in general|as a whole|big picture)\b", 2.0),
    (r"\b(?:main|key|major|principal|recurring|common|central|most important|biggest) (?:\w+ )?(?:themes?|risks?|"
     r"issues?|topics?|points?|findings?|problems?|challenges?|concerns?|lessons?|trends?|causes?|ideas?|"
     r"threads?|priorities|factors?|suppliers?|people|players?|actors?|teams?)\b", 2.0),
    (r"\b(?:more than one|several|multiple|many|both|each of|every one of|all of)\b", 1.0),
    (r"\bhow (?:are|do|did|were) .{2,60} (?:related|connected|linked|interact|work together|depend)\b", 2.0),
    (r"\b(?:relationships?|connections?|links?) (?:between|among)\b", 1.5),
    (r"^(?:which|what|who) (?:\w+ ){0,2}(?:appear|recur|are mentioned|are involved|are named|come up|feature)", 1.5),
    (r"^(?:list|name|give|identify) (?:all|every|the main|the key|each)\b", 1.5),
    (r"\b(?:mentioned|discussed|described|reported|covered|raised) (?:in|across|throughout)\b", 1.0),
    (r"\bthroughout\b|\bcollection\b|\bcorpus\b|\bthe whole\b", 1.0),
    # a list of a kind of thing a collection holds ("what/which (corrective) measures", "which themes")
    (r"\b(?:what|which) (?:\w+ ){0,2}?(?:risks|themes|topics|issues|problems|challenges|lessons|roles|suppliers|"
     r"teams|projects|incidents|events|measures|factors|trends|findings|goals|plans)\b", 1.0),
    # a list question, "what/which <things> does/do/are ...": alone it may ask for one thing's properties ("which
    # indexes does the knowledge base build"), so it counts only beside a cue that names the collection or its kind
    (r"^(?:what|which) (?:\w+ ){0,2}\w{3,}s (?:does|do|did|are|were|have|has)\b", 0.5),
    # the organisation a collection is about, as a whole: "what products does the group build"
    (r"\bthe (?:group|company|organi[sz]ation|firm)\b(?!'s)", 0.5),
    (r"\b(?:are|were|is) (?:described|discussed|mentioned|reported|listed|given|named)\??$", 1.5),
    # "at each?" / "for each of them" (the places or parts just listed), not "for each paragraph" (one property)
    (r"\b(?:report|say|tell us) about\b|\b(?:at|for) each(?:\?|$| of (?:them|these|those|the)\b)", 1.0),
]
_GLOBAL_CUES_ZH = [
    (r"(?:这些|所有|全部|各|多份|几份|整个|各个|上述)(?:文件|文档|报告|合同|材料|资料|记录|文章|纪要|公告)", 2.5),
    (r"总结|概括|归纳|汇总|总体|整体|综述|概述|总的来说|全面", 2.0),
    (r"(?:主要|关键|重大|共同|反复|核心|最重要的)(?:的)?(?:风险|问题|主题|挑战|隐患|原因|教训|措施|趋势|内容|"
     r"供应商|人物|团队|项目|事件|因素)", 2.0),
    (r"不止一|多于一|多个|多次|分别|各自|都(?:提到|涉及|出现)", 1.0),
    (r"(?:之间|相互).{0,4}(?:关系|联系|关联|合作|配合)|有何关联|如何(?:合作|协作|关联|联系|配合)", 2.0),
    (r"^(?:列出|列举)", 1.2),
    (r"(?:提到|涉及|出现|讨论|描述)(?:了)?(?:哪些|的所有)", 1.2),
    # "哪些" asks for a list; alone it may ask for one thing's properties ("知识库为每个段落建立了哪些索引"), so it
    # counts only beside a cue that names the collection or a kind of thing a collection holds (below)
    (r"^(?:哪些|有哪些)|了哪些|有哪些(?:\w{0,4})(?:和|及)", 0.5),
    (r"哪些[^，。？?]{0,6}?(?:主题|风险|问题|挑战|隐患|原因|因素|教训|措施|趋势|事件|事故|目标|计划|变化|经验)", 1.0),
    (r"^(?:文件|文档|报告|材料)(?:中|里)|(?:文档|文件|资料|材料)(?:集|库)", 1.5),
]
_SPECIFIC_CUES = [
    (r"\b(?:when|what year|what date|how much|how many|how long|how old|at what|which year)\b", 1.2),
    (r"\d", 0.8),
    (r"^(?:who|where) (?:is|was)\b", 1.0),
]
_SPECIFIC_CUES_ZH = [
    (r"什么时候|哪一年|何时|多少|几年|几个|几月|哪天|哪一天|是谁|在哪里", 1.2),
    (r"\d", 0.8),
]
_BIAS = -1.5


@cache
def _global_words() -> frozenset[str]:
    """Words of a global question that say "global", not what it is about: not matched against summaries.
    On first use, not at import: analysing the Chinese ones loads jieba's dictionary (0.6 s, issue 33)."""
    return content_terms("across these documents reports files contracts sources main key major principal "
                         "overall summary summarise summarize overview discussed mentioned described reported "
                         "common recurring appear several multiple more than one all every related connected "
                         "这些 文件 文档 报告 合同 材料 主要 总结 概括 提到 涉及 出现 哪些 所有 不止 多份")


@dataclass(frozen=True)
class QuestionScope:
    kind: str  # "specific", "global" or "mixed"
    score: float  # P(global) by the rules
    cues: tuple[str, ...]
    entities: tuple[str, ...]  # what the question names (surface forms)

    def to_json(self) -> dict:
        return {"kind": self.kind, "score": round(self.score, 4), "cues": list(self.cues),
                "entities": list(self.entities)}


def classify(question: str, threshold: float) -> QuestionScope:
    q = " ".join(question.split())
    zh = language_of(q) == "zh"
    low = q.lower()
    z, cues = _BIAS, []
    for pattern, w in (_GLOBAL_CUES_ZH if zh else _GLOBAL_CUES):
        if m := re.search(pattern, q if zh else low):
            z += w
            cues.append(m.group())
    for pattern, w in (_SPECIFIC_CUES_ZH if zh else _SPECIFIC_CUES):
        if re.search(pattern, q if zh else low):
            z -= w
    score = float(1 / (1 + np.exp(-z)))
    names = named_entities(q, zh)
    if score < threshold:
        kind = "specific"
    else:
        kind = "mixed" if names else "global"
    return QuestionScope(kind, score, tuple(cues), tuple(names))


def named_entities(question: str, zh: bool | None = None) -> list[str]:
    """The names a question gives (not its noun phrases): persons, organisations, places, products, acronyms."""
    zh = language_of(question) == "zh" if zh is None else zh
    found = chinese_entities(question) if zh else english_entities(question, set())
    return list(dict.fromkeys(n for n, kind in found if kind != "phrase"))


def question_entities(question: str) -> list[str]:
    """Names and noun phrases of the question as graph keys."""
    zh = language_of(question) == "zh"
    found = chinese_entities(question) if zh else english_entities(question, set())
    return list(dict.fromkeys(normalise(n, kind) for n, kind in found))


# ---------------------------------------------------------------------------- expansion (specific, mixed)
def expand(kb, question: str, passages: Sequence[Passage], limit: int, admit=None) -> tuple[list[Hit], dict]:
    """Chunks 1–2 hops from the entities the question names (graph/ relations), not among ``passages``: (hits,
    the trace's record: seeds, paths, added chunk ids). ``admit`` (graph_steps.Admission): the chunks the question
    may read — only entities they mention and relations they state are used or recorded (reason/graph_scope.py)."""
    conn = kb.db.conn
    sight = Sight(conn, admit)
    keys = [k for k in question_entities(question) if sight.knows(k)]
    record = {"question_entities": keys, "seeds": [], "paths": [], "added": []}
    if not keys or limit <= 0:
        return [], record
    have = {p.chunk.id for p in passages}
    in_top = {r[0] for r in conn.execute(
        f"SELECT DISTINCT entity FROM graph_mentions WHERE chunk_id IN ({','.join('?' * len(have))})", list(have))
    } if have else set()
    seeds = sorted(keys, key=lambda k: (k not in in_top, keys.index(k)))
    record["seeds"] = seeds
    missing = [k for k in keys if k not in in_top]
    record["missing"] = missing
    if not missing:  # the search found every entity the question names: nothing for the graph to add
        return [], record
    q_terms = content_terms(question)
    score: dict[str, float] = defaultdict(float)
    paths: dict[str, tuple[float, list[str]]] = {}  # chunk → the path that gave it most

    def credit(chunk_id: str, gain: float, path: list[str]) -> None:
        score[chunk_id] += gain
        if chunk_id not in paths or gain > paths[chunk_id][0]:
            paths[chunk_id] = (gain, path)

    for s in seeds:
        for other, chunk_id, w in sight.relations(s):
            if other in seeds:  # a relation between two named entities: the strongest evidence
                credit(chunk_id, 2.0 * w, [s, other])
                continue
            credit(chunk_id, 0.5 * w, [s, other])
            for third, chunk2, w2 in sight.relations(other):  # two hops: named — X — another named entity
                if third in seeds and third != s:
                    credit(chunk2, 1.0 * w2, [s, other, third])
    texts = {c: t for c, (t, _) in store.chunk_texts(conn, [c for c in score if c not in have]).items()}
    ranked = []
    for chunk_id, text in texts.items():
        low = normalise(text)
        named = sum(1 for k in seeds if k in low)
        if not any(k in low for k in missing):  # a chunk the graph adds brings an entity the passages lack
            continue
        if named >= 2 or weighted_coverage(q_terms, text) >= 0.3:
            ranked.append((named, score[chunk_id], chunk_id))
    ranked.sort(reverse=True)
    chosen = [c for _, _, c in ranked[:limit]]
    record["paths"] = [{"chunk_id": c, "path": paths[c][1]} for c in chosen]
    record["added"] = chosen
    return hits_of(kb, chosen), record


def hits_of(kb, chunk_ids: Sequence[str]) -> list[Hit]:
    if not chunk_ids:
        return []
    rows = kb.db.conn.execute(f"SELECT rowid, chunk_id FROM chunks WHERE chunk_id IN "
                              f"({','.join('?' * len(chunk_ids))})", list(chunk_ids)).fetchall()
    by_rowid = kb.db.chunks_by_rowid([r[0] for r in rows])
    order = {c: i for i, c in enumerate(chunk_ids)}
    return sorted((Hit(ch, 0.0, (), rid) for rid, ch in by_rowid.items()), key=lambda h: order[h.chunk.id])


# ---------------------------------------------------------------------------- communities (global, mixed)
@dataclass(frozen=True)
class Mapped:
    """One community's part of a global answer: its relevance and the summary points that bear on the question."""

    community: store.Community
    relevance: float
    points: tuple[store.Point, ...]

    def to_json(self) -> dict:
        return {"id": self.community.community_id, "title": self.community.title, "level": self.community.level,
                "relevance": round(self.relevance, 4), "summary_by": self.community.summary_by,
                "points": [{"text": p.text, "chunk_id": p.chunk_id} for p in self.points]}


def community_evidence(kb, question: str, k: int, points_each: int = 3, admit=None) -> list[Mapped]:
    """The map step: the ``k`` level-0 communities most relevant to ``question`` (their summary's e5 similarity
    and words), and from each the chunks of its members that bear most on the question (their stored e5 vectors,
    else their words), each chunk's best sentences as the community's points. A chunk serves one community.
    ``admit(rowid, chunk_id, doc_id)``: which chunks may be read (the question's scope, the caller's tenant); a
    restricted question sees each community through them only (reason/graph_scope.py: its title, members and
    summary points from those chunks, ranked by their words)."""
    sight = Sight(kb.db.conn, admit)
    found = sight.communities(store.communities(kb.db.conn, level=0), community_title)
    if not found:
        return []
    q_terms = content_terms(question) - _global_words() or content_terms(question)
    qv = kb.embedder.embed_queries([question])[0] if kb.embedder is not None else None
    lexical = np.array([weighted_coverage(q_terms, f"{c.title} {c.summary} {' '.join(c.members)} "
                                                   f"{' '.join(p.text for p in c.points) if sight.restricted else ''}")
                        for c in found])
    dense = np.zeros(len(found))
    if qv is not None and all(c.embedding for c in found):
        mat = np.stack([np.frombuffer(c.embedding, np.float32) for c in found])
        if mat.shape[1] == qv.shape[0]:
            dense = _relative(mat @ qv)
    relevance = 0.6 * lexical + 0.4 * dense if dense.any() else lexical
    order = [i for i in np.argsort(-relevance, kind="stable") if relevance[i] > 0][:k]
    best = float(relevance[order[0]]) if order else 0.0
    out, used = [], set()
    for i in order:
        if relevance[i] < MIN_SHARE * best:
            break
        c = found[i]
        points = _community_points(kb, c, question, q_terms, qv, used, points_each, admit)
        used.update(p.chunk_id for p in points)
        if points:
            out.append(Mapped(c, float(relevance[i]), tuple(points)))
    return out


MIN_SHARE = 0.2  # a community below this share of the best one's relevance is not mapped


def _relative(scores: np.ndarray) -> np.ndarray:
    """Scores as 0..1 relative to each other (e5 cosines sit in a narrow band)."""
    return np.clip((scores - scores.mean()) / (scores.std() + 1e-6), -3, 3) / 6 + 0.5


def _community_points(kb, c: store.Community, question: str, q_terms, qv, used: set[str],
                      limit: int, admit=None) -> list[store.Point]:
    """The community's chunks (those naming its members) nearest the question; of each, the sentence that best
    matches the question's words (one naming a member wins a tie)."""
    conn = kb.db.conn
    members = list(c.members)
    mentions: dict[str, set[int]] = defaultdict(set)
    for chunk_id, sentence in conn.execute(
            f"SELECT chunk_id, sentence FROM graph_mentions WHERE entity IN ({','.join('?' * len(members))})",
            members):
        if chunk_id not in used:
            mentions[chunk_id].add(sentence)
    if not mentions:
        return []
    ids = list(mentions)[:400]
    rows = [r[1:] for r in conn.execute(f"SELECT rowid, chunk_id, doc_id, text, language, embedding FROM chunks "
                                        f"WHERE chunk_id IN ({','.join('?' * len(ids))})", ids)
            if admit is None or admit(r[0], r[1], r[2])]
    if qv is not None and rows and all(r[4] for r in rows):
        near = [float(np.frombuffer(r[4], np.float32) @ qv) for r in rows]
    else:
        near = [weighted_coverage(q_terms, r[2]) for r in rows]
    points = []
    for _, (chunk_id, doc_id, text, language, _) in sorted(zip(near, rows), key=lambda x: -x[0])[:limit]:
        spans = split_sentences(text, language="zh" if language == "zh" else None)
        sentences = [" ".join(text[a:b].split()) for a, b in spans]
        named = mentions[chunk_id]
        real = [i for i, x in enumerate(sentences) if statement(x)]  # not a heading or a title line
        if real:
            pick = max(real, key=lambda i: (weighted_coverage(q_terms, sentences[i]) + 0.1 * (i in named), -i))
            points.append(store.Point(sentences[pick], chunk_id, doc_id))
    return points


def community_passages(kb, mapped: Sequence[Mapped], start: int) -> list[Passage]:
    """The map step's points as passages numbered from ``start``: one per chunk, marked with its community and the
    sentences of the chunk the points are (the generator is shown those)."""
    by_chunk: dict[str, tuple[str, list[str]]] = {}
    for m in mapped:
        for p in m.points:
            cid, texts = by_chunk.setdefault(p.chunk_id, (m.community.community_id, []))
            texts.append(p.text)
    hits = {h.chunk.id: h for h in hits_of(kb, list(by_chunk))}
    docs = kb.db.doc_infos([h.chunk.doc_id for h in hits.values()])
    out = []
    for chunk_id, (cid, texts) in by_chunk.items():
        h = hits.get(chunk_id)
        if h is None or h.chunk.doc_id not in docs:
            continue
        idx = _sentence_indexes(h.chunk.text, h.chunk.language, texts)
        out.append(Passage(start + len(out), h, docs[h.chunk.doc_id],
                           marks=(f"community={cid}", "points=" + ",".join(map(str, idx)))))
    return out


def _sentence_indexes(text: str, language: str, points: Sequence[str]) -> list[int]:
    spans = split_sentences(text, language="zh" if language == "zh" else None)
    flat = [" ".join(text[a:b].split()) for a, b in spans]
    return sorted({flat.index(p) for p in points if p in flat})


def renumber(passages: Sequence[Passage], start: int = 1) -> list[Passage]:
    return [replace(p, n=start + i) for i, p in enumerate(passages)]
