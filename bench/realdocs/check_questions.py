"""Check a real-document question file (issue 35) against its pages, and dump the pages' parsed text.

    .venv/bin/python bench/realdocs/check_questions.py --set pg15 --dump            # page texts → bench/out/realdocs/pg15-text/
    .venv/bin/python bench/realdocs/check_questions.py --set pg15 --questions bench/realdocs/pg15-questions.jsonl

Question file (JSON Lines), one question a line:
  {"id": "pg-001", "question": "...", "answers": ["alternative", ...], "gold": ["verbatim snippet of the answering
   passage, as in the parsed text"], "page": "file.html", "split": "dev" | "heldout", "expect_refusal": false}
An unanswerable question has "expect_refusal": true, no answers, no gold (a same-topic question the pages do not
answer). Checked: fields, ids unique, each gold snippet found verbatim (whitespace-insensitive) in its page's parsed
text, and the paraphrase: the share of the question's content words (English) or character bigrams (Chinese) that
also occur in the gold sentence — a question copied from its sentence scores near 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

from ragclinic.config import Settings
from ragclinic.eval.tasks.gold import holds_gold
from ragclinic.ingest.parse import parse_source
from ragclinic.types import Parsed, SourceFile

OUT = Path(__file__).resolve().parents[1] / "out" / "realdocs"
STOP = set("""a an the of to in on for and or is are was were be been by with as at from that this these those it its
what which who whom how when where why do does did can could should would will i you we they my your our their me
there here not no yes if then than so such into about over under between any all some more most other use used using
have has had get gets one two""".split())


def page_text(path: Path) -> str:
    data = path.read_bytes()
    source = SourceFile(path, data, hashlib.sha256(data).hexdigest(), 0.0, len(data))
    return "\n\n".join(i.document.text for i in parse_source(source, Settings()) if isinstance(i, Parsed))


def units(s: str) -> set[str]:
    s = s.lower()
    zh = re.findall(r"[\u4e00-\u9fff]", s)
    if len(zh) >= 4:
        joined = "".join(re.findall(r"[\u4e00-\u9fff]+", s))
        return {joined[i:i + 2] for i in range(len(joined) - 1)}
    return {w for w in re.findall(r"[a-z0-9_]+", s) if w not in STOP and len(w) > 1}


def sentence_around(text: str, snippet: str) -> str:
    soft = lambda x: re.sub(r"\s+", " ", re.sub(r"[`*_|\\]+", "", x)).strip().lower()  # noqa: E731
    t, s = soft(text), soft(snippet)
    i = max(t.find(s), 0)
    start = max(t.rfind(". ", 0, i), t.rfind("。", 0, i), t.rfind("\n", 0, i)) + 1
    ends = [j for j in (t.find(". ", i + len(s)), t.find("。", i + len(s))) if j >= 0]
    return t[start:(min(ends) + 1 if ends else len(t))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", required=True)
    ap.add_argument("--questions", type=Path)
    ap.add_argument("--dump", action="store_true")
    a = ap.parse_args()
    pages = OUT / a.set
    texts: dict[str, str] = {}
    if a.dump:
        dump = OUT / f"{a.set}-text"
        dump.mkdir(exist_ok=True)
        for p in sorted(pages.iterdir()):
            texts[p.name] = page_text(p)
            (dump / (p.name + ".txt")).write_text(texts[p.name], encoding="utf-8")
        print(f"{len(texts)} page texts in {dump}")
    if not a.questions:
        return
    bad, seen, overlaps, rows = [], set(), [], [json.loads(x) for x in a.questions.read_text().splitlines() if x.strip()]
    for r in rows:
        rid = r.get("id")
        if rid in seen or not rid:
            bad.append(f"{rid}: missing or repeated id")
        seen.add(rid)
        if r.get("split") not in ("dev", "heldout"):
            bad.append(f"{rid}: split must be dev or heldout")
        if r.get("expect_refusal"):
            if r.get("answers") or r.get("gold"):
                bad.append(f"{rid}: an unanswerable question has no answers or gold")
            continue
        if not r.get("answers") or not r.get("gold") or not r.get("page"):
            bad.append(f"{rid}: answers, gold and page are needed")
            continue
        if r["page"] not in texts:
            texts[r["page"]] = page_text(pages / r["page"]) if (pages / r["page"]).exists() else ""
        text = texts[r["page"]]
        for g in r["gold"]:
            if not holds_gold(text, [g]):
                bad.append(f"{rid}: gold snippet not in {r['page']}: {g[:80]!r}")
                break
        else:
            sent = sentence_around(text, r["gold"][0])
            q = units(r["question"])
            overlaps.append((len(q & units(sent)) / max(len(q), 1), rid))
    answerable = sum(not r.get("expect_refusal") for r in rows)
    low = sum(o <= 0.5 for o, _ in overlaps)
    print(json.dumps({"questions": len(rows), "answerable": answerable, "unanswerable": len(rows) - answerable,
                      "dev": sum(r.get("split") == "dev" for r in rows),
                      "overlap_median": sorted(o for o, _ in overlaps)[len(overlaps) // 2] if overlaps else None,
                      "share_overlap_at_most_0.5": round(low / max(len(overlaps), 1), 2),
                      "most_overlapping": [f"{rid} {o:.2f}" for o, rid in sorted(overlaps, reverse=True)[:5]],
                      "problems": bad}, ensure_ascii=False, indent=1))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
