"""Users' own sets (JSON Lines): ``{"question", "answers": [...], "documents": [...]?, "expect_refusal": bool?,
"gold": [...]?, "page": str?, "split": str?, "id": ...?}``. ``answers`` are alternatives (any one counts); an item
with ``expect_refusal`` true may have none. ``gold``: verbatim snippets of the answering passage (its rank is
recorded per arm, eval/tasks/gold.py); ``page`` and ``split`` ("dev" / "heldout": ``eval --split``) are kept."""

from __future__ import annotations

from pathlib import Path

from ragclinic.eval.datasets.base import LOADERS, Collector, Loaded, QAItem, finish, need_str, read_records, str_list


@LOADERS.register("jsonl")
def load_jsonl(path: Path) -> Loaded:
    col, items = Collector(Path(path)), []
    for line, rec in read_records(Path(path), col):
        q = need_str(rec, "question", col, line)
        refuse = rec.get("expect_refusal", False)
        if not isinstance(refuse, bool):
            col.bad(line, "expect_refusal", "expected true or false")
            continue
        answers = str_list(rec.get("answers"), "answers", col, line)
        docs = str_list(rec.get("documents"), "documents", col, line)
        gold = str_list(rec.get("gold"), "gold", col, line)
        page, split = (rec.get(k) or "" for k in ("page", "split"))  # "" or absent: none
        if not isinstance(page, str) or not isinstance(split, str):
            col.bad(line, "page" if not isinstance(page, str) else "split", "expected a string")
            continue
        if q is None or answers is None or docs is None or gold is None:
            continue
        if not answers and not refuse:
            col.bad(line, "answers", "missing (give the accepted answers, or \"expect_refusal\": true)")
            continue
        items.append(QAItem(str(rec.get("id", line)), q, (answers,) if answers else (), docs, expect_refusal=refuse,
                            gold=gold, page=page, split=split))
    return finish("qa", items, col)
