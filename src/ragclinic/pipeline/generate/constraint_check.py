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
answerable questions). A command, package or product a Chinese question names in Latin letters ("ufw 防火墙怎么设置成
开机自动启用？") is a hard constraint too: no pronoun stands in for "ufw" in a Chinese manual, and an answer from
passages that never name it is about another tool ("通过 Shoreline 防火墙初始化脚本…", issue 52). One distinctive word of a name in some passage is enough ("Gervais" for "Ricky Dene
Gervais"); the question's first word alone is not taken for a name ("Planes from Laredo …").

The generate layer then answers again from the passages that do have the asked value, or refuses and says why,
naming the thing in the question's words: the other value as the answer or its passages write it, with the noun it
qualifies where the question has the same one ("The documents describe the tenth season; the question asks about
the first."; "文档描述的是第十季；问题问的是第一季。"), else the values alone ("The documents give 2020 for this; the
question asks about 2021."); "The documents do not mention Rags Ragland."
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from ragclinic.text.lang import language_of
from ragclinic.types import Claim, Passage
from ragclinic.verify.constraints import Constraint, check, constraints, ordinals, quoted_found, years

_KINDS = ("year", "ordinal")
_WHY = {  # (language, form): "describe" names a thing ("the tenth season"), "give" only values ("2020")
    ("en", "describe"): "The documents describe {others}; the question asks about {asked}.",
    ("en", "give"): "The documents give {others} for this; the question asks about {asked}.",
    ("zh", "describe"): "文档描述的是{others}；问题问的是{asked}。",
    ("zh", "give"): "文档给出的是{others}的信息，而问题问的是{asked}。",
}
# where a Chinese noun after a value ends: function words, punctuation ("第十季的冠军" qualifies 季, not 的冠军)
_ZH_STOP = re.compile(r"[\s\d的是在于了和与及被把将从到为也都就而并或有曾已共，。？！、；：,.?!;:()（）《》“”\"]")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_ABSENT = {"en": "The documents do not mention {asked}.", "zh": "文档中没有提到{asked}。"}


def wordings() -> list[str]:
    """The refusals and notes this check writes, every language, {placeholders} unfilled."""
    return list(_WHY.values()) + list(_ABSENT.values())
_NAME = re.compile(r"[A-Z][\w'’.-]*(?:\s+(?:(?:of|the|de|la|van|von|da|di|and|&)\s+)?[A-Z][\w'’.-]*)*")
_NOT_NAME = frozenset("""a an the and of in on at to for from by with what which who whom whose when where why how
is are was were did does do has have had this that these those it its his her their i""".split())


@dataclass(frozen=True)
class Broken:
    constraint: Constraint
    claim: str
    others: tuple[str, ...]  # the values the answer or its passages have instead
    # each of ``others`` as the answer or its passages write it, with the noun it qualifies where the question's
    # value qualifies the same one: ("tenth", "season"), ("第五届", "立法会"), ("2020", "")
    said: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        if not self.others:
            return f"no passage mentions {self.constraint.text}, which the question names"
        return f"the question asks about {self.constraint.text}; the answer rests on {', '.join(self.others)}"


# a Latin-letter term in Chinese text: "ufw", "systemd", "hosts.deny", "Wi-Fi" (CJK characters are \w, so the
# bounds are spelled out); quoted text is the quoted constraint's
_TERM = re.compile(r"(?<![A-Za-z0-9_.+-])[A-Za-z][A-Za-z0-9_.+-]*[A-Za-z0-9+]")
_QUOTES = re.compile(r"“[^”]*”|\"[^\"]*\"|《[^》]*》|「[^」]*」|『[^』]*』")


def terms(question: str) -> tuple[Constraint, ...]:
    """The commands, packages and products a Chinese question names in Latin letters (3 characters or more)."""
    if language_of(question) != "zh":
        return ()
    found = _TERM.findall(_QUOTES.sub(" ", question))
    return tuple(dict.fromkeys(Constraint("term", t, t) for t in found if len(t) >= 3))


def names(question: str) -> tuple[Constraint, ...]:
    """The names the question gives: English capitalised names (not its first word alone), quoted titles, and the
    Latin-letter terms of a Chinese question."""
    out = [c for c in constraints(question) if c.kind == "quoted"] + list(terms(question))
    if language_of(question) == "zh":  # its Latin-letter names are its terms
        return tuple(dict.fromkeys(out))
    for m in _NAME.finditer(question):
        words = [w for w in re.split(r"\s+", m.group()) if w.lower() not in _NOT_NAME]
        if not words or (m.start() == 0 and len(words) == 1):
            continue
        out.append(Constraint("name", m.group().strip(" .'’"), m.group().strip(" .'’")))
    return tuple(dict.fromkeys(out))


def _mentioned(name: Constraint, texts: Sequence[str]) -> bool:
    if name.kind == "term":  # "ufw" in "ufw防火墙" or "UFW": whole Latin words, any case, "Wi-Fi" as "WiFi" too
        forms = {name.value.lower(), name.value.lower().replace("-", "")}
        return any(re.search(r"(?<![a-z0-9_])" + re.escape(f) + r"(?![a-z0-9_])", t.lower())
                   for f in forms for t in texts)
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
    titles = [n for n in absent_names(question, passages)
              if n.text.startswith("《") or n.kind == "term"] if claims else []
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
                others = said.others
            elif said.verdict == "missing" and found and all(f.verdict == "contradicted" for f in found):
                others = tuple(dict.fromkeys(v for f in found for v in f.others))
            else:
                continue
            out.append(Broken(c, claim.text, others, _said(question, c, others, [claim.text, *cited])))
    return out


def _tails(written: str, text: str) -> list[str]:
    """What follows each mention of ``written`` (a year or an ordinal as written) in ``text``."""
    t = unicodedata.normalize("NFKC", text)
    pattern = r"(?<![A-Za-z0-9])" + re.escape(written) + r"(?![A-Za-z0-9])"
    return [t[m.end():m.end() + 80] for m in re.finditer(pattern, t, re.I)]


def _shared_noun(asked_tail: str, tail: str) -> str:
    """The words that follow both the question's value and another value in a passage, as the passage writes them:
    "season" for "first season of" / "tenth season was"; "年NBA选秀" for "2021年NBA选秀在" / "2020年NBA选秀于"."""
    if tail[:1].isspace():
        mine, theirs = _words(asked_tail), _words(tail)
        n = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a.lower() != b.lower()),
                 min(len(mine), len(theirs)))
        return " ".join(theirs[:n])
    n = 0  # characters (Chinese): up to a function character, never half a Latin word
    while n < min(len(asked_tail), len(tail), 12) and asked_tail[n] == tail[n] and not _ZH_STOP.match(tail[n]):
        n += 1
    if n < len(tail) and re.match(r"[A-Za-z]", tail[n]):
        n -= len(re.search(r"[A-Za-z]*$", tail[:n]).group())
    return tail[:n]


def _words(tail: str) -> list[str]:
    """The words right after a value, up to a function word or punctuation ("season" in " season of Top Chef")."""
    out = []
    for tok in tail.split()[:4]:
        word = tok.strip("\"'’“”()[],.;:!?")
        if not word.isalpha() or word.lower() in _NOT_NAME:
            break
        out.append(word)
        if word != tok:
            break
    return out


def _said(question: str, c: Constraint, others: Sequence[str], texts: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """Each of ``others`` as ``texts`` write it, with the noun it shares with the question's value (see Broken)."""
    asked_tail = next(iter(_tails(c.text, question)), "")
    out = []
    for value in others:
        found = []
        for text in texts:
            written = [value] if c.kind == "year" and value in years(text) else []
            written += [w for v, w in ordinals(text) if c.kind == "ordinal" and v == value]
            found += [(w, _shared_noun(asked_tail, tail)) for w in dict.fromkeys(written) for tail in _tails(w, text)]
        out.append(next((f for f in found if f[1]), found[0] if found else (value, "")))
    return tuple(out)


def matching_passages(question: str, passages: Sequence[Passage], broken: Sequence[Broken]) -> tuple[Passage, ...]:
    """The passages that have every broken constraint's asked value, most relevant first (at most 3)."""
    need = {b.constraint for b in broken}
    good = [p for p in passages if all(_mentioned(c, [p.chunk.text]) if c.kind in ("name", "term")
                                       else check(c, p.chunk.text).verdict == "found" for c in need)]
    return tuple(sorted(good, key=lambda p: -p.support)[:3])


def refusal_reason(question: str, broken: Sequence[Broken]) -> str:
    """Why the answer is withheld, in the question's language and words: "The documents describe the tenth season;
    the question asks about the first." where a noun names the thing, else "The documents give 2020 for this; the
    question asks about 2021."."""
    b = broken[0]
    lang = "zh" if language_of(question) == "zh" else "en"
    if not b.others:
        return _ABSENT[lang].format(asked=b.constraint.text)
    said = b.said or tuple((v, "") for v in b.others)
    named = [(w, n) for w, n in said if _names_a_thing(w, n, lang)]
    form = "describe" if named else "give"
    phrases = [_phrase(w, n, b.constraint.kind, lang) for w, n in (named or said)[:2]]
    joint = {("en", "describe"): " and ", ("en", "give"): ", ", ("zh", "describe"): "和", ("zh", "give"): "、"}
    return _WHY[lang, form].format(others=joint[lang, form].join(phrases), asked=_asked(question, b.constraint, lang))


def _names_a_thing(written: str, noun: str, lang: str) -> bool:
    if lang == "zh":  # 第十季 names its thing (季); 2020年 does not, 2020年NBA选秀 does
        return written.startswith("第") or bool(noun.lstrip("年"))
    return bool(noun)


def _phrase(written: str, noun: str, kind: str, lang: str) -> str:
    """A value as a passage writes it, with its noun: "the tenth season", "the 2020 season", "2020", "第五届立法会"."""
    if lang == "zh":
        return re.sub(r"\s+", "", written) + noun
    word = written.lower() if written.isalpha() else written
    if kind == "year" and not noun:
        return word
    return " ".join(["the", word, noun] if noun else ["the", word])


def _asked(question: str, c: Constraint, lang: str) -> str:
    """The question's value in its words: "the first", "the 1st", "2021"; "第一季", "2021年"."""
    if lang == "zh":
        tail = next(iter(_tails(c.text, question)), "")
        return re.sub(r"\s+", "", c.text) + ("年" if c.kind == "year" and tail.startswith("年") else "")
    word = c.text.lower() if c.text.isalpha() else c.text
    return word if c.kind == "year" else f"the {word}"
