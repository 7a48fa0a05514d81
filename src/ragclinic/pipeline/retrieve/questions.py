"""Retrieval over what ``kb learn`` wrote (issue 53; store/learned.py): two rankers that point at chunks.

- ``questions``: the query's e5 vector against the kept questions' query-side vectors — a question-to-question
  match counts for the question's chunk (its best question's cosine is the chunk's score).
- ``question_terms``: BM25 over each chunk's kept questions and keywords as one field (users' words and
  synonyms the chunk itself does not use), an in-memory tantivy index.

Both read the learned rows anew when the KB's ``learned_version`` moves (a ``kb learn`` running beside the server),
so retrieval gains each chunk as soon as it is learned. Hybrid retrieval fuses them with the chunk rankers when
the KB has learned rows and ``learned_retrieval`` is on; the ``retrieve`` span's hits name the ranker that found
them (``sources``).
"""

from __future__ import annotations

import threading
from collections.abc import Collection

import numpy as np
import tantivy

from ragclinic.errors import ConfigError
from ragclinic.pipeline.retrieve.base import RETRIEVERS, to_hits
from ragclinic.store import learned as store
from ragclinic.store.kb import KnowledgeBase
from ragclinic.text.analyzer import analyze
from ragclinic.types import Hit


def learned_version(kb: KnowledgeBase) -> int:
    return int(kb.db.meta("learned_version") or 0)


class _Loaded:
    """Rows read once per ``learned_version`` (thread-safe: a server's questions share the pipeline)."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb, self._version, self._data, self._lock = kb, -1, None, threading.Lock()

    def get(self):
        v = learned_version(self.kb)
        with self._lock:
            if v != self._version:
                self._data, self._version = self.load(), v
            return self._data

    def load(self):
        raise NotImplementedError


class _Vectors(_Loaded):
    def load(self):
        return store.kept_vectors(self.kb.db.conn)


class _Terms(_Loaded):
    def load(self):
        b = tantivy.SchemaBuilder()
        b.add_integer_field("rowid", stored=True, indexed=True, fast=True)
        b.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
        schema = b.build()
        index = tantivy.Index(schema)  # in memory: rebuilt from the rows, a few thousand short texts
        writer = index.writer(heap_size=32 * 1024 * 1024, num_threads=1)
        stem = self.kb.settings.lexical_stem
        for rowid, text in store.kept_texts(self.kb.db.conn):
            writer.add_document(tantivy.Document(rowid=rowid, body=" ".join(analyze(text, stem))))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        return schema, index


@RETRIEVERS.register("questions")
class QuestionRetriever:
    name = "questions"

    def __init__(self, kb: KnowledgeBase) -> None:
        if kb.embedder is None:
            raise ConfigError(f"knowledge base {kb.folder} has no vectors (embedder='none'): the learned questions "
                              f"are matched by their words only (retriever question_terms)")
        self.kb, self._rows = kb, _Vectors(kb)

    def rank(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[tuple[int, float]]:
        rowids, vectors = self._rows.get()
        if not len(rowids) or k <= 0:
            return []
        q = self.kb.embedder.embed_queries([query])[0]
        sims = vectors @ np.asarray(q, dtype=np.float32)
        best: dict[int, float] = {}
        for i in np.argsort(-sims):
            r = int(rowids[i])
            if r in best or (allowed is not None and r not in allowed):
                continue
            best[r] = float(sims[i])
            if len(best) >= k:
                break
        return list(best.items())

    def retrieve(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[Hit]:
        return to_hits(self.kb, self.name, self.rank(query, k, allowed))


@RETRIEVERS.register("question_terms")
class QuestionTermsRetriever:
    name = "question_terms"

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb, self._index = kb, _Terms(kb)

    def rank(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[tuple[int, float]]:
        terms = list(dict.fromkeys(t for t in analyze(query, self.kb.settings.lexical_stem) if t))
        schema, index = self._index.get()
        if not terms or k <= 0:
            return []
        query_ = tantivy.Query.boolean_query([(tantivy.Occur.Should, tantivy.Query.term_query(schema, "body", t))
                                              for t in terms])
        searcher = index.searcher()
        # filtered after the search (the learned field is small): the allowed rows among a deeper list
        depth = k if allowed is None else max(k * 4, 100)
        out = [(int(searcher.doc(a)["rowid"][0]), float(s)) for s, a in searcher.search(query_, depth).hits]
        return [(r, s) for r, s in out if allowed is None or r in allowed][:k]

    def retrieve(self, query: str, k: int, allowed: Collection[int] | None = None) -> list[Hit]:
        return to_hits(self.kb, self.name, self.rank(query, k, allowed))


def learned_parts(kb: KnowledgeBase) -> list:
    """The learned rankers hybrid retrieval adds: none before ``kb learn`` ran or with ``learned_retrieval`` off."""
    if not kb.settings.learned_retrieval or not learned_version(kb):
        return []
    parts = [QuestionTermsRetriever(kb)]
    if kb.embedder is not None:
        parts.append(QuestionRetriever(kb))
    return parts
