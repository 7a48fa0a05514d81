"""Issue 13's figures from the rows of ``eval rag --arms ... --out DIR`` runs (items.jsonl), per arm: accuracy when
the answer is present, refusal of negative-only cases, over-refusal, refusals by the gate (no model call) when a
passage states the answer, false alarms (right answers with a claim flagged unsupported, or the doctor's
"may be incomplete" note), median seconds.

    python bench/arms_summary.py bench/out/eval/rgb-arms-verifier bench/out/eval/en-arms-verifier
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HEDGES = ("do not confirm every part", "没有证实这个回答的每一部分")
ARMS = ("naive", "baseline", "doctor")


def summary(rows: list[dict]) -> dict:
    out = {}
    for arm in ARMS:
        rs = [(r, r[arm]) for r in rows if arm in r]
        answerable = [a for r, a in rs if not r["expect_refusal"]]
        negative = [a for r, a in rs if r["setting"] == "neg"]
        right = [a for a in answerable if a["correct"]]
        share = lambda xs: round(sum(xs) / len(xs), 3) if xs else None  # noqa: E731
        out[arm] = {
            "answerable_cases": len(answerable), "negative_cases": len(negative),
            "accuracy": share([a["correct"] for a in answerable]),
            "negative_refusal": share([a["refused"] for a in negative]),
            "over_refusal": share([a["refused"] for a in answerable]),
            "gate_refusals_with_answer_present": share([a["refused"] and a.get("lm_calls", 1) == 0
                                                        for a in answerable]),
            "false_alarms": share([a.get("unsupported", 0) > 0 or any(h in a["answer"] for h in HEDGES)
                                   for a in right]) if arm != "naive" else None,
            "p50_s": round(statistics.median(a["ms"] for _, a in rs) / 1000, 2) if rs else None,
        }
    return out


def main() -> None:
    for d in sys.argv[1:]:
        rows = [json.loads(x) for x in (Path(d) / "items.jsonl").read_text().splitlines() if x.strip()]
        print(d, len(rows), "cases")
        for arm, m in summary(rows).items():
            print(f"  {arm:9s}", json.dumps(m))


if __name__ == "__main__":
    main()
