"""The documents path for a question about a set of documents (issue 55; need.py decides when): instead of the top
passages of one search — which, for "which suppliers keep coming up in our contracts?", are three chunks of one
contract — the best passage of each document the question ranges over.

The documents, at most ``MAX_DOCS``:
1. the *family* the question names: documents whose title or file name holds one of its words, when that word
   names two documents or more and not most of the collection ("contracts" → the five contracts; 事故 → the
   three incident reports; a name → the documents titled with it);
2. then the documents of the search's hits, in rank order.

From each, its chunk nearest the question (the chunk's stored e5 vector, else its words); then second chunks while
the characters fit ``BUDGET``. Every chunk passes the question's scope, tenant and quarantine (graph_steps.Admission)
and has planted instructions cut out as the scope layer does. No model call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePath

import numpy as np

from ragclinic.graph.extract import chinese_entities, english_entities, normalise
from ragclinic.text.lang import language_of
from ragclinic.text.sentences import split_sentences
from ragclinic.text.support import content_terms, weighted_coverage
from ragclinic.types import Hit, Passage

MAX_DOCS = 6
BUDGET = {"en": 6000, "zh": 3600}  # characters of passages shown (a Chinese character is ~1 token, a word ~1.3)
_FAMILY_MAX_SHARE = 0.5  # a word in more of the titles than this names the collection, not a family
_STEM = re.compile(r"(ies|es|s)$")


def _stem(term: str) -> str:
    return _STEM.sub("", term) if term.isascii() and len(term) > 4 else term


def family(db, question: str, readable=None) -> tuple[list[str], str]:
    """The documents whose title or file name holds a word of the question that names a few of them, and the word.
    ``readable(doc_id)`` (graph_steps.Admission.document): only documents the question may read count — another
    tenant's titles never shape the answer or appear in its trace."""
    rows = db.conn.execute("SELECT doc_id, title, path FROM documents").fetchall()
    if len(rows) < 3:
        return [], ""
    q_terms = {_stem(t) for t in content_terms(question)}
    zh = language_of(question) == "zh"
    best: tuple[list[str], str] = ([], "")
    for term in sorted(q_terms, key=len, reverse=True):
        if len(term) < (2 if zh or not term.isascii() else 4):
            continue
        named = [d for d, title, path in rows
                 if (term in (title or "").lower() or term in PurePath(path or "").stem.lower().replace("-", " "))
                 and (readable is None or readable(d))]
        if 2 <= len(named) <= max(2, _FAMILY_MAX_SHARE * len(rows)) and len(named) > len(best[0]):
            best = (named, term)
    return best


def collection_passages(ctx, state, admit, clean, named: tuple[list[str], str]) -> tuple[list[Passage], dict]:
    """(passages numbered from 1, the record: family word, documents, chunks). ``admit``: graph_steps.Admission;
    ``clean(hit, doc)``: the hit with instructions cut out, or None; ``named``: the question's family (``family``)."""
    db, q = ctx.kb.db, state.request.question
    fam, word = named
    ranked = list(dict.fromkeys(h.chunk.doc_id for h in sorted(state.hits, key=lambda h: -h.score)))
    order = _same_language_first(db, list(dict.fromkeys(fam + ranked)), language_of(q))[:MAX_DOCS * 2]
    q_terms = content_terms(q)
    qv = _query_vector(ctx.kb, q)
    per_doc: dict[str, list[tuple[float, int, str]]] = {}
    for doc_id in order:
        rows = [r for r in db.conn.execute("SELECT rowid, chunk_id, text, embedding FROM chunks WHERE doc_id = ?",
                                           [doc_id]) if admit(r[0], r[1], doc_id)]
        scored = sorted(((_near(qv, q_terms, text, emb), rowid, chunk_id) for rowid, chunk_id, text, emb in rows),
                        reverse=True)
        if scored:
            per_doc[doc_id] = scored
        if len(per_doc) >= MAX_DOCS:
            break
    budget = BUDGET["zh" if language_of(q) == "zh" else "en"]
    chosen: list[int] = []
    used = 0
    for depth in range(2):  # every document's best chunk first, then second chunks while they fit
        for doc_id, scored in per_doc.items():
            if depth < len(scored):
                rowid = scored[depth][1]
                size = len(db.chunk_texts([rowid]).get(rowid, ""))
                if depth == 0 or used + size <= budget:
                    chosen.append(rowid)
                    used += size
    chunks = db.chunks_by_rowid(chosen)
    docs = db.doc_infos(list(per_doc))
    out: list[Passage] = []
    for rowid in sorted(chosen, key=lambda r: (list(per_doc).index(chunks[r].doc_id), chunks[r].start)
                        if r in chunks else (99, 0)):
        ch = chunks.get(rowid)
        if ch is None or ch.doc_id not in docs or (hit := clean(Hit(ch, 0.0, (), rowid), docs[ch.doc_id])) is None:
            continue
        out.append(Passage(len(out) + 1, hit, docs[ch.doc_id], marks=("collection",)))
    record = {"family": word, "family_docs": len(fam), "documents": list(per_doc),
              "chunks": [p.chunk.id for p in out]}
    return out, record


