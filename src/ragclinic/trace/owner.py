"""Whose a trace is (issue 32): a trace belongs to the tenant whose tags its request enforced (a server key's
tenant) — and a tenant may read it only while everything in it comes from documents carrying those tags.

A re-run may put chunks into a state (a treatment, the debugger's gold passage). ``outside`` names the documents
of a state that the enforced tags would not have let the search return; ``Pipeline.rerun`` refuses such a re-run
for a tenant, and makes it the admin's (a new debug round, no enforced tags) for a key without a tenant.
``trace_outside`` checks a whole recorded trace — every document or chunk it names anywhere — so that a trace made
before this rule (or by any path that slipped it) is not shown to a tenant either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ragclinic.errors import OutsideScope
from ragclinic.types import AskState
from ragclinic.store.db import Database
from ragclinic.trace.model import Trace

__all__ = ["OutsideScope", "enforced_of", "outside", "trace_outside"]  # OutsideScope lives in errors.py


def enforced_of(trace: Trace) -> dict[str, str]:
    """The tags the trace's request enforced (a tenant's key's), {} for a key without a tenant."""
    return {k: v for k, v in (trace.request or {}).get("enforced", ())}


def outside(db: Database, state: AskState, enforced: Mapping[str, str]) -> list[str]:
    """The documents of ``state``'s hits and passages that lack one of the ``enforced`` tags (sorted doc ids)."""
    if not enforced:
        return []
    known = {p.doc.doc_id: dict(p.doc.tags) for p in state.passages}
    ids = {h.chunk.doc_id for h in state.hits} | {p.chunk.doc_id for p in state.passages}
    return _foreign(db, ids, known, enforced)


def trace_outside(db: Database, trace: Trace, enforced: Mapping[str, str] | None = None) -> list[str]:
    """The documents a trace names anywhere (states, change spans, citations, the graph's and the causal ranking's
    records) that lack one of ``enforced`` (default: the trace's own enforced tags); a document no longer in the
    knowledge base counts as outside unless a passage of the trace recorded its tags (a chunk id alone that is gone
    names no document)."""
    enforced = enforced_of(trace) if enforced is None else enforced
    if not enforced:
        return []
    doc_ids, chunk_ids, known = set(), set(), {}
    _walk(trace.to_dict(), doc_ids, chunk_ids, known)
    if chunk_ids:
        doc_ids |= set(_docs_of_chunks(db, chunk_ids).values())
    return _foreign(db, doc_ids, known, enforced)


def _walk(node: Any, doc_ids: set[str], chunk_ids: set[str], known: dict[str, dict]) -> None:
    if isinstance(node, dict):
        if isinstance(node.get("doc_id"), str):
            doc_ids.add(node["doc_id"])
            if isinstance(node.get("tags"), dict):  # a passage's document, with the tags it had
                known[node["doc_id"]] = node["tags"]
        if isinstance(node.get("chunk_id"), str):
            chunk_ids.add(node["chunk_id"])
        if isinstance(node.get("added"), (list, tuple)):  # the graph expansion's record: chunk ids
            chunk_ids.update(c for c in node["added"] if isinstance(c, str))
        if isinstance(node.get("added_by_chain"), (list, tuple)):  # the causal ranking's: chunk ids, and its scores
            chunk_ids.update(c for c in node["added_by_chain"] if isinstance(c, str))  # are keyed by chunk id
            if isinstance(node.get("scores"), dict):
                chunk_ids.update(c for c in node["scores"] if isinstance(c, str))
        for v in node.values():
            _walk(v, doc_ids, chunk_ids, known)
    elif isinstance(node, (list, tuple)):  # Trace.to_dict keeps the spans' tuple
        for v in node:
            _walk(v, doc_ids, chunk_ids, known)


def _docs_of_chunks(db: Database, chunk_ids: Iterable[str]) -> dict[str, str]:
    ids, out = list(chunk_ids), {}
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        out.update(db.conn.execute(f"SELECT chunk_id, doc_id FROM chunks WHERE chunk_id IN "
                                   f"({','.join('?' * len(part))})", part).fetchall())
    return out


def _foreign(db: Database, doc_ids: Iterable[str], known: Mapping[str, Mapping[str, str]],
             enforced: Mapping[str, str]) -> list[str]:
    ids = sorted(set(doc_ids))
    tags = {**{d: dict(t) for d, t in known.items()}, **{d: dict(i.tags) for d, i in db.doc_infos(ids).items()}}
    return [d for d in ids if d not in tags or any(tags[d].get(k) != v for k, v in enforced.items())]
