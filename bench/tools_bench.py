"""Issue 17's tools figure: accuracy on the 36 table / arithmetic questions of bench/reason/tools_set.py (EN and ZH)
with the tools path and without it (the same pipeline with ``tools_path = false``), side by side in one run, the
doctor off in both arms so the path alone is compared. Rows are checkpointed to OUT/rows.jsonl (a re-run resumes).

    python bench/tools_bench.py --out bench/out/tools [--limit N]

A row is right when the gold value is stated: the gold number among the answer's numbers (within 0.01), or the
gold name in its text.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).parent))

from reason.tools_set import questions, write_corpus  # noqa: E402

from ragclinic import Clinic  # noqa: E402
from ragclinic.pipeline.reason.toolbox import numbers_in  # noqa: E402


def right(answer: str, gold) -> bool:
    if isinstance(gold, str):
        return gold.lower() in answer.lower()
    import re

    stated = numbers_in(re.sub(r"\[\d+\]", " ", answer))
    return any(abs(x - float(gold)) <= 0.01 for x in stated)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--llm", default="local")
    ap.add_argument("--kind", choices=("table", "text"), help="only the questions of this kind")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    docs, kb = a.out / "docs", a.out / "kb"
    if not kb.exists():
        write_corpus(docs)
        with Clinic.open(kb, llm="none") as c:
            c.ingest([docs])
    rows_path = a.out / "rows.jsonl"
    done = {(r["id"], r["arm"]) for r in map(json.loads, rows_path.read_text().splitlines())} if rows_path.exists() else set()
    qs = [q for q in questions() if not a.kind or q["kind"] == a.kind][: a.limit or None]
    with Clinic.open(kb, llm=a.llm) as tools:
        plain = Clinic.open(kb, llm=a.llm, model=tools.lm, tools_path=False)
        with rows_path.open("a") as f:
            for q in qs:
                for arm, clinic in (("tools", tools), ("plain", plain)):
                    if (q["id"], arm) in done:
                        continue
                    t0 = time.perf_counter()
                    ans = clinic.ask(q["question"], doctor=False, cache=False)
                    row = {"id": q["id"], "lang": q["lang"], "kind": q["kind"], "arm": arm, "question": q["question"],
                           "gold": q["gold"], "answer": ans.text, "right": right(ans.text, q["gold"]),
                           "seconds": round(time.perf_counter() - t0, 2), "tools": [dict(t) for t in ans.tools],
                           "flags": list(ans.flags), "trace_id": ans.trace_id}
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
                    f.flush()
                    print(arm, q["id"], row["right"], row["seconds"], ans.text[:100], flush=True)
        plain.close()
    report(rows_path)


def report(rows_path: Path) -> None:
    rows = [json.loads(x) for x in rows_path.read_text().splitlines()]
    out = {}
    for arm in ("tools", "plain"):
        sub = [r for r in rows if r["arm"] == arm]
        groups = {"all": sub, "en": [r for r in sub if r["lang"] == "en"], "zh": [r for r in sub if r["lang"] == "zh"],
                  "table": [r for r in sub if r["kind"] == "table"], "text": [r for r in sub if r["kind"] == "text"]}
        out[arm] = {k: {"n": len(v), "accuracy": round(sum(r["right"] for r in v) / len(v), 3) if v else None,
                        "p50_s": round(statistics.median(r["seconds"] for r in v), 1) if v else None}
                    for k, v in groups.items()}
        out[arm]["tool_errors"] = sum(1 for r in sub for t in r["tools"] if t.get("error"))
        out[arm]["answered_by_tools"] = sum(1 for r in sub if r["tools"] and not any("tools_failed" in x for x in r["flags"]))
    print(json.dumps(out, indent=1))
    (rows_path.parent / "summary.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
