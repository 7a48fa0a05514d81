"""Debugger localisation on a fault suite where the faulty layer is known by construction (issue 6).

    .venv/bin/python bench/debugger_fault_bench.py --per-language 20

Items: HaluEval QA (English: knowledge, question, right answer found verbatim in the knowledge) and
CMRC2018 trial (Chinese: paragraph, question, answer span), read by path from ../shared/data. Each item gets
a knowledge base of its gold document plus six other items' documents as distractors, and one case per
layer, each with exactly one fault put in:
- parse: the gold document is HTML whose answer sentence sits in an <aside>, which the HTML parser's
  boilerplate removal drops (the raw file still states it);
- chunk: the gold document as one unpunctuated run (as lists and tables often come out of a parser), the
  first chunk size (16–40 tokens, no overlap) and shift by filler words at which a cut goes through the answer;
- retrieve: the question's key terms renamed in the gold document, which is buried under distractors that
  repeat the question (top_k 3);
- scope: the gold document tagged year=2019, the question asked with --scope year=2020;
- gate: a threshold that refuses everything (gate_threshold_lexical 1.0), or — with the gold document
  removed, so the right outcome is a refusal — a threshold of 0 that answers with no evidence;
- generate: a scripted model that ignores the context.
A case counts only if the item's clean knowledge base answers right and the faulted one does not (a fault
that does not break the answer has nothing to localise); discarded cases are reported. Answers come from
the extractive generator and the lexical judge (no language model), so the suite is deterministic.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "src"))

from ragclinic.config import Settings  # noqa: E402
from ragclinic.debugger import Debugger, Expectation  # noqa: E402
from ragclinic.debugger.base import locate  # noqa: E402
from ragclinic.text.answers import answer_correct  # noqa: E402
from ragclinic.ingest.runner import ingest  # noqa: E402
from ragclinic.models.fake_llm import ScriptedLanguageModel  # noqa: E402
from ragclinic.pipeline.runner import Pipeline  # noqa: E402
from ragclinic.store.kb import KnowledgeBase  # noqa: E402
from ragclinic.trace.model import LAYERS  # noqa: E402

WRONG = {"en": "The documents say it was Springfield in 1999 [1].", "zh": "文件显示答案是上海，时间是1999年[1]。"}


def items(lang: str, n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    if lang == "en":
        with open(DATA / "halueval" / "qa_one-turn_data.json", encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        for r in rows:
            a = r["right_answer"].strip()
            if len(a) >= 3 and a.lower() not in ("yes", "no") and locate(a, r["knowledge"]):
                out.append({"id": f"en{len(out)}", "lang": "en", "doc": r["knowledge"], "question": r["question"],
                            "answer": a})
    else:
        doc = json.loads((DATA / "cmrc2018" / "cmrc2018_trial.json").read_text(encoding="utf-8"))
        for art in doc["data"]:
            for p in art["paragraphs"]:
                qa = next((q for q in p["qas"] if q.get("question") and q.get("answers")), None)
                if qa and locate(qa["answers"][0]["text"], p["context"]):
                    out.append({"id": f"zh{len(out)}", "lang": "zh", "doc": p["context"], "question": qa["question"],
                                "answer": qa["answers"][0]["text"]})
    rng.shuffle(out)
    return out[:n]


def build(tmp: Path, docs: dict[str, str], meta: dict[str, dict] | None = None, **overrides) -> KnowledgeBase:
    root = tmp / "docs"
    root.mkdir(parents=True)
    for name, text in docs.items():
        (root / name).write_text(text, encoding="utf-8")
        if meta and name in meta:
            (root / (name + ".meta.json")).write_text(json.dumps(meta[name]), encoding="utf-8")
    kb = KnowledgeBase.open(Settings.load(tmp / "kb", llm="none", **overrides), create=True)
    kb.lock()
    ingest(kb, [root])
    kb.unlock()
    return kb


def sentences(text: str, lang: str) -> list[str]:
    parts = re.split(r"(?<=[。！？])" if lang == "zh" else r"(?<=[.!?])\s+", text)
    return [p for p in parts if p.strip()]


def _right(pipe: Pipeline, it: dict, scope=None, refuse=False) -> bool:
    state, _ = pipe.ask(it["question"], scope)
    a = state.answer
    return a.refused if refuse else (not a.refused and answer_correct(a.text, ((it["answer"],),)))


def cases_for(it: dict, distractors: list[str], work: Path):
    """Yields (layer, pipeline, scope, expectation, close) for each fault that breaks the answer."""
    lang = it["lang"]
    ext = "md"
    docs = {f"d{i}.{ext}": d for i, d in enumerate(distractors)}
    meta = {name: {"year": "2020"} for name in docs}
    clean = build(work / "clean", {**docs, f"gold.{ext}": it["doc"]}, {**meta, f"gold.{ext}": {"year": "2019"}})
    expect = Expectation(((it["answer"],),))
    base = Pipeline(clean)
    if not _right(base, it):
        clean.close()
        yield "discard", "clean answer wrong", None, None, None
        return
    yield "scope", Pipeline(clean), {"year": "2020"}, expect, None
    yield "gate", Pipeline(clean, settings=clean.settings.model_copy(update={"gate_threshold_lexical": 1.0})), None, \
        expect, None
    yield "generate", Pipeline(clean, lm=ScriptedLanguageModel([WRONG[lang]]),
                               settings=clean.settings.model_copy(update={"judge": "lexical"})), None, expect, clean
    # parse: the answer's sentence in an <aside> the HTML parser drops as boilerplate
    sents = sentences(it["doc"], lang)
    ans = [s for s in sents if locate(it["answer"], s)]
    rest = [s for s in sents if s not in ans] or ["—"]
    html = (f"<html><head><title>{it['question'][:30]}</title></head><body><article><h1>Notes</h1>"
            + "".join(f"<p>{s}</p>" for s in rest) + "</article><aside class='sidebar'>"
            + "".join(f"<p>{s}</p>" for s in ans) + "</aside><footer><p>© 2024</p></footer></body></html>")
    kb = build(work / "parse", {**docs, "gold.html": html})
    yield "parse", Pipeline(kb), None, expect, kb
    # chunk: the document as one unpunctuated run (as lists and tables often come out of a parser), shifted
    # by a few filler words until a token-limit cut of a 24-token chunk goes through the answer
    for size, k in ((size, k) for size in range(16, 41, 4) for k in range(12)):
        text = ("另外 " if lang == "zh" else "also ") * k + runon(it["doc"], it["answer"], lang)
        probe = build(work / f"chunkprobe{size}-{k}", {f"gold.{ext}": text}, embedder="none",
                      chunk_max_tokens=size, chunk_min_tokens=4, overlap_min_tokens=0, overlap_max_tokens=0)
        chunks = [t for (t,) in probe.db.conn.execute("SELECT text FROM chunks")]
        probe.close()
        if len(chunks) > 1 and not any(locate(it["answer"], t) for t in chunks):
            kb = build(work / "chunk", {**docs, f"gold.{ext}": text}, chunk_max_tokens=size, chunk_min_tokens=4,
                       overlap_min_tokens=0, overlap_max_tokens=0)
            yield "chunk", Pipeline(kb), None, expect, kb
            break
    else:
        one_word = lang == "en" and not re.search(r"\s", it["answer"].strip())
        yield "discard", "chunk: a one-word answer cannot be cut" if one_word else "chunk: no cut found", None, \
            None, None
    # retrieve: key terms renamed in the gold document, buried under distractors that repeat the question
    renamed = rename_terms(it["doc"], it["question"], it["answer"], lang)
    buried = {f"d{i}.{ext}": f"{it['question']} {d}" for i, d in enumerate(distractors)}
    kb = build(work / "retrieve", {**buried, f"gold.{ext}": renamed})
    yield "retrieve", Pipeline(kb, settings=kb.settings.model_copy(update={"top_k": 3, "context_k": 3})), None, \
        expect, kb
    # gate: no gold document, and a threshold of 0 answers anyway
    kb = build(work / "nogold", docs)
    yield "gate", Pipeline(kb, settings=kb.settings.model_copy(update={"gate_threshold_lexical": 0.0})), None, \
        Expectation(expect_refusal=True), kb


def runon(doc: str, answer: str, lang: str) -> str:
    """The document without sentence and clause punctuation (the answer itself left intact)."""
    a = locate(answer, doc)
    strip = (lambda t: re.sub(r"[。！？，、；：]", " ", t)) if lang == "zh" else (
        lambda t: re.sub(r"[.,;:!?](?=\s|$)", " ", t))
    return strip(doc[:a[0]]) + doc[a[0]:a[1]] + strip(doc[a[1]:])


def rename_terms(doc: str, question: str, answer: str, lang: str) -> str:
    """The question's content words renamed wherever the document uses them (the answer left intact)."""
    if lang == "zh":
        import jieba

        words = {w for w in jieba.lcut(question) if len(w) >= 2 and re.search(r"[\u4e00-\u9fff]", w)}
    else:
        words = {w for w in re.findall(r"[A-Za-z]{4,}", question)} - {"What", "Which", "When", "Where", "does"}
    a = locate(answer, doc)
    head, mid, tail = doc[:a[0]], doc[a[0]:a[1]], doc[a[1]:]
    for i, w in enumerate(sorted(words, key=len, reverse=True)):
        new = "某物" if lang == "zh" else f"thing{i}"
        head = re.sub(re.escape(w), new, head, flags=re.I)
        tail = re.sub(re.escape(w), new, tail, flags=re.I)
    return head + mid + tail


