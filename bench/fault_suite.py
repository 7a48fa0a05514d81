"""A held-out fault suite for the debugger (issue 38): faults built differently from bench/debugger_fault_bench.py's,
on items it never draws, in all six layers and the graph; the debugger's localisation and its applied fix's success
measured separately.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/fault_suite.py --per-language 10 --out bench/out/fault-suite.json

Items: HaluEval QA (English) and CMRC2018 trial (Chinese), read by path; the first bench's 80 items per language
(seed 0) are left out. Each item's knowledge base holds its gold document and six others. One fault per layer, each
put in on purpose:
- parse: the gold document is a PDF whose text layer drops the answer (drawn as a picture, as scans and some
  exports do): nothing in the knowledge base states it;
- chunk: ordinary sentences, chunked small with no overlap, shifted until a chunk boundary cuts through the answer;
- retrieve: the other documents repeat the question (the gold one keeps its words), top_k and context_k 2;
- scope: the gold document is version 1 of a handbook whose version 2 (another document, same title) lacks the
  answer: the newest-version policy hides it;
- gate: an evidence threshold (the verifier's probability 1.0) that no passage reaches;
- generate: a model that drops the answer under the knowledge base's answer prompt (wording 1) and gives it under
  the other (the scripted stand-in for "a prompt variant that drops numbers");
- graph: the graph world of the tests (three cases: an entity the fast extractor did not make, two entities it never
  related, a community the map step did not take).
A case counts only if the clean knowledge base answers right and the faulted one does not. Then `diagnose` names a
layer (localisation) and `diagnose --apply` tries that layer's fixes on a copy (fix success: the answer right after
it; side effects: three other items' questions — their documents are in the case's knowledge base — asked without
and with the fix and scored against their answers). Extractive answers and the learned verifier (no
language model) except the scripted generate case: deterministic.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from debugger_fault_bench import build, items  # noqa: E402
from ragclinic.debugger import Debugger, Expectation  # noqa: E402
from ragclinic.debugger.base import locate  # noqa: E402
from ragclinic.models.fake_llm import ScriptedLanguageModel  # noqa: E402
from ragclinic.pipeline.generate.prompt import YES_NO_WORDING  # noqa: E402
from ragclinic.pipeline.runner import Pipeline  # noqa: E402
from ragclinic.text.answers import answer_correct  # noqa: E402

LAYERS = ("parse", "chunk", "retrieve", "scope", "gate", "generate", "graph")


def _right(pipe: Pipeline, it: dict, scope=None, refuse=False) -> bool:
    """The item's question asked and not saved (saved traces would be the side-effect questions)."""
    state, _ = pipe.ask(it["question"], scope, save=False)
    a = state.answer
    return a.refused if refuse else (not a.refused and answer_correct(a.text, ((it["answer"],),)))


def held_out(lang: str, n: int) -> list[dict]:
    """Items the first bench (seed 0, 4 × 20 per language) never draws."""
    used = {it["id"] for it in items(lang, 80, 0)}
    return [it for it in items(lang, 10 ** 6, 7) if it["id"] not in used][:n * 4]


def pdf_without(doc: str, answer: str, lang: str) -> bytes:
    """A PDF of ``doc`` whose text layer lacks ``answer``: the answer is drawn as a picture."""
    from PIL import Image, ImageDraw
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    font = "Helvetica"
    if lang == "zh":
        pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
        font = "STSong-Light"
    a = locate(answer, doc)
    before, after = doc[:a[0]], doc[a[1]:]
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    width = 70 if lang == "en" else 36
    y = 800

    def lines(text: str) -> list[str]:
        if lang == "zh":
            return [text[i:i + width] for i in range(0, len(text), width)] or [""]
        out, cur = [], ""
        for w in text.split():
            if len(cur) + len(w) + 1 > width:
                out.append(cur)
                cur = w
            else:
                cur = f"{cur} {w}".strip()
        return out + [cur]

    for line in lines(before):
        c.setFont(font, 10)
        c.drawString(50, y, line)
        y -= 14
    img = Image.new("RGB", (12 * max(4, len(answer)) * (2 if lang == "zh" else 1), 24), "white")
    ImageDraw.Draw(img).text((2, 4), answer if lang == "en" else "?" * len(answer), fill="black")
    c.drawImage(ImageReader(img), 50, y - 6, width=img.width * 0.6, height=14)
    y -= 18
    for line in lines(after):
        c.setFont(font, 10)
        c.drawString(50, y, line)
        y -= 14
        if y < 60:
            c.showPage()
            y = 800
    c.save()
    return buf.getvalue()


