"""Answer-form violations (ragclinic.eval.answer_form) over saved `ragclinic ask --json` outputs: answers that talk
about passages / documents / 段 / "according to the documents", hold a dangling or malformed citation, a file or
chunk id, or a note glued into the text (issue 33's `answer_form_violations`, as `eval rag` reports it).

Input: files (or standard input with ``-``) holding `ask --json` objects — one per file, JSON lines, or objects
one after another. An object may carry a ``question`` field (the question's own words are then its subject, not a
source). The rows of `eval rag --out DIR` (items.jsonl) are read too: each arm's answer counts (naive, baseline,
doctor), without its citation list.

    for q in "Who was Google's CEO in 2021?" "谁是2021年谷歌的首席执行官？"; do
        ragclinic ask "$q" --kb KB --json | jq -c --arg q "$q" '. + {question: $q}'
    done > bench/out/ask.jsonl
    python bench/answer_form.py bench/out/ask.jsonl            # a summary and every violating answer
    python bench/answer_form.py bench/out/ask.jsonl --json     # one JSON object: count, of, rate, examples
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from ragclinic.eval.answer_form import form_violations

ARMS = ("naive", "baseline", "doctor")


def records(text: str, source: str):
    """Every JSON object in ``text``: one, JSON lines, or several one after another (pretty-printed or not)."""
    dec, at = json.JSONDecoder(), 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return
        try:
            obj, at = dec.raw_decode(text, at)
        except json.JSONDecodeError as e:
            raise SystemExit(f"{source}: not JSON at character {at} ({e.msg}): give `ragclinic ask --json` outputs")
        if isinstance(obj, dict):
            yield obj


def answers(obj: dict, source: str):
    """(label, answer object, question) for an `ask --json` object, or for each arm of an eval row."""
    if "answer" in obj and isinstance(obj["answer"], str):
        yield source, obj, str(obj.get("question", ""))
        return
    for arm in ARMS:
        if isinstance(obj.get(arm), dict) and "answer" in obj[arm]:
            a = obj[arm]
            yield f"{source} {obj.get('key', '')} {arm}", {"answer": a["answer"], "refused": a.get("refused")}, \
                str(obj.get("question", ""))


def check(paths: list[str]) -> dict:
    rows = []
    for p in paths:
        text = sys.stdin.read() if p == "-" else Path(p).read_text(encoding="utf-8")
        for obj in records(text, p):
            for label, ans, question in answers(obj, p):
                rows.append({"source": label, "answer": ans["answer"], "violations": form_violations(ans, question)})
    bad = [r for r in rows if r["violations"]]
    kinds = Counter(k for r in bad for k in dict.fromkeys(v.split(":")[0] for v in r["violations"]))  # answers per kind
    return {"count": len(bad), "of": len(rows), "rate": round(len(bad) / len(rows), 4) if rows else None,
            "by_kind": dict(kinds.most_common()), "examples": bad}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", help="files of `ragclinic ask --json` outputs, or - for standard input")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the text summary")
    a = ap.parse_args()
    res = check(a.paths)
    if a.json:
        print(json.dumps(res, ensure_ascii=False, indent=2))
        return
    print(f"answer_form_violations: {res['count']} / {res['of']}" +
          (f" ({res['rate']:.3f})" if res["rate"] is not None else "") +
          "".join(f"\n  {k}: {n}" for k, n in res["by_kind"].items()))
    for r in res["examples"]:
        print(f"- {r['source']}: {r['answer'][:160]!r}\n    " + "; ".join(r["violations"]))


if __name__ == "__main__":
    main()
