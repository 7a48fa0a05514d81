"""Users' own sets (JSON Lines): ``{"question", "answers": [...], "documents": [...]?, "expect_refusal": bool?}``.
``answers`` are alternatives (any one counts); an item with ``expect_refusal`` true may have none."""

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
        if q is None or answers is None or docs is None:
            continue
        if not answers and not refuse:
            col.bad(line, "answers", "missing (give the accepted answers, or \"expect_refusal\": true)")
            continue
        items.append(QAItem(str(rec.get("id", line)), q, (answers,) if answers else (), docs, expect_refusal=refuse))
    return finish("qa", items, col)
