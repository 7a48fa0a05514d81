"""How well the question-constraint check (ragclinic.verify.constraints) separates passages that answer a
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

from ragclinic.verify.constraints import check_all, constraints


def passes(question: str, passage: str) -> bool:
    return all(c.verdict == "found" for c in check_all(question, passage))


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
    print(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
