"""Does a hypothetical answer passage (HyDE, Gao et al. 2022) find the answering passage of a paraphrased question?
Issue 35 item 3, measured before building it: the local model writes a short manual-style passage for each
question (no retrieval), then the hybrid retriever searches with the question, with the passage, both interleaved,
and both joined into one query. Recall of the gold passage at 5 and 10 for each; model seconds per question.

    .venv/bin/python bench/realdocs/hyde_probe.py --kb bench/out/realdocs/kb-debref-zh \
        --questions bench/realdocs/debref-zh-questions.jsonl --split dev --out bench/out/realdocs/hyde-zh-dev.jsonl
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path

from common import answerable, parser
from ragclinic.config import Settings
from ragclinic.eval.tasks.gold import gold_rank
from ragclinic.models.llm import Message
from ragclinic.pipeline.retrieve import create_retriever
from ragclinic.pipeline.retrieve.layer import interleave
from ragclinic.wiring import language_model, open_kb

PROMPT = {
    "en": ("You write passages of technical manuals.",
           "Write two or three sentences, as the relevant manual would state it, that answer this user's question. "
           "Use the manual's own technical terms (command, option, setting, file names). No preamble.\n\nQuestion: {q}"),
    "zh": ("你撰写技术手册的段落。",
           "请用两三句话写出相关手册中回答这个用户问题的原文段落，使用手册里的专业术语（命令、选项、配置项、文件名）。不要开场白。\n\n问题：{q}"),
}


def rank(hits, gold) -> int | None:
    return gold_rank([h.chunk.text for h in hits], gold)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--max-tokens", type=int, default=96)
    a = ap.parse_args()
    rows = answerable(a.questions, a.split)
    settings = Settings.load(a.kb, llm="local")
    kb = open_kb(settings)
    lm, flags = language_model(settings)
    assert lm is not None, flags
    retriever = create_retriever(kb, "hybrid")
    done = {json.loads(x)["id"]: json.loads(x) for x in a.out.read_text().splitlines()} if a.out.exists() else {}
    with a.out.open("a", encoding="utf-8") as log:
        for r in rows:
            if r["id"] in done:
                continue
            lang = "zh" if re.search(r"[\u4e00-\u9fff]", r["question"]) else "en"
            system, user = PROMPT[lang]
            t0 = time.perf_counter()
            passage = lm.chat([Message("system", system), Message("user", user.format(q=r["question"]))],
                              max_tokens=a.max_tokens).text.strip()
            secs = time.perf_counter() - t0
            q_hits, p_hits = retriever.retrieve(r["question"], 20), retriever.retrieve(passage, 20)
            row = {"id": r["id"], "question": r["question"], "passage": passage, "model_s": round(secs, 2),
                   "question_only": rank(q_hits, r["gold"]), "passage_only": rank(p_hits, r["gold"]),
                   "interleaved": rank(interleave([q_hits, p_hits]), r["gold"]),
                   "joined": rank(retriever.retrieve(r["question"] + "\n" + passage, 20), r["gold"])}
            done[r["id"]] = row
            log.write(json.dumps(row, ensure_ascii=False) + "\n")
            log.flush()
    kb.close()
    res = list(done.values())
    summary = {"questions": len(res), "model_s_p50": statistics.median(x["model_s"] for x in res)}
    for arm in ("question_only", "passage_only", "interleaved", "joined"):
        summary[arm] = {f"recall@{k}": round(sum(1 for x in res if x[arm] and x[arm] <= k) / len(res), 3)
                        for k in (1, 5, 10)}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
