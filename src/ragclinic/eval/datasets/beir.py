"""BEIR layout: ``corpus.jsonl`` (_id, title, text), ``queries.jsonl`` (_id, text), ``qrels/test.tsv``
(query-id, corpus-id, score; a header line). PATH is the folder (or its qrels file)."""

from __future__ import annotations

from pathlib import Path

from ragclinic.eval.datasets.base import (LOADERS, Collector, DatasetError, Doc, Loaded, RetrievalSet, finish,
                                          read_records)


def _folder(path: Path) -> tuple[Path, Path]:
    if path.is_file() and path.suffix == ".tsv":
        return path.parent.parent, path
    split = path / "qrels" / "test.tsv"
    if not split.is_file():
        raise DatasetError(f"{path}: not a BEIR folder (expected corpus.jsonl, queries.jsonl and qrels/test.tsv)")
    return path, split


@LOADERS.register("beir")
def load_beir(path: Path) -> Loaded:
    root, qrels_path = _folder(Path(path))
    col = Collector(root)
    corpus, queries = [], {}
    for name, sink in (("corpus.jsonl", corpus), ("queries.jsonl", queries)):
        col.path = root / name
        for line, rec in read_records(root / name, col):
            rid, text = rec.get("_id"), rec.get("text")
            if rid is None or not isinstance(text, str):
                col.bad(line, "_id" if rid is None else "text", "missing or not a string")
                continue
            if name == "corpus.jsonl":
                sink.append(Doc(str(rid), text, str(rec.get("title") or "")))
            else:
                sink[str(rid)] = text
    col.path = qrels_path
    qrels: dict[str, dict[str, int]] = {}
    with open(qrels_path, encoding="utf-8") as f:
        for line, row in enumerate(f, start=1):
            parts = row.rstrip("\n").split("\t")
            if line == 1 and parts[:1] == ["query-id"]:
                continue
            if len(parts) < 3 or not parts[2].lstrip("-").isdigit():
                col.bad(line, "(row)", "expected query-id<TAB>corpus-id<TAB>integer score")
                continue
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    judged = {q: t for q, t in queries.items() if q in qrels}
    col.path = root
    return finish("retrieval", RetrievalSet(tuple(corpus), judged, {q: qrels[q] for q in judged}), col)
