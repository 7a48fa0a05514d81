"""Evidence scores: how well each passage answers the question (0..1), rules first, the judge to decide.

The lexical score is the share of the question's content terms the passage contains. It tells an answering
passage from an unrelated one, but not from a same-topic passage that lacks the answer: on RGB's hard
negatives 56% reach 0.75 coverage (bench/RESULTS.md, "Gate calibration"). So when a model judge is loaded,
the passages are judged — best lexical score first, at most ``gate_judge_max``, stopping at the first one
the judge accepts — and the decision rests on the judged scores only. Without a model judge the lexical
scores decide, against their own threshold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ragclinic.models.judge import Judge, LexicalJudge, relevance_threshold
from ragclinic.text.support import content_terms, coverage
from ragclinic.types import Passage
from ragclinic.verify import cheap


def is_model_judge(judge: Judge | None) -> bool:
    return judge is not None and not isinstance(judge, LexicalJudge)


def score_passages(question: str, passages: Sequence[Passage], judge: Judge | None, settings) -> list[Passage]:
    scored = [replace(p, support=coverage(question, p.chunk.text), support_by="lexical") for p in passages]
    if not is_model_judge(judge):
        return scored
    every = cheap(judge)  # a cheap verifier scores every passage; the language model's judge the likeliest few
    order = sorted(range(len(scored)), key=lambda i: (-scored[i].support, i))
    for i in order if every else order[:settings.gate_judge_max]:
        p = scored[i]
        if callable(getattr(judge, "verify", None)):  # a verifier says what its score rested on
            v = judge.verify("relevance", p.chunk.text, question)
            scored[i] = replace(p, support=v.p, support_by=v.by, support_why="; ".join(v.reasons[:2]))
        else:
            scored[i] = replace(p, support=judge.judge("relevance", p.chunk.text, question),
                                support_by=judge.model_id)
        if not every and scored[i].support >= relevance_threshold(judge, settings.gate_threshold_judge):
            break
    return scored


def decisive(passages: Sequence[Passage]) -> list[Passage]:
    """The passages the decision rests on: the judged ones when any were judged, else all."""
    judged = [p for p in passages if p.support_by != "lexical"]
    return judged or list(passages)


def threshold(passages: Sequence[Passage], settings, judge: Judge | None = None) -> float:
    """The sufficiency threshold that matches how the decisive passages were scored."""
    if judge is not None and any(p.support_by != "lexical" for p in passages):
        return relevance_threshold(judge, settings.gate_threshold_judge)
    return settings.gate_threshold_lexical


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
