"""Judge rerank: the top ``depth`` hits re-ordered by P(yes) "does this passage answer the question?".

Off on the fast path: ~7 s per passage with the local 1.5B model on 2 cores, +0.046 nDCG@10 on a small
SciFact sample, while the 0.5B judge makes rankings worse (bench/RESULTS.md); the doctor turns it on for
low-relevance symptoms. Hits below ``depth`` keep their order after the reranked ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ragclinic.models.judge import Judge
from ragclinic.types import Hit, SourceScore


def rerank(judge: Judge, question: str, hits: Sequence[Hit], depth: int) -> list[Hit]:
    head, tail = list(hits[:depth]), list(hits[depth:])
    scored = [(judge.judge("relevance", h.chunk.text, question), i, h) for i, h in enumerate(head)]
    scored.sort(key=lambda t: (-t[0], t[1]))
    out = [replace(h, score=p, sources=h.sources + (SourceScore("rerank", rank, p),))
           for rank, (p, _, h) in enumerate(scored, start=1)]
    return out + tail
