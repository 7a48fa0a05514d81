"""A how-to answer that is about something else than what was asked (issue 52).

Asked "只想让 wheel 组里的人能切换成超级用户，别人都不行，怎么设置？", the 1.5B model's points answer copied the first
sentence of the right passage ("在旧的 info su 底部 Richard M. Stallman 所说的一句名言") and not the next one, which
is the answer ("…启用了带有 pam_wheel.so 的行后，就能够限制非 wheel 组的用户 su 到 root 组的能力"). A how-to answer whose
every point shares no content word with the question, while a sentence of a passage it cites shares two or more,
is replaced by that sentence, cited to its passage — no model call. A one-fact answer ("8 and 63 characters
long") shares no word with its question by nature and is never touched.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragclinic.pipeline.generate.base import Item
from ragclinic.pipeline.generate.citations import check_items
from ragclinic.pipeline.generate.structured import Reply, render
from ragclinic.text.lang import language_of
from ragclinic.text.sentences import split_sentences
from ragclinic.text.support import content_terms
from ragclinic.types import Claim, Passage

MIN_SHARED = 2  # question words the passage's sentence must share to be taken as the answer instead


def off_question(question: str, claims: Sequence[Claim], passages: Sequence[Passage]) -> tuple[str, int] | None:
    """(the cited passage's sentence that addresses the question, its passage number) when no claim of the answer
    shares a content word with ``question``; None when the answer does, or no cited sentence shares enough."""
    asked = content_terms(question)
    if not asked or not claims or any(content_terms(c.text) & asked for c in claims):
        return None
    cited = {n for c in claims for n in c.cited}
    best: tuple[int, str, int] | None = None
    for p in passages:
        if p.n not in cited:
            continue
        text = p.chunk.text
        for a, b in split_sentences(text):
            sentence = " ".join(text[a:b].split())
            shared = len(content_terms(sentence) & asked)
            if shared >= MIN_SHARED and (best is None or shared > best[0]):
                best = (shared, sentence, p.n)
    return (best[1], best[2]) if best else None


def answered_on_question(ctx, question: str, claims, passages, flags: list[str]):
    """The answer and its claims, replaced by the cited sentence that addresses the question when the how-to
    answer does not (``off_question``); as they were otherwise. (text or None, claims)."""
    found = off_question(question, claims, passages)
    if found is None:
        return None, claims
    sentence, n = found
    item = Item(sentence.rstrip("。.!！"), (n,))
    flags.append(f"off_question: no point of the answer shares a word with the question; answered with the "
                 f"sentence of [{n}] that does")
    again = check_items((item,), passages, ctx.judge, ctx.settings, question, recite=True)
    return render(Reply("answered", (item,), "json"), language_of(question) == "zh"), again
