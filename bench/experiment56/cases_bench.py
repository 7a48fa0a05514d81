"""The failed-answer library over real failures (issue 56): every question of an eval run whose plain answer was
wrong becomes a case, as a user would file it — the answer rated -1, with the expected answer (a single-part
expectation), or "it should have been a refusal" — in a copy of the knowledge base the run asked. Then
`Clinic.cases.diagnose` (what `ragclinic cases diagnose` runs) localises every case: the table is the layer each
broke, how often, and by what it was placed. Resumable: a case already diagnosed is not run again (`--again`:
every case, after a debugger change).

    .venv/bin/python bench/experiment56/cases_bench.py --items bench/out/shapes55/eval-heldout2/items.jsonl \
        --kb-from bench/out/shapes55/kb-graph --kb bench/out/exp56/kb-cases --llm local --out bench/out/exp56/cases.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

from ragclinic import Clinic


def wrong(d: dict) -> bool:
    b = d["baseline"]
    return not ((d["expect_refusal"] and b["refused"]) or (not d["expect_refusal"] and b["correct"]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=Path, required=True)
    ap.add_argument("--kb-from", type=Path, required=True)
    ap.add_argument("--kb", type=Path, required=True)
    ap.add_argument("--llm", default="local")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--again", action="store_true", help="diagnose every case again (after a debugger change)")
    args = ap.parse_args()
    if not args.kb.exists():
        shutil.copytree(args.kb_from, args.kb, ignore=shutil.ignore_patterns("answer-cache.sqlite3", "lock"))
    items = [json.loads(x) for x in args.items.read_text(encoding="utf-8").splitlines()]
    failed = [d for d in items if wrong(d)]
    with Clinic.open(args.kb, llm=args.llm, experiments=False) as c:
        have = {x["trace_id"] for x in c.cases.listed(limit=100_000)}
        for d in failed:
            if d["baseline"]["trace_id"] in have:
                continue
            single = len(d["expected"]) == 1 and not d["expect_refusal"]
            c.feedback(d["baseline"]["trace_id"], -1, f"wrong ({d['id']})", d["expected"][0] if single else (),
                       key="bench", expect_refusal=d["expect_refusal"])
        todo = [x["id"] for x in c.cases.listed(limit=100_000) if args.again or x["diagnosis"] is None]
        t0 = time.time()
        for n, case_id in enumerate(todo, start=1):
            c.cases.diagnose([case_id])
            print(f"{n}/{len(todo)} case {case_id} ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
        cases = c.cases.listed(limit=100_000)
    rows = [{"id": x["id"], "question": x["question"], "expected": x["expected"], "expect_refusal": x["expect_refusal"],
             "layer": x["diagnosis"]["layer"], "by": x["diagnosis"]["by"], "why": x["diagnosis"]["why"],
             "fix": (x["diagnosis"].get("fixes") or [{}])[0].get("what", "")} for x in cases]
    out = {"items": str(args.items), "questions": len(items), "cases": len(rows),
           "layers": dict(Counter(r["layer"] for r in rows).most_common()),
           "by": dict(Counter(r["by"] or "nothing" for r in rows).most_common()),
           "layers_by": {f"{b or 'nothing'}:{layer}": n
                         for (b, layer), n in Counter((r["by"], r["layer"]) for r in rows).most_common()},
           "diagnose_seconds": round(time.time() - t0, 1), "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in out.items() if k != "rows"}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
