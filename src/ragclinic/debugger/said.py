"""Where an expected answer is said in other words — the parse probe's second look when no document writes it.

A user who files a bad answer types what would have been right in their own words: a summary over several documents
("30 days for most, 45 days for Halden Mills"), a paraphrase ("label checks were cut to every third pallet" for "label
inspection went from every pallet to one pallet in three"), or a figure computed from what a document states ("£1,490"
for a yearly price of ten months at £149). No document writes it verbatim, yet no layer lost it. Blaming the parser for
that (issue 56's library: 28 of 56 real cases) sends the user to the wrong layer.

So each part of the expected answer (its clauses: split at semicolons, commas, "and") is looked for in the chunks a
search for it ranks first, with the question and without, over the whole knowledge base (no scope, every version):
- **said in its words**: the chunk holds most of what the part adds to the question and every number it states (the
  answer check of verify/answer_check.py, as the generator's own answers are checked);
- **said in other words**: the judge (the learned verifier by default) says the chunk supports the part;
- **computed**: the part states a figure no candidate states, and a candidate that shares the question's words states
  figures: the answer must be computed from them.

The chunks found become the gold chunks the later probes judge: was each retrieved, kept, answered from?
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragclinic.text.support import content_terms, coverage, numbers, stated_numbers
from ragclinic.types import AskRequest, AskState, Chunk, Scope
from ragclinic.verify import task_threshold
from ragclinic.verify.answer_check import backing
from ragclinic.verify.base import judge_text

# Clause boundaries: Chinese and Western list punctuation, and "and"/"but"/"while" between clauses — never the comma
# of a thousands separator ("3,480") or a decimal point.
_CLAUSES = re.compile(r"[；;。\n，、]|,(?!\d{3}(?!\d))|\s+(?:and|but|while|whereas)\s+", re.IGNORECASE)
DEPTH = 15  # chunks a search returns per query: the part alone, and the question with the part
MIN_QUESTION_COVERAGE = 0.3  # a chunk a figure is computed from shares this much of the question's words


@dataclass(frozen=True)
class Said:
    """One part of the expected answer and the chunk that says it."""

    part: str
    rowid: int
    chunk: Chunk
    how: str  # "in its words", "in other words (judge P=0.83)", "computed from its figures (1490 is stated nowhere)"
    computed: tuple[str, ...] = ()  # the part's figures no candidate states

    def to_json(self, path: str) -> dict:
        return {"part": self.part, "doc_id": self.chunk.doc_id, "path": path, "chunk": self.chunk.ordinal,
                "how": self.how, "text": self.chunk.text[:200]}


def clauses(answer: str) -> list[str]:
    """The parts of one expected answer: its clauses, stripped; the whole answer when it has one."""
    parts = [p.strip(" .。:：") for p in _CLAUSES.split(answer)]
    parts = [p for p in parts if len(p) > 1 and (content_terms(p) or numbers(p))]
    return parts or [answer.strip()]


def said_where(case, alternatives: list[str]) -> tuple[list[Said], list[str]]:
    """(where each part is said, the parts said nowhere) for the alternative whose parts are said most often."""
    best: tuple[list[Said], list[str]] | None = None
    for alt in alternatives:
        found, missing = [], []
        for part in clauses(alt):
            where = _said(case, part)
            (found.append(where) if where else missing.append(part))
        if best is None or len(found) > len(best[0]):
            best = (found, missing)
        if not missing:
            break
    return best or ([], [])


def _said(case, part: str) -> Said | None:
    question = case.trace.query
    candidates = _candidates(case, [part, f"{question} {part}"])
    judge = case.pipeline.judge_for(case.pipeline.lm)
    threshold = task_threshold(judge, "support", 0.5)
    claim = judge_text(part, question)
    best: tuple[float, Said] | None = None
    figures = numbers(part) - numbers(question)
    for rowid, chunk in candidates:
        if backing(question, part, chunk.text).backed:
            return Said(part, rowid, chunk, "in its words")
        if figures - stated_numbers(chunk.text):
            continue  # a figure the chunk does not state is not said there in any words (the judge reads no numbers)
        p = judge.judge("support", chunk.text, claim)
        if p >= threshold and (best is None or p > best[0]):
            best = (p, Said(part, rowid, chunk, f"in other words (judge P={p:.2f})"))
    return best[1] if best else _computed(question, part, candidates)


def _computed(question: str, part: str, candidates: list[tuple[int, Chunk]]) -> Said | None:
    """A part whose figures no candidate states, placed on the candidate that shares most of the question's words
    and states figures of its own (what the answer is computed from); None when the part states no figure."""
    figures = numbers(part) - numbers(question)
    if not figures or any(figures & stated_numbers(c.text) for _, c in candidates):
        return None
    sources = [(coverage(question, c.text), r, c) for r, c in candidates if stated_numbers(c.text)]
    sources = [s for s in sources if s[0] >= MIN_QUESTION_COVERAGE]
    if not sources:
        return None
    _, rowid, chunk = max(sources, key=lambda s: s[0])
    shown = ", ".join(sorted(figures))
    return Said(part, rowid, chunk, f"computed from its figures ({shown} stated nowhere)", tuple(sorted(figures)))


def _candidates(case, queries: list[str]) -> list[tuple[int, Chunk]]:
    """The chunks a search for each query ranks first, over the whole knowledge base, in first-seen order."""
    seen: dict[str, tuple[int, Chunk]] = {}
    for text in queries:
        request = AskRequest(text, Scope(), top_k=DEPTH)
        state, _ = case.pipeline.run_layer("retrieve", AskState(request), scope_newest_version=False)
        for h in state.hits:
            seen.setdefault(h.chunk.id, (h.rowid, h.chunk))
    return list(seen.values())
