"""One table row per arm of an `eval rag` run on a real-document set, re-scored with today's answer matching
(text/answers.py), so that runs made before a matching fix compare with runs made after it.

    .venv/bin/python bench/realdocs/summarise.py bench/out/realdocs/s3/eval-zh-heldout [more runs ...]

Per arm: accuracy on answerable questions, refusal on unanswerable ones, over-refusal, the gold passage in the
top 5 and in what the model read, answer-form violations, p50 seconds and prompt tokens; and the items whose score
the re-scoring changed.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from ragclinic.text.answers import answer_correct

ARMS = (("naive", "simple-RAG peer"), ("baseline", "ragclinic, plain"), ("doctor", "ragclinic, doctor"))


def _share(xs) -> str:
    xs = list(xs)
    return f"{sum(xs) / len(xs):.2f} ({sum(xs)}/{len(xs)})" if xs else "—"


def summarise(run: Path) -> dict:
    rows = [json.loads(x) for x in (run / "items.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    out: dict = {"run": str(run), "items": len(rows), "arms": {}, "rescored": []}
    for key, name in ARMS:
        have = [r for r in rows if r.get(key)]
        if not have:
            continue
        ans = [r for r in have if not r["expect_refusal"]]
        neg = [r for r in have if r["expect_refusal"]]
        correct = []
        for r in ans:
            now = not r[key]["refused"] and answer_correct(r[key]["answer"], [r["expected"][0]] if r["expected"]
                                                           and isinstance(r["expected"][0], list)
                                                           else [r["expected"]])
            if now != r[key]["correct"]:
                out["rescored"].append(f"{r['id']} {key}: {r[key]['correct']} -> {now}")
            correct.append(now)
        ms = [r[key]["ms"] / 1000 for r in have]
        tokens = [r[key]["prompt_tokens"] for r in have if r[key].get("prompt_tokens")]
        out["arms"][name] = {
            "accuracy": _share(correct),
            "refusal": _share(r[key]["refused"] for r in neg),
            "over_refusal": _share(r[key]["refused"] for r in ans),
            "gold_top5": _share(bool(r[key].get("gold_rank") and r[key]["gold_rank"] <= 5) for r in ans),
            "gold_read": _share(bool(r[key].get("gold_in_excerpt", r[key].get("gold_shown"))) for r in ans),
            "form_violations": sum(bool(r[key].get("form")) for r in have),
            "p50_s": round(statistics.median(ms), 1),
            "prompt_tokens_p50": int(statistics.median(tokens)) if tokens else None,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path, nargs="+")
    for run in ap.parse_args().runs:
        s = summarise(run)
        print(f"## {s['run']} ({s['items']} items)")
        print("| arm | accuracy | refusal | over-refusal | gold in top 5 | gold read | form violations | p50 s | "
              "prompt tokens p50 |\n|---|---|---|---|---|---|---|---|---|")
        for name, a in s["arms"].items():
            print(f"| {name} | {a['accuracy']} | {a['refusal']} | {a['over_refusal']} | {a['gold_top5']} | "
                  f"{a['gold_read']} | {a['form_violations']} | {a['p50_s']} | {a['prompt_tokens_p50']} |")
        if s["rescored"]:
            print("re-scored: " + "; ".join(s["rescored"]))
        print()


if __name__ == "__main__":
    main()
