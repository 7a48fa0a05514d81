"""A bare number given the unit the question asks in (issue 52).

Asked "How many weeks did the lead single … spend at number one?", the short answer was "ten [1]." — right, but a
bare number: the passage says "It also spent ten weeks at number one", and the simple peer wrote "ten weeks". When
the question asks "how many <unit>" / "多少<量词>" / "几<量词>" and the answer is a number and nothing else, the answer
becomes the cited passage's own words for that number with its unit ("ten weeks", "10 分钟"). No model call; an
answer that already has words beside its number, or whose passage does not write the unit after that number, is
left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragclinic.pipeline.generate.base import Item
from ragclinic.pipeline.generate.citations import check_items
from ragclinic.pipeline.generate.structured import Reply, render
from ragclinic.text.lang import language_of
from ragclinic.types import Claim, Passage

_EN_ASKED = re.compile(r"\bhow\s+many\s+([a-z]+)", re.I)
_ZH_ASKED = re.compile(r"(?:多少|几)\s*(分钟|小时|星期|公里|千米|厘米|毫米|字节|字符|美元|万元|亿元|平方米|"
                       r"[个位名天年月周次分秒岁米人本件种条项页章台块元家所座])")
_NUMBER_ONLY = re.compile(r"^\s*(?:\d[\d,.]*|[a-z]+(?:-[a-z]+)?|[零一二两三四五六七八九十百千万]+)\s*$", re.I)
_MARKS = re.compile(r"\s*\[\d+\]")
_EN_NUMBER_WORDS = frozenset("""one two three four five six seven eight nine ten eleven twelve thirteen fourteen
fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred""".split())


def asked_unit(question: str) -> str:
    """The unit a "how many" question counts in ("weeks", "分钟"), or ""."""
    m = _EN_ASKED.search(question) or _ZH_ASKED.search(question)
    return m.group(1) if m else ""


def _is_number(text: str) -> bool:
    t = text.strip().rstrip(".。").strip()
    if not _NUMBER_ONLY.match(t):
        return False
    return t[0].isdigit() or t.lower().split("-")[0] in _EN_NUMBER_WORDS or not t.isascii()


def _stem(unit: str) -> str:
    """"weeks" → "week": the passage may write either form ("a ten-week run", "10 weeks")."""
    return unit[:-1] if unit.isascii() and len(unit) > 3 and unit.lower().endswith("s") else unit


def with_unit(question: str, claims: Sequence[Claim], passages: Sequence[Passage]) -> tuple[str, int] | None:
    """(the number with its unit as the cited passage writes it, that passage's number) when the answer is one bare
    number to a question that asks for a count in a unit; None otherwise."""
    unit = asked_unit(question)
    said = [c for c in claims if c.verdict != "invalid_citation"]
    if not unit or len(said) != 1 or not _is_number(_MARKS.sub("", said[0].text)):
        return None
    number = _MARKS.sub("", said[0].text).strip().rstrip(".。").strip()
    stem = re.escape(_stem(unit))
    if unit.isascii():
        pattern = re.compile(rf"(?<![\w-]){re.escape(number)}\s+{stem}(?:s|es)?\b", re.I)
    else:
        pattern = re.compile(rf"(?<![\d.]){re.escape(number)}\s*{stem}")
    for p in passages:
        if p.n in said[0].cited and (m := pattern.search(p.chunk.text)):
            return " ".join(m.group(0).split()), p.n
    return None


def answered_with_unit(ctx, question: str, claims, passages, flags: list[str]):
    """(the answer re-rendered with its unit, its claims checked again) when ``with_unit`` finds it; (None,
    ``claims``) otherwise."""
    found = with_unit(question, claims, passages)
    if found is None:
        return None, claims
    words, n = found
    flags.append(f"unit_added: the answer was a bare number; the question asks how many {asked_unit(question)}, "
                 f"and [{n}] writes '{words}'")
    item = Item(words, (n,))
    again = check_items((item,), passages, ctx.judge, ctx.settings, question, recite=True)
    return render(Reply("answered", (item,), "json"), language_of(question) == "zh"), again