def cases_for(it: dict, distractors: list[str], work: Path):
    """(layer, pipeline, scope, expectation, knowledge base to close) for each fault; ("discard", why, ...) else."""
    lang, docs = it["lang"], {f"d{i}.md": d for i, d in enumerate(distractors)}
    expect = Expectation(((it["answer"],),))
    clean = build(work / "clean", {**docs, "gold.md": it["doc"]})
    if not _right(Pipeline(clean), it):
        clean.close()
        yield "discard", "clean answer wrong", None, None, None
        return
    # gate: an evidence threshold no passage reaches (the verifier's probability 1.0)
    yield "gate", Pipeline(clean, settings=clean.settings.model_copy(update={"gate_threshold_judge": 1.0})), \
        None, expect, None
    # generate: the knowledge base's answer prompt (wording 1) makes the model drop the answer
    lm = ScriptedLanguageModel([_prompt_sensitive(it["answer"])], yes_prob=0.9)
    yield "generate", Pipeline(clean, lm=lm, settings=clean.settings.model_copy(update={"answer_prompt": 1})), None, \
        expect, clean  # the judge stays the learned verifier (no model call): only the generator changes
    # parse: a PDF whose text layer lacks the answer
    root = work / "parse"
    kb = build(root, docs)
    (root / "pdf").mkdir()
    (root / "pdf" / "gold.pdf").write_bytes(pdf_without(it["doc"], it["answer"], lang))
    from ragclinic.ingest.runner import ingest

    kb.lock()
    ingest(kb, [root / "pdf"])
    kb.unlock()
    yield "parse", Pipeline(kb), None, expect, kb
    # chunk: ordinary sentences, small chunks, no overlap, a boundary through the answer
    yield from _chunk_case(it, docs, work, expect)
    # retrieve: the others repeat the question; top_k 2
    buried = {f"d{i}.md": f"{it['question']} {d}" for i, d in enumerate(distractors)}
    kb = build(work / "retrieve", {**buried, "gold.md": it["doc"]})
    yield "retrieve", Pipeline(kb, settings=kb.settings.model_copy(update={"top_k": 2, "context_k": 2})), None, \
        expect, kb
    # scope: version 1 of a handbook superseded by version 2, which lacks the answer
    title = "# 手册\n\n" if lang == "zh" else "# Handbook\n\n"
    kb = build(work / "scope", {**docs, "gold.md": title + it["doc"], "newer.md": title + distractors[0]},
               {"gold.md": {"version": "1"}, "newer.md": {"version": "2"}})
    yield "scope", Pipeline(kb), None, expect, kb


def _chunk_case(it: dict, docs: dict, work: Path, expect: Expectation):
    lang = it["lang"]
    for size in range(16, 41, 4):
        for k in range(10):
            text = ("另外。" if lang == "zh" else "Also. ") * k + it["doc"]
            probe = build(work / f"chunkprobe{size}-{k}", {"gold.md": text}, embedder="none", chunk_max_tokens=size,
                          chunk_min_tokens=4, overlap_min_tokens=0, overlap_max_tokens=0)
            chunks = [t for (t,) in probe.db.conn.execute("SELECT text FROM chunks")]
            probe.close()
            if len(chunks) > 1 and not any(locate(it["answer"], t) for t in chunks):
                kb = build(work / "chunk", {**docs, "gold.md": text}, chunk_max_tokens=size, chunk_min_tokens=4,
                           overlap_min_tokens=0, overlap_max_tokens=0)
                yield "chunk", Pipeline(kb), None, expect, kb
                return
    yield "discard", "chunk: no boundary through the answer", None, None, None


def _prompt_sensitive(answer: str):
    """The reply of a model that gives ``answer`` under answer prompt 2 and drops it under wording 1."""
    def reply(messages) -> str:
        v2 = YES_NO_WORDING in messages[0].content
        text = answer if v2 else re.sub(r"\d+", "", "the documents give it")
        return json.dumps({"status": "answered", "answer": text, "evidence": [1, 2, 3]}, ensure_ascii=False)

    return reply


def graph_cases(work: Path):
    from graph.helpers import graph_clinic  # the tests' graph world

    for name, question, answer, settings in (
            ("entity", "How often does Fjordline Steel ship plates to the Gdynia Plant?", "every month", {}),
            ("relation", "Which Fjordline Steel contact reviews the valves?", "Erik Dahl", {}),
            ("community", "What are the main risks discussed across these reports?", "Erik Dahl",
             {"graph_communities_k": 1})):
        c = graph_clinic(work / f"graph-{name}", **settings)
        yield "graph", c, question, Expectation(((answer,),))


