"""The question's constraints checked against the answer before it leaves (issue 33).

"When was the 2021 NBA Draft?" answered "November 18, 2020 [1]" states its own contradiction: the question asks
about 2021, the answer and its passage are about 2020. A claim breaks a constraint of the question (a year or an
ordinal: verify/constraints.py) when

- the claim names another value of that kind and not the asked one, and no passage it cites has the asked one; or
- every passage it cites names other values of that kind and none has the asked one (the answer rests on
  another year's or another round's passage, whatever its words).

A third kind: a name the question gives that none of the passages shown mentions — "Rags Ragland is the star of
which comedy sketch show?" over passages about James Mulgrew: whatever the answer, it is about someone else. A
《title》 is exact, so it breaks the answer like a year. An English capitalised name or a quoted title only gets a
note beside the answer ("The documents do not mention Rags Ragland."): passages often name a person once and then
say "he" (on the English dev half of the constraint-swap set, treating names as hard constraints refused 5 of 15
answerable questions). One distinctive word of a name in some passage is enough ("Gervais" for "Ricky Dene
Gervais"); the question's first word alone is not taken for a name ("Planes from Laredo …").

The generate layer then answers again from the passages that do have the asked value, or refuses and says why
("the documents give 2020 for this; the question asks about 2021"; "the documents do not mention Rags Ragland").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragclinic.text.lang import language_of
from ragclinic.types import Claim, Passage
from ragclinic.verify.constraints import Constraint, check, constraints, quoted_found

_KINDS = ("year", "ordinal")
_WHY = {
    "en": "The documents give {others} for this; the question asks about {asked}.",
    "zh": "文档给出的是{others}的信息，而问题问的是{asked}。",
}
_CJK = re.compile(r"[\u4e00-\u9fff]")
_ABSENT = {"en": "The documents do not mention {asked}.", "zh": "文档中没有提到{asked}。"}
_NAME = re.compile(r"[A-Z][\w'’.-]*(?:\s+(?:(?:of|the|de|la|van|von|da|di|and|&)\s+)?[A-Z][\w'’.-]*)*")
_NOT_NAME = frozenset("""a an the and of in on at to for from by with what which who whom whose when where why how
is are was were did does do has have had this that these those it its his her their i""".split())


@dataclass(frozen=True)
class Broken:
    constraint: Constraint
    claim: str
    others: tuple[str, ...]  # the values the answer or its passages have instead

    def describe(self) -> str:
        if not self.others:
            return f"no passage mentions {self.constraint.text}, which the question names"
        return f"the question asks about {self.constraint.text}; the answer rests on {', '.join(self.others)}"


def names(question: str) -> tuple[Constraint, ...]:
    """The names the question gives: English capitalised names (not its first word alone) and quoted titles."""
    out = [c for c in constraints(question) if c.kind == "quoted"]
    for m in _NAME.finditer(question):
        words = [w for w in re.split(r"\s+", m.group()) if w.lower() not in _NOT_NAME]
        if not words or (m.start() == 0 and len(words) == 1):
            continue
        out.append(Constraint("name", m.group().strip(" .'’"), m.group().strip(" .'’")))
    return tuple(dict.fromkeys(out))


def _mentioned(name: Constraint, texts: Sequence[str]) -> bool:
    if name.kind == "quoted" and name.text.startswith("《"):
        return any(check(name, t).verdict == "found" for t in texts)
    if name.kind == "quoted" and any(quoted_found(name, t) for t in texts):  # "机器名.local": ".local" is there
        return True
    words = [w.strip(".,;:!?'’\"").lower() for w in name.value.split() if len(w) >= 3 and w.lower() not in _NOT_NAME]
    low = [t.lower() for t in texts]
    return not words or any((w in t) if _CJK.search(w) else re.search(r"(?<!\w)" + re.escape(w) + r"(?!\w)", t)
                            for w in words for t in low)


def absent_names(question: str, passages: Sequence[Passage]) -> list[Constraint]:
    """The names the question gives that none of ``passages`` mentions."""
    texts = [p.chunk.text for p in passages]
    return [n for n in names(question) if not _mentioned(n, texts)]


def absent_note(question: str, absent: Sequence[Constraint]) -> str:
    lang = "zh" if language_of(question) == "zh" else "en"
    return _ABSENT[lang].format(asked=("、" if lang == "zh" else ", ").join(n.text for n in absent))


def broken_constraints(question: str, claims: Sequence[Claim], passages: Sequence[Passage]) -> list[Broken]:
    """The question's constraints each answered claim breaks (see the module docstring)."""
    titles = [n for n in absent_names(question, passages) if n.text.startswith("《")] if claims else []
    out = [Broken(n, c.text, ()) for n in titles for c in claims[:1]]
    asked = [c for c in constraints(question) if c.kind in _KINDS]
    if not asked:
        return out
    by_n = {p.n: p for p in passages}
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
    good = [p for p in passages if all(_mentioned(c, [p.chunk.text]) if c.kind == "name"
                                       else check(c, p.chunk.text).verdict == "found" for c in need)]
    return tuple(sorted(good, key=lambda p: -p.support)[:3])


def refusal_reason(question: str, broken: Sequence[Broken]) -> str:
    """Why the answer is withheld, in the question's language."""
    b = broken[0]
    lang = "zh" if language_of(question) == "zh" else "en"
    if not b.others:
        return _ABSENT[lang].format(asked=b.constraint.text)
    return _WHY[lang].format(others=", ".join(b.others[:2]), asked=b.constraint.text)
