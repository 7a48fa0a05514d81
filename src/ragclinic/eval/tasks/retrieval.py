"""The ``retrieval`` task: nDCG@10, Recall@k and MRR (through ir-measures) per retriever over a BEIR set,
or over a question-answering set whose items bring their passage (SQuAD/CMRC2018: question → paragraph,
see ``qa_as_retrieval``).

The corpus is ingested into the given knowledge base (unchanged files are skipped, and the embedding cache
means a second knowledge base over the same corpus embeds nothing). A hit's document is its record key (the
BEIR ``_id``); a document's score is its best chunk's.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragclinic.eval.datasets import DatasetError, Doc, Loaded, RetrievalSet
from ragclinic.ingest.runner import ingest
from ragclinic.pipeline.retrieve import create_retriever
from ragclinic.pipeline.retrieve import judge_rerank

MEASURES = ("nDCG@10", "R@1", "R@5", "R@10", "R@100", "RR@10")
RETRIEVERS = ("lexical", "dense", "hybrid")


def run_retrieval(data: Loaded, kb, corpus_path: Path, *, limit: int = 0, depth: int = 100,
                  retrievers: tuple[str, ...] = RETRIEVERS, rerank: bool = False, judge=None,
                  progress: Callable[[int, int], None] | None = None, ray=None) -> dict[str, Any]:
    """``ray``: a eval.ray_eval.RayEval — the corpus is ingested on its workers and the queries are shared out
    among them (the metrics are the same: retrieval is deterministic)."""
    import ir_measures  # on use: ir_measures (pandas, heavy), only for this task
    from ir_measures import Qrel, ScoredDoc  # on use: as above

    kb.lock()
    try:
        ingest(kb, [corpus_path], backend=ray.ingest_backend(kb) if ray is not None else None)
    finally:
        kb.unlock()
    qids = sorted(data.data.queries)[:limit] if limit else sorted(data.data.queries)
    qrels = [Qrel(q, d, r) for q in qids for d, r in data.data.qrels[q].items()]
    measures = [ir_measures.parse_measure(m) for m in MEASURES]
    names = [r for r in retrievers if r != "dense" or kb.embedder is not None]
    if rerank and judge is not None:
        names.append("hybrid+rerank")
    queries = {q: data.data.queries[q] for q in qids}
    ranked = (ray.rank(kb.settings, names, queries, depth) if ray is not None else
              rank_queries(kb, names, queries, depth, judge, progress))
    out: dict[str, Any] = {}
    for name in names:
        best, seconds = ranked[name]
        run = [ScoredDoc(q, d, s) for q in qids for d, s in best[q].items()]
        scores = ir_measures.calc_aggregate(measures, qrels, run)
        out[name] = {m: round(float(scores[p]), 4) for m, p in zip(MEASURES, measures)}
        out[name]["ms_per_query"] = round(1000 * seconds / max(1, len(qids)), 2)
    return {"task": "retrieval", "n": len(qids), "metrics": out}


def rank_queries(kb, names: list[str], queries: dict[str, str], depth: int, judge=None,
                 progress: Callable[[int, int], None] | None = None) -> dict[str, tuple[dict, float]]:
    """Per retriever: ({query id: {document key: score}}, seconds). A document's score is its best chunk's rank
    from the end; its key is its record key (the BEIR ``_id``)."""
    keys = dict(kb.db.conn.execute("SELECT doc_id, record_key FROM documents"))
    total, done, out = len(names) * len(queries), 0, {}
    for name in names:
        retriever = create_retriever(kb, name.split("+")[0])
        best_of, t0 = {}, time.perf_counter()
        for q, text in queries.items():
            hits = retriever.retrieve(text, depth)
            if name.endswith("+rerank"):
                hits = judge_rerank(judge, text, hits, 20)
            best: dict[str, float] = {}
            for rank, h in enumerate(hits):
                best.setdefault(keys.get(h.chunk.doc_id, h.chunk.doc_id), float(len(hits) - rank))
            best_of[q] = best
            done += 1
            if progress:
                progress(done, total)
        out[name] = (best_of, time.perf_counter() - t0)
    return out


def qa_as_retrieval(data: Loaded, folder: Path) -> tuple[Loaded, Path]:
    """A QA set as a retrieval set: each distinct passage a document (id = a hash of its text), each question
    a query whose one relevant document is its own passage. The corpus is written as BEIR JSON Lines in
    ``folder`` (beside the knowledge base, so it is ingested like any corpus)."""
    ids: dict[str, str] = {}
    queries, qrels = {}, {}
    for it in data.data:
        if not it.documents:
            continue
        for d in it.documents:
            ids.setdefault(d, "p" + hashlib.sha256(d.encode("utf-8")).hexdigest()[:12])
        queries[it.id] = it.question
        qrels[it.id] = {ids[d]: 1 for d in it.documents}
    if not queries:
        raise DatasetError(f"{data.source}: no item brings its passage, so there is nothing to retrieve "
                           "(retrieval needs a BEIR folder or a set whose items carry documents)")
    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.jsonl"
    lines = "".join(json.dumps({"_id": i, "text": d}, ensure_ascii=False) + "\n" for d, i in ids.items())
    if not corpus.is_file() or corpus.read_text(encoding="utf-8") != lines:
        corpus.write_text(lines, encoding="utf-8")
    docs = tuple(Doc(i, d) for d, i in ids.items())
    return Loaded("retrieval", RetrievalSet(docs, queries, qrels), data.problems, data.source), corpus
