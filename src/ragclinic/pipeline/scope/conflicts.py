"""Conflict marking: top passages from different documents that disagree on what is asked.

For each passage, the answer-bearing sentence is the one that covers most of the question's terms
(at least ``min_coverage``). Two such sentences from different documents conflict when
- both state a number with the same unit word and the numbers differ ("30 days" vs "14 days"),
- both state a year or an ISO date and they differ, or
- (English) the sentences match apart from their capitalised names and those differ.
Values already in the question are ignored (they are what is asked about, not the answer). Both
passages stay in the context, marked; nothing is dropped.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Sequence

from ragclinic.text.sentences import split_sentences
from ragclinic.text.support import content_terms, coverage
from ragclinic.types import Conflict, Passage
from ragclinic.verify import cheap, task_threshold
from ragclinic.verify.answer_check import answer_part
from ragclinic.verify.constraints import check_all

_YEAR_OR_DATE = re.compile(r"\b(?:1[5-9]\d\d|20\d\d)(?:-\d\d-\d\d)?\b|\d{4}年(?:\d{1,2}月(?:\d{1,2}日)?)?")
_NUM_UNIT = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)*)\s*(%|[A-Za-z]+|[\u4e00-\u9fff])")
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*\b")
_ASKS_WHEN = re.compile(r"\bwhen\b|\b(what|which) (year|date|day|month|time)\b|\bsince when\b|\bin what year\b"
                        r"|什么时候|何时|哪一?年|哪一?天|几月|几号|日期|年份|时间|哪个月", re.I)
_ASKS_AMOUNT = re.compile(r"\bhow (many|much|long|old|far|big|large|high|often)\b|\b(what|which) (percentage|percent|"
                          r"number|amount|rate|price|share|size|fee|cost|limit|level|value)\b|\bhow many\b"
                          r"|多少|几|多久|多长|多大|多高|多远|比例|百分|数量|金额|价格|费用|期限|额度", re.I)


def answer_sentence(question: str, text: str, min_coverage: float) -> str | None:
    best, best_cov = None, min_coverage
    for a, b in split_sentences(text):
        sent = text[a:b]
        cov = coverage(question, sent)
        if cov >= best_cov:
            best, best_cov = sent, cov
    return best


def _values(sentence: str, question: str) -> dict[str, set[str]]:
    s, q = unicodedata.normalize("NFKC", sentence), unicodedata.normalize("NFKC", question)
    dates = {d for d in _YEAR_OR_DATE.findall(s) if d not in q}
    numbers = {f"{n.replace(',', '')} {u.lower()}" for n, u in _NUM_UNIT.findall(s)
               if n not in q and not any(n in d for d in dates)}
    qnames = set(_NAME.findall(q))
    names = {n for n in _NAME.findall(s) if n not in qnames and s.find(n) > 0}  # skip sentence-initial caps
    return {"date": dates, "number": numbers, "entity": names}


def _number_conflict(a: set[str], b: set[str]) -> bool:
    units_a = {v.split(" ", 1)[1] for v in a}
    units_b = {v.split(" ", 1)[1] for v in b}
    shared = units_a & units_b
    return any({v for v in a if v.endswith(" " + u)}.isdisjoint({v for v in b if v.endswith(" " + u)})
               for u in shared)


def find_conflicts(question: str, passages: Sequence[Passage], top_n: int = 5,
                   min_coverage: float = 0.5, judge=None) -> list[Conflict]:
    found: list[tuple[Passage, str, dict[str, set[str]]]] = []
    for p in passages[:top_n]:
        sent = answer_sentence(question, p.chunk.text, min_coverage)
        if sent:
            found.append((p, sent, _values(sent, question)))
    out: list[Conflict] = []
    # A date or number disagreement matters only when the question asks for one: web snippets and reports
    # carry publication dates and side numbers that differ without disagreeing (measured on RGB: 4 of 5
    # answerable items had a "conflict" on a date the question did not ask about).
    asks_when, asks_amount = bool(_ASKS_WHEN.search(question)), bool(_ASKS_AMOUNT.search(question))
    for i, (pa, sa, va) in enumerate(found):
        for pb, sb, vb in found[i + 1:]:
            if pa.chunk.doc_id == pb.chunk.doc_id:
                continue
            kind, ca, cb = None, va, vb  # the values this pair's conflict names (va, vb stay A's and B's own)
            about_same = _shared(sa, sb) >= 0.5  # a date or number conflict needs sentences about the same thing
            if asks_when and about_same and va["date"] and vb["date"] and va["date"].isdisjoint(vb["date"]):
                kind = "date"
            elif asks_amount and about_same and va["number"] and vb["number"] and _number_conflict(va["number"], vb["number"]):
                kind = "number"
            elif va["entity"] and vb["entity"] and va["entity"].isdisjoint(vb["entity"]) and _same_frame(sa, sb, va, vb):
                kind = "entity"
            elif (swap := _swapped_span(sa, sb, question)) is not None:
                kind = "entity"
                ca, cb = {**va, "entity": {swap[0]}}, {**vb, "entity": {swap[1]}}
            elif judge is not None and about_same and (seen := _verified_conflict(judge, question, sa, sb,
                                                                                  pb.chunk.text, asks_amount)):
                kind, (xa, xb) = seen
                ca, cb = {**va, kind: xa}, {**vb, kind: xb}
            if kind:
                out.append(Conflict(kind, pa.chunk.id, pb.chunk.id, tuple(sorted(ca[kind])), tuple(sorted(cb[kind])),
                                    sa.strip(), sb.strip()))
    return out


def _verified_conflict(judge, question: str, sa: str, sb: str, passage_b: str, asks_amount: bool = True):
    """The verifier's contradiction head, asked whether passage B contradicts A's answer sentence — only for two
    sentences that both meet the question's constraints (the same year, ordinal, title) and give different
    numbers to a question that asks for one. (kind, (values A, values B)) or None."""

    if not cheap(judge) or any(c.verdict != "found" for c in check_all(question, sa) + check_all(question, sb)):
        return None
    (ta, na), (tb, nb) = answer_part(question, sa), answer_part(question, sb)
    # Numbers only: with names, two sentences about different aspects of one topic ("Rami Malek stars in it" /
    # "rated 8.6") read as different answers, and the head called them contradictory — 2 false conflicts, both
    # turned into regressions by the doctor, in the RGB noise-0.4 run (bench/RESULTS.md)
    if not (na and nb) or not asks_amount or not na.isdisjoint(nb):  # side numbers differ without disagreeing
        return None
    kind, xa, xb = "number", na, nb
    if judge.judge("contradiction", passage_b, sa) < task_threshold(judge, "contradiction", 0.5):
        return None
    return kind, (set(sorted(xa)[:3]), set(sorted(xb)[:3]))


def _shared(sa: str, sb: str) -> float:
    """Share of the shorter sentence's content terms (numbers and dates aside) that the other one has."""
    ta = content_terms(re.sub(r"\d+", " ", sa))
    tb = content_terms(re.sub(r"\d+", " ", sb))
    return len(ta & tb) / min(len(ta), len(tb)) if ta and tb else 0.0


