"""The ambiguity step (issue 17 §1): the question (with the recent conversation) → ``Ambiguity``
``{has_ambiguity, ambiguity_type, confidence, clarifying_question, rewritten_queries}``, by rules over the question
and the spread of its passages — no model call, so a clear question pays nothing.

- ``reference``: a pronoun ("its", "they", 它, 其) with nothing in the question to refer to. With a conversation,
  the pronoun is resolved to the previous question's subject (``resolve_followup``: "their margin in 2022?" after
  a question about Acme Corporation → "Acme Corporation's margin in 2022?") and the question is no longer ambiguous.
- ``polysemy``: the passages the verifier rates best come from documents about different things that share the
  question's name (Mercury the planet and the element; two people named Michael Jordan) and no word of the
  question picks one of them.
- ``incomplete``: a lone term with no question ("Jaguar").

Rewrites are the whole original question plus one sense's label, so no constraint of the question is dropped and
none is added beyond the sense. ``confidence`` is compared with ``ambiguity_threshold`` (chosen on the dev half of
bench/reason/ambiguity_set.py; bench/RESULTS.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ragclinic.text.lang import language_of
from ragclinic.text.support import content_terms

PRONOUN_EN = re.compile(r"\b(it|its|this|that|these|those|they|them|their|he|him|his|she|her)\b", re.I)
PRONOUN_ZH = re.compile(r"(他们|她们|它们|他|她|它|其|这个|那个|该|此事|这件事)")
_NAME = re.compile(r"\b[A-Z][\w-]+")
_POSSESSIVE = {"its", "their", "his", "her"}


@dataclass(frozen=True)
class Ambiguity:
    has_ambiguity: bool
    ambiguity_type: str  # "reference", "polysemy", "missing_info", "incomplete", or "" when clear
    confidence: float
    clarifying_question: str = ""
    rewritten_queries: tuple[str, ...] = ()
    senses: tuple[dict, ...] = ()  # polysemy: {title, doc_id, terms}
    word: str = ""  # reference: the pronoun

    def to_json(self) -> dict:
        d = asdict(self)
        d["rewritten_queries"], d["senses"] = list(self.rewritten_queries), list(self.senses)
        return d


CLEAR = Ambiguity(False, "", 0.0)

_CLARIFY = {
    ("reference", "en"): "Who or what does “{word}” refer to in your question?",
    ("reference", "zh"): "您问题中的“{word}”指的是谁或什么？",
    ("polysemy", "en"): "Do you mean {options}?",
    ("polysemy", "zh"): "您指的是{options}？",
    ("incomplete", "en"): "What would you like to know about {question}?",
    ("incomplete", "zh"): "您想了解{question}的哪一方面？",
}


def clarifying_question(question: str, kind: str, word: str = "", titles: Sequence[str] = ()) -> str:
    lang = language_of(question)
    kind = kind if (kind, lang) in _CLARIFY else "incomplete"
    options = (" or " if lang == "en" else "还是").join(titles)
    return _CLARIFY[(kind, lang)].format(word=word, options=options, question=question.strip().rstrip("?？。."))


def _dangling(question: str) -> re.Match | None:
    """A pronoun in a question too short to hold what it refers to."""
    terms = content_terms(question)
    pron = PRONOUN_EN.search(question) or PRONOUN_ZH.search(question)
    names = _NAME.findall(question)[1:]
    return pron if pron and len(terms) <= 3 and not names else None


def refers_back(question: str) -> bool:
    """A pronoun the question itself does not explain (a follow-up that needs the conversation)."""
    return _dangling(question) is not None


def resolve_followup(question: str, conversation: Sequence[str]) -> str | None:
    """The follow-up with its dangling pronoun replaced by the previous question's subject; None when there is
    nothing to resolve (no pronoun, or no earlier question)."""
    pron = _dangling(question)
    if pron is None or not conversation:
        return None
    subject = _subject(conversation[-1])
    if not subject:
        return None
    word = pron.group()
    if language_of(question) == "zh":
        return question[:pron.start()] + subject + question[pron.end():]
    repl = f"{subject}'s" if word.lower() in _POSSESSIVE else subject
    return question[:pron.start()] + repl + question[pron.end():]


def _subject(previous: str) -> str:
    """What the previous question was about: its run of capitalised words (EN), else its longest content terms."""
    if language_of(previous) == "zh":  # the subject leads a Chinese question: the earliest term, longest first
        terms = sorted((t for t in content_terms(previous) if t in previous),
                       key=lambda t: (previous.index(t), -len(t)))
        return terms[0] if terms else ""
    runs = re.findall(r"(?:\b(?:the\s+)?[A-Z][\w.-]*(?:\s+(?:of\s+(?:the\s+)?)?[A-Z][\w.-]*)*)", previous[1:])
    runs = [r.strip() for r in runs if r.strip()]
    return max(runs, key=len) if runs else ""


def assess(question: str, passages: Sequence, threshold: float) -> Ambiguity:
    """The ambiguity of ``question`` over its scored passages (after a follow-up was resolved)."""
    terms = content_terms(question)
    if not terms:
        return Ambiguity(True, "incomplete", 1.0, clarifying_question(question, "incomplete"))
    pron = _dangling(question)
    if pron is not None:
        return Ambiguity(0.8 >= threshold, "reference", 0.8,
                         clarifying_question(question, "reference", pron.group()), word=pron.group())
    senses, confidence = _senses(question, passages)
    if len(senses) >= 2:
        titles = [s["title"] for s in senses]
        rewrites = tuple(f"{question.rstrip('?？')} ({t})?" for t in titles[:3])
        return Ambiguity(confidence >= threshold, "polysemy", confidence,
                         clarifying_question(question, "polysemy", titles=titles), rewrites, tuple(senses))
    if len(terms) == 1 and len(question.split()) <= 2 and language_of(question) == "en":
        return Ambiguity(0.85 >= threshold, "incomplete", 0.85, clarifying_question(question, "incomplete"))
    return CLEAR


def _senses(question: str, passages: Sequence) -> tuple[list[dict], float]:
    """Documents among the best passages that share a word of the question but barely any other vocabulary, and
    that no other word of the question tells apart; and how sure that is (0..1)."""
    q = content_terms(question)
    groups: dict[str, tuple] = {}
    for p in passages:
        if p.chunk.doc_id not in groups:
            text = f"{p.doc.title} {p.chunk.text}"
            groups[p.chunk.doc_id] = (p, content_terms(text) - q, q & content_terms(text))
    items = list(groups.values())
    if len(items) < 2:
        return [], 0.0
    best = max(p.support for p, _, _ in items)
    # a sense is a document named after the question's name ("Mercury (planet)", "Mercury (element)"): passages of
    # untitled or differently titled documents that share a word (news about another year) are not senses
    strong = [it for it in items if it[0].support >= 0.5 * best and it[1] and it[2]
              and q & content_terms(it[0].doc.title or "")]
    chosen: list[tuple] = []
    for it in strong:
        if all(len(it[1] & c[1]) / len(it[1] | c[1]) < 0.08 for c in chosen) and \
                (not chosen or it[2] & chosen[0][2]):  # the same name in both
            chosen.append(it)
    if len(chosen) < 2:
        return [], 0.0
    shared = set.intersection(*(set(c[2]) for c in chosen))
    telling = [t for t in q - shared if sum(t in c[2] for c in chosen) == 1]
    if telling:  # a word of the question is in one sense only: the question already says which
        return [], 0.0
    balance = min(c[0].support for c in chosen) / best if best > 0 else 0.0
    confidence = round(0.5 + 0.3 * balance + 0.2 * min(1.0, (len(chosen) - 1) / 2), 3)
    out = []
    for p, t, _ in chosen[:3]:
        title = p.doc.title or (p.chunk.section[-1] if p.chunk.section else p.chunk.doc_id)
        out.append({"title": title, "doc_id": p.chunk.doc_id, "terms": sorted(t, key=len, reverse=True)[:3]})
    return out, confidence
