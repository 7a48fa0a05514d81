"""Recall of the answering passage on the real-document question sets (issue 35 item 3), no language model:
for each answerable question, the rank of the first chunk that holds a gold snippet, per retriever.

    .venv/bin/python bench/realdocs/retrieval_recall.py --kb bench/out/realdocs/kb-pg15 \
        --questions bench/realdocs/pg15-questions.jsonl --split dev

Prints Recall@1/5/10/20 and MRR@10 per retriever, and the questions the hybrid top 5 misses (dev only: the
heldout split is measured once, at the end, with --split heldout).
"""

from __future__ import annotations

import json
import statistics

from common import answerable, parser
from ragclinic.config import Settings
from ragclinic.eval.tasks.gold import gold_rank
from ragclinic.pipeline.retrieve import create_retriever
from ragclinic.wiring import open_kb


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--retrievers", default="lexical,dense,hybrid")
    a = ap.parse_args()
    rows = answerable(a.questions, a.split)
    kb = open_kb(Settings.load(a.kb))
    out, misses = {"questions": len(rows), "split": a.split}, []
    for name in a.retrievers.split(","):
        retriever = create_retriever(kb, name)
        ranks = [gold_rank([h.chunk.text for h in retriever.retrieve(r["question"], 20)], r["gold"]) for r in rows]
        out[name] = {f"recall@{k}": round(sum(1 for x in ranks if x and x <= k) / len(rows), 3) for k in (1, 5, 10, 20)}
        out[name]["mrr@10"] = round(statistics.fmean(1 / x if x and x <= 10 else 0 for x in ranks), 3)
        if name == "hybrid":
            misses = [f"{r['id']} rank={x}: {r['question']}" for r, x in zip(rows, ranks) if not x or x > 5]
    kb.close()
    print(json.dumps({**out, "hybrid_misses_at_5": misses}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