def run(per_language: int, out_path: Path) -> dict:
    rows, discards = [], Counter()
    t0 = time.perf_counter()
    for lang in ("en", "zh"):
        pool = held_out(lang, per_language)
        chosen, rest = pool[:per_language], pool[per_language:]
        for k, it in enumerate(chosen):
            neighbours = rest[k * 6 % max(1, len(rest) - 6):][:6]
            distractors = [o["doc"] for o in neighbours]
            # side effects: three other items' questions, whose documents are in every case's knowledge base
            others_set = [(o["question"], Expectation(((o["answer"],),))) for o in neighbours[1:4]]
            with tempfile.TemporaryDirectory() as d:
                for layer, pipe, scope, expect, kb in cases_for(it, distractors, Path(d)):
                    if layer == "discard":
                        discards[f"{lang}: {pipe}"] += 1
                        continue
                    if _right(pipe, it, scope, expect.expect_refusal):
                        discards[f"{lang} {layer}: the fault did not break the answer"] += 1
                    else:
                        rows.append(_case(pipe, it["question"], scope, expect, layer, lang, it["id"], others_set))
                    if kb is not None:
                        kb.close()
            print(f"{lang} {k + 1}/{len(chosen)}: {len(rows)} cases, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    with tempfile.TemporaryDirectory() as d:
        for layer, clinic, question, expect in graph_cases(Path(d)):
            with clinic:
                if expect.satisfied_by(clinic.ask(question, doctor=False).to_json()):
                    discards[f"graph: the fault did not break the answer ({question[:40]})"] += 1
                    continue
                rows.append(_case(clinic.pipeline, question, None, expect, layer, "en", question[:30], ()))
    return summarise(rows, discards, time.perf_counter() - t0, out_path)


def _case(pipe, question, scope, expect, layer, lang, item, others_set) -> dict:
    d = Debugger(pipe).diagnose(expect, question=question, scope=scope, apply=True, others=0, eval_set=others_set)
    a = d.applied
    return {"id": item, "lang": lang, "layer": layer, "verdict": d.verdict, "suggestion": d.suggestion,
            "applied": a.verdict if a else None, "fix": next((x.fix.what for x in a.attempts if x.right), None)
            if a else None, "tried": len(a.attempts) if a else 0,
            "side_effects": {k: a.side_effects.get(k, 0) for k in ("asked", "changed", "better", "worse")} if a else {}}


def summarise(rows: list[dict], discards: Counter, seconds: float, out_path: Path) -> dict:
    per = defaultdict(lambda: {"n": 0, "localised": 0, "fixed": 0, "fixed_with_side_effects": 0})
    for r in rows:
        for key in (r["layer"], f"{r['layer']}/{r['lang']}"):
            p = per[key]
            p["n"] += 1
            if r["verdict"] == r["layer"]:
                p["localised"] += 1
                p["fixed"] += r["applied"] in ("fixed", "fixed_with_side_effects")
                p["fixed_with_side_effects"] += r["applied"] == "fixed_with_side_effects"
    localised = [r for r in rows if r["verdict"] == r["layer"]]
    fixed = [r for r in localised if r["applied"] in ("fixed", "fixed_with_side_effects")]
    confusion = defaultdict(Counter)
    for r in rows:
        confusion[r["layer"]][r["verdict"]] += 1
    out = {"n": len(rows), "localisation": round(len(localised) / max(1, len(rows)), 4),
           "fix_success": round(len(fixed) / max(1, len(localised)), 4),
           "with_side_effects": sum(r["applied"] == "fixed_with_side_effects" for r in fixed),
           "per_layer": {k: {**v, "localisation": round(v["localised"] / v["n"], 4),
                             "fix_success": round(v["fixed"] / v["localised"], 4) if v["localised"] else None}
                         for k, v in sorted(per.items())},
           "fixes_that_worked": dict(Counter(r["fix"].split(" ")[0] + " …" if r["fix"] else "none"
                                             for r in localised)),
           "confusion": {k: dict(v) for k, v in confusion.items()}, "discarded": dict(discards),
           "seconds": round(seconds, 1), "rows": rows}
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(out, ensure_ascii=False, indent=2), encoding="utf-8")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-language", type=int, default=10)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "fault-suite.json")
    a = ap.parse_args()
    s = run(a.per_language, a.out)
    print("| layer | cases | localised | fix made the answer right (of localised) |\n|---|---|---|---|")
    for layer in LAYERS:
        if layer in s["per_layer"]:
            x = s["per_layer"][layer]
            print(f"| {layer} | {x['n']} | {x['localisation']:.2f} | "
                  + (f"{x['fix_success']:.2f}" if x["fix_success"] is not None else "—") + " |")
    print(f"| **all** | {s['n']} | {s['localisation']:.2f} | {s['fix_success']:.2f} |")
    print("confusion:", json.dumps(s["confusion"]))
    print("discarded:", json.dumps(s["discarded"], ensure_ascii=False))


if __name__ == "__main__":
    main()
