"""The constraints a question puts on its answer, and whether a passage meets them.

"Who won the 2022 championship?" is not answered by a passage about the 2021 championship, however well the
words overlap: the year is a constraint. So are ordinals ("the sixth Legislative Council", "第六届", "the first
woman"), other numbers ("the 70-seat council"), and quoted titles (《小时代》, "Dune"). This module finds them in
English and Chinese questions and checks a passage against each: found, missing, or contradicted (the passage
names another value of the same kind — "the passage is about 2021; the question asks about 2022").

These are features for the evidence verifier (issue 13: sufficiency = does this passage answer this question,
including its constraints); they are not a decision on their own.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
              "九": 9}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000}
_EN_ORDINALS = {w: i for i, w in enumerate(
    "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
    "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth".split())}

_YEAR = re.compile(r"(?<!\d)(?<!\d\.)(1[5-9]\d\d|20\d\d)(?!\d|\.\d)")
_ZH_ORDINAL = re.compile(r"第\s*([0-9]+|[零〇一二两三四五六七八九十百千]+)\s*(届|次|个|位|名|季|期|代|任|轮|场|号)")
_EN_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b|\b(" + "|".join(_EN_ORDINALS) + r")\b", re.I)
_QUOTED = re.compile(r"《([^》]{1,40})》|「([^」]{1,40})」|“([^”]{1,60})”|\"([^\"]{1,60})\"")
_NUMBER = re.compile(r"(?<!\d)(?<!\d\.)\d+(?:\.\d+)?(?!\d|\.\d)")


@dataclass(frozen=True)
class Constraint:
    kind: str  # "year", "ordinal", "number", "quoted"
    value: str  # normalised: "2022", "6" (ordinals as numbers), "70", "小时代"
    text: str  # as written in the question


@dataclass(frozen=True)
class Check:
    constraint: Constraint
    verdict: str  # "found", "missing", "contradicted"
    others: tuple[str, ...] = ()  # values of the same kind the passage has instead (for "contradicted")

    def describe(self) -> str:
        c = self.constraint
        if self.verdict == "found":
            return f"the passage has {c.text!r}"
        if self.verdict == "contradicted":
            return f"the passage is about {', '.join(self.others)}; the question asks about {c.text}"
        return f"the passage does not mention {c.text!r}"


def cn_number(text: str) -> int | None:
    """'六' → 6, '十二' → 12, '二十' → 20, '一百零五' → 105, '12' → 12; None if not a number."""
    if text.isdigit():
        return int(text)
    total, current = 0, 0
    for ch in text:
        if ch in _CN_DIGITS:
            current = _CN_DIGITS[ch]
        elif ch in _CN_UNITS:
            total += (current or 1) * _CN_UNITS[ch]
            current = 0
        else:
            return None
    return total + current


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def years(text: str) -> list[str]:
    return _YEAR.findall(_norm(text))


def ordinals(text: str) -> list[tuple[str, str]]:
    """(value, as written) for 第N届-style and English ordinals ("6th", "sixth")."""
    t = _norm(text)
    out = []
    for m in _ZH_ORDINAL.finditer(t):
        n = cn_number(m.group(1))
        if n is not None:
            out.append((f"{n}{m.group(2)}", m.group(0)))
    for m in _EN_ORDINAL.finditer(t):
        n = int(m.group(1)) if m.group(1) else _EN_ORDINALS[m.group(2).lower()]
        out.append((str(n), m.group(0)))
    return out


def constraints(question: str) -> tuple[Constraint, ...]:
    """The question's constraints, each once, in the order they appear by kind."""
    q = _norm(question)
    found: list[Constraint] = [Constraint("year", y, y) for y in years(q)]
    found += [Constraint("ordinal", v, w) for v, w in ordinals(q)]
    for m in _QUOTED.finditer(q):
        s = next(g for g in m.groups() if g)
        found.append(Constraint("quoted", s.strip().lower(), m.group(0)))
    taken = {c.value for c in found if c.kind == "year"} | {re.sub(r"\D", "", c.value) for c in found
                                                             if c.kind == "ordinal"}
    quoted_spans = "".join(c.text for c in found if c.kind == "quoted")
    for m in _NUMBER.finditer(q):
        if m.group() not in taken and m.group() not in quoted_spans:
            found.append(Constraint("number", m.group(), m.group()))
    return tuple(dict.fromkeys(found))


