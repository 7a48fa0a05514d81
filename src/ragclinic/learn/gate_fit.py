"""The gate calibrated on the user's own topics (issue 53 item 3): its evidence threshold fitted on cases built
from the learned questions, kept only where it beats the shipped threshold on a held-out half.

Each sampled question (one per chunk, by a hash of its text) gives two cases, scored as the gate scores them
(the best relevance P of the judge over five passages of the KB's own retrieval):
- **answerable**: the question's chunk and the next four hits;
- **unanswerable by construction**: the same retrieval with the chunk and its near-duplicates removed (its
  neighbours in the document, which share its overlapping sentences, and any chunk whose vector is within
  ``NEAR`` of it) — the context holds only same-topic passages, which is what the shipped verifier, trained on
  encyclopaedic text, has never seen.

The questions are split in halves by a hash of the chunk. On the fit half the threshold is the highest one that
keeps over-refusal (answerable cases below it) at ``MAX_OVER_REFUSAL``; on the other half it is kept only when it
refuses more unanswerable cases than the shipped threshold while over-refusing no more than ``SLACK`` above it.
A kept threshold is used by the pipeline when ``learned_gate`` is on and ``gate_threshold_judge`` is not set
(wiring.pipeline); what was measured is in the KB's meta (``gate_calibration``) and ``kb learn --json``.

A caveat the figures carry: a learned question may also be answered by another chunk than its own (a manual
repeats itself), so some "unanswerable" cases are answerable — the held-out refusal is a lower bound of the
gate's power there, and over-refusal on real questions is measured separately (bench/RESULTS.md).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from ragclinic.models.judge import relevance_threshold

SIZE = 120
MAX_OVER_REFUSAL = 0.05
SLACK = 0.02
NEAR = 0.95


@dataclass(frozen=True)
class GateFit:
    cases: int
    judge: str
    shipped: float
    threshold: float
    auroc: float | None
    test: dict
    kept: bool
    why: str

    def to_json(self) -> dict:
        return dict(self.__dict__)


def _h(text: str) -> int:
    return int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16)


def sample(conn, size: int = SIZE) -> list[tuple[str, str, int, str, int]]:
    """(question, chunk id, chunk rowid, doc id, ordinal): one kept question per chunk, by hash."""
    rows = conn.execute("SELECT i.text, c.chunk_id, c.rowid, c.doc_id, c.ordinal FROM learned_items i JOIN chunks c "
                        "ON c.chunk_id = i.chunk_id WHERE i.kind = 'question' AND i.kept = 1").fetchall()
    one: dict[str, tuple] = {}
    for r in sorted(rows, key=lambda r: _h(r[0])):
        one.setdefault(r[1], r)
    return sorted(one.values(), key=lambda r: _h(r[1]))[:size]


def cases(kb, judge, retriever, size: int = SIZE) -> list[tuple[int, float, float]]:
    """(half, answerable best P, unanswerable best P) per sampled question."""
    dim = kb.embedder.dim if kb.embedder is not None else 0
    memo: dict[tuple[str, str], float] = {}

    def p(chunk, question: str) -> float:
        key = (chunk.id, question)
        if key not in memo:
            memo[key] = float(judge.judge("relevance", chunk.text, question))
        return memo[key]

    out = []
    for question, chunk_id, rowid, doc_id, ordinal in sample(kb.db.conn, size):
        hits = retriever.retrieve(question, 12)
        own = kb.db.chunks_by_rowid([rowid]).get(rowid)
        if own is None:
            continue
        vecs = dict(zip(*kb.db.embeddings(dim, [rowid] + [h.rowid for h in hits]))) if dim else {}
        ov = vecs.get(rowid)

        def near(h) -> bool:
            if h.chunk.id == chunk_id or (h.chunk.doc_id == doc_id and abs(h.chunk.ordinal - ordinal) <= 1):
                return True
            hv = vecs.get(h.rowid)
            return ov is not None and hv is not None and float(np.dot(ov, hv)) >= NEAR

        others = [h.chunk for h in hits if not near(h)]
        answerable = max(p(c, question) for c in [own] + others[:4])
        unanswerable = max((p(c, question) for c in others[:5]), default=0.0)
        out.append((_h(chunk_id) % 2, answerable, unanswerable))
    return out


def _rates(rows, t: float) -> dict:
    a = [x[1] for x in rows]
    u = [x[2] for x in rows]
    return {"over_refusal": round(float(np.mean([s < t for s in a])), 3) if a else None,
            "refusal": round(float(np.mean([s < t for s in u])), 3) if u else None, "cases": len(rows)}


def auroc(pos: list[float], neg: list[float]) -> float | None:
    if not pos or not neg:
        return None
    wins = sum((x > y) + 0.5 * (x == y) for x in pos for y in neg)
    return round(wins / (len(pos) * len(neg)), 3)


def fit(kb, judge, retriever, settings) -> GateFit:
    """Build the cases, choose the threshold on one half, test it on the other, keep or drop (meta)."""
    rows = cases(kb, judge, retriever)
    shipped = relevance_threshold(judge, None)
    name = getattr(judge, "model_id", type(judge).__name__)
    fit_half, test_half = [r for r in rows if r[0] == 0], [r for r in rows if r[0] == 1]
    if len(fit_half) < 15 or len(test_half) < 15:
        res = GateFit(len(rows), name, shipped, shipped, None, {}, False,
                      f"{len(rows)} cases; 30 or more needed (learn more chunks)")
        return _record(kb, res, settings)
    answers = sorted(r[1] for r in fit_half)
    t = answers[int(MAX_OVER_REFUSAL * len(answers))]  # the highest with over-refusal ≤ MAX_OVER_REFUSAL on the fit half
    before, after = _rates(test_half, shipped), _rates(test_half, t)
    kept = after["refusal"] > before["refusal"] and after["over_refusal"] <= before["over_refusal"] + SLACK
    why = (f"held-out half ({len(test_half)} questions): refusal of unanswerable {before['refusal']:.2f} → "
           f"{after['refusal']:.2f}, over-refusal {before['over_refusal']:.2f} → {after['over_refusal']:.2f} with "
           f"threshold {shipped:.3f} → {t:.3f}: " + ("kept" if kept else "not kept"))
    res = GateFit(len(rows), name, shipped, round(t, 4),
                  auroc([r[1] for r in test_half], [r[2] for r in test_half]),
                  {"shipped": before, "fitted": after}, kept, why)
    return _record(kb, res, settings)


def _record(kb, res: GateFit, settings) -> GateFit:
    with kb.db.transaction():
        kb.db.set_meta("gate_calibration", json.dumps({**res.to_json(), "judge_setting": settings.judge}))
    return res


def calibrated(kb, settings):
    """``settings`` with the KB's kept gate threshold, when ``learned_gate`` is on, no ``gate_threshold_judge`` is
    set and the calibration was made with the same judge; else ``settings`` unchanged."""
    if not settings.learned_gate or settings.gate_threshold_judge is not None:
        return settings
    info = json.loads(kb.db.meta("gate_calibration") or "{}")
    if not info.get("kept") or info.get("judge_setting") != settings.judge:
        return settings
    return settings.model_copy(update={"gate_threshold_judge": float(info["threshold"])})
