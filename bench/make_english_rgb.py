"""An English evaluation set in RGB's format from HaluEval QA's test split (questions the verifier never saw in
training or threshold choice): ``positive`` = the question's two-paragraph HotpotQA context; ``negative`` =
same-topic passages without the answer (the context's other paragraph, the context with its answer sentence
removed, the most word-similar other context), so ``eval rag --noise neg`` asks the negative-only question.

    PYTHONPATH=training python bench/make_english_rgb.py --halueval ../shared/data/halueval/qa_one-turn_data.json \
        --out bench/out/halueval-test-rgb.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from ragclinic_training.pairs import halueval_pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--halueval", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    answers = {json.loads(x)["question"]: json.loads(x)["right_answer"]
               for x in a.halueval.read_text().splitlines() if x.strip()}
    groups: dict[str, dict] = defaultdict(lambda: {"positive": [], "negative": []})
    for p in halueval_pairs(a.halueval):
        if p.task == "relevance" and p.split == "test" and p.kind != "swapped":
            groups[p.group]["positive" if p.label else "negative"].append(p.passage)
    rows = [{"id": i, "query": q, "answer": [answers[q]], **g} for i, (q, g) in enumerate(sorted(groups.items()))
            if g["positive"] and g["negative"]]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"{len(rows)} items -> {a.out}")


if __name__ == "__main__":
    main()
