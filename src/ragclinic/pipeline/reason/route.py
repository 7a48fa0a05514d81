"""Which path a question takes after the gate: ``direct`` (today's answer), or ``tools`` (a plan over the sql,
calculator and search tools) — by rules, so a plain question pays nothing for the check.

``tools`` when the question asks to combine several numbers ("in total", "together", "how many more",
"average", 一共, 合计, 相差 ...; not "how much did X grow", which asks for a stated figure: on RGB those cues sent
4 of 81 factual questions here) and the passages or the tables in scope hold numbers, or when it asks for a
superlative or an aggregate ("which product had the highest revenue", "最高") and a table in scope can answer it.
A superlative over plain text ("the tallest mountain") stays direct: the passage states it.
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


def choose_path(question: str, passages: Sequence, tables: Sequence[dict]) -> tuple[str, str]:
    """(path, why)."""
    arith = _ARITH.search(question)
    if tables and (arith or _SUPERLATIVE.search(question)):
        cue = (arith or _SUPERLATIVE.search(question)).group(0)
        return "tools", f"{cue!r} over {len(tables)} table(s) in scope"
    if arith:
        numbers = sum(len(_NUMBER.findall(p.chunk.text)) for p in passages[:5])
        if numbers >= 2:
            return "tools", f"{arith.group(0)!r} over {numbers} numbers in the passages"
    return "direct", ""
