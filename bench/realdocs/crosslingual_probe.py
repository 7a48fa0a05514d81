"""Questions in another language than the documents (issue 35 item 3): Recall@k of the answering chunk for the
question alone, its translation by the local model (pipeline/retrieve/crosslingual.py's prompt) alone, and both
merged by turns in either order; the model time a translation costs.

    .venv/bin/python bench/realdocs/crosslingual_probe.py --kb bench/out/realdocs/kb3-pg15 \
        --questions bench/realdocs/pg15-questions-zh.jsonl --split dev
"""

from __future__ import annotations

import json
import statistics
import time

from common import answerable, parser
from ragclinic.config import Settings
from ragclinic.eval.tasks.gold import gold_rank
from ragclinic.pipeline.retrieve import create_retriever
from ragclinic.pipeline.retrieve.crosslingual import corpus_languages, target_language, translate
from ragclinic.pipeline.retrieve.layer import interleave
from ragclinic.wiring import language_model, open_kb


def main() -> None:
    ap = parser(__doc__)
    a = ap.parse_args()
    rows = answerable(a.questions, a.split)
    settings = Settings.load(a.kb, llm="local")
    kb = open_kb(settings)
    lm, flags = language_model(settings)
    assert lm is not None, flags
    shares = corpus_languages(kb.db)
    retriever = create_retriever(kb, "hybrid")
    ranks: dict[str, list] = {"question": [], "translation": [], "question+translation": [],
                              "translation+question": []}
    seconds, out_rows = [], []
    for r in rows:
        target = target_language(r["question"], shares)
        t0 = time.perf_counter()
        t = translate(lm, r["question"], target) if target else ""
        seconds.append(time.perf_counter() - t0)
        q_hits = retriever.retrieve(r["question"], 20)
        t_hits = retriever.retrieve(t, 20) if t else []
        runs = {"question": q_hits, "translation": t_hits or q_hits,
                "question+translation": interleave([q_hits, t_hits]) if t else q_hits,
                "translation+question": interleave([t_hits, q_hits]) if t else q_hits}
        for name, hits in runs.items():
            ranks[name].append(gold_rank([h.chunk.text for h in hits], r["gold"]))
        out_rows.append({"id": r["id"], "translation": t, **{k: v[-1] for k, v in ranks.items()}})
        print(json.dumps(out_rows[-1], ensure_ascii=False), flush=True)
    n = len(rows)
    summary = {name: {f"recall@{k}": round(sum(1 for x in rs if x and x <= k) / n, 3) for k in (1, 5, 10)}
               for name, rs in ranks.items()}
    print(json.dumps({"kb": str(a.kb), "questions": n, "corpus_languages": shares, **summary,
                      "translate_s_p50": round(statistics.median(seconds), 1)}, ensure_ascii=False))
    kb.close()


if __name__ == "__main__":
    main()
