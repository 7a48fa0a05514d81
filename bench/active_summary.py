"""Active retrieval beside the plain pipeline and the after-the-fact doctor, from `eval rag --arms plain,active,doctor`
runs (issue 37 part 2): per run, each arm's accuracy, hallucination rate, p50 time and time to the first byte, and
what active retrieval did — answers it searched again for, second answers kept, answers it changed, and of those how
many went wrong → right and right → wrong (the regressions among its accepted repairs) — read from each answer's
`active_retrieval` span.

    .venv/bin/python bench/active_summary.py bench/out/active/side-en bench/out/active/side-rgbzh ... --out F.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ragclinic.config import Settings
from ragclinic.store.kb import KnowledgeBase
from ragclinic.trace.model import ACTIVE
from ragclinic.trace.store import load_trace

KEYS = ("accuracy", "refusal_accuracy", "over_refusal", "hallucination_rate", "citation_precision", "p50_ms",
        "p50_ttft_ms", "lm_calls_per_item")


def _right(row: dict, arm: dict) -> bool:
    """An arm's answer is right: the expected answer for an answerable item, a refusal for an unanswerable one."""
    return bool(arm["refused"]) if row["expect_refusal"] else bool(arm["correct"])


def summary(run: Path) -> dict:
    res = json.loads((run / "results.json").read_text(encoding="utf-8"))
    rows = [json.loads(x) for x in (run / "items.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    out = {"n": len(rows), "arms": {a: {k: m.get(k) for k in KEYS} for a, m in res["metrics"].items()}}
    searched = kept = changed = fixed = broke = 0
    kbs: dict[str, KnowledgeBase] = {}
    for r in rows:
        act, base = r.get("active"), r.get("baseline")
        if not act or not base:
            continue
        path = act.get("kb") or r["kb"]
        if path not in kbs:
            kbs[path] = KnowledgeBase.open(Settings.load(Path(path)))
        span = load_trace(kbs[path].db, act["trace_id"]).span(ACTIVE)
        if span is None or not span.output.get("triggered"):
            continue
        searched += 1
        if span.output.get("kept") == "second":
            kept += 1
            if act["answer"] != base["answer"]:
                changed += 1
                fixed += _right(r, act) and not _right(r, base)
                broke += _right(r, base) and not _right(r, act)
    for kb in kbs.values():
        kb.close()
    answered = sum(1 for r in rows if r.get("active"))
    out["active"] = {"answers": answered, "searched_again": searched, "second_kept": kept,
                     "changed": changed, "wrong_to_right": fixed, "right_to_wrong": broke,
                     "regressions_among_kept": round(broke / kept, 3) if kept else None}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    result = {str(r): summary(r) for r in a.runs}
    for name, s in result.items():
        print(f"{name} ({s['n']} items)")
        for arm, m in s["arms"].items():
            print(f"  {arm:9} " + "  ".join(f"{k}={m[k]}" for k in KEYS if m.get(k) is not None))
        print("  active:", s["active"])
    if a.out:
        a.out.write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
