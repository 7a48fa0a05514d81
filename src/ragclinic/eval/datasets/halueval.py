"""HaluEval QA (JSON Lines): ``knowledge``, ``question``, ``right_answer``, ``hallucinated_answer``; each
record gives two detection items (the right answer, and the hallucinated one)."""

from __future__ import annotations

from pathlib import Path

from ragclinic.eval.datasets.base import LOADERS, Collector, DetectionItem, Loaded, finish, need_str, read_records


@LOADERS.register("halueval")
def load_halueval(path: Path) -> Loaded:
    col, items = Collector(Path(path)), []
    for line, rec in read_records(Path(path), col):
        vals = [need_str(rec, k, col, line) for k in ("knowledge", "question", "right_answer", "hallucinated_answer")]
        if None in vals:
            continue
        kn, q, right, wrong = vals
        items += [DetectionItem(f"{line}:right", kn, q, right, False), DetectionItem(f"{line}:hallucinated", kn, q, wrong, True)]
    return finish("detection", items, col)
