"""Cheap, model-free evidence signals shared by the gate, the generator's citation check and the judge's
fallback: content-term coverage, number agreement and answer-bearing sentences.

These are the first tier of every support decision (rules before models): they are exact about numbers
and names and blind to paraphrase, which is why an uncertain score goes to the judge when one is loaded.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from ragclinic.text.analyzer import analyze
from ragclinic.text.lang import simplified

# Question and function words that say nothing about the topic (English stems and Chinese particles).
_QUESTION_WORDS = frozenset(
    "什么 哪 哪个 哪些 哪里 谁 多少 几 怎么 怎样 如何 为什么 为何 是否 吗 呢 吧 啊 的 了 是 在 和 与 及 或 有 "
    "这 那 一个 请问 请 告诉 我 你 们 之 其 被 把 对 从 到 也 都 就 而 并 还 会 能 可以 要 "
    "mani much mani long often whose tell give explain describe list name pleas know "
    # how answers talk about their sources ("according to passage [2]", "根据[1]和[2]两段"): not content
    "根据 段落 两段 三段 文档 所述 描述 陈述 accord passag".split()
)
# Not preceded by a Latin letter, digit or point (a Chinese character may precede: "支付3%的利息"), but for the
# second factor of "4x200" (a relay, a size: both numbers are stated).
_NUMBER = re.compile(r"(?:(?<=\d[xX])|(?<![A-Za-z0-9_.]))[-+]?\d+(?:[,，]\d{3})*(?:\.\d+)?(?![\d])")


# Chinese ordinals ("第四任", "第十二届"): the number a claim may write in digits ("第4屆").
_ORDINAL = re.compile(r"第([零一二两三四五六七八九十百]{1,4})")
_DIGIT = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"两": 2}


def _cn_number(s: str) -> int | None:
    """一 → 1, 十二 → 12, 二十 → 20, 一百零五 → 105; None for what is not a plain numeral."""
    total, digit = 0, None
    for ch in s:
        if ch in _DIGIT:
            digit = _DIGIT[ch]
        else:
            total += (1 if digit is None else digit) * (10 if ch == "十" else 100)
            digit = None
    return total + (digit or 0) or None


@lru_cache(maxsize=4096)
def content_terms(text: str) -> frozenset[str]:
    """Analyzer tokens minus question words; single CJK characters dropped when longer words exist. Chinese in
    simplified form (a traditional passage supports a simplified claim)."""
    toks = [t for t in analyze(simplified(text)) if t not in _QUESTION_WORDS]
    multi = [t for t in toks if len(t) > 1]
    return frozenset(multi if multi else toks)


def numbers(text: str) -> frozenset[str]:
    """Numbers in normalised form: NFKC, thousands separators removed, trailing decimal zeros dropped."""
    out = {str(v) for m in _ORDINAL.finditer(text) if (v := _cn_number(m.group(1)))}  # 第四任 = 第4任
    for m in _NUMBER.finditer(unicodedata.normalize("NFKC", text)):
        n = m.group().replace(",", "").replace("，", "").lstrip("+")
        if "." in n:
            n = n.rstrip("0").rstrip(".")
        out.add(n)
    return frozenset(out)


_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
         "seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_ORDINALS = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
             "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth").split()
_WORD_VALUE = ({w: i for i, w in enumerate(_ONES)} | {w: 20 + 10 * i for i, w in enumerate(_TENS)}
               | {w: i + 1 for i, w in enumerate(_ORDINALS)})
NUMBER_WORDS = {w: v for w, v in _WORD_VALUE.items() if w in _ONES or w in _TENS}  # "two" → 2 (not ordinals)
_SPELLED = re.compile(r"\b(" + "|".join(_TENS) + r")[- ](" + "|".join(_ONES[1:10]) + r")\b|\b("
                      + "|".join(sorted(_WORD_VALUE, key=len, reverse=True)) + r")\b", re.I)
# a Chinese numeral counting something ("两个", "三种", "十二届"): bare 一 is too common ("统一", "一般") to be a number
_CN_COUNT = re.compile(r"([零一二两三四五六七八九十百]{1,4})(?=[个种项次名位年月天条款届座家人件本步倍章节层级])")


def stated_numbers(text: str) -> frozenset[str]:
    """``numbers`` plus the numbers a passage writes in words ("two Golden Globe Awards", "twenty-one", "third",
    "两个"): the side that must *have* a claim's number. A claim's own numbers stay ``numbers`` (digits), so a
    written-out answer is left to the verifier as before."""
    out = set(numbers(text))
    for m in _SPELLED.finditer(text):
        if m.group(1):
            out.add(str(_WORD_VALUE[m.group(1).lower()] + _WORD_VALUE[m.group(2).lower()]))
        else:
            out.add(str(_WORD_VALUE[m.group(3).lower()]))
    out.update(str(v) for m in _CN_COUNT.finditer(text) if (v := _cn_number(m.group(1))))
    return frozenset(out)


def coverage(query: str, passage: str) -> float:
    """Share of the query's content terms found in the passage (0..1; 0 when the query has none)."""
    q = content_terms(query)
    if not q:
        return 0.0
    return len(q & content_terms(passage)) / len(q)


def term_weight(term: str) -> float:
    """Longer terms are rarer and more specific ("立法会" over "选举", "championship" over "year")."""
    return min(len(term), 8) if not term.isdigit() else 6.0


def weighted_coverage(q_terms: frozenset[str], text: str) -> float:
    """The share of ``q_terms`` in ``text``, each weighted by ``term_weight``."""
    total = sum(term_weight(t) for t in q_terms) or 1.0
    return sum(term_weight(t) for t in q_terms & content_terms(text)) / total


def lexical_support(claim: str, passage: str) -> float:
    """How well ``passage`` supports ``claim`` by words and numbers alone (0..1).

    Term coverage, capped at 0.3 when the claim states a number the passage does not contain: a changed
    number is the commonest unsupported claim and word overlap alone would miss it.
    """
    score = coverage(claim, passage)
    claim_numbers = numbers(claim)
    if claim_numbers and not claim_numbers <= stated_numbers(passage):
        score = min(score, 0.3)
    return score
