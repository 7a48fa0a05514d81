"""The thing the question asks about, checked against the thing the answer's passages state (issue 55).

"How many days of bereavement leave do we get?", over a handbook that states only annual leave, was answered
"25 days [1]": a fact about another kind of leave, cited, with no refusal and no note. The year and ordinal checks
(constraint_check.py) do not see it: nothing is a year. What gives it away is a *contrast*: the question qualifies a
thing ("bereavement leave", "frozen goods", "a 25 kg bag", 丧假, 500克装, 四季度) with a word that no passage the
answer cites has, while a cited passage writes the same thing with another qualifier ("annual leave", "chilled
goods", "a 20 kg bag", 婚假, 250克, 三季度). The answer is then about the other one. The generate layer answers again
from a passage that has the asked qualifier, or refuses and says what the documents do cover: "The documents give
this for annual leave; they do not mention bereavement leave." / "文档给出的是婚假的信息，没有提到丧假。".

Only a contrast counts — a qualifier that is merely absent is left alone (a paraphrase: "building pass" for "access
badge" has no "pass" in the passage to contrast with) — and generic qualifiers (new, current, total, usual …) are
never checked: "the new price" over "the current price" is the same price.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ragclinic.text.analyzer import STOPWORDS, analyze, jieba_handle
from ragclinic.text.lang import language_of
from ragclinic.types import Claim, Passage

_EN_WORD = re.compile(r"[a-z][a-z'’-]*|\d+(?:[.,]\d+)*")
_EN_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d+(?:[.,]\d+)*")
_CLAUSE = re.compile(r"[,;:.!?()\[\]|/\"“”]+|\s[-–—]\s")
# verbs that carry a question's frame, not a thing: "a footballer born in", "Noss won a Military Cross"
_FRAME_VERBS = frozenset("""born won made played released founded directed written produced starred recorded known
called named based located used became died married joined left led served worked lived moved built opened""".split())
# qualifiers that do not name another thing: time, degree, order, the question's own frame
_GENERIC = frozenset("""new old current latest last first next previous usual typical normal standard general main
total overall full whole other same own much many more most less least few big small large little high low good
best better per each every any some all about around roughly approximately exactly just only even still also
get got give given take make need needs want like use used usually often really actually one both either neither
such another""".split())
_ZH_NUMBER_UNIT = re.compile(r"(\d+(?:\.\d+)?)\s*(千克|公斤|克|斤|毫升|升|罐|箱|袋|包|盒|瓶|件|天|个月|小时|分钟)")
_ZH_QUARTER = re.compile(r"(?:第)?([一二三四1-4])季度")
# heads of things that come in kinds: 年假/婚假/丧假, 运费/仓储费, 批发价/零售价, 冷藏货/冷冻货, 标准版/专业版, …
_ZH_HEADS = frozenset("假费价货版险奖税卡券")


@dataclass(frozen=True)
class Contrast:
    asked: str  # the question's thing as it writes it: "bereavement leave", "丧假", "500克"
    stated: str  # the cited passage's thing: "annual leave", "婚假", "250克"

    def describe(self) -> str:
        return f"the question asks about {self.asked}; the answer's passages state {self.stated}"


def contrasts(question: str, claims: Sequence[Claim], passages: Sequence[Passage]) -> list[Contrast]:
    """The contrasts between the question's thing and the thing the answer's cited passages state (see the module
    docstring); [] when the answer cites nothing or every qualifier of the question is in a cited passage."""
    by_n = {p.n: p for p in passages}
    cited = [by_n[n].chunk.text for c in claims if c.verdict != "invalid_citation" for n in c.cited if n in by_n]
    if not cited:
        return []
    cited = list(dict.fromkeys(unicodedata.normalize("NFKC", t) for t in cited))
    q = unicodedata.normalize("NFKC", question)
    found = _zh_contrasts(q, cited) if language_of(question) == "zh" else _en_contrasts(q, cited)
    said = _flat(" ".join(c.text for c in claims))
    shown = _flat(" ".join(p.chunk.text for p in passages))
    # the answer names the asked thing and a passage shown has it: the answer cites the wrong one (a slip the claim
    # check deals with), it is not about another thing
    out, asked = [], set()
    for c in found:  # one per asked thing: the first stated
        if c.asked not in asked and not (_flat(c.asked) in said and _flat(c.asked) in shown):
            asked.add(c.asked)
            out.append(c)
    return out


def _flat(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


@lru_cache(maxsize=4096)
def _stem(word: str) -> str:
    toks = analyze(word)
    return toks[0] if toks else word


def _en_pairs(text: str, question: bool = False) -> list[tuple[str, str]]:
    """(qualifier, head) candidates: adjacent words within one clause (never across punctuation), the head not a
    verb of the sentence's frame ("won", "born"); in the ``question``, the qualifier in lower case — a capitalised
    word there is a name or part of one ("Californian rock", "Emmy Award", "Noss won"), which names get their own
    check (constraint_check.absent_names). A passage's table cells are capitalised ("Adult day pass"): any case."""
    out = []
    for clause in _CLAUSE.split(text):
        words = _EN_TOKEN.findall(clause)
        for mod, head in zip(words, words[1:]):
            if (question and mod[0].isupper()) or head.lower() in _FRAME_VERBS:
                continue
            out.append((mod.lower(), head.lower()))
    return out