def _same_language_first(db, doc_ids: list[str], language: str) -> list[str]:
    """The documents in the question's language first (a bilingual collection holds a contract in each language;
    the question reads those of its own), the others after them, each group in its order."""
    if not doc_ids:
        return doc_ids
    rows = db.conn.execute(f"SELECT doc_id, language FROM chunks WHERE doc_id IN ({','.join('?' * len(doc_ids))}) "
                           f"GROUP BY doc_id", doc_ids).fetchall()
    lang = {d: ("zh" if x == "zh" else "en") for d, x in rows}
    want = "zh" if language == "zh" else "en"
    return sorted(doc_ids, key=lambda d: lang.get(d, want) != want)


def _query_vector(kb, question: str):
    return kb.embedder.embed_queries([question])[0] if kb.embedder is not None else None


def _near(qv, q_terms, text: str, emb) -> float:
    if qv is not None and emb:
        v = np.frombuffer(emb, np.float32)
        if v.shape[0] == qv.shape[0]:
            return float(v @ qv)
    return weighted_coverage(q_terms, text)



SHARED_NAMES = 6  # names listed in the note


def shared_names(passages: Sequence[Passage], language: str) -> str:
    """The note for the model: the names (persons, organisations, places, products — not noun phrases) that two or
    more of the passages' documents share, but not every one when there are three or more (the collection's owner,
    named everywhere), each with the passages naming it. "" when none. The rules of graph/extract.py, on the shown
    text: a knowledge base without a graph gets it too."""
    docs: dict[str, set[str]] = {}
    where: dict[str, list[int]] = {}
    shown: dict[str, str] = {}
    for p in passages:
        zh = p.chunk.language == "zh"
        for a, b in split_sentences(p.chunk.text, language="zh" if zh else None):
            sentence = p.chunk.text[a:b]
            for name, kind in (chinese_entities(sentence) if zh else english_entities(sentence, set())):
                if kind == "phrase":
                    continue
                key = normalise(name, kind)
                docs.setdefault(key, set()).add(p.chunk.doc_id)
                if p.n not in where.setdefault(key, []):
                    where[key].append(p.n)
                if len(name) > len(shown.get(key, "")):
                    shown[key] = name
    total = len({p.chunk.doc_id for p in passages})
    keep = [k for k, d in docs.items() if len(d) >= 2 and (total < 3 or len(d) < total) and not _inside(k, docs)]
    keep = sorted(keep, key=lambda k: (-len(docs[k]), where[k][0]))[:SHARED_NAMES]
    if not keep:
        return ""
    items = [f"{shown[k]} {''.join(f'[{n}]' for n in where[k])}" for k in keep]
    if language == "zh":
        return "在多份文档中出现的名称：" + "；".join(items) + "。"
    return "Named in more than one document: " + "; ".join(items) + "."


def _inside(key: str, docs: dict[str, set[str]]) -> bool:
    """A name that is part of a longer name found in the same documents ("Brindlewood" of "Brindlewood Foods")."""
    return any(key != k and key in k and docs[k] >= docs[key] for k in docs)
