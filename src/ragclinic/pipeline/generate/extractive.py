"""The extractive generator: no language model — the best-supported sentences of the passages, cited.

Each sentence is scored by the idf-weighted share of the question's terms it covers plus a little of its
passage's evidence score (so a sentence from the strongest passage wins a tie). A conflict adds both sides; a false
premise opens the answer with the correction. Used with ``--llm none`` and when the model cannot load.
"""

from __future__ import annotations

import math

from ragclinic.models.llm import TokenCallback
from ragclinic.pipeline.gate.templates import render
from ragclinic.pipeline.generate.base import GENERATORS, Draft, GenerateInput, number_of
from ragclinic.text.lang import language_of
from ragclinic.text.sentences import split_sentences
from ragclinic.text.support import content_terms
from ragclinic.pipeline.generate.points import point_excerpt


@GENERATORS.register("extractive")
class ExtractiveGenerator:
    name = "extractive"

    def __init__(self, max_sentences: int = 2) -> None:
        self.max_sentences = max_sentences

    def generate(self, inp: GenerateInput, on_token: TokenCallback | None = None) -> Draft:
        sentences = []
        for p in inp.passages:
            text = p.chunk.text
            for a, b in split_sentences(text, language=p.chunk.language):
                sent = " ".join(text[a:b].split())
                if _is_statement(sent):
                    sentences.append((p, sent, content_terms(sent)))
        chosen: list[tuple[int, str]] = []
        if inp.decision.path in ("global", "mixed"):  # the reduce step: every community point, cited
            chosen = _points(inp) + (_choose(inp.question, [s for s in sentences if not _is_community(s[0])],
                                             self.max_sentences, set()) if inp.decision.path == "mixed" else [])
        elif inp.sub_questions:  # the best sentences for each part (two each for up to two parts)
            per = self.max_sentences if len(inp.sub_questions) <= 2 else 1
            for q in inp.sub_questions:
                chosen += _choose(q, sentences, per, {s for _, s in chosen})
        else:
            chosen = _choose(inp.question, sentences, self.max_sentences, set())
        parts = []
        if inp.decision.false_premise:
            parts.append(render("false_premise", inp.question))
        for c in inp.conflicts:
            a, b = number_of(inp.passages, c.chunk_a), number_of(inp.passages, c.chunk_b)
            parts.append(_conflict_line(inp.question, a, b, c.sentence_a, c.sentence_b))
        if not inp.conflicts:
            parts += [f"{_strip_end(s)} [{n}]." if language_of(inp.question) == "en" else f"{_strip_end(s)}[{n}]。"
                      for n, s in chosen]
        text = " ".join(parts) if parts else render("no_evidence", inp.question)
        if on_token:
            on_token(text)
        return Draft(text, "extractive")


def _is_community(p) -> bool:
    return any(m.startswith("community=") for m in p.marks)


def _points(inp: GenerateInput) -> list[tuple[int, str]]:
    """A global answer without a model: each community passage's points (the map step's sentences)."""

    out = []
    for p in inp.passages:
        if _is_community(p) and (text := point_excerpt(p)):
            out += [(p.n, t) for t in text.split(" … ")]
    return out


def _choose(question: str, sentences: list, k: int, seen: set[str]) -> list[tuple[int, str]]:
    q_terms = content_terms(question)
    # idf over the candidate sentences: a term every sentence shares (the topic) weighs little, the
    # term that singles out the answer ("proxy") weighs most
    idf = {t: math.log((len(sentences) + 1) / (0.5 + sum(t in terms for _, _, terms in sentences)))
           for t in q_terms}
    total = sum(idf.values()) or 1.0
    candidates = []
    for p, sent, terms in sentences:
        score = sum(idf[t] for t in q_terms & terms) / total + 0.25 * p.support
        if score > 0.25 * p.support:
            candidates.append((score, p.n, sent))
    candidates.sort(key=lambda c: (-c[0], c[1]))
    chosen = []
    for _, n, sent in candidates:
        if sent not in seen:
            chosen.append((n, sent))
            seen = seen | {sent}
        if len(chosen) >= k:
            break
    return chosen


def _is_statement(sentence: str) -> bool:
    """Long enough to state something: headings and fragments ("Risk-free rate") are skipped."""
    if language_of(sentence) == "zh":
        return len(sentence) >= 8
    return len(sentence.split()) >= 5


def _strip_end(sentence: str) -> str:
    return sentence.rstrip(" .。!！?？;；")


def _conflict_line(question: str, a: int | None, b: int | None, sa: str, sb: str) -> str:
    if language_of(question) == "zh":
        return f"文档之间存在分歧：{_strip_end(sa)}[{a}]；而{_strip_end(sb)}[{b}]。"
    return f"The sources disagree: {_strip_end(sa)} [{a}]; but {_strip_end(sb)} [{b}]."