def run(per_language: int, seed: int, out_path: Path) -> dict:
    results, discards = [], Counter()
    t0 = time.perf_counter()
    for lang in ("en", "zh"):
        pool = items(lang, per_language * 4, seed)
        chosen, others = pool[:per_language], pool[per_language:]
        for k, it in enumerate(chosen):
            distractors = [o["doc"] for o in others[k * 6 % max(1, len(others) - 6):][:6]]
            with tempfile.TemporaryDirectory() as d:
                for layer, pipe, scope, expect, kb in cases_for(it, distractors, Path(d)):
                    if layer == "discard":
                        discards[f"{lang}: {pipe}"] += 1
                        continue
                    refuse = expect.expect_refusal
                    if _right(pipe, it, scope, refuse):
                        discards[f"{lang} {layer}: the fault did not break the answer"] += 1
                    else:
                        diag = Debugger(pipe).diagnose(expect, question=it["question"], scope=scope)
                        results.append({"id": it["id"], "lang": lang, "layer": layer, "verdict": diag.verdict,
                                        "suggestion": diag.suggestion})
                    if kb is not None:
                        kb.close()
            print(f"{lang} {k + 1}/{len(chosen)}: {len(results)} cases, {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr)
    return summarise(results, discards, time.perf_counter() - t0, out_path)


def summarise(results: list[dict], discards: Counter, seconds: float, out_path: Path) -> dict:
    by = defaultdict(list)
    for r in results:
        by[r["layer"]].append(r["verdict"] == r["layer"])
        by[f"{r['layer']}/{r['lang']}"].append(r["verdict"] == r["layer"])
    acc = {k: {"n": len(v), "accuracy": round(sum(v) / len(v), 4)} for k, v in sorted(by.items())}
    confusion = defaultdict(Counter)
    for r in results:
        confusion[r["layer"]][r["verdict"]] += 1
    summary = {"n": len(results), "overall": round(sum(r["verdict"] == r["layer"] for r in results) / max(1, len(results)), 4),
               "per_layer": acc, "confusion": {k: dict(v) for k, v in confusion.items()},
               "discarded": dict(discards), "seconds": round(seconds, 1),
               "misses": [r for r in results if r["verdict"] != r["layer"]][:20]}
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(summary, ensure_ascii=False, indent=2), encoding="utf-8")
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-language", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "debugger_faults.json")
    args = ap.parse_args()
    s = run(args.per_language, args.seed, args.out)
    print("| layer | cases | localised |\n|---|---|---|")
    for layer in LAYERS:
        if layer in s["per_layer"]:
            x = s["per_layer"][layer]
            print(f"| {layer} | {x['n']} | {x['accuracy']:.2f} |")
    print(f"| **overall** | {s['n']} | {s['overall']:.2f} |")
    print("confusion:", json.dumps(s["confusion"]))
    print("discarded:", json.dumps(s["discarded"], ensure_ascii=False))


if __name__ == "__main__":
    main()
