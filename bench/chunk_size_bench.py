"""How chunk size affects retrieval on SciFact: the measurement behind the chunking defaults.

    .venv/bin/python bench/chunk_size_bench.py --sizes 128 192 256 320 448 --dense-limit 1000

For each chunk_max_tokens: chunk the SciFact corpus, then nDCG@10 of document-level retrieval (a
document scores as its best chunk) for BM25 over the whole corpus (all 300 test queries), and for
e5 dense search over the first --dense-limit abstracts (queries whose relevant abstracts are all in
that slice). Overlap bounds scale with the size (max = 30% of it, at most 96). Vectors come from an
embedding cache in a folder of the benchmark's own, so identical chunks are embedded once.
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

import ir_measures  # noqa: E402
import numpy as np  # noqa: E402
from ir_measures import ScoredDoc, nDCG  # noqa: E402

from ragclinic.config import Settings  # noqa: E402
from ragclinic.ingest.discover import read_source  # noqa: E402
from ragclinic.models.e5 import E5Embedder  # noqa: E402
from ragclinic.ingest.chunk import TOKEN_COUNTERS, Chunker  # noqa: E402
from ragclinic.ingest.parse import parse_source  # noqa: E402
from ragclinic.store.embed_cache import EmbeddingCache, embed_with_cache  # noqa: E402
from ragclinic.store.exact import ExactIndex  # noqa: E402
from ragclinic.store.lexical import TantivyIndex  # noqa: E402
from ragclinic.text.analyzer import analyze, analyze_to_string  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

from scifact import DATA, load_qrels, load_queries  # noqa: E402  (bench/ is on sys.path)


def load_eval():
    qrels = load_qrels()
    queries = load_queries({q.query_id for q in qrels})
    return qrels, queries


def chunk_corpus(size: int, docs):
    s = Settings.load(tempfile.mkdtemp(), chunk_max_tokens=size, overlap_max_tokens=min(96, int(size * 0.3)),
                      chunk_min_tokens=min(48, size // 4))
    chunker = Chunker(s, TOKEN_COUNTERS.create("e5"))
    out = []
    for d in docs:
        out += [(d.record_key, c.text, c.tokens) for c in chunker.chunk(d)[0]]
    return out


def doc_run(qid, hits, keys):
    best: dict[str, float] = {}
    for idx, score in hits:
        k = keys[idx]
        best[k] = max(best.get(k, -1e9), score)
    return [ScoredDoc(qid, k, s) for k, s in best.items()]


def lexical_ndcg(chunks, qrels, queries) -> float:
    ix = TantivyIndex(Path(tempfile.mkdtemp()) / "lex", heap_bytes=256 * 2**20)
    ix.add((i, analyze_to_string(t)) for i, (_, t, _) in enumerate(chunks))
    ix.commit()
    keys = [k for k, _, _ in chunks]
    run = []
    for qid, text in queries.items():
        run += doc_run(qid, ix.search(analyze(text), 100), keys)
    ix.destroy()
    return ir_measures.calc_aggregate([nDCG @ 10], qrels, run)[nDCG @ 10]


def dense_ndcg(chunks, qrels, queries, cache, slice_ids) -> tuple[float, int, float]:
    sub = [c for c in chunks if c[0] in slice_ids]
    by_q: dict[str, set[str]] = {}
    for q in qrels:
        by_q.setdefault(q.query_id, set()).add(q.doc_id)
    keep = {q for q, ds in by_q.items() if ds <= slice_ids}
    emb = E5Embedder()
    t0 = time.perf_counter()
    vecs, fresh = embed_with_cache(emb, cache, [t for _, t, _ in sub], 16)
    spent = time.perf_counter() - t0
    ix = ExactIndex(emb.dim)
    ix.add(np.arange(len(sub)), vecs)
    keys = [k for k, _, _ in sub]
    run = []
    for qid in keep:
        run += doc_run(qid, ix.search(emb.embed_queries([queries[qid]])[0], 100), keys)
    score = ir_measures.calc_aggregate([nDCG @ 10], [q for q in qrels if q.query_id in keep], run)[nDCG @ 10]
    return score, len(keep), spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[128, 192, 256, 320, 448])
    ap.add_argument("--dense-limit", type=int, default=1000)
    ap.add_argument("--dense-sizes", type=int, nargs="*", help="sizes to run dense for (default: all)")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ragclinic-bench-cache")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "chunk_size.json")
    args = ap.parse_args()
    settings = Settings.load(tempfile.mkdtemp())
    docs = [p.document for p in parse_source(read_source(DATA / "corpus.jsonl", settings.max_file_size), settings)]
    slice_ids = {d.record_key for d in docs[:args.dense_limit]}
    qrels, queries = load_eval()
    cache = EmbeddingCache(args.cache)
    rows = {}
    for size in args.sizes:
        chunks = chunk_corpus(size, docs)
        toks = [t for _, _, t in chunks]
        row = {"chunks": len(chunks), "chunks_per_doc": len(chunks) / len(docs),
               "tokens_p50": statistics.median(toks), "tokens_max": max(toks),
               "bm25_ndcg10": lexical_ndcg(chunks, qrels, queries)}
        if args.dense_sizes is None or size in args.dense_sizes:
            row["e5_ndcg10"], row["e5_queries"], row["e5_seconds"] = dense_ndcg(chunks, qrels, queries, cache,
                                                                                 slice_ids)
        rows[size] = row
        print(size, row, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2))
    print("\n| chunk_max_tokens | chunks/doc | tokens p50 | tokens max | BM25 nDCG@10 (5,183 docs, 300 q) "
          f"| e5 nDCG@10 ({args.dense_limit} docs) |\n|---|---|---|---|---|---|")
    for size, r in rows.items():
        e5 = f"{r['e5_ndcg10']:.4f} ({r['e5_queries']} q)" if "e5_ndcg10" in r else "—"
        print(f"| {size} | {r['chunks_per_doc']:.2f} | {r['tokens_p50']:.0f} | {r['tokens_max']} | "
              f"{r['bm25_ndcg10']:.4f} | {e5} |")


if __name__ == "__main__":
    main()
