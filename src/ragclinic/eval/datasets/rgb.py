"""RGB (JSON Lines): ``query``, ``answer`` (string, list of required parts, or list of lists of
alternatives), ``positive``, ``negative``, optional ``positive_wrong`` and ``fakeanswer``.

Extensions of the constraint-swap sets (bench/make_constraint_swap.py): ``swap`` (what was changed, e.g.
"year: 2021 → 2019") marks a question its passages do not answer — a refusal is expected, ``answer`` may be
left out, and ``fakeanswer`` is the value the passages give for the original question; ``split`` ("dev" or
"heldout") is the half of the set the item belongs to."""

from __future__ import annotations

from pathlib import Path

from ragclinic.eval.datasets.base import (LOADERS, Collector, Loaded, QAItem, answer_parts, finish, need_str,
                                          read_records, str_list)


@LOADERS.register("rgb")
def load_rgb(path: Path) -> Loaded:
    col, items = Collector(Path(path)), []
    for line, rec in read_records(Path(path), col):
        q = need_str(rec, "query", col, line)
        swap, split = (need_str(rec, k, col, line, optional=True) for k in ("swap", "split"))
        if (swap is None and "swap" in rec) or (split is None and "split" in rec):
            continue  # reported: not a non-empty string
        answers = (answer_parts(rec.get("answer"), col, line) if "answer" in rec else () if swap else
                   col.bad(line, "answer", "missing"))
        pos, neg = str_list(rec.get("positive"), "positive", col, line), str_list(rec.get("negative"), "negative", col, line)
        wrong = str_list(rec.get("positive_wrong"), "positive_wrong", col, line)
        fake = rec.get("fakeanswer")
        fakes = str_list(fake if not isinstance(fake, (int, float)) else str(fake), "fakeanswer", col, line)
        if None in (q, answers, pos, neg, wrong, fakes):
            continue
        items.append(QAItem(str(rec.get("id", line)), q, answers, pos, neg, wrong, fakes, bool(swap), swap or "",
                            split or ""))
    return finish("qa", items, col)