def check(constraint: Constraint, passage: str) -> Check:
    """Whether ``passage`` meets ``constraint``: found, missing, or contradicted by another value of its kind."""
    p = _norm(passage)
    c = constraint
    if c.kind == "year":
        have = list(dict.fromkeys(years(p)))
        return _verdict(c, c.value in have, have)
    if c.kind == "ordinal":
        have = list(dict.fromkeys(v for v, _ in ordinals(p)))
        unit = re.sub(r"\d", "", c.value)
        same_kind = [v for v in have if re.sub(r"\d", "", v) == unit]
        return _verdict(c, c.value in have, [f"{v}" for v in same_kind])
    if c.kind == "quoted":
        return Check(c, "found" if c.value in p.lower() else "missing")
    have = _NUMBER.findall(p)
    return Check(c, "found" if c.value in have else "missing")


_LITERAL = re.compile(r"[.\-/~+:]?[A-Za-z0-9][A-Za-z0-9.+/:~_-]*")
_CJK = re.compile(r"[\u4e00-\u9fff]")


def quoted_found(constraint: Constraint, passage: str) -> bool:
    """A quoted constraint met as a pattern: a user quotes "机器名.local" or “用户名@主机” meaning any host name
    ending in .local — Chinese words standing for a value around literal parts. Such a quote (Chinese and Latin
    mixed, not a 《title》) is met when the passage has every literal part; any other quote only as written."""
    if check(constraint, passage).verdict == "found":
        return True
    c = constraint
    if c.kind != "quoted" or c.text.startswith("《") or not _CJK.search(c.value):
        return False
    literals = _LITERAL.findall(c.value)
    low = _norm(passage).lower()
    return bool(literals) and all(lit in low for lit in literals)


def _verdict(c: Constraint, ok: bool, same_kind: list[str]) -> Check:
    if ok:
        return Check(c, "found")
    if same_kind:
        return Check(c, "contradicted", tuple(same_kind[:3]))
    return Check(c, "missing")


def check_all(question: str, passage: str) -> tuple[Check, ...]:
    return tuple(check(c, passage) for c in constraints(question))


# ---------------------------------------------------------------------------------------------- answer type
_TYPE_RULES = (
    ("date", re.compile(r"\b(when|what year|which year|what date|what day|how long ago)\b|何时|什么时候|哪一?年|几月|"
                        r"哪一?天|几号|何年|日期是", re.I)),
    ("number", re.compile(r"\b(how (many|much|old|tall|long|far|big|large|high)|what (percentage|percent|share|"
                          r"number|amount))\b|多少|几[个位名次届家种项条所座只]|多大|多高|多长|多重|多远|百分之几|几成",
                          re.I)),
)
_HAS = {
    "date": re.compile(r"(?<!\d)(1[5-9]\d\d|20\d\d)(?!\d)|\d{1,2}\s*[月日号]|[一二三四五六七八九十]+月|\b(january|february|"
                       r"march|april|may|june|july|august|september|october|november|december)\b", re.I),
    "number": re.compile(r"\d|[零〇一二两三四五六七八九十百千万亿]+\s*[个位名次届家种项条所座只人元米岁年%％席倍]|"
                         r"\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|"
                         r"fifty|hundred|thousand|million|billion|dozen)\b", re.I),
}


def answer_type(question: str) -> str | None:
    """"date", "number", or None (a person, a place, a name, an explanation: not checkable by pattern)."""
    q = _norm(question)
    for kind, rule in _TYPE_RULES:
        if rule.search(q):
            return kind
    return None


def has_answer_of_type(kind: str, passage: str) -> bool:
    """Whether ``passage`` holds anything of the asked type at all (a passage without a number cannot say how
    many)."""
    return bool(_HAS[kind].search(_norm(passage)))
