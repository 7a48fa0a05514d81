"""Judge rerank on SciFact: nDCG@10 of hybrid vs hybrid + judge rerank, and the cost per query.

    .venv/bin/python bench/rerank_bench.py --kb <SciFact KB> --queries 30 --depth 10 --llm local-small

A seeded sample of the test queries (the rerank costs seconds per passage on 2 cores, so the full
300 would take hours); hybrid is scored on the same sample in the same run for the comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = Path(__file__).resolve().parents[1]

from scifact import load_qrels, load_queries  # noqa: E402  (bench/ is on sys.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", type=Path, required=True)
    ap.add_argument("--cache", type=Path)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--llm", nargs="+", default=["local-small"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "rerank.json")
    args = ap.parse_args()
    if args.cache:
        os.environ["RAGCLINIC_CACHE_DIR"] = str(args.cache)
    import ir_measures
    from ir_measures import ScoredDoc, nDCG

    from ragclinic.config import Settings
    from ragclinic.models.judge import LogitJudge
    from ragclinic.models.factory import create_language_model
    from ragclinic.pipeline.retrieve import create_retriever
    from ragclinic.pipeline.retrieve.rerank import rerank
    from ragclinic.store.kb import KnowledgeBase

    kb = KnowledgeBase.open(Settings.load(args.kb))
    doc_ids = dict(kb.db.conn.execute("SELECT doc_id, record_key FROM documents"))
    qrels = load_qrels()
    queries = load_queries()
    sample = random.Random(args.seed).sample(sorted({q.query_id for q in qrels}), args.queries)
    qrels = [q for q in qrels if q.query_id in sample]
    hybrid = create_retriever(kb, "hybrid")

    def run_of(ranked: dict[str, list]) -> list:
        out = []
        for qid, hits in ranked.items():
            best: dict[str, float] = {}
            for i, h in enumerate(hits):
                best.setdefault(doc_ids[h.chunk.doc_id], -i)
            out += [ScoredDoc(qid, d, s) for d, s in best.items()]
        return out

    base = {q: hybrid.retrieve(queries[q], 100) for q in sample}
    results = {"queries": len(sample), "depth": args.depth,
               "hybrid": {"nDCG@10": ir_measures.calc_aggregate([nDCG @ 10], qrels, run_of(base))[nDCG @ 10]}}
    print(results, flush=True)
    for name in args.llm:
        judge = LogitJudge(create_language_model(name, Settings.load(args.kb, llm=name)))
        ranked, secs = {}, []
        for q in sample:
            t = time.perf_counter()
            ranked[q] = rerank(judge, queries[q], base[q], args.depth)
            secs.append(time.perf_counter() - t)
        ndcg = ir_measures.calc_aggregate([nDCG @ 10], qrels, run_of(ranked))[nDCG @ 10]
        results[f"hybrid+rerank:{name}"] = {"nDCG@10": ndcg, "s_per_query_p50": statistics.median(secs)}
        print(name, results[f"hybrid+rerank:{name}"], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"\n{len(sample)} queries, rerank depth {args.depth}\n\n| ranking | nDCG@10 | s/query p50 |\n|---|---|---|")
    for k, v in results.items():
        if isinstance(v, dict):
            print(f"| {k} | {v['nDCG@10']:.4f} | {v.get('s_per_query_p50', 0):.1f} |")


if __name__ == "__main__":
    main()
