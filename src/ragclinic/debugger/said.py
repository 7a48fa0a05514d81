"""Where an expected answer is said in other words — the parse probe's second look when no document writes it.

A user who files a bad answer types what would have been right in their own words: a summary over several documents
("30 days for most, 45 days for Halden Mills"), a paraphrase ("label checks were cut to every third pallet" for "label
inspection went from every pallet to one pallet in three"), or a figure computed from what a document states ("£1,490"
for a yearly price of ten months at £149). No document writes it verbatim, yet no layer lost it. Blaming the parser for
that (issue 56's library: 28 of 56 real cases) sends the user to the wrong layer.

So each part of the expected answer (its clauses: split at semicolons, commas, "and") is looked for in the chunks a
search for it ranks first, with the question and without, over the whole knowledge base (no scope, every version):
- **said in its words**: the chunk holds most of what the part adds to the question and every number it states (the
  answer check of verify/answer_check.py, as the generator's own answers are checked); a bare part (a name, a place,
  a figure: fewer than three terms and figures besides the question's) only in a chunk about the question ("Fiji" in a chunk
  about another fish says nothing of this one);
- **said in other words**: the judge (the learned verifier by default) says the chunk supports the part — never a
  bare name, never a figure the chunk does not state ("ten weeks" included: the verifier reads no numbers);
- **computed**: the part states a figure (a decimal, or a whole number of 13 or more) no candidate states, one +, −, ×, ÷ or percentage away from two
  figures a candidate about the question states (with the question's): £1,490 from £149 and "ten months". A figure
  lost from the document (a year drawn as a picture) is made from none, and stays a parse fault.

The chunks found become the gold chunks the later probes judge: was each retrieved, kept, answered from?
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragclinic.text.support import content_terms, coverage, numbers, stated_numbers, weighted_coverage
from ragclinic.types import AskRequest, AskState, Chunk, Scope
from ragclinic.verify import task_threshold
from ragclinic.verify.answer_check import answer_part, backing
from ragclinic.verify.base import judge_text

# Clause boundaries: Chinese and Western list punctuation, and "and"/"but"/"while" between clauses — never the comma
# of a thousands separator ("3,480") or a decimal point.
_CLAUSES = re.compile(r"[；;。\n，、]|,(?!\d{3}(?!\d))|\s+(?:and|but|while|whereas)\s+", re.IGNORECASE)
DEPTH = 15  # chunks a search returns per query: the part alone, and the question with the part
MIN_QUESTION_COVERAGE = 0.3  # a chunk that names a bare part, or that a figure is computed from, is about the question
MIN_PARAPHRASE_TERMS = 3  # a part adding fewer terms is a name or a figure: said in its words or not at all
MIN_COMPUTED = 13  # a smaller whole number is stated or not: small counts are made by chance from any two


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
    terms, _ = answer_part(question, part)
    figures = stated_numbers(part) - stated_numbers(question)  # "ten weeks" states 10
    bare = len(terms | figures) < MIN_PARAPHRASE_TERMS  # a name, a place, a figure: said in its words or not at all
    best: tuple[float, Said] | None = None
    for rowid, chunk in candidates:
        if bare and weighted_coverage(content_terms(question), chunk.text) < MIN_QUESTION_COVERAGE:
            continue  # "Fiji" in a chunk about another fish does not say where this one lives
        lacks = figures - stated_numbers(chunk.text)
        if not lacks and backing(question, part, chunk.text).backed:
            return Said(part, rowid, chunk, "in its words")
        if (bare and not figures) or lacks:
            continue  # a name is said in its words or not at all; a figure the chunk lacks is not said there either
        p = judge.judge("support", chunk.text, claim)
        if p >= threshold and (best is None or p > best[0]):
            best = (p, Said(part, rowid, chunk, f"in other words (judge P={p:.2f})"))
    return best[1] if best else _computed(question, part, figures, candidates)


def _computed(question: str, part: str, figures: frozenset[str], candidates: list[tuple[int, Chunk]]) -> Said | None:
    """A part whose figures no candidate states, placed on the candidate that shares most of the question's words
    among those whose figures (with the question's) give each one by a single +, −, ×, ÷ or percentage; None when
    the part states no figure or none is made so (a figure lost from the document is not a computed one)."""
    if not figures or any(figures & stated_numbers(c.text) for _, c in candidates):
        return None
    if any(float(f) < MIN_COMPUTED and "." not in f for f in figures):
        return None  # a small count is stated or not (£10.50 may still be a difference of two prices)
    given = stated_numbers(question)
    sources = [(coverage(question, c.text), r, c) for r, c in candidates]
    sources = [s for s in sources if s[0] >= MIN_QUESTION_COVERAGE
               and all(derived(f, stated_numbers(s[2].text) | given) for f in figures)]
    if not sources:
        return None
    _, rowid, chunk = max(sources, key=lambda s: s[0])
    shown = ", ".join(sorted(figures))
    return Said(part, rowid, chunk, f"computed from its figures ({shown} stated nowhere)", tuple(sorted(figures)))


def derived(figure: str, stated: frozenset[str]) -> bool:
    """Is ``figure`` one operation (+, −, ×, ÷, a percentage) away from two of the ``stated`` figures, as written
    (rounded to its own decimals: 3480 / 12 = 290, 100 / 3 = 33.3)? A 0 or 1 is no operand: "Formula One" would
    put every stated year one step from the next."""
    target = float(figure)
    places = len(figure.split(".")[1]) if "." in figure else 0
    values = [v for v in map(float, stated) if v not in (0.0, 1.0)]
    for i, a in enumerate(values):
        for b in values[i + 1:]:
            made = (a + b, abs(a - b), a * b, a * b / 100, a / b if b else 0.0, b / a if a else 0.0)
            if any(abs(round(m, places) - target) < 1e-9 for m in made):
                return True
    return False


def _candidates(case, queries: list[str]) -> list[tuple[int, Chunk]]:
    """The chunks a search for each query ranks first, over the whole knowledge base, in first-seen order."""
    seen: dict[str, tuple[int, Chunk]] = {}
    for text in queries:
        request = AskRequest(text, Scope(), top_k=DEPTH)
        state, _ = case.pipeline.run_layer("retrieve", AskState(request), scope_newest_version=False)
        for h in state.hits:
            seen.setdefault(h.chunk.id, (h.rowid, h.chunk))
    return list(seen.values())