def _en_contrasts(question: str, cited: Sequence[str]) -> list[Contrast]:
    q_stems = {_stem(w) for w in _EN_WORD.findall(question.lower())}
    have = {_stem(w) for t in cited for w in _EN_WORD.findall(t.lower())}
    stated = [(m, h) for t in cited for m, h in _en_pairs(t)]
    out = []
    for mod, head in _en_pairs(question, question=True):
        if not _qualifier(mod) or head in STOPWORDS or head in _GENERIC or head[0].isdigit() or len(head) < 2:
            continue
        if _stem(mod) in have:
            continue  # the asked qualifier is in a cited passage
        for other, word in stated:
            if _stem(word) == _stem(head) and _qualifier(other) and _stem(other) not in q_stems \
                    and other[0].isdigit() == mod[0].isdigit():
                out.append(Contrast(f"{mod} {head}", f"{other} {word}"))
    return out


def _qualifier(word: str) -> bool:
    return word not in STOPWORDS and word not in _GENERIC and (word[0].isdigit() or len(word) >= 3)


def _zh_contrasts(question: str, cited: Sequence[str]) -> list[Contrast]:
    out = [Contrast(f"{n}{u}", others[0]) for n, u, others in _zh_amounts(question, cited)]
    asked_q = {m.group(1) for m in _ZH_QUARTER.finditer(question)}
    stated_q = {m.group(1) for t in cited for m in _ZH_QUARTER.finditer(t)}
    if asked_q and not asked_q & stated_q and stated_q:
        out.append(Contrast(f"{sorted(asked_q)[0]}季度", f"{sorted(stated_q)[0]}季度"))
    text = "".join(cited)
    stated = [t for c in cited for t in _things(c)]
    for asked in dict.fromkeys(_things(question)):
        if asked in text:
            continue
        kin = [t for t in dict.fromkeys(stated) if t[-1] == asked[-1] and t != asked and t not in question]
        if kin:  # the nearest of its kind: as long as the asked thing, then sharing most of its characters
            out.append(Contrast(asked, max(kin, key=lambda t: (len(t) == len(asked), len(set(t) & set(asked))))))
    return out


_ZH_FUNCTION = frozenset("的了是在和与及或把被对从到为这那每个一")


def _things(text: str) -> list[str]:
    """The things of a kind that ``text`` names, each ending with its head character (_ZH_HEADS): a word that ends
    with it (丧假, 处理费), or the head with the word before it when jieba split them (冷链 + 货 → 冷链货)."""
    words = [w for w in jieba_handle().lcut(text) if w.strip()]
    out = []
    for i, w in enumerate(words):
        for j, ch in enumerate(w):
            if ch not in _ZH_HEADS:
                continue
            thing = w[:j + 1]
            if j == 0 and i > 0 and _han(words[i - 1]) and words[i - 1][-1] not in _ZH_FUNCTION:
                thing = words[i - 1] + ch
            if len(thing) >= 2 and _han(thing):
                out.append(thing)
    return out


def _zh_amounts(question: str, cited: Sequence[str]):
    """(number, unit, the cited passages' other numbers with that unit) for each amount of the question no cited
    passage has."""
    for m in _ZH_NUMBER_UNIT.finditer(question):
        number, unit = m.group(1), m.group(2)
        stated = [f"{x.group(1)}{unit}" for t in cited for x in _ZH_NUMBER_UNIT.finditer(t) if x.group(2) == unit]
        if stated and f"{number}{unit}" not in stated:
            yield number, unit, stated


def _han(word: str) -> bool:
    return all("\u4e00" <= ch <= "\u9fff" for ch in word)


_REASON = {"en": "The documents give this for {stated}; they do not mention {asked}.",
           "zh": "文档给出的是{stated}的信息，没有提到{asked}。"}


def refusal_reason(question: str, found: Sequence[Contrast]) -> str:
    """Why the answer is withheld, naming both things in the question's language."""
    lang = "zh" if language_of(question) == "zh" else "en"
    return _REASON[lang].format(stated=found[0].stated, asked=found[0].asked)


def wordings() -> list[str]:
    """The refusals this check writes, every language, {placeholders} unfilled (eval's answer-form check)."""
    return list(_REASON.values())


def matching_passages(found: Sequence[Contrast], passages: Sequence[Passage]) -> tuple[Passage, ...]:
    """The passages that have the asked thing itself, most relevant first (at most 3)."""
    def has(p: Passage) -> bool:
        text = unicodedata.normalize("NFKC", p.chunk.text).lower()
        return all(" ".join(c.asked.lower().split()) in " ".join(text.split()) for c in found)

    return tuple(sorted((p for p in passages if has(p)), key=lambda p: -p.support)[:3])
