"""What the dense index should embed for a manual's chunks (issue 35 item 3), no language model: the same chunks
of one knowledge base re-embedded several ways, Recall@k of the answering chunk on a question file's split.

    .venv/bin/python bench/realdocs/dense_probe.py --kb bench/out/realdocs/kb3-debref-zh \
        --questions bench/realdocs/debref-zh-questions.jsonl --split dev

Variants: ``markup`` (the chunk as stored, with its contextual header: what index_plain=false embeds),
``plain`` (without Markdown markup: index_plain=true), ``pipes`` (plain but the table pipes kept), ``windows``
(the best of the chunk's 3-sentence windows, stride 2), and each fused with the lexical ranking (RRF, k=60).
"""

from __future__ import annotations

import json
import re

import numpy as np

from common import answerable, parser
from ragclinic.config import Settings
from ragclinic.eval.tasks.gold import holds_gold
from ragclinic.pipeline.retrieve import create_retriever
from ragclinic.text.headers import index_text, plain
from ragclinic.text.sentences import split_sentences
from ragclinic.wiring import embedder as make_embedder
from ragclinic.wiring import open_kb


def _pipes_kept(text: str) -> str:
    """plain() without taking out the table pipes (the "|---|" rules still go)."""
    rows = "\n".join(ln for ln in text.splitlines() if not _RULE.fullmatch(ln))
    return plain(rows.replace("|", "\u2502")).replace("\u2502", "|")


_RULE = re.compile(r"[ \t|:+-]*-{3,}[ \t|:+-]*")


def _windows(chunks) -> tuple[list[str], np.ndarray]:
    texts, owner = [], []
    for i, (_, text, section, title) in enumerate(chunks):
        p = plain(text)
        sents = [p[a:b].strip() for a, b in split_sentences(p) if p[a:b].strip()]
        head = index_text("", title, json.loads(section)).strip()
        for j in range(0, len(sents), 2):
            w = " ".join(sents[j:j + 3])
            texts.append(f"{head}\n{w}" if head else w)
            owner.append(i)
    return texts, np.array(owner)


def _rank(order, gold: set[int]) -> int | None:
    return next((k for k, i in enumerate(order, 1) if i in gold), None)


def _rrf(*orders, k: int = 60) -> list[int]:
    score: dict[int, float] = {}
    for order in orders:
        for r, i in enumerate(order[:100], 1):
            score[i] = score.get(i, 0.0) + 1 / (k + r)
    return sorted(score, key=lambda i: -score[i])


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--variants", default="markup,plain,pipes,windows")
    a = ap.parse_args()
    rows = answerable(a.questions, a.split)
    settings = Settings.load(a.kb)
    kb = open_kb(settings)
    chunks = list(kb.db.conn.execute("SELECT c.rowid, c.text, c.section, d.title FROM chunks c JOIN documents d "
                                     "ON d.doc_id = c.doc_id ORDER BY c.rowid"))
    index_of = {rid: i for i, (rid, *_) in enumerate(chunks)}
    emb = make_embedder(settings)
    queries = np.asarray(emb.embed_queries([r["question"] for r in rows]))
    gold = [{i for i, c in enumerate(chunks) if holds_gold(c[1], r["gold"])} for r in rows]
    lexical = create_retriever(kb, "lexical")
    lex = [[index_of[h.rowid] for h in lexical.retrieve(r["question"], 100)] for r in rows]
    texts = {
        "markup": lambda: [index_text(t, ti, json.loads(se)) for _, t, se, ti in chunks],
        "plain": lambda: [index_text(t, ti, json.loads(se), keep_markup=False) for _, t, se, ti in chunks],
        "pipes": lambda: [index_text(_pipes_kept(t), ti, json.loads(se)) for _, t, se, ti in chunks],
    }
    out = {"kb": str(a.kb), "split": a.split, "questions": len(rows), "chunks": len(chunks)}
    for name in a.variants.split(","):
        if name == "windows":
            wt, owner = _windows(chunks)
            sims = queries @ np.asarray(emb.embed_passages(wt)).T
            best = np.full((len(rows), len(chunks)), -1.0)
            for q in range(len(rows)):
                np.maximum.at(best[q], owner, sims[q])
            sims, out["windows_embedded"] = best, len(wt)
        else:
            sims = queries @ np.asarray(emb.embed_passages(texts[name]())).T
        for fused in (False, True):
            orders = [list(np.argsort(-sims[q])) for q in range(len(rows))]
            if fused:
                orders = [_rrf(lex[q], orders[q]) for q in range(len(rows))]
            ranks = [_rank(o, g) for o, g in zip(orders, gold)]
            key = f"{name}+lexical" if fused else name
            out[key] = {f"recall@{k}": round(sum(1 for x in ranks if x and x <= k) / len(rows), 3) for k in (1, 5, 10)}
            out[key]["ranks"] = ranks
        print(json.dumps({name: out[name], f"{name}+lexical": out[f"{name}+lexical"]}, ensure_ascii=False), flush=True)
    kb.close()
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
