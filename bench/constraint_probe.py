"""How well the question-constraint check and the answer-type check (ragclinic.verify.constraints) separates passages that answer a
question from same-topic passages that do not, on RGB zh_fact (evaluation data: nothing is fitted here).

For each item with at least one constraint: a passage "passes" when none of the question's constraints is
contradicted and none is missing. Reported: the share of items with a constraint, of positive passages that
pass (should be high: passing is necessary for an answer), and of negative passages that fail (what a
verifier could refuse on by this feature alone).

    python bench/constraint_probe.py --rgb ../shared/data/rgb/zh_fact.json
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from ragclinic.verify.constraints import answer_type, check_all, constraints, has_answer_of_type


def passes(question: str, passage: str) -> bool:
    return all(c.verdict == "found" for c in check_all(question, passage))


def type_ok(question: str, passage: str) -> bool:
    kind = answer_type(question)
    return kind is None or has_answer_of_type(kind, passage)


def both(question: str, passage: str) -> bool:
    return passes(question, passage) and type_ok(question, passage)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rgb", type=Path, required=True)
    a = ap.parse_args()
    items = [json.loads(line) for line in a.rgb.read_text(encoding="utf-8").splitlines() if line.strip()]
    kinds, n_with, pos, neg, neg_item = Counter(), 0, [], [], []
    for it in items:
        cs = constraints(it["query"])
        if not cs:
            continue
        n_with += 1
        kinds.update(c.kind for c in cs)
        pos += [passes(it["query"], p) for p in it["positive"]]
        fails = [not passes(it["query"], p) for p in it["negative"]]
        neg += fails
        neg_item.append(bool(fails) and all(fails[:5]))
    out = {"items": len(items), "items_with_constraints": n_with, "constraint_kinds": dict(kinds),
           "positive_passages_pass": round(sum(pos) / len(pos), 4) if pos else None,
           "negative_passages_fail": round(sum(neg) / len(neg), 4) if neg else None,
           "items_whose_first_5_negatives_all_fail": round(sum(neg_item) / len(neg_item), 4) if neg_item else None,
           "n_positive": len(pos), "n_negative": len(neg)}
    typed = [it for it in items if answer_type(it["query"])]
    out["items_with_a_checkable_answer_type"] = len(typed)
    out["answer_type_kinds"] = dict(Counter(answer_type(it["query"]) for it in typed))
    for name, fn in (("answer_type", type_ok), ("constraints_and_answer_type", both)):
        p_ok = [fn(it["query"], p) for it in items for p in it["positive"]]
        n_fail = [not fn(it["query"], p) for it in items for p in it["negative"]]
        out[f"{name}: positive passages pass (all items)"] = round(sum(p_ok) / len(p_ok), 4)
        out[f"{name}: negative passages fail (all items)"] = round(sum(n_fail) / len(n_fail), 4)
    print(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
