"""Answer-then-verify as a sufficiency test (issue 13's approach 3), probed on RGB zh_fact (evaluation data:
nothing is fitted; the prompt was written once, before the run).

For each (question, passage) pair — the first positive and the first negative passage of each item — the
language model is asked to copy the shortest exact phrase of the passage that answers the question, or NONE.
The pair is accepted when the reply is not NONE, the phrase really occurs in the passage, and the sentence
holding it does not contradict the question's constraints (ragclinic.verify.constraints). Reported: the share
of positive pairs accepted (and whose phrase holds the gold answer), of negative pairs rejected, and the
seconds per pair; beside it, the current gate judge's P(yes) ≥ its calibrated threshold on the same pairs.

    python bench/answer_then_verify_probe.py --rgb ../shared/data/rgb/zh_fact.json --items 30 --llm local
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import unicodedata
from pathlib import Path

from ragclinic.config import Settings
from ragclinic.eval.datasets import load
from ragclinic.text.answers import answer_correct
from ragclinic.models.factory import create_language_model
from ragclinic.models.judge import LogitJudge
from ragclinic.models.llm import Message
from ragclinic.verify.constraints import check_all

PROMPT = {
    "zh": ("从段落中原样复制能回答问题的最短短语。如果段落不能回答这个问题，只回答：NONE",
           "段落：{p}\n问题：{q}\n答案短语："),
}


def _norm(t: str) -> str:
    return "".join(unicodedata.normalize("NFKC", t).split()).lower()


def extract(lm, question: str, passage: str) -> str:
    system, user = PROMPT["zh"]
    done = lm.chat([Message("system", system), Message("user", user.format(p=passage, q=question))],
                   max_tokens=24, temperature=0.0)
    return done.text.strip().strip("“”\"'。.")


def verify(question: str, passage: str, span: str) -> tuple[bool, str]:
    if not span or "none" in span.lower():
        return False, "no phrase"
    if _norm(span) not in _norm(passage):
        return False, "phrase not in the passage"
    at = _norm(passage).find(_norm(span))
    window = _norm(passage)[max(0, at - 80): at + len(_norm(span)) + 80]  # the text around the phrase
    bad = [c for c in check_all(question, window) if c.verdict == "contradicted"]
    return (not bad), (bad[0].describe() if bad else "ok")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rgb", type=Path, required=True)
    ap.add_argument("--items", type=int, default=30)
    ap.add_argument("--llm", default="local")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    items = load(f"rgb:{a.rgb}").data[:a.items]
    lm = create_language_model(a.llm, Settings.load(None, llm=a.llm))
    judge = LogitJudge(lm)
    rows = []
    for it in items:
        for kind, passages in (("positive", it.documents), ("negative", it.negatives)):
            if not passages:
                continue
            p = passages[0]
            t0 = time.perf_counter()
            span = extract(lm, it.question, p)
            ok, why = verify(it.question, p, span)
            t1 = time.perf_counter()
            pj = judge.judge("relevance", p, it.question)
            t2 = time.perf_counter()
            rows.append({"id": it.id, "kind": kind, "span": span, "accepted": ok, "why": why,
                         "span_correct": answer_correct(span, it.answers), "judge_p": round(pj, 4),
                         "judge_accepts": pj >= judge.relevance_threshold, "s_extract": round(t1 - t0, 3),
                         "s_judge": round(t2 - t1, 3)})
            print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    pos = [r for r in rows if r["kind"] == "positive"]
    neg = [r for r in rows if r["kind"] == "negative"]
    share = lambda xs: round(sum(xs) / len(xs), 4) if xs else None  # noqa: E731
    summary = {"items": len(items), "positive_pairs": len(pos), "negative_pairs": len(neg),
               "answer_then_verify": {"positive_accepted": share([r["accepted"] for r in pos]),
                                      "positive_span_correct": share([r["accepted"] and r["span_correct"] for r in pos]),
                                      "negative_rejected": share([not r["accepted"] for r in neg]),
                                      "p50_seconds_per_pair": statistics.median(r["s_extract"] for r in rows)},
               "judge": {"positive_accepted": share([r["judge_accepts"] for r in pos]),
                         "negative_rejected": share([not r["judge_accepts"] for r in neg]),
                         "p50_seconds_per_pair": statistics.median(r["s_judge"] for r in rows)}}
    print(json.dumps(summary, ensure_ascii=False, indent=1))
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({"summary": summary, "rows": rows}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
