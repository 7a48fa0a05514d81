"""The answer checked against the kind of thing the question asks for (issue 52).

"Barclay Henley was born in a city whose population at the 2010 census was what?" answered "Charlestown" from a
passage that says "The population was 7,585 at the 2010 census": the short answer took the wrong thing from the
right passage (the multi-hop question names the city on the way to the number). The peer, writing one sentence,
gave 7,585. When the question asks for a number or an explicit year/date and no claim of the answer holds one
while a passage it cites (else any passage) does, the generate layer answers once more from those passages with
a prompt that names the kind asked for (prompt.VARIANTS 3 and 4); the new answer is kept only when it holds that
kind and a claim of it is backed, else the first answer stands with a ``type_mismatch`` flag.

The kind comes from ``verify/constraints.answer_type`` (number for "how many", "多少"; not its date rule for any
"when": "When should I rotate the keys?" is answered by "after every deploy") plus the questions that ask for a
figure by naming it ("whose population … was what?", "what was the attendance"). ``answer_type`` itself is left as
it is: the learned verifier's features were fitted on it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragclinic.types import Claim, Passage
from ragclinic.verify.constraints import answer_type, has_answer_of_type

_FIGURES = (r"population|attendance|capacity|elevation|altitude|height|length|area|budget|revenue|gross|salary|price|"
            r"cost|score|enrollment|enrolment|turnout|margin|death toll|casualties")
_NUMBER = re.compile(rf"\b(?:{_FIGURES})\b[^?.]{{0,80}}\b(?:was|is|were|are|of)\s+what\b|"
                     rf"\bwhat(?:'s|\s+(?:was|is|were|are))\s+(?:the|its|their|his|her)\s+(?:[\w-]+\s+){{0,2}}(?:{_FIGURES})\b|"
                     r"(?:人口|面积|票房|票数|营收|收入|价格|成绩|比分)(?:是|为|有)?(?:多少|几)", re.I)
_DATE = re.compile(r"\b(?:what|which)\s+(?:year|date)\b|\bin what year\b|哪一?年|何年|几月几[日号]|哪一?天|日期是", re.I)
# "which (year|date) is later, …" and choices name their answer in the question
_CHOICE = re.compile(r"\bor\b|还是|或者", re.I)
VARIANT = {"number": 3, "date": 4}  # prompt.VARIANTS: the prompt that names the kind asked for
WORDS = {"number": "a number", "date": "a year or date"}


def asked_kind(question: str) -> str | None:
    """"number", "date" or None: what kind of thing the question asks for, when it names one a pattern can check."""
    if _CHOICE.search(question):
        return None
    if _DATE.search(question):
        return "date"
    if answer_type(question) == "number" or _NUMBER.search(question):
        return "number"
    return None


def mistyped(question: str, claims: Sequence[Claim], passages: Sequence[Passage]) -> tuple[str, tuple[Passage, ...]]:
    """(kind, the passages to answer again from) when the answer holds nothing of the asked kind while passages
    do — those its claims cite, else every passage that has one; ("", ()) when the answer is of the asked kind,
    the question names no kind, or no passage has one either."""
    kind = asked_kind(question)
    said = [c for c in claims if c.verdict != "invalid_citation"]
    if kind is None or not said or any(has_answer_of_type(kind, c.text) for c in said):
        return "", ()
    cited = {n for c in said for n in c.cited}
    having = [p for p in passages if has_answer_of_type(kind, p.chunk.text)]
    chosen = [p for p in having if p.n in cited] or having
    return (kind, tuple(chosen[:3])) if chosen else ("", ())


def holds(kind: str, claims: Sequence[Claim]) -> bool:
    return any(has_answer_of_type(kind, c.text) for c in claims if c.verdict in ("supported", "uncited"))
