"""RGB (JSON Lines): ``query``, ``answer`` (string, list of required parts, or list of lists of
alternatives), ``positive``, ``negative``, optional ``positive_wrong`` and ``fakeanswer``."""

from __future__ import annotations

from pathlib import Path

from ragclinic.eval.datasets.base import (LOADERS, Collector, Loaded, QAItem, answer_parts, finish, need_str,
                                          read_records, str_list)


@LOADERS.register("rgb")
def load_rgb(path: Path) -> Loaded:
    col, items = Collector(Path(path)), []
    for line, rec in read_records(Path(path), col):
        q = need_str(rec, "query", col, line)
        answers = answer_parts(rec.get("answer"), col, line) if "answer" in rec else col.bad(line, "answer", "missing")
        pos, neg = str_list(rec.get("positive"), "positive", col, line), str_list(rec.get("negative"), "negative", col, line)
        wrong = str_list(rec.get("positive_wrong"), "positive_wrong", col, line)
        fake = rec.get("fakeanswer")
        fakes = str_list(fake if not isinstance(fake, (int, float)) else str(fake), "fakeanswer", col, line)
        if None in (q, answers, pos, neg, wrong, fakes):
            continue
        items.append(QAItem(str(rec.get("id", line)), q, answers, pos, neg, wrong, fakes))
    return finish("qa", items, col)
