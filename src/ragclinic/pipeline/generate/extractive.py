"""The extractive generator: no language model — the best-supported sentences of the passages, cited.

Each sentence is scored by the share of the question's terms it covers plus a little of its passage's
evidence score (so a sentence from the strongest passage wins a tie). A conflict adds both sides; a false
premise opens the answer with the correction. Used with ``--llm none`` and when the model cannot load.
"""

from __future__ import annotations

from ragclinic.models.llm import TokenCallback
from ragclinic.pipeline.chunk.sentences import split_sentences
from ragclinic.pipeline.gate.templates import language_of, render
from ragclinic.pipeline.generate.base import GENERATORS, Draft, GenerateInput, number_of
from ragclinic.text.support import coverage


@GENERATORS.register("extractive")
class ExtractiveGenerator:
    name = "extractive"

    def __init__(self, max_sentences: int = 2) -> None:
        self.max_sentences = max_sentences

    def generate(self, inp: GenerateInput, on_token: TokenCallback | None = None) -> Draft:
        candidates = []
        for p in inp.passages:
            text = p.chunk.text
            for a, b in split_sentences(text, language=p.chunk.language):
                sent = " ".join(text[a:b].split())
                score = coverage(inp.question, sent) + 0.25 * p.support
                if score > 0 and _is_statement(sent):
                    candidates.append((score, p.n, sent))
        candidates.sort(key=lambda c: (-c[0], c[1]))
        chosen, seen = [], set()
        for _, n, sent in candidates:
            if sent not in seen:
                chosen.append((n, sent))
                seen.add(sent)
            if len(chosen) >= self.max_sentences:
                break
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
