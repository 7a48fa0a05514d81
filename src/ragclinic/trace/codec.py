"""Layer outputs ⇄ JSON for the trace: complete enough to restart the pipeline from any layer.

Chunks are stored whole (text and offsets), so a re-run works even after the document changed.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from ragclinic.types import Chunk, Conflict, DocInfo, Exclusion, GateDecision, Hit, Passage, SourceScore


def chunk_to_dict(c: Chunk) -> dict[str, Any]:
    d = {f.name: getattr(c, f.name) for f in fields(c)}  # not asdict: metadata is a read-only mapping
    d["section"] = list(c.section)
    d["metadata"] = dict(c.metadata)
    return d


def chunk_from_dict(d: dict[str, Any]) -> Chunk:
    return Chunk(**{**d, "section": tuple(d.get("section", ())), "metadata": d.get("metadata", {})})


def hit_to_dict(h: Hit) -> dict[str, Any]:
    return {"chunk": chunk_to_dict(h.chunk), "score": h.score, "rowid": h.rowid,
            "sources": [asdict(s) for s in h.sources]}


def hit_from_dict(d: dict[str, Any]) -> Hit:
    return Hit(chunk=chunk_from_dict(d["chunk"]), score=d["score"], rowid=d["rowid"],
               sources=tuple(SourceScore(**s) for s in d["sources"]))


def passage_to_dict(p: Passage) -> dict[str, Any]:
    return {"n": p.n, "hit": hit_to_dict(p.hit), "doc": doc_to_dict(p.doc),
            "support": p.support, "support_by": p.support_by, "marks": list(p.marks), "support_why": p.support_why}


def doc_to_dict(d: DocInfo) -> dict[str, Any]:
    return {"doc_id": d.doc_id, "path": d.path, "title": d.title, "tags": dict(d.tags)}


def passage_from_dict(d: dict[str, Any]) -> Passage:
    return Passage(n=d["n"], hit=hit_from_dict(d["hit"]), doc=DocInfo(**d["doc"]), support=d["support"],
                   support_by=d["support_by"], marks=tuple(d["marks"]), support_why=d.get("support_why", ""))


def conflict_from_dict(d: dict[str, Any]) -> Conflict:
    return Conflict(**{**d, "values_a": tuple(d["values_a"]), "values_b": tuple(d["values_b"])})


def exclusion_from_dict(d: dict[str, Any]) -> Exclusion:
    return Exclusion(**d)


def decision_from_dict(d: dict[str, Any]) -> GateDecision:
    return GateDecision(**d)
