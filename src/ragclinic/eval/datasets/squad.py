"""SQuAD-style reading comprehension (CMRC2018): ``{"data": [{"paragraphs": [{"context", "qas": [{"id",
"question", "answers": [{"text"}]}]}]}]}``. Each question's document is its paragraph."""

from __future__ import annotations

import json
from pathlib import Path

from ragclinic.eval.datasets.base import LOADERS, Collector, DatasetError, Loaded, QAItem, finish


@LOADERS.register("squad")
def load_squad(path: Path) -> Loaded:
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such file (give the path of the SQuAD-style JSON file)")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}: not JSON ({e})") from None
    col, items, n = Collector(path), [], 0
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise DatasetError(f"{path}: expected an object with a 'data' list (SQuAD layout)")
    for article in doc["data"]:
        for para in (article.get("paragraphs") or []) if isinstance(article, dict) else []:
            ctx = para.get("context") if isinstance(para, dict) else None
            for qa in (para.get("qas") or []) if isinstance(para, dict) else []:
                n += 1
                q = qa.get("question") if isinstance(qa, dict) else None
                answers = [a.get("text") for a in (qa.get("answers") or []) if isinstance(a, dict)] if isinstance(qa, dict) else []
                answers = [a for a in answers if isinstance(a, str) and a.strip()]
                if not isinstance(ctx, str) or not ctx.strip():
                    col.bad(n, "context", "missing or empty")
                elif not isinstance(q, str) or not q.strip():
                    col.bad(n, "question", "missing or empty")
                elif not answers:
                    col.bad(n, "answers", "no answer text")
                else:
                    items.append(QAItem(str(qa.get("id", n)), q, (tuple(dict.fromkeys(answers)),), (ctx,)))
    return finish("qa", items, col)
