"""Issue 20's figures: the knowledge graph (GraphRAG-lite).

    python bench/graph_bench.py route --out bench/out/graph/route.json
    python bench/graph_bench.py coverage --llm local --split test --naive --out bench/out/graph/coverage-local
    python bench/graph_bench.py build --corpus scifact --model-sample 12 --out bench/out/graph/build-scifact.json
    python bench/graph_bench.py specific --limit 300 --out bench/out/graph/specific-scifact.json

- route: the question-scope rules' score on the dev half of bench/graph/questions.jsonl plus specific questions from
  CMRC2018 and HaluEval (training-licensed) → the threshold with the best balanced accuracy; then the test half,
  RGB zh queries and SciFact claims (evaluation only) at that threshold.
- coverage: the 12-document corpora of bench/graph (EN, ZH), two knowledge bases each — without and with
  ``--graph`` — and the same questions through both, the doctor off; key-point coverage = the share of a question's
  key points whose ``any_of`` strings the answer contains (case-insensitive; an exact substring for Chinese). With
  ``--naive``: the naive peer, every document in one prompt of the same model (its system turn, so its KV state is
  computed once per corpus and reused, as any llama.cpp user would).
- build: the graph's build cost (seconds per 1,000 chunks) and size on a whole corpus, fast mode; model mode on a
  sample of chunks (extrapolated, with the schema fallbacks counted).
- specific: SciFact claims through a knowledge base of the corpus with and without the graph (extractive, no model):
  whether the gold abstract reaches the context, and how the router classified the claims.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).parent))

from output import emit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "bench" / "graph"
DATA = ROOT.parent / "shared" / "data"


def load_questions(split: str = "all", kinds: tuple[str, ...] = ("global", "specific", "mixed")) -> list[dict]:
    rows = [json.loads(line) for line in (HERE / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return [r for r in rows if (split == "all" or r["split"] == split) and r["kind"] in kinds]


def covered(answer: str, point: dict, lang: str) -> bool:
    text = answer if lang == "zh" else answer.lower()
    return any((s if lang == "zh" else s.lower()) in text for s in point["any_of"])


def coverage(answer: str, q: dict) -> float:
    return sum(covered(answer, p, q["lang"]) for p in q["key_points"]) / len(q["key_points"])


# ---------------------------------------------------------------------------- route
def _specific_dev(n: int) -> list[str]:
    cmrc = json.loads((DATA / "cmrc2018" / "cmrc2018_trial.json").read_text(encoding="utf-8"))["data"]
    zh = [qa["question"] for art in cmrc for p in art["paragraphs"] for qa in p["qas"]]
    en = [json.loads(line)["question"] for line in
          (DATA / "halueval" / "qa_one-turn_data.json").read_text(encoding="utf-8").splitlines() if line.strip()]
    rnd = random.Random(20)
    return rnd.sample(zh, n) + rnd.sample(en, n)


def _specific_test(n: int) -> list[str]:
    rgb = [json.loads(line)["query"] for line in (DATA / "rgb" / "zh_fact.json").read_text(encoding="utf-8").splitlines()
           if line.strip()]
    sys.path.insert(0, str(ROOT / "bench"))
    from scifact import load_queries

    sci = list(load_queries().values())
    rnd = random.Random(21)
    return rnd.sample(rgb, min(n, len(rgb))) + rnd.sample(sci, min(n, len(sci)))


def route(args) -> dict:
    from ragclinic.pipeline.reason.graph import classify

    def scored(questions):
        return [(classify(q, 2.0).score, y) for q, y in questions]

    dev = [(r["question"], r["kind"] != "specific") for r in load_questions("dev")] + \
          [(q, False) for q in _specific_dev(args.negatives)]
    test_own = [(r["question"], r["kind"] != "specific") for r in load_questions("test")]
    test_ext = [(q, False) for q in _specific_test(args.negatives)]
    dev_s = scored(dev)
    best = None
    for t in sorted({s for s, _ in dev_s} | {0.5}):
        pos = [s >= t for s, y in dev_s if y]
        neg = [s < t for s, y in dev_s if not y]
        bal = (sum(pos) / len(pos) + sum(neg) / len(neg)) / 2
        if best is None or bal > best[0] + 1e-12:
            best = (bal, t)
    t = best[1]

    def report(rows):
        s = scored(rows)
        pos = [x >= t for x, y in s if y]
        neg = [x < t for x, y in s if not y]
        return {"global_or_mixed": len(pos), "recall": round(sum(pos) / len(pos), 3) if pos else None,
                "specific": len(neg), "specific_kept_specific": round(sum(neg) / len(neg), 3) if neg else None}

    kinds = {}
    for r in load_questions("test"):
        k = classify(r["question"], t).kind
        kinds.setdefault(r["kind"], {}).setdefault(k, 0)
        kinds[r["kind"]][k] += 1
    return {"threshold": round(t, 4), "dev_balanced_accuracy": round(best[0], 3), "dev": report(dev),
            "test_bench_set": report(test_own), "test_rgb_scifact_specific": report(test_ext),
            "test_kinds": kinds}


# ---------------------------------------------------------------------------- coverage
def _kb(out: Path, lang: str, graph: bool, lm, settings: dict):
    from ragclinic import Clinic

    folder = out / f"kb-{lang}-{'graph' if graph else 'chunks'}"
    c = Clinic.open(folder, model=lm, cache_dir=os.environ.get("RAGCLINIC_CACHE_DIR", str(out / "cache")),
                    graph="fast" if graph else "", **settings)
    t0 = time.perf_counter()
    res = c.ingest([HERE / f"corpus_{lang}"])
    return c, {"seconds": round(time.perf_counter() - t0, 2), "chunks": c.kb.db.conn.execute(
        "SELECT COUNT(*) FROM chunks").fetchone()[0], "graph": res.graph}


def _naive(lm, lang: str, q: dict) -> dict:
    from ragclinic.eval.tasks.naive import INSTRUCTION
    from ragclinic.models.llm import Message

    docs = sorted((HERE / f"corpus_{lang}").glob("*.md"))
    body = "\n\n".join(f"Document {i}: {p.read_text(encoding='utf-8')}" for i, p in enumerate(docs, start=1))
    msgs = [Message("system", f"{INSTRUCTION[lang]}\n\n{body}"), Message("user", q["question"])]
    t0 = time.perf_counter()
    done = lm.chat(msgs, max_tokens=256, temperature=0.0)
    return {"answer": done.text, "ms": round((time.perf_counter() - t0) * 1000, 1),
            "prompt_tokens": done.prompt_tokens, "prompt_reused": done.prompt_reused}


def _arm(c, q: dict) -> dict:
    t0 = time.perf_counter()
    res = c.consult(q["question"], doctor=False, cache=False)
    gate = res.trace.span("gate").outputs
    g = gate.get("graph") or {}
    a = res.answer
    return {"answer": a.text, "route": a.route, "ms": round((time.perf_counter() - t0) * 1000, 1),
            "kind": g.get("kind"), "path": g.get("path"), "communities": len(g.get("communities", [])),
            "citations": len(a.citations), "trace_id": res.trace.id,
            "supported": sum(x.verdict == "supported" for x in a.claims), "claims": len(a.claims)}


def coverage_run(args) -> dict:
    from ragclinic.models.factory import create_language_model
    from ragclinic.config import Settings

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    kinds = tuple(args.kinds.split(","))
    questions = load_questions(args.split, kinds)
    if args.limit:
        questions = questions[:args.limit]
    settings = {"llm": args.llm}
    lm = None
    if args.llm != "none":
        lm = create_language_model(args.llm, Settings.load(None, llm=args.llm, llm_n_ctx=args.n_ctx))
    rows_path = out / "rows.jsonl"
    done = {}
    if rows_path.exists():
        for line in rows_path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                done[r["id"]] = r
    builds = {}
    for lang in ("en", "zh"):
        todo = [q for q in questions if q["lang"] == lang and q["id"] not in done]
        if not todo:
            continue
        chunks, b1 = _kb(out, lang, False, lm, settings)
        graph, b2 = _kb(out, lang, True, lm, settings)
        builds[lang] = {"chunks": b1, "graph": b2}
        for q in todo:
            row = {"id": q["id"], "lang": lang, "kind": q["kind"], "split": q["split"], "question": q["question"]}
            for name, c in (("chunks", chunks), ("graph", graph)):
                row[name] = _arm(c, q)
                row[name]["coverage"] = round(coverage(row[name]["answer"], q), 4)
            if args.naive and lm is not None:
                row["naive"] = _naive(lm, lang, q)
                row["naive"]["coverage"] = round(coverage(row["naive"]["answer"], q), 4)
            with rows_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
            done[q["id"]] = row
            print(q["id"], {k: row[k]["coverage"] for k in ("chunks", "graph", "naive") if k in row}, flush=True)
        chunks.close()
        graph.close()
    rows = [done[q["id"]] for q in questions if q["id"] in done]
    return {"llm": args.llm, "split": args.split, "builds": builds, "summary": summarise(rows)}


def summarise(rows: list[dict]) -> dict:
    out = {}
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(f"{r['lang']}-{r['kind']}", []).append(r)
        groups.setdefault(r["kind"], []).append(r)
    for name, rs in sorted(groups.items()):
        g = {"n": len(rs)}
        for arm in ("chunks", "graph", "naive"):
            have = [r[arm] for r in rs if arm in r]
            if have:
                g[arm] = {"coverage": round(statistics.mean(x["coverage"] for x in have), 3),
                          "p50_s": round(statistics.median(x["ms"] for x in have) / 1000, 1)}
                if arm != "naive":
                    g[arm]["refused"] = sum(x["route"] != "answer" for x in have)
        if all("chunks" in r and "graph" in r for r in rs):
            g["graph_better"] = sum(r["graph"]["coverage"] > r["chunks"]["coverage"] for r in rs)
            g["graph_worse"] = sum(r["graph"]["coverage"] < r["chunks"]["coverage"] for r in rs)
            g["graph_path"] = sum(r["graph"]["path"] != "chunks" for r in rs)
        out[name] = g
    return out


# ---------------------------------------------------------------------------- build cost
def _corpus(name: str, limit: int | None) -> Path:
    """A JSONL corpus file (title, text) in bench/out, written from the shared data by path."""
    path = ROOT / "bench" / "out" / "graph" / f"corpus-{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    if name == "scifact":
        with open(DATA / "scifact" / "beir" / "corpus.jsonl", encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                rows.append({"id": d["_id"], "title": d.get("title", ""), "text": d["text"]})
    else:
        cmrc = json.loads((DATA / "cmrc2018" / "cmrc2018_trial.json").read_text(encoding="utf-8"))["data"]
        for art in cmrc:
            for i, p in enumerate(art["paragraphs"]):
                rows.append({"id": f"{art['id']}-{i}", "title": art.get("title", ""), "text": p["context"]})
    rows = rows[:limit] if limit else rows
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path


def build(args) -> dict:
    from ragclinic import Clinic
    from ragclinic.graph import inspect, sync
    from ragclinic.store import graph as store

    out = Path(args.out)
    folder = out.parent / f"kb-build-{args.corpus}"
    corpus = _corpus(args.corpus, args.limit)
    c = Clinic.open(folder, llm="none", embedder=args.embedder)
    if args.model_only:  # the model sample over a knowledge base an earlier `build` made
        return {"corpus": args.corpus, "model": _model_sample(c.kb, args.model_sample)}
    t0 = time.perf_counter()
    c.ingest([corpus])
    ingest_s = time.perf_counter() - t0
    kb = c.kb
    kb.lock()
    try:
        res = sync.sync(kb, "fast")
        size = inspect.size(kb.db.conn)
        n = size["chunks_extracted"]
        fast = {"chunks": n, "extract_s": round(res.seconds_extract, 2),
                "communities_s": round(res.seconds_communities, 2),
                "s_per_1000_chunks": round(1000 * (res.seconds_extract + res.seconds_communities) / max(1, n), 2),
                "extract_s_per_1000": round(1000 * res.seconds_extract / max(1, n), 2),
                "size": size, "ingest_s_without_graph": round(ingest_s, 1)}
        # an incremental update: one document changed → affected communities only
        one = kb.db.conn.execute("SELECT chunk_id FROM graph_chunks LIMIT 1").fetchone()[0]
        with kb.db.transaction():
            store.drop_chunks(kb.db.conn, [one])
        t1 = time.perf_counter()
        inc = sync.sync(kb)
        fast["one_chunk_update_s"] = round(time.perf_counter() - t1, 2)
        fast["one_chunk_update"] = inc.communities
    finally:
        kb.unlock()
    model = _model_sample(kb, args.model_sample) if args.model_sample else None
    c.close()
    return {"corpus": args.corpus, "embedder": args.embedder, "fast": fast, "model": model}


def _model_sample(kb, n: int) -> dict:
    """Model-mode extraction of ``n`` random chunks: seconds a chunk, projected per 1,000, schema repairs."""
    from ragclinic.config import Settings
    from ragclinic.graph.model import ModelExtractor
    from ragclinic.models.factory import create_language_model

    lm = create_language_model("local", Settings.load(None, llm="local"))
    ex = ModelExtractor(lm)
    rows = kb.db.conn.execute("SELECT chunk_id, doc_id, text, language FROM chunks ORDER BY rowid").fetchall()
    sample = random.Random(22).sample(rows, min(n, len(rows)))
    times, found = [], []
    for r in sample:
        t2 = time.perf_counter()
        g = ex.extract_one(*r)
        times.append(time.perf_counter() - t2)
        found.append((len(g.mentions), len(g.relations)))
    from ragclinic.graph.model import summarizer
    from ragclinic.store import graph as store

    summarize, summary_s, by_model = summarizer(lm), [], 0
    for com in store.communities(kb.db.conn, level=0)[:3]:  # what model mode pays per community summary
        t3 = time.perf_counter()
        _, by = summarize(com.title, list(com.members), list(com.points))
        summary_s.append(time.perf_counter() - t3)
        by_model += by != "extractive"
    return {"sample": len(sample), "s_per_chunk_p50": round(statistics.median(times), 1),
            "summary_s_mean": round(statistics.mean(summary_s), 1) if summary_s else None,
            "summaries_by_model": f"{by_model}/{len(summary_s)}",
            "s_per_chunk_mean": round(statistics.mean(times), 1),
            "s_per_1000_chunks_projected": round(1000 * statistics.mean(times)),
            "schema_fallbacks": ex.fallbacks, "items_repaired_or_dropped": ex.repaired,
            "entities_per_chunk": round(statistics.mean(m for m, _ in found), 1),
            "relations_per_chunk": round(statistics.mean(r for _, r in found), 1),
            "prompt_tokens": ex.prompt_tokens, "completion_tokens": ex.completion_tokens}


# ---------------------------------------------------------------------------- specific (SciFact)
def specific(args) -> dict:
    from scifact import load_qrels, load_queries

    from ragclinic import Clinic

    base = Path(args.kb)
    queries = load_queries()
    qrels: dict[str, set[str]] = {}
    for qr in load_qrels():
        qrels.setdefault(qr.query_id, set()).add(qr.doc_id)
    ids = sorted(q for q in queries if q in qrels)[:args.limit]
    arms = {}
    # the chunks arm: the same knowledge base with the graph's two steps off (no expansion, nothing routed global)
    for name, extra in (("chunks", {"graph_expand": 0, "graph_global_threshold": 1.01}), ("graph", {})):
        c = Clinic.open(base, llm="none", retriever="lexical", **extra)
        found, kinds, added = 0, {}, 0
        for qid in ids:
            res = c.consult(queries[qid], doctor=False, cache=False)
            gate = res.trace.span("gate").outputs
            kinds[gate["graph"]["kind"]] = kinds.get(gate["graph"]["kind"], 0) + 1
            added += len((res.trace.span("scope").outputs.get("graph") or {}).get("added", []))
            docs = {p["hit"]["chunk"]["doc_id"] for p in gate["passages"]}
            keys = {c.kb.db.conn.execute("SELECT record_key FROM documents WHERE doc_id = ?", [d]).fetchone()[0]
                    for d in docs}
            found += bool(keys & qrels[qid])
        arms[name] = {"gold_in_context": round(found / len(ids), 4), "kinds": kinds, "graph_passages_added": added}
        c.close()
    return {"claims": len(ids), "arms": arms}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("route")
    r.add_argument("--negatives", type=int, default=100)
    r.add_argument("--out", type=Path)
    c = sub.add_parser("coverage")
    c.add_argument("--llm", default="none")
    c.add_argument("--split", default="test")
    c.add_argument("--kinds", default="global,mixed,specific")
    c.add_argument("--limit", type=int, default=0)
    c.add_argument("--naive", action="store_true")
    c.add_argument("--n-ctx", type=int, default=12288)
    c.add_argument("--out", required=True)
    b = sub.add_parser("build")
    b.add_argument("--corpus", choices=("scifact", "cmrc2018"), required=True)
    b.add_argument("--limit", type=int, default=0)
    b.add_argument("--embedder", default="none")
    b.add_argument("--model-sample", type=int, default=0)
    b.add_argument("--model-only", action="store_true", help="only the model sample, over an earlier build's KB")
    b.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("specific")
    s.add_argument("--kb", required=True, help="a SciFact knowledge base built by `build --corpus scifact`")
    s.add_argument("--limit", type=int, default=300)
    s.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.cmd == "route":
        emit(route(args), args.out)
    elif args.cmd == "coverage":
        result = coverage_run(args)
        emit(result, Path(args.out) / "summary.json")
    elif args.cmd == "build":
        emit(build(args), args.out)
    else:
        emit(specific(args), args.out)


if __name__ == "__main__":
    main()
