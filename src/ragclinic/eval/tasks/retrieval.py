"""The ``retrieval`` task: nDCG@10, Recall@k and MRR (through ir-measures) per retriever over a BEIR set.

The corpus is ingested into the given knowledge base (unchanged files are skipped, and the embedding cache
means a second knowledge base over the same corpus embeds nothing). A hit's document is its record key (the
BEIR ``_id``); a document's score is its best chunk's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragclinic.eval.datasets import Loaded

MEASURES = ("nDCG@10", "R@10", "R@100", "RR@10")
RETRIEVERS = ("lexical", "dense", "hybrid")


def run_retrieval(data: Loaded, kb, corpus_path: Path, *, limit: int = 0, depth: int = 100,
                  retrievers: tuple[str, ...] = RETRIEVERS, rerank: bool = False, judge=None,
                  progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    import ir_measures
    from ir_measures import Qrel, ScoredDoc

    from ragclinic.ingest.runner import ingest
    from ragclinic.pipeline.retrieve import create_retriever
    from ragclinic.pipeline.retrieve.rerank import rerank as judge_rerank

    kb.lock()
    try:
        ingest(kb, [corpus_path])
    finally:
        kb.unlock()
    keys = dict(kb.db.conn.execute("SELECT doc_id, record_key FROM documents"))
    qids = sorted(data.data.queries)[:limit] if limit else sorted(data.data.queries)
    qrels = [Qrel(q, d, r) for q in qids for d, r in data.data.qrels[q].items()]
    measures = [ir_measures.parse_measure(m) for m in MEASURES]
    names = [r for r in retrievers if r != "dense" or kb.embedder is not None]
    if rerank and judge is not None:
        names.append("hybrid+rerank")
    out: dict[str, Any] = {}
    total, done = len(names) * len(qids), 0
    for name in names:
        retriever = create_retriever(kb, name.split("+")[0])
        run, t0 = [], time.perf_counter()
        for q in qids:
            hits = retriever.retrieve(data.data.queries[q], depth)
            if name.endswith("+rerank"):
                hits = judge_rerank(judge, data.data.queries[q], hits, 20)
            best: dict[str, float] = {}
            for rank, h in enumerate(hits):
                best.setdefault(keys.get(h.chunk.doc_id, h.chunk.doc_id), float(len(hits) - rank))
            run += [ScoredDoc(q, d, s) for d, s in best.items()]
            done += 1
            if progress:
                progress(done, total)
        scores = ir_measures.calc_aggregate(measures, qrels, run)
        out[name] = {m: round(float(scores[p]), 4) for m, p in zip(MEASURES, measures)}
        out[name]["ms_per_query"] = round(1000 * (time.perf_counter() - t0) / max(1, len(qids)), 2)
    return {"task": "retrieval", "n": len(qids), "metrics": out}
