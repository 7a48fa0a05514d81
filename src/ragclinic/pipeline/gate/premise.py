"""False premise: the question asserts a year, date or number that the best evidence contradicts.

"Why did X win the prize in 1930?" against a passage saying X won it in 1921: the passage's answer
sentence covers the rest of the question, states a different value of the same kind, and never states
the question's value. With a model judge the suspicion must also pass its contradiction check.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from ragclinic.models.judge import Judge
from ragclinic.pipeline.scope.conflicts import answer_sentence
from ragclinic.types import Passage
from ragclinic.verify import task_threshold

_YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|20\d\d)(?!\d)")
_NUM_UNIT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(%|[A-Za-z]+|[\u4e00-\u9fff])")


def _values(text: str) -> tuple[set[str], set[tuple[str, str]]]:
    t = unicodedata.normalize("NFKC", text)
    years = set(_YEAR.findall(t))
    nums = {(n, u.lower()) for n, u in _NUM_UNIT.findall(t) if n not in years}
    return years, nums


def false_premise(question: str, passages: Sequence[Passage], judge: Judge | None) -> str:
    """A reason string when the premise is contradicted, else ""."""
    q_years, q_nums = _values(question)
    if not (q_years or q_nums):
        return ""
    bare = _YEAR.sub(" ", question)
    for p in sorted(passages, key=lambda p: -p.support)[:3]:
        text = unicodedata.normalize("NFKC", p.chunk.text)
        sent = answer_sentence(bare, text, 0.6)
        if not sent:
            continue
        s_years, s_nums = _values(sent)
        all_years, all_nums = _values(text)
        clash = None
        if q_years and s_years and not (q_years & all_years):
            clash = f"year {', '.join(sorted(q_years))} vs {', '.join(sorted(s_years))}"
        else:
            for n, u in q_nums:
                other = {m for m, v in s_nums if v == u and m != n}
                if other and (n, u) not in all_nums:
                    clash = f"{n} {u} vs {', '.join(sorted(other))} {u}"
                    break
        need = task_threshold(judge, "contradiction", 0.5)
        if clash and (judge is None or judge.judge("contradiction", p.chunk.text, question) >= need):
            return f"false premise: the question says {clash.split(' vs ')[0]} but passage [{p.n}] says " \
                   f"{clash.split(' vs ')[1]}"
    return ""
