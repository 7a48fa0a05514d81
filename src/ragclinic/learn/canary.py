"""The knowledge base's own regression set, for free (issue 53 item 4): a fixed sample of the learned questions
that were kept, each with the chunk it was written for.

- ``kb health`` re-asks their retrieval after every ingest, ``kb learn`` or retrieval-settings change (no model:
  ~1 s for 30 questions) and alerts when the share whose chunk is in the top 5 drops by more than ``DROP`` from
  the last reading of another version or settings;
- ``diagnose --apply`` re-asks them as its side-effects set when the user gives no evaluation set (debugger/apply.py).

The sample is stable — one question per chunk, chosen by a hash of its text, spread over the documents — so two
readings compare the same questions; a changed chunk's question leaves it and another enters.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass

SIZE = 30
K = 5
DROP = 0.10  # an alert when recall@5 falls by more than this (absolute) from the last other reading
_RETRIEVAL_SETTINGS = ("retriever", "fusion", "fusion_weights", "fusion_depth", "rrf_k", "learned_retrieval",
                       "rerank", "top_k")


@dataclass(frozen=True)
class Canary:
    question: str
    chunk_id: str
    doc_id: str


def canary_set(conn, size: int = SIZE) -> list[Canary]:
    """Up to ``size`` kept questions of live chunks, one per chunk, by a hash of their text, documents taken in
    turn."""
    rows = conn.execute("SELECT i.text, c.chunk_id, c.doc_id FROM learned_items i JOIN chunks c ON "
                        "c.chunk_id = i.chunk_id WHERE i.kind = 'question' AND i.kept = 1").fetchall()
    first: dict[str, tuple] = {}
    for text, chunk_id, doc_id in sorted(rows, key=lambda r: _digest(r[0])):
        first.setdefault(chunk_id, (text, chunk_id, doc_id))
    by_doc: dict[str, list[tuple]] = {}
    for row in first.values():
        by_doc.setdefault(row[2], []).append(row)
    out: list[Canary] = []
    while len(out) < size and any(by_doc.values()):
        for doc in sorted(by_doc):
            if by_doc[doc] and len(out) < size:
                out.append(Canary(*by_doc[doc].pop(0)))
    return out


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def retrieval_reading(kb, retriever) -> dict | None:
    """recall@5 of the canary questions' own chunks now, against the last reading of another KB version, learned
    version or retrieval settings (meta ``canary_retrieval``); the reading is kept. None without learned questions."""
    items = canary_set(kb.db.conn)
    if not items:
        return None
    state = {"kb_version": kb.db.version, "learned_version": int(kb.db.meta("learned_version") or 0),
             "settings": _digest(json.dumps({k: getattr(kb.settings, k) for k in _RETRIEVAL_SETTINGS}, sort_keys=True,
                                            default=str))}
    saved = json.loads(kb.db.meta("canary_retrieval") or "{}")
    if saved.get("state") == state and saved.get("questions") == len(items):
        current = saved
    else:
        misses = [c.question for c in items if c.chunk_id not in {h.chunk.id for h in retriever.retrieve(c.question, K)}]
        current = {"state": state, "questions": len(items), "recall@5": round(1 - len(misses) / len(items), 3),
                   "misses": misses[:10], "time": time.time(), "previous": saved.get("previous")}
        if saved.get("state") and saved.get("state") != state:
            current["previous"] = {"state": saved["state"], "recall@5": saved["recall@5"], "time": saved.get("time")}
        with kb.db.transaction():
            kb.db.set_meta("canary_retrieval", json.dumps(current))
    prev = current.get("previous")
    drop = round(prev["recall@5"] - current["recall@5"], 3) if prev else None
    alert = (f"the canary questions' recall@5 fell from {prev['recall@5']:.2f} to {current['recall@5']:.2f} since "
             f"KB version {prev['state']['kb_version']} (an ingest, kb learn or a retrieval setting changed it); "
             f"`ragclinic diagnose` on one of the missed questions names the layer") if drop and drop > DROP else None
    return {"questions": current["questions"], "recall@5": current["recall@5"],
            "previous_recall@5": prev["recall@5"] if prev else None, "drop": drop, "alert": alert,
            "misses": current["misses"]}
