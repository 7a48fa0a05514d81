"""Choose active retrieval's threshold on dev runs (issue 37 part 2).

A dev run of `eval rag --arms active` with a threshold that never triggers (RAGCLINIC_ACTIVE_RETRIEVAL=0.000001)
records, in each answer's `active_retrieval` span, every claim's least likely token. Here each answered row is
labelled right or wrong (the eval's own scoring), and for each candidate threshold: the share of answers that would
be searched again, how many of the wrong answers that catches, how many right ones it disturbs, and Youden's J
(caught − disturbed). The threshold chosen is the J-best one whose searched share is at most --max-share (FLARE's
looks-again must stay the exception: every one costs a search and a second generation).

    .venv/bin/python bench/active_calibration.py bench/out/active/cal-en bench/out/active/cal-zh ... --out F.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ragclinic.config import Settings
from ragclinic.store.kb import KnowledgeBase
from ragclinic.trace.model import ACTIVE
from ragclinic.trace.store import load_trace

GRID = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8)


def auroc(rows: list[tuple[float, bool]]) -> float | None:
    """How well a low score picks out wrong answers: P(score of a wrong answer < score of a right one)."""
    wrong = [p for p, ok in rows if not ok]
    right = [p for p, ok in rows if ok]
    if not wrong or not right:
        return None
    return round(sum((w < r) + 0.5 * (w == r) for w in wrong for r in right) / (len(wrong) * len(right)), 3)


def statistics_of(trace) -> dict[str, float] | None:
    """Other readings of the first answer call's token log-probabilities (the model call recorded in the trace):
    the answer value's mean token probability (geometric) and its first token's."""
    import math

    calls = [c for c in trace.model_calls if c.kind == "chat" and c.layer == "generate" and c.logprobs]
    if not calls:
        return None
    raw, marks = calls[0].output, calls[0].logprobs
    at = raw.find('"answer": "')
    lo = at + len('"answer": "') if at >= 0 else 0
    inside = [lp for off, lp in marks if off >= lo]
    if not inside:
        return None
    return {"mean": math.exp(sum(inside) / len(inside)), "first": math.exp(inside[0])}


def readings(run: Path, extra: dict | None = None) -> list[tuple[float, bool]]:
    """(lowest token probability of the answer, answered right) per answered row of one run; ``extra`` collects
    the other readings (statistics_of) by name."""
    out, kbs = [], {}
    for line in (run / "items.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        arm = row.get("active")
        if not arm or arm["refused"] or not row["expected"] or row["expect_refusal"]:
            continue
        path = arm.get("kb") or row["kb"]
        if path not in kbs:
            kbs[path] = KnowledgeBase.open(Settings.load(Path(path)))
        trace = load_trace(kbs[path].db, arm["trace_id"])
        span = trace.span(ACTIVE) if trace else None
        claims = span.output.get("claims", []) if span else []
        if claims:
            out.append((min(c["lowest"] for c in claims), bool(arm["correct"])))
            if extra is not None and (more := statistics_of(trace)) is not None:
                for k, v in more.items():
                    extra.setdefault(k, []).append((v, bool(arm["correct"])))
    for kb in kbs.values():
        kb.close()
    return out


def table(rows: list[tuple[float, bool]]) -> list[dict]:
    right = sum(ok for _, ok in rows)
    wrong = len(rows) - right
    out = []
    for t in GRID:
        flagged = [(p, ok) for p, ok in rows if p < t]
        caught = sum(not ok for _, ok in flagged) / wrong if wrong else 0.0
        disturbed = sum(ok for _, ok in flagged) / right if right else 0.0
        out.append({"threshold": t, "searched_share": round(len(flagged) / len(rows), 3) if rows else 0.0,
                    "wrong_caught": round(caught, 3), "right_disturbed": round(disturbed, 3),
                    "youden_j": round(caught - disturbed, 3),
                    "accuracy_flagged": round(sum(ok for _, ok in flagged) / len(flagged), 3) if flagged else None})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--max-share", type=float, default=0.5)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    extra: dict[str, list] = {}
    per = {str(r): readings(r, extra) for r in a.runs}
    pooled = [x for rows in per.values() for x in rows]
    result = {"runs": {k: {"answered": len(v), "right": sum(ok for _, ok in v), "table": table(v)}
                       for k, v in per.items()},
              "pooled": {"answered": len(pooled), "right": sum(ok for _, ok in pooled), "table": table(pooled)}}
    result["auroc_wrong"] = {"lowest": auroc(pooled), **{k: auroc(v) for k, v in extra.items()},
                             **{f"lowest@{k}": auroc(v) for k, v in per.items()}}
    ok = [r for r in result["pooled"]["table"] if r["searched_share"] <= a.max_share]
    result["chosen"] = max(ok, key=lambda r: (r["youden_j"], -r["threshold"])) if ok else None
    for name, r in [*result["runs"].items(), ("pooled", result["pooled"])]:
        print(f"{name}: {r['answered']} answered, {r['right']} right")
        for t in r["table"]:
            print(f"  θ={t['threshold']:<5} searched {t['searched_share']:.2f}  wrong caught {t['wrong_caught']:.2f}  "
                  f"right disturbed {t['right_disturbed']:.2f}  J {t['youden_j']:+.2f}")
    print("AUROC (low score → wrong answer):", result["auroc_wrong"])
    print("chosen:", result["chosen"])
    if a.out:
        a.out.write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
