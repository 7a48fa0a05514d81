"""Ingest benchmark on a SciFact slice: throughput, peak RSS, pipeline/embedder ratio, fast modes.

    .venv/bin/python bench/ingest_bench.py --limit 1000

Everything is measured in this one run, side by side: the embedder alone on exactly the chunks the
pipeline produces, then the full `ragclinic ingest` (a subprocess, for its own peak RSS) with an empty
embedding cache, then the same with a warm cache, then the fast modes (wordllama, lexical only), and
nDCG@10 of each mode on the SciFact test queries whose relevant abstracts are all in the slice.
Data is read from ../shared/data by path and sliced into a temporary folder, never into the project.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import psutil  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

from scifact import DATA, load_qrels, load_queries  # noqa: E402  (bench/ is on sys.path)


def run_ingest(corpus: Path, kb: Path, cache: Path, embedder: str) -> dict:
    env = {**os.environ, "RAGCLINIC_CACHE_DIR": str(cache)}
    cmd = [str(ROOT / ".venv" / "bin" / "ragclinic"), "ingest", str(corpus), "--kb", str(kb), "--json",
           "--embedder", embedder]
    t0 = time.perf_counter()
    p = psutil.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = 0
    while p.poll() is None:
        try:
            peak = max(peak, p.memory_info().rss)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.2)
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"ingest failed: {err.decode()[-2000:]}")
    result = json.loads(out)
    result.update(wall=wall, peak_rss_mb=peak / 2**20)
    return result


def parse_and_chunk(corpus: Path):
    from ragclinic.config import Settings
    from ragclinic.ingest.discover import read_source
    from ragclinic.ingest.chunk import TOKEN_COUNTERS, Chunker
    from ragclinic.ingest.parse import parse_source

    settings = Settings.load(tempfile.mkdtemp())
    chunker = Chunker(settings, TOKEN_COUNTERS.create("e5"))
    t0 = time.perf_counter()
    chunks = []
    docs = 0
    for item in parse_source(read_source(corpus, settings.max_file_size), settings):
        docs += 1
        chunks.extend(chunker.chunk(item.document)[0])
    return docs, chunks, time.perf_counter() - t0, settings


def embed_alone(texts: list[str], batch: int) -> float:
    from ragclinic.models.e5 import E5Embedder

    emb = E5Embedder()
    order = sorted(texts, key=len)  # the same length batching the pipeline uses
    t0 = time.perf_counter()
    for i in range(0, len(order), batch):
        emb.embed_passages(order[i:i + batch])
    return time.perf_counter() - t0


def ndcg(kb_dir: Path, cache: Path, embedder: str, doc_ids: set[str]) -> tuple[float, int]:
    """nDCG@10 of doc-level retrieval (a document scores as its best chunk) on the slice's test queries."""
    import ir_measures
    from ir_measures import ScoredDoc, nDCG

    from ragclinic.config import Settings
    from ragclinic.store.kb import KnowledgeBase
    from ragclinic.text.analyzer import analyze

    qrels = load_qrels()
    by_q: dict[str, set[str]] = {}
    for q in qrels:
        by_q.setdefault(q.query_id, set()).add(q.doc_id)
    keep = {q for q, ds in by_q.items() if ds <= doc_ids}
    queries = load_queries(keep)
    os.environ["RAGCLINIC_CACHE_DIR"] = str(cache)
    kb = KnowledgeBase.open(Settings.load(kb_dir, embedder=embedder))
    run = []
    for qid, text in queries.items():
        if embedder == "none":
            hits = kb.lexical().search(analyze(text), 100)
        else:
            hits = kb.dense().search(kb.embedder.embed_queries([text])[0], 100)
        rows = kb.db.chunk_rows([r for r, _ in hits])
        best: dict[str, float] = {}
        for rid, score in hits:
            key = rows[rid]["doc_id"]
            best[key] = max(best.get(key, float("-inf")), score)
        keymap = dict(kb.db.conn.execute("SELECT doc_id, record_key FROM documents"))
        run += [ScoredDoc(qid, keymap[d], s) for d, s in best.items()]
    kb.close()
    score = ir_measures.calc_aggregate([nDCG @ 10], [q for q in qrels if q.query_id in keep], run)[nDCG @ 10]
    return score, len(queries)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=1000, help="abstracts in the slice")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "ingest.json")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ragclinic-bench-"))
    corpus = work / f"scifact-{args.limit}.jsonl"
    with open(DATA / "corpus.jsonl") as src, open(corpus, "w") as dst:
        for i, line in enumerate(src):
            if i >= args.limit:
                break
            dst.write(line)
    doc_ids = {json.loads(line)["_id"] for line in corpus.open()}

    docs, chunks, t_chunk, settings = parse_and_chunk(corpus)
    tokens = sum(c.tokens for c in chunks)
    print(f"parse+chunk: {docs} docs, {len(chunks)} chunks, {tokens} tokens in {t_chunk:.1f}s", flush=True)
    t_embed = embed_alone([c.text for c in chunks], settings.embed_batch_size)
    print(f"embedder alone: {t_embed:.1f}s ({len(chunks) / t_embed:.2f} chunks/s)", flush=True)
    e5 = run_ingest(corpus, work / "kb-e5", work / "cache-cold", "e5")
    print(f"ingest e5 (cold cache): {e5}", flush=True)
    warm = run_ingest(corpus, work / "kb-e5-warm", work / "cache-cold", "e5")
    print(f"ingest e5 (warm cache, new KB): {warm}", flush=True)
    again = run_ingest(corpus, work / "kb-e5", work / "cache-cold", "e5")
    print(f"re-ingest unchanged: {again}", flush=True)
    wl = run_ingest(corpus, work / "kb-wl", work / "cache-wl", "wordllama")
    print(f"ingest wordllama: {wl}", flush=True)
    lex = run_ingest(corpus, work / "kb-lex", work / "cache-lex", "none")
    print(f"ingest lexical-only: {lex}", flush=True)

    quality = {}
    for name, kb_dir, cache, emb in (("e5 dense", "kb-e5", "cache-cold", "e5"),
                                     ("wordllama dense", "kb-wl", "cache-wl", "wordllama"),
                                     ("lexical BM25", "kb-lex", "cache-lex", "none")):
        quality[name] = ndcg(work / kb_dir, work / cache, emb, doc_ids)
        print(f"nDCG@10 {name}: {quality[name][0]:.4f} on {quality[name][1]} queries", flush=True)

    chunk_tokens = [c.tokens for c in chunks]
    figures = {
        "limit": args.limit, "docs": docs, "chunks": len(chunks), "tokens": tokens,
        "chunk_tokens_p50": statistics.median(chunk_tokens), "chunk_tokens_max": max(chunk_tokens),
        "parse_chunk_seconds": t_chunk, "embed_alone_seconds": t_embed,
        "ingest": {"e5_cold": e5, "e5_warm_cache": warm, "unchanged": again, "wordllama": wl, "lexical": lex},
        "ratio_ingest_to_embedder": t_embed / e5["wall"],
        "ndcg10": {k: {"ndcg": v[0], "queries": v[1]} for k, v in quality.items()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2))
    w = e5["wall"]
    print("\n| mode | seconds | docs/s | chunks/s | tokens/s | peak RSS MB |\n|---|---|---|---|---|---|")
    for name, r in (("e5, cold cache", e5), ("e5, warm cache (new KB)", warm), ("unchanged re-ingest", again),
                    ("wordllama", wl), ("lexical only", lex)):
        s = r["wall"]
        print(f"| {name} | {s:.1f} | {docs / s:.1f} | {len(chunks) / s:.1f} | {tokens / s:.0f} | {r['peak_rss_mb']:.0f} |")
    print(f"\nembedder alone {t_embed:.1f}s vs ingest {w:.1f}s: ratio {t_embed / w:.3f}")


if __name__ == "__main__":
    main()
