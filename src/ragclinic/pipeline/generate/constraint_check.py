"""The question's constraints checked against the answer before it leaves (issue 33).

"When was the 2021 NBA Draft?" answered "November 18, 2020 [1]" states its own contradiction: the question asks
about 2021, the answer and its passage are about 2020. A claim breaks a constraint of the question (a year or an
ordinal: verify/constraints.py) when

- the claim names another value of that kind and not the asked one, and no passage it cites has the asked one; or
- every passage it cites names other values of that kind and none has the asked one (the answer rests on
  another year's or another round's passage, whatever its words).

The generate layer then answers again from the passages that do have the asked value, or refuses and says why
("the documents give 2020 for this; the question asks about 2021").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragclinic.text.lang import language_of
from ragclinic.types import Claim, Passage
from ragclinic.verify.constraints import Constraint, check, constraints

_KINDS = ("year", "ordinal")
_WHY = {
    "en": "The documents give {others} for this; the question asks about {asked}.",
    "zh": "文档给出的是{others}的信息，而问题问的是{asked}。",
}


@dataclass(frozen=True)
class Broken:
    constraint: Constraint
    claim: str
    others: tuple[str, ...]  # the values the answer or its passages have instead

    def describe(self) -> str:
        return f"the question asks about {self.constraint.text}; the answer rests on {', '.join(self.others)}"


def broken_constraints(question: str, claims: Sequence[Claim], passages: Sequence[Passage]) -> list[Broken]:
    """The question's year and ordinal constraints each answered claim breaks (see the module docstring)."""
    asked = [c for c in constraints(question) if c.kind in _KINDS]
    if not asked:
        return []
    by_n = {p.n: p for p in passages}
    out = []
    for claim in claims:
        if claim.verdict == "invalid_citation":
            continue
        cited = [by_n[n].chunk.text for n in claim.cited if n in by_n]
        for c in asked:
            found = [check(c, text) for text in cited]
            if any(f.verdict == "found" for f in found):
                continue
            said = check(c, claim.text)
            if said.verdict == "contradicted":
                out.append(Broken(c, claim.text, said.others))
            elif said.verdict == "missing" and found and all(f.verdict == "contradicted" for f in found):
                out.append(Broken(c, claim.text, tuple(dict.fromkeys(v for f in found for v in f.others))))
    return out


def matching_passages(question: str, passages: Sequence[Passage], broken: Sequence[Broken]) -> tuple[Passage, ...]:
    """The passages that have every broken constraint's asked value, most relevant first (at most 3)."""
    need = {b.constraint for b in broken}
    good = [p for p in passages if all(check(c, p.chunk.text).verdict == "found" for c in need)]
    return tuple(sorted(good, key=lambda p: -p.support)[:3])


def refusal_reason(question: str, broken: Sequence[Broken]) -> str:
    """Why the answer is withheld, in the question's language."""
    b = broken[0]
    lang = "zh" if language_of(question) == "zh" else "en"
    return _WHY[lang].format(others=", ".join(b.others[:2]), asked=b.constraint.text)
