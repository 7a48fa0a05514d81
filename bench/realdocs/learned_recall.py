"""Recall of the answering passage before and after `kb learn` (issue 53 item 2), no language model: per retrieval
configuration, the rank of the first chunk holding a gold snippet for each answerable question of a split, and the
median time of one retrieval.

    .venv/bin/python bench/realdocs/learned_recall.py --kb bench/out/realdocs/kb-debref-zh-small \
        --questions bench/out/realdocs/debref-zh-small-questions.jsonl --split dev

Configurations: `base` (no learned ranker, no adapter: the KB as ingested), `adapter` (the query adapter only),
`learned` (the learned rankers fused with equal weights, the default), `learned+adapter` (the default when an
adapter was kept), and, with --weights, the learned rankers at other weights (chosen on dev only).
"""

from __future__ import annotations

import json
import statistics
import time

from common import answerable, parser
from ragclinic.config import Settings
from ragclinic.eval.tasks.gold import gold_rank
from ragclinic.pipeline.retrieve import create_retriever
from ragclinic.wiring import open_kb

CONFIGS = {"base": {"learned_retrieval": False, "query_adapter": False},
           "adapter": {"learned_retrieval": False, "query_adapter": True},
           "learned": {"learned_retrieval": True, "query_adapter": False},
           "learned+adapter": {"learned_retrieval": True, "query_adapter": True}}


def measure(kb_path, rows, overrides: dict) -> dict:
    kb = open_kb(Settings.load(kb_path, **overrides))
    retriever = create_retriever(kb, "hybrid")
    ranks, ms = [], []
    for r in rows:
        t0 = time.perf_counter()
        hits = retriever.retrieve(r["question"], 20)
        ms.append((time.perf_counter() - t0) * 1000)
        ranks.append(gold_rank([h.chunk.text for h in hits], r["gold"]))
    kb.close()
    out = {f"recall@{k}": round(sum(1 for x in ranks if x and x <= k) / len(rows), 3) for k in (1, 5, 10, 20)}
    out["mrr@10"] = round(statistics.fmean(1 / x if x and x <= 10 else 0 for x in ranks), 3)
    out["p50_ms"] = round(statistics.median(ms[1:] or ms), 1)  # the first builds the learned index
    return out


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--weights", default="", help="comma-separated weights tried for the two learned rankers")
    a = ap.parse_args()
    rows = answerable(a.questions, a.split)
    out = {"questions": len(rows), "split": a.split}
    for name, overrides in CONFIGS.items():
        out[name] = measure(a.kb, rows, overrides)
    for w in [float(x) for x in a.weights.split(",") if x]:
        weights = {"lexical": 1.0, "dense": 1.0, "questions": w, "question_terms": w}
        out[f"learned@{w:g}"] = measure(a.kb, rows, {**CONFIGS["learned+adapter"], "fusion_weights": weights})
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
