"""Citation parsing and validation, claim by claim, and the outside-knowledge phrase check.

Each sentence of the answer is a claim. Its [n] markers must name passages that were given (else
``invalid_citation``); the best cited passage must support it — by words and numbers first, and when that
is unsure, by the judge (support, then — if ``claim_judge_contradiction`` — contradiction) within
``claim_judge_max`` calls. A sentence that
only says the documents are silent is not a claim.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragclinic.models.judge import Judge
from ragclinic.pipeline.gate.evidence import is_model_judge
from ragclinic.pipeline.generate.base import Item
from ragclinic.text.lang import detect_language
from ragclinic.text.sentences import split_sentences
from ragclinic.text.support import content_terms, lexical_support, numbers, stated_numbers
from ragclinic.types import Citation, Claim, Passage
from ragclinic.verify import cheap, task_threshold
from ragclinic.verify.answer_check import backing
from ragclinic.verify.base import SHORT_ANSWER_TERMS, judge_text

CITE = re.compile(r"\[(\d+(?:\s*[,，、]\s*\d+)*)\]")
VIOLATION_PHRASES = (
    "as far as i know", "generally speaking", "in general,", "it is widely known", "from my knowledge",
    "based on my knowledge", "i believe", "typically,", "as an ai",
    "据我所知", "通常来说", "一般来说", "众所周知", "根据我的了解", "我认为",
)
# Sentences that are not claims about the topic: "the documents do not say", premise corrections, the
# doctor's note naming the preferred source of a conflict, and the small model's empty confirmations
# ("可以确认这一点。", "This is confirmed by the passage.").
_SILENCE = re.compile(r"(documents? (do|does) not (say|mention|contain)|passages? (do|does) not (say|mention|contain)"
                      r"|can't answer this from the documents|not (mentioned|stated) in the|文档中没有(提到|提及|说明)|段落中没有|无法根据文档"
                      r"|contradict the premise|与问题的前提相矛盾"
                      r"|^\s*is the (newer version of the|more recent|more authoritative) source|^\s*是(较新版本|较新|更权威)的来源)",
                      re.I)
# Not claims either, but not a decline: the small model's empty confirmations.
_FILLER = re.compile(r"^\s*(这一点)?(可以|能够)?(确认|证实)(这一点)?\s*(\[\d+\]\s*)*[。.!！]?\s*$"
                     r"|^\s*this (is|can be) (confirmed|seen|verified)( by| in)?( the)?( passages?| documents?)?\s*"
                     r"(\[\d+\]\s*)*[.!]?\s*$", re.I)
# A conflict statement ("The sources disagree: A [1]; but B [2].") is two claims, one per side.
_CONFLICT = re.compile(r"^\s*(the sources disagree:|文档之间存在分歧：)\s*", re.I)
_SIDE = re.compile(r"[;；]\s*(but|而)?\s*", re.I)


def declines(text: str) -> bool:
    """The answer only says that the documents do not contain the answer."""
    bare = CITE.sub("", text).strip()
    return bool(bare) and bool(_SILENCE.search(bare)) and len(bare) < 160


def parse_citations(text: str) -> list[int]:
    return [int(n) for m in CITE.finditer(text) for n in re.split(r"\s*[,，、]\s*", m.group(1))]


def violations(text: str) -> list[str]:
    low = text.lower()
    return [p for p in VIOLATION_PHRASES if p in low]


# Spans no sentence boundary may fall in (and no citation may be put in): `code`, {format} tokens, quotations.
_ATOMIC = re.compile(r"`[^`\n]*`|\{[^{}\s]{0,40}\}|“[^”\n]{0,200}”|\"[^\"\n]{0,200}\"")


def _masked(text: str) -> str:
    """``text`` with every atomic span's inside replaced by letters of the same length (offsets unchanged). A
    quotation keeps a full stop at its end ('He said "we won." The council ...' is two sentences)."""
    def mask(m: re.Match) -> str:
        g = m.group()
        inner = g[1:-1]
        keep = len(inner) - len(inner.rstrip(".!?。！？")) if g[0] in "“\"" else 0
        return g[0] + "x" * (len(inner) - keep) + inner[len(inner) - keep:] + g[-1]

    return _ATOMIC.sub(mask, text)


def answer_sentences(text: str) -> list[str]:
    out = []
    masked = _masked(text)
    for a, b in split_sentences(masked, language=detect_language(text)):
        s = text[a:b].strip()
        if s and CITE.fullmatch(s.replace(" ", "")) and out:
            out[-1] += " " + s  # a citation split off as its own "sentence" belongs to the one before
        elif s:
            out.append(s)
    return out


def _claim_sentences(answer: str) -> list[str]:
    out = []
    for sent in answer_sentences(answer):
        if _CONFLICT.match(sent):
            out += [part for part in _SIDE.split(_CONFLICT.sub("", sent)) if part and not re.fullmatch(r"but|而", part, re.I)]
        else:
            out.append(sent)
    return out


def check_claims(answer: str, passages: Sequence[Passage], judge: Judge | None, settings, question: str = ""
                 ) -> list[Claim]:
    """The claims of a text the system wrote (the extractive answer, a treatment's draft, the tools' answer): one
    a sentence, its [n] marks as its citations; sentences that only say the documents are silent are skipped."""
    items = []
    for sent in _claim_sentences(answer):
        bare = CITE.sub("", sent).strip()
        if content_terms(bare) and not _SILENCE.search(bare) and not _FILLER.search(sent):
            items.append(Item(bare, tuple(dict.fromkeys(parse_citations(sent)))))
    return check_items(items, passages, judge, settings, question)


def check_items(items: Sequence[Item], passages: Sequence[Passage], judge: Judge | None, settings,
                question: str = "", recite: bool = False) -> list[Claim]:
    """Each claim against the passages it cites (all passages when it cites none): supported, unsupported,
    contradicted, uncited (supported but not cited) or invalid_citation (a number no passage has). ``recite`` (a
    structured answer, whose text is rendered from its items' citations): a claim its cited passages do not back
    is checked against the other passages (``_recited``)."""
    by_n = {p.n: p for p in passages}
    # the 1.5B judge is asked only about claims word overlap doubts, within a budget; a cheap verifier decides
    # every claim (word overlap cannot see a claim built from the passage's words about another event)
    judge_budget = settings.claim_judge_max if is_model_judge(judge) else 0
    claims = []
    for item in items:
        bare, cited = item.text, tuple(dict.fromkeys(item.evidence))
        if not bare.strip() or declines(bare):  # "the documents do not say" is not a claim
            continue
        if any(n not in by_n for n in cited):
            bad = [n for n in cited if n not in by_n]
            claims.append(Claim(bare, cited, "invalid_citation", 0.0, "", f"no passage {bad}"))
            continue
        pool = [by_n[n] for n in cited] if cited else list(passages)
        passage_bound = False  # the verdict is about these passages (another may back the claim)
        if pool and _repeats_question(bare, question):  # no answer, whichever passage has the number
            verdict, score, best, by = "unsupported", 0.0, pool[0], "the answer only repeats the question's number"
        elif (missing := _numbers_missing(bare, pool)) and pool:
            verdict, score, best, by = "unsupported", 0.0, pool[0], f"numbers: {', '.join(sorted(missing))} in no passage"
            passage_bound = True
        elif cheap(judge) and pool:
            verdict, score, best, by = _verified(judge, bare, pool, question)
            passage_bound = True
        else:
            verdict, score, best, by, judge_budget = _judged(judge, judge_text(bare, question), pool, settings,
                                                             judge_budget)
        if recite and passage_bound and verdict == "unsupported" and cited and cheap(judge):
            verdict, score, best, by, cited = _recited(judge, bare, passages, cited, question,
                                                       (verdict, score, best, by, cited))
        if not cited and verdict == "supported":
            verdict = "uncited"
        if verdict == "supported" and len(cited) > 1:
            cited = _stating(judge, bare, [by_n[n] for n in cited], best, settings, question)
        claims.append(Claim(bare, cited, verdict, round(score, 4), best.chunk.id if best else "", by))
    return claims


def _stating(judge, claim: str, cited: Sequence[Passage], best: Passage, settings, question: str) -> tuple[int, ...]:
    """Of a supported claim's cited passages, those that state it (the small model lists every passage it was
    shown): by the verifier when it is cheap, else by words and numbers; the best one at least."""
    def states(p: Passage) -> bool:
        if p is best:
            return True
        if cheap(judge):
            return (judge.judge("support", p.chunk.text, judge_text(claim, question))
                    >= task_threshold(judge, "support", 0.5) or bool(question and backing(question, claim, p.chunk.text).backed))
        return lexical_support(claim, p.chunk.text) >= settings.claim_lexical_threshold
    return tuple(p.n for p in cited if states(p))


def _recited(verifier, claim: str, passages: Sequence[Passage], cited: tuple[int, ...], question: str, kept):
    """A claim its cited passages do not back, checked against the other passages shown: the small model cites the
    wrong number beside a right answer ("apt-cacher-ng" [2][3] from the table row in [1]), and refusing such an
    answer loses it. When another passage backs it (numbers included), the claim is supported with that passage
    as its citation and ``+recited`` in how it was checked; else ``kept`` stands."""
    others = [p for p in passages if p.n not in cited]
    if not others:
        return kept
    verdict, score, best, by = _verified(verifier, claim, others, question)
    if verdict != "supported" or _numbers_missing(claim, [best]):
        return kept
    return verdict, score, best, by + "+recited", (best.n,)


def _numbers_missing(claim: str, pool: Sequence[Passage]) -> set[str]:
    """The numbers a short answer ("6", "1361万人", "July 29, 2021") states that none of ``pool`` has: such an
    answer cannot rest on them, whatever a judge's probability says. Longer claims are left to the judge (their
    numbers may be written out: "two steps")."""
    if len(content_terms(claim)) >= SHORT_ANSWER_TERMS:
        return set()
    said = numbers(claim)
    if not said:
        return set()
    have = set().union(*(stated_numbers(p.chunk.text) for p in pool)) if pool else set()
    return set(said) - have


_CHOICE = re.compile(r"\bor\b|还是|或者|哪个更|哪一个", re.I)


def _repeats_question(claim: str, question: str) -> bool:
    """A short answer whose numbers all come from the question and that says nothing else ("6" to
    "第六届立法会有多少个议席？": the model echoed the ordinal) answers nothing. Choice questions ("1990 or 1995?")
    are left alone: their answer is in the question."""
    if not question or _CHOICE.search(question) or len(content_terms(claim)) >= SHORT_ANSWER_TERMS:
        return False
    said = numbers(claim)
    if not said or not said <= numbers(question):
        return False
    return not (content_terms(claim) - content_terms(question) - said)


def _verified(verifier, claim: str, pool: Sequence[Passage], question: str) -> tuple[str, float, Passage, str]:
    """The verifier's support for the claim in its best passage; a claim whose answer part a passage holds, about
    what the question asks (answer-then-verify), is supported too — the support head is stricter about rewording
    ("我国" for "中国") than answers need; contradiction is asked when neither holds."""
    text = judge_text(claim, question)
    score, best = max(((verifier.judge("support", p.chunk.text, text), p) for p in pool), key=lambda t: t[0])
    by = verifier.model_id
    if score >= task_threshold(verifier, "support", 0.5):
        return "supported", score, best, by
    if question:
        for p in pool:
            if backing(question, claim, p.chunk.text).backed:
                return "supported", score, p, by + "+answer-check"
    if verifier.judge("contradiction", best.chunk.text, text) >= task_threshold(verifier, "contradiction", 0.5):
        return "contradicted", score, best, by
    return "unsupported", score, best, by


def _judged(judge, claim: str, pool: Sequence[Passage], settings, budget: int):
    """Word overlap first; the judge (within ``budget`` calls) for claims it doubts."""
    score, best = max(((lexical_support(claim, p.chunk.text), p) for p in pool), key=lambda t: t[0],
                      default=(0.0, None))
    verdict, by = ("supported" if score >= settings.claim_lexical_threshold else "unsupported"), "lexical"
    if verdict == "unsupported" and budget > 0 and best is not None:
        budget -= 1
        p_sup = judge.judge("support", best.chunk.text, claim)
        by = judge.model_id
        if p_sup >= settings.claim_threshold_judge:
            verdict, score = "supported", p_sup
        elif budget > 0 and settings.claim_judge_contradiction:
            budget -= 1
            if judge.judge("contradiction", best.chunk.text, claim) >= settings.claim_threshold_judge:
                verdict = "contradicted"
    return verdict, score, best, by, budget


def citation_of(p: Passage) -> Citation:
    """The citation of a passage, as the answer lists it."""
    return Citation(p.n, p.chunk.id, p.chunk.doc_id, p.chunk.text, p.doc.path, p.doc.title)
