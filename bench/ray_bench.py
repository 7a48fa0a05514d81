"""Issue 18's figures: ingest of the first N SciFact abstracts, local vs `--ray auto` with 1 and 2 workers (wall
time, tokens/s, peak RSS of the whole process tree — driver, Ray's daemons and workers), the equality check
between the local and the Ray knowledge bases, Ray's overhead on a small corpus, and `eval retrieval` on the slice,
local vs `--ray`, metrics compared.

    python bench/ray_bench.py --out bench/out/ray [--limit 2000] [--small 20]

Each arm runs as its own `ragclinic` subprocess with an empty embedding cache of its own (else the second arm
would embed nothing), one after the other on this machine. Results go to OUT/results.json as each arm finishes;
a re-run skips the arms already there. SciFact is read by path from ../shared/data and sliced into OUT/data.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import psutil  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

from scifact import DATA, load_qrels, load_queries  # noqa: E402

RAGCLINIC = str(ROOT / ".venv" / "bin" / "ragclinic")


def tree_rss(p: psutil.Process) -> int:
    total = 0
    for q in [p] + p.children(recursive=True):
        try:
            total += q.memory_info().rss
        except psutil.Error:
            pass
    return total


def run(cmd: list[str], cache: Path) -> dict:
    env = {**os.environ, "RAGCLINIC_CACHE_DIR": str(cache), "RAY_USAGE_STATS_ENABLED": "0"}
    t0 = time.perf_counter()
    p = psutil.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = 0
    while p.poll() is None:
        peak = max(peak, tree_rss(p))
        time.sleep(0.5)
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed: {err.decode()[-3000:]}")
    return {"wall_s": round(wall, 1), "peak_rss_mb": round(peak / 2**20), "result": json.loads(out)}


def tokens_of(kb: Path) -> int:
    with sqlite3.connect(kb / "kb.sqlite3") as c:
        return int(c.execute("SELECT SUM(tokens) FROM chunks").fetchone()[0] or 0)


def snapshot(kb: Path) -> tuple:
    with sqlite3.connect(kb / "kb.sqlite3") as c:
        docs = sorted(c.execute("SELECT doc_id, sha256 FROM documents").fetchall())
        chunks = sorted(c.execute("SELECT chunk_id, doc_id, text FROM chunks").fetchall())
    from ragclinic import Clinic

    with Clinic.open(kb, llm="none") as cl:
        by_rowid = dict(cl.kb.db.conn.execute("SELECT rowid, chunk_id FROM chunks").fetchall())
        ids, vecs = cl.kb.db.embeddings(cl.kb.embedder.dim)
        vectors = {by_rowid[int(i)]: np.asarray(v) for i, v in zip(ids, vecs)}
    return docs, chunks, vectors


def equal(a: Path, b: Path) -> dict:
    x, y = snapshot(a), snapshot(b)
    common = set(x[2]) & set(y[2])
    diff = max((float(np.abs(x[2][k] - y[2][k]).max()) for k in common), default=float("nan"))
    return {"documents_equal": x[0] == y[0], "chunks_equal": x[1] == y[1], "vectors": len(common),
            "vectors_missing": len(set(x[2]) ^ set(y[2])), "max_abs_vector_diff": diff}


def slice_beir(limit: int, folder: Path) -> tuple[Path, Path]:
    """The first ``limit`` abstracts, and a BEIR folder over them whose queries have every relevant abstract in it."""
    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.jsonl"
    if not corpus.exists():
        with open(DATA / "corpus.jsonl", encoding="utf-8") as src:
            corpus.write_text("".join(line for _, line in zip(range(limit), src)), encoding="utf-8")
    beir = folder / "beir"
    if not beir.exists():
        ids = {json.loads(x)["_id"] for x in corpus.read_text(encoding="utf-8").splitlines()}
        qrels = load_qrels()
        rel: dict[str, set] = {}
        for q in qrels:
            rel.setdefault(q.query_id, set()).add(q.doc_id)
        keep = {q for q, ds in rel.items() if ds <= ids}
        (beir / "qrels").mkdir(parents=True)
        shutil.copy(corpus, beir / "corpus.jsonl")
        (beir / "queries.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n"
                                                    for k, v in load_queries(keep).items()), encoding="utf-8")
        (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
            f"{q.query_id}\t{q.doc_id}\t{q.relevance}\n" for q in qrels if q.query_id in keep), encoding="utf-8")
    return corpus, beir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=2000)
    ap.add_argument("--small", type=int, default=20)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    res_path = a.out / "results.json"
    res = json.loads(res_path.read_text()) if res_path.exists() else {}

    def keep(name: str, value) -> None:
        res[name] = value
        res_path.write_text(json.dumps(res, indent=1))
        print(name, json.dumps(value)[:400], flush=True)

    corpus, beir = slice_beir(a.limit, a.out / "data")
    small, _ = slice_beir(a.small, a.out / "data-small")
    arms = {"local": [], "ray-1": ["--ray", "auto", "--ray-workers", "1"], "ray-2": ["--ray", "auto", "--ray-workers", "2"]}
    for name, extra in arms.items():
        if f"ingest:{name}" not in res:
            kb = a.out / f"kb-{name}"
            shutil.rmtree(kb, ignore_errors=True)
            shutil.rmtree(a.out / f"cache-{name}", ignore_errors=True)
            r = run([RAGCLINIC, "ingest", str(corpus), "--kb", str(kb), "--json", *extra], a.out / f"cache-{name}")
            r["tokens"] = tokens_of(kb)
            r["tokens_per_s"] = round(r["tokens"] / r["wall_s"], 1)
            keep(f"ingest:{name}", r)
    for name in ("ray-1", "ray-2"):
        if f"equal:{name}" not in res:
            keep(f"equal:{name}", equal(a.out / "kb-local", a.out / f"kb-{name}"))
    for name, extra in (("local", []), ("ray-2", ["--ray", "auto", "--ray-workers", "2"])):
        if f"small:{name}" not in res:
            kb = a.out / f"kb-small-{name}"
            shutil.rmtree(kb, ignore_errors=True)
            shutil.rmtree(a.out / f"cache-small-{name}", ignore_errors=True)
            keep(f"small:{name}", run([RAGCLINIC, "ingest", str(small), "--kb", str(kb), "--json", *extra],
                                      a.out / f"cache-small-{name}"))
    for name, extra, kb in (("local", [], "kb-local"), ("ray-2", ["--ray", "auto", "--ray-workers", "2"], "kb-ray-2")):
        if f"eval:{name}" not in res:  # the corpus is in the KB already: this times the queries (and Ray's start)
            keep(f"eval:{name}", run([RAGCLINIC, "eval", "retrieval", "--dataset", f"beir:{beir}", "--kb",
                                      str(a.out / kb), "--json", *extra], a.out / f"cache-{name}"))
    if "eval:equal" not in res:
        strip = lambda m: {r: {k: v for k, v in x.items() if k != "ms_per_query"} for r, x in m.items()}  # noqa: E731
        keep("eval:equal", strip(res["eval:local"]["result"]["metrics"]) == strip(res["eval:ray-2"]["result"]["metrics"]))


if __name__ == "__main__":
    main()
