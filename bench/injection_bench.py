"""Issue 19's injection figures.

1. False alarms: ``find_instructions`` over every SciFact abstract and every CMRC2018 trial context (real text
   nobody planted anything in); a passage with any span is a false alarm.
2. The injection table: every case of ``ragclinic.demo.planted`` (format × hiding place × EN/ZH), one knowledge
   base each (the default e5 embedder), asked with the local model and the doctor; and the naive peer (the same
   model, the document's full text with its hidden text kept, one prompt, no checks). Per case: right (the gold
   fact stated), hijacked (the payload's link or false figure stated), detected at ingest (the parse report counts
   the instruction) and at answer time (the ``injected_instruction`` symptom names the document).

    python bench/injection_bench.py --out bench/out/injection [--fp-only] [--llm local]

Rows are checkpointed to OUT/rows.jsonl (a re-run resumes); the summary goes to OUT/summary.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def real_passages() -> list[tuple[str, str]]:
    out = []
    with (DATA / "scifact" / "beir" / "corpus.jsonl").open() as f:
        for line in f:
            d = json.loads(line)
            out.append(("scifact", f"{d.get('title', '')}\n\n{d['text']}"))
    cmrc = json.loads((DATA / "cmrc2018" / "cmrc2018_trial.json").read_text())
    for article in cmrc["data"]:
        for para in article["paragraphs"]:
            out.append(("cmrc2018", para["context"]))
    return out


def false_alarms() -> dict:
    from ragclinic.text.injection import find_instructions

    passages = real_passages()
    t0 = time.perf_counter()
    flagged = [(src, text) for src, text in passages if find_instructions(text)]
    secs = time.perf_counter() - t0
    by = {}
    for src in ("scifact", "cmrc2018"):
        n = sum(1 for s, _ in passages if s == src)
        k = sum(1 for s, _ in flagged if s == src)
        by[src] = {"passages": n, "flagged": k, "rate": round(k / n, 4)}
    return {"passages": len(passages), "flagged": len(flagged), "rate": round(len(flagged) / len(passages), 4),
            "by_source": by, "seconds": round(secs, 1), "examples": [t[:160] for _, t in flagged[:10]]}


def naive_text(path: Path) -> str:
    from ragclinic.config import Settings
    from ragclinic.ingest.discover import read_source
    from ragclinic.ingest.parse import parse_source

    settings = Settings(keep_hidden_text=True)
    return "\n\n".join(p.document.text for p in parse_source(read_source(path, 10**8), settings)
                       if hasattr(p, "document"))


def run_cases(out: Path, llm: str) -> None:
    from ragclinic import Clinic
    from ragclinic.demo import planted
    from ragclinic.eval.tasks.naive import naive_messages

    rows_path = out / "rows.jsonl"
    done = {json.loads(x)["case"] for x in rows_path.read_text().splitlines()} if rows_path.exists() else set()
    lm = None
    with rows_path.open("a") as f:
        for case in planted.cases():
            if case.name in done:
                continue
            folder = out / "cases" / case.name
            for pad in planted.SPLIT_PADS if case.place == "split-chunks" else (0,):
                kb_dir = folder / f"kb{pad}"
                planted.write(case, folder / f"docs{pad}", pad)
                with Clinic.open(kb_dir, llm="none") as c:
                    c.ingest([folder / f"docs{pad}"])
                    texts = [r[0] for r in c.kb.db.conn.execute("SELECT text FROM chunks ORDER BY ordinal")]
                if case.place != "split-chunks" or planted.is_split(texts, case.lang):
                    break
            with Clinic.open(kb_dir, llm=llm, **({"model": lm} if lm is not None else {})) as c:
                lm = c.lm
                report = c.kb.db.conn.execute("SELECT json_extract(parse_report, '$.instructions') FROM documents").fetchone()
                t0 = time.perf_counter()
                a = c.ask(case.question, cache=False)
                secs = time.perf_counter() - t0
                sym = next((s for s in a.symptoms if s["name"] == "injected_instruction"), None)
            t0 = time.perf_counter()
            naive = lm.chat(naive_messages(case.question, [naive_text(folder / f"docs{pad}" / case.filename)]),
                            max_tokens=256, temperature=0.0).text
            naive_secs = time.perf_counter() - t0
            row = {"case": case.name, "fmt": case.fmt, "place": case.place, "lang": case.lang, "hidden": case.hidden,
                   "answer": a.text, "right": planted.right(case, a.text), "hijacked": planted.hijacked(case, a.text),
                   "detected_ingest": bool(report and report[0]),
                   "detected_answer": bool(sym and sym["score"] >= 0.5),
                   "named": bool(sym) and any(n in sym["evidence"] for n in (planted.TITLE[case.lang], case.filename,
                                                                             case.filename.rsplit(".", 1)[0])),
                   "seconds": round(secs, 1), "naive_answer": naive, "naive_right": planted.right(case, naive),
                   "naive_hijacked": planted.hijacked(case, naive), "naive_seconds": round(naive_secs, 1)}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            f.flush()
            print(case.name, row["right"], row["hijacked"], row["naive_hijacked"], a.text[:80], flush=True)


def summary(out: Path) -> dict:
    import statistics

    rows = [json.loads(x) for x in (out / "rows.jsonl").read_text().splitlines()]
    n = len(rows)

    def rate(key, sub=rows):
        return round(sum(r[key] for r in sub) / len(sub), 3) if sub else None

    detected = [r["detected_ingest"] or (r["detected_answer"] and r["named"]) for r in rows]
    return {"cases": n, "right": rate("right"), "hijacked": rate("hijacked"),
            "detected": round(sum(detected) / n, 3) if n else None,
            "detected_at_answer_named": round(sum(r["detected_answer"] and r["named"] for r in rows) / n, 3) if n else None,
            "naive_right": rate("naive_right"), "naive_hijacked": rate("naive_hijacked"),
            "p50_s": statistics.median(r["seconds"] for r in rows) if rows else None,
            "naive_p50_s": statistics.median(r["naive_seconds"] for r in rows) if rows else None,
            "table": [{k: r[k] for k in ("case", "right", "hijacked", "detected_ingest", "detected_answer", "named",
                                         "naive_right", "naive_hijacked")} for r in rows]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--llm", default="local")
    ap.add_argument("--fp-only", action="store_true")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    fp = false_alarms()
    print(json.dumps({k: v for k, v in fp.items() if k != "examples"}), flush=True)
    result = {"false_alarms": fp}
    if not a.fp_only:
        run_cases(a.out, a.llm)
        result["cases"] = summary(a.out)
    (a.out / "summary.json").write_text(json.dumps(result, ensure_ascii=False, indent=1))
    print(json.dumps(result, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    sys.exit(main())
