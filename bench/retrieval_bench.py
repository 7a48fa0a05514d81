"""Retrieval quality on SciFact (BEIR layout): nDCG@10 and Recall@100 per retriever, in one run.

    .venv/bin/python bench/retrieval_bench.py --limit 1000 --cache <embedding cache> [--kb DIR]

Ingests the first --limit abstracts (all 5,183 without --limit; embedding them costs ~26 minutes,
so pass --kb to keep the knowledge base and --cache to reuse vectors between runs), then evaluates
the test queries whose relevant abstracts are all in the knowledge base. An abstract scores as its
best chunk. Measures come from ir-measures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = Path(__file__).resolve().parents[1]

from scifact import DATA, load_qrels, load_queries  # noqa: E402  (bench/ is on sys.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=0, help="first N abstracts only (0 = all)")
    ap.add_argument("--kb", type=Path, help="knowledge base to (re)use")
    ap.add_argument("--cache", type=Path, help="embedding cache folder")
    ap.add_argument("--depth", type=int, default=100, help="hits per query (and fusion depth)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "retrieval.json")
    args = ap.parse_args()
    if args.cache:
        os.environ["RAGCLINIC_CACHE_DIR"] = str(args.cache)
    import ir_measures
    from ir_measures import R, ScoredDoc, nDCG

    from ragclinic.config import Settings
    from ragclinic.ingest.runner import ingest
    from ragclinic.pipeline.retrieve import create_retriever
    from ragclinic.store.kb import KnowledgeBase

    corpus = DATA / "corpus.jsonl"
    if args.limit:
        corpus = Path(tempfile.mkdtemp()) / f"scifact-{args.limit}.jsonl"
        with open(DATA / "corpus.jsonl") as src, open(corpus, "w") as dst:
            for i, line in zip(range(args.limit), src):
                dst.write(line)
    kb = KnowledgeBase.open(Settings.load(args.kb or Path(tempfile.mkdtemp()) / "kb", embedder="e5"), create=True)
    kb.lock()
    t0 = time.perf_counter()
    ingest(kb, [corpus])
    print(f"ingest: {time.perf_counter() - t0:.1f}s, {kb.stats()}", flush=True)

    doc_ids = dict(kb.db.conn.execute("SELECT doc_id, record_key FROM documents"))
    present = set(doc_ids.values())
    qrels = load_qrels()
    by_q: dict[str, set[str]] = {}
    for q in qrels:
        by_q.setdefault(q.query_id, set()).add(q.doc_id)
    keep = {q for q, ds in by_q.items() if ds <= present}
    qrels = [q for q in qrels if q.query_id in keep]
    queries = load_queries(keep)

    results = {}
    from ragclinic.pipeline.retrieve.hybrid import HybridRetriever

    def hybrid_with(method: str) -> HybridRetriever:
        h = HybridRetriever(kb)
        h.method = method
        return h

    retrievers = {"lexical": create_retriever(kb, "lexical"), "dense": create_retriever(kb, "dense"),
                  "hybrid (convex)": hybrid_with("convex"), "hybrid (rrf)": hybrid_with("rrf")}
    for name, retriever in retrievers.items():
        run, seconds = [], []
        for qid, text in queries.items():
            t = time.perf_counter()
            hits = retriever.retrieve(text, args.depth)
            seconds.append(time.perf_counter() - t)
            best: dict[str, float] = {}
            for h in hits:
                key = doc_ids[h.chunk.doc_id]
                best.setdefault(key, h.score)  # hits are best first
            run += [ScoredDoc(qid, d, s) for d, s in best.items()]
        scores = ir_measures.calc_aggregate([nDCG @ 10, R @ 100], qrels, run)
        results[name] = {"ndcg10": scores[nDCG @ 10], "recall100": scores[R @ 100],
                         "p50_ms": 1000 * statistics.median(seconds)}
        print(name, results[name], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"queries": len(queries), "documents": len(present), **results}, indent=2))
    print(f"\n{len(queries)} queries over {len(present)} abstracts\n\n| retriever | nDCG@10 | Recall@100 | p50 ms |"
          "\n|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['ndcg10']:.4f} | {r['recall100']:.4f} | {r['p50_ms']:.1f} |")


if __name__ == "__main__":
    main()