def _swapped_span(sa: str, sb: str, question: str) -> tuple[str, str] | None:
    """Near-identical sentences (≥ 85% of characters shared) that differ in one short span — a name, a
    place, a number without a unit, in any language ("主办国俄罗斯" vs "主办国葡萄牙")."""
    a, b = unicodedata.normalize("NFKC", sa.strip()), unicodedata.normalize("NFKC", sb.strip())
    if a == b or min(len(a), len(b)) < 8:
        return None
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if sm.ratio() < 0.85:
        return None
    # a change inside a number is a change of the whole number ("70" → "170", "10.48" → "10.94"): spans that
    # widen to the same number are one change
    spans = {(*_widen(a, i1, i2), *_widen(b, j1, j2)) for op, i1, i2, j1, j2 in sm.get_opcodes() if op != "equal"}
    if len(spans) != 1:
        return None
    i1, i2, j1, j2 = spans.pop()
    x, y = a[i1:i2].strip(" ,，"), b[j1:j2].strip(" ,，")
    if not x or not y or len(x) > 16 or len(y) > 16 or x in question or y in question:
        return None
    if not (content_terms(x) or re.search(r"\d", x)) or not (content_terms(y) or re.search(r"\d", y)):
        return None
    return x, y


def _widen(text: str, i: int, j: int) -> tuple[int, int]:
    """[i, j) grown to the whole number it touches (digits and a decimal point)."""
    def num(k: int) -> bool:  # a digit, or a point between digits
        c = text[k]
        return c.isdigit() or (c == "." and 0 < k < len(text) - 1 and text[k - 1].isdigit() and text[k + 1].isdigit())

    touches = (i < j and any(text[k].isdigit() for k in range(i, j))) or (i > 0 and num(i - 1)) or \
        (j < len(text) and num(j))
    if not touches:
        return i, j
    while i > 0 and num(i - 1):
        i -= 1
    while j < len(text) and num(j):
        j += 1
    return i, j


def _same_frame(sa: str, sb: str, va: dict[str, set[str]], vb: dict[str, set[str]]) -> bool:
    """The two sentences say the same thing about different names (≥ 60% shared terms without the names)."""
    strip = lambda s, names: content_terms(_NAME.sub(" ", s))  # noqa: E731
    ta, tb = strip(sa, va["entity"]), strip(sb, vb["entity"])
    if not ta or not tb:
        return False
    return len(ta & tb) / min(len(ta), len(tb)) >= 0.6
