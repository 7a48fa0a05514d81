"""Which path a question takes after the gate: ``direct`` (today's answer), or ``tools`` (a plan over the sql,
calculator and search tools) — by rules, so a plain question pays nothing for the check.

``tools`` when the question asks to combine several numbers ("in total", "together", "how many more",
"average", 一共, 合计, 相差 ...; not "how much did X grow", which asks for a stated figure: on RGB those cues sent
4 of 81 factual questions here) and the passages or the tables in scope hold numbers, or when it asks for a
superlative or an aggregate ("which product had the highest revenue", "最高") and a table in scope can answer it.
A superlative over plain text ("the tallest mountain") stays direct: the passage states it. So does a count
or total that a passage states with a total word beside the number and the thing counted ("how many tiers does
the scheme have in total" over "the scheme has 4 tiers in total, at 2%, 4%, 6% and 8%"; 一共有几个等级 over
一共设有5个会员等级): adding up the other numbers of that passage gave a wrong count (issue 52), and the peer,
reading the sentence, was right.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_ARITH = re.compile(  # combining several numbers; "how much did X grow" asks for a stated figure, not a sum
    r"\b(total|in total|sum|together|combined|altogether|in all|average|how many more|how much more|"
    r"how many fewer|how much less|difference between|by how much|whole year)\b|"
    r"一共|总共|合计|总计|加起来|总和|共计|平均|相差|多多少|少多少",
    re.I)
_SUPERLATIVE = re.compile(
    r"\b(highest|lowest|most|least|largest|smallest|biggest|maximum|minimum|top|best-selling|rank(ed)?)\b|"
    r"最高|最低|最多|最少|最大|最小|排名|第一名", re.I)
_NUMBER = re.compile(r"\d[\d,]*(\.\d+)?")
# a count or total asked for; the group is the thing counted (its first words / characters)
_COUNT_EN = re.compile(r"\bhow (?:many|much)\s+([a-z][a-z-]*)", re.I)
_COUNT_ZH = re.compile(r"(?:多少|几)(?:个|条|名|位|项|种|家|座|所|级|层|本|辆|台|次|人|间|张|部|门|款)?([\u4e00-\u9fff]{1,2})")
# a total stated in a sentence: a total word beside a number
_ZH_NUM = r"(?:\d[\d,，.]*|[一二两三四五六七八九十百千万]+)"
_STATED_ZH = re.compile(r"(?:一共|总共|共计|合计|总计|共)[\u4e00-\u9fff]{0,3}?\s*" + _ZH_NUM)  # 共有12条, 总共支持14种
_STATED_EN = re.compile(r"\b(?:a total of|total of)\s+\d|\d[\d,.]*\s+(?:[a-z-]+\s+){0,3}(?:in total|altogether|in all)\b"
                        r"|\b(?:in total|altogether|in all)\b[^.;]{0,30}?\d", re.I)
_CLAUSE = re.compile(r"[.!?。！？;；\n，]|,(?=\s)")  # "120,000" stays one number


def choose_path(question: str, passages: Sequence, tables: Sequence[dict]) -> tuple[str, str]:
    """(path, why)."""
    arith = _ARITH.search(question)
    if tables and (arith or _SUPERLATIVE.search(question)):
        cue = (arith or _SUPERLATIVE.search(question)).group(0)
        return "tools", f"{cue!r} over {len(tables)} table(s) in scope"
    if arith and (stated := stated_total(question, passages[:5])):
        return "direct", f"{arith.group(0)!r}, but a passage states it: {stated!r}"
    if arith:
        numbers = sum(len(_NUMBER.findall(p.chunk.text)) for p in passages[:5])
        if numbers >= 2:
            return "tools", f"{arith.group(0)!r} over {numbers} numbers in the passages"
    return "direct", ""


def stated_total(question: str, passages: Sequence) -> str:
    """The clause of a passage that states the count or total the question asks for — a total word beside a
    number, in a clause that names the thing counted — or "" when none does (or the question asks no count)."""
    m = _COUNT_EN.search(question) or _COUNT_ZH.search(question)
    if not m:
        return ""
    thing = m.group(1).lower()
    stem = thing[:5] if thing.isascii() else thing
    for p in passages:
        for sent in _CLAUSE.split(p.chunk.text):
            if stem in sent.lower() and (_STATED_EN.search(sent) or _STATED_ZH.search(sent)):
                return sent.strip()
    return ""
