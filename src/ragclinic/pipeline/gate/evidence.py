"""Evidence scores: how well each passage answers the question (0..1), rules first, the judge when unsure.

The lexical score is the share of the question's content terms the passage contains. A score at or above
``gate_lexical_sure`` is trusted as it is. Otherwise, when a model judge is loaded, the judge's P(yes) for
"does the passage contain the answer?" replaces it for the best-ranked ``gate_judge_max`` passages — a
paraphrase has low word overlap and only a model can see it. Without a model judge the lexical score
stands, compared with its own threshold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ragclinic.models.judge import Judge, LexicalJudge
from ragclinic.text.support import content_terms, coverage
from ragclinic.types import Passage


def is_model_judge(judge: Judge | None) -> bool:
    return judge is not None and not isinstance(judge, LexicalJudge)


def score_passages(question: str, passages: Sequence[Passage], judge: Judge | None, settings) -> list[Passage]:
    scored = [replace(p, support=coverage(question, p.chunk.text), support_by="lexical") for p in passages]
    if not is_model_judge(judge) or any(p.support >= settings.gate_lexical_sure for p in scored):
        return scored
    out, budget = [], settings.gate_judge_max
    for p in scored:
        if budget > 0:
            budget -= 1
            p = replace(p, support=judge.judge("relevance", p.chunk.text, question), support_by=judge.model_id)
        out.append(p)
    return out


def threshold(passages: Sequence[Passage], settings) -> float:
    """The sufficiency threshold that matches how the best passage was scored."""
    best = max(passages, key=lambda p: p.support, default=None)
    if best is None or best.support_by == "lexical":
        return settings.gate_threshold_lexical
    return settings.gate_threshold_judge


_SIDES = [
    re.compile(r"between (?P<a>.+?) and (?P<b>.+?)(?:\?|$| in | for )", re.I),
    re.compile(r"(?P<a>[\w\- ]+?)\s+(?:vs\.?|versus|or|compared (?:to|with)|than)\s+(?P<b>[\w\- ]+)", re.I),
    re.compile(r"compare (?P<a>.+?) (?:and|with|to) (?P<b>.+?)(?:\?|$)", re.I),
    re.compile(r"(?P<a>[\u4e00-\u9fff\w]+?)(?:和|与|跟|同|相比|比)(?P<b>[\u4e00-\u9fff\w]+?)(?:的)?(?:区别|不同|差异|比较|相比|哪个|有什么|$)"),
]


def comparison_sides(question: str) -> tuple[str, str] | None:
    for pattern in _SIDES:
        m = pattern.search(question)
        if m and content_terms(m["a"]) and content_terms(m["b"]):
            return m["a"].strip(), m["b"].strip()
    return None


def side_support(side: str, passages: Sequence[Passage]) -> float:
    """The best coverage of one side's terms by any passage."""
    return max((coverage(side, p.chunk.text) for p in passages), default=0.0)
