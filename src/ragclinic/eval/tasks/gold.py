"""Gold passages (issue 35): where the passage that holds an item's answer ranked, and whether the generator saw it.

An item may carry ``gold``: verbatim snippets of its answering passage. A chunk is the gold chunk when its text
contains one of them, compared without whitespace and case (the parser and the chunker re-wrap lines; a snippet
longer than a chunk, or one across a chunk boundary, matches nothing). Each arm that retrieves records, in its
row: ``gold_rank`` (1-based, among the hits it retrieved; None: not among them), ``gold_depth`` (how many hits
it asked for: the pipeline's ``top_k``, the naive peer's 5), ``gold_shown`` (the gold chunk was among the passages
the generator was shown) and, for the pipeline, ``gold_passage`` (its [n] after scope and gate, None: not there)
and ``gold_in_excerpt`` (the snippet survived context selection into the text shown).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ragclinic.types import Hit

RECALL_AT = (1, 5, 10)
_SPACE = re.compile(r"[\s`*_|\\]+")  # whitespace and Markdown marks: a snippet copied from one rendering matches another


def squash(text: str) -> str:
    """The text without whitespace and Markdown marks, lower-cased: what gold snippets are compared on."""
    return _SPACE.sub("", text).lower()


def holds_gold(text: str, gold: Sequence[str]) -> bool:
    t = squash(text)
    return any(g and g in t for g in (squash(x) for x in gold))


def gold_rank(texts: Sequence[str], gold: Sequence[str]) -> int | None:
    """The 1-based rank of the first text holding a gold snippet, or None."""
    return next((i for i, t in enumerate(texts, start=1) if holds_gold(t, gold)), None)


def naive_gold(hits: Sequence[Hit], gold: Sequence[str], depth: int) -> dict[str, Any]:
    """The naive peer's gold fields: every hit it retrieved is in its prompt."""
    if not gold:
        return {}
    rank = gold_rank([h.chunk.text for h in hits], gold)
    return {"gold_rank": rank, "gold_depth": depth, "gold_shown": rank is not None}


def trace_gold(trace, gold: Sequence[str]) -> dict[str, Any]:
    """A pipeline run's gold fields, read from its trace: the retrieve span's hits, the gate's passages and
    decision, the generate span's context selection."""
    if not gold or trace is None or (retrieve := trace.span("retrieve")) is None or retrieve.output is None:
        return {}
    hits = retrieve.output.hits
    rank = gold_rank([h.chunk.text for h in hits], gold)
    out: dict[str, Any] = {"gold_rank": rank, "gold_depth": retrieve.input.top_k if retrieve.input else len(hits),
                           "gold_passage": None, "gold_shown": False, "gold_in_excerpt": False}
    gate = trace.span("gate")
    if rank is None or gate is None or gate.output is None:
        return out
    n = next((p.n for p in gate.output.passages if p.hit.chunk.id == hits[rank - 1].chunk.id), None)
    out["gold_passage"] = n
    if n is None or gate.output.decision.route != "answer":
        return out
    generate = trace.span("generate")
    context = generate.output.context if generate is not None and generate.output is not None else None
    if context is None:  # the passages whole
        out["gold_shown"] = out["gold_in_excerpt"] = True
        return out
    excerpt = context.get("shown", {}).get(str(n))
    out["gold_shown"] = excerpt is not None
    out["gold_in_excerpt"] = excerpt is not None and holds_gold(excerpt, gold)
    return out


def gold_metrics(rows: list[dict], arm: str) -> dict[str, Any]:
    """``gold_recall@k`` over the answerable items with gold that ``arm`` retrieved for (k up to the depth every
    one of them asked for), and ``gold_shown``: the share whose gold chunk the generator saw."""
    xs = [r[arm] for r in rows if r.get(arm) and r.get("gold") and not r["expect_refusal"] and "gold_rank" in r[arm]]
    if not xs:
        return {}
    depth = min(x["gold_depth"] for x in xs)
    out: dict[str, Any] = {f"gold_recall@{k}": _share([x["gold_rank"] is not None and x["gold_rank"] <= k for x in xs])
                           for k in RECALL_AT if k <= depth}
    out["gold_shown"] = _share([x["gold_shown"] for x in xs])
    if all("gold_in_excerpt" in x for x in xs):
        out["gold_in_excerpt"] = _share([x["gold_in_excerpt"] for x in xs])
    return out


def _share(xs: list[bool]) -> float:
    return round(sum(xs) / len(xs), 4)
