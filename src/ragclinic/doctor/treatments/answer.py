"""Treatments that change the answer: constrained refinement and stating a conflict (model-free: they
re-arrange what the passages and the checked claims already say, so they cannot add an entity or a
number), and voting over prompt variants (model calls)."""

from __future__ import annotations

from dataclasses import replace

from ragclinic.doctor.detectors.faithfulness import rule_risk
from ragclinic.doctor.symptoms import Exam
from ragclinic.types import Symptom
from ragclinic.doctor.treatments.base import TREATMENTS, Change
from ragclinic.pipeline.gate import render
from ragclinic.text.lang import language_of
from ragclinic.pipeline.generate import GenerateInput
from ragclinic.pipeline.generate import ExtractiveGenerator
from ragclinic.pipeline.scope import authority_level, version_key
from ragclinic.text.support import lexical_support
from ragclinic.types import DocInfo, Passage


def _with_draft(text: str):
    return lambda s: replace(s, draft=text)


def _cite(text: str, ns, zh: bool) -> str:
    core = text.rstrip(" .。!！?？")
    end = "。" if zh else "."
    marks = "".join(f"[{n}]" for n in ns) if zh else " " + " ".join(f"[{n}]" for n in ns)
    return f"{core}{marks if ns else ''}{end}"


def _extractive(exam: Exam) -> str:
    s = exam.state
    inp = GenerateInput(exam.question, s.passages, s.decision, s.conflicts, s.request.sub_questions)
    return ExtractiveGenerator(exam.settings.extractive_sentences).generate(inp).text


def refined_text(exam: Exam, doubtful: set[str], fallback: bool) -> tuple[str, tuple[str, ...]] | None:
    """The answer's confirmed claims (citations corrected to the passage that states them), the doubtful
    ones left out — and the note that counts them (shown beside the answer, not in it). With nothing left: the
    passages' own best sentences if ``fallback`` (the answer ignored the passages), else None — quoting sentences
    near the question is not answering it."""
    zh = language_of(exam.question) == "zh"
    kept, dropped = [], 0
    for c in exam.answer.claims:
        if c.text in doubtful or c.verdict == "contradicted":
            dropped += 1
            continue
        if c.verdict == "supported":
            kept.append(_cite(c.text, c.cited, zh))
            continue
        best = max(exam.passages, key=lambda p: lexical_support(c.text, p.chunk.text), default=None)
        if best is not None and rule_risk(c.text, best.chunk.text, exam.question).score < 0.5:
            kept.append(_cite(c.text, (best.n,), zh))
        else:
            dropped += 1
    if not kept and not fallback:
        return None
    body = ("" if zh else " ").join(kept) if kept else _extractive(exam)
    return body, ((render("refined", exam.question, k=str(dropped)),) if dropped else ())


@TREATMENTS.register("refine")
class Refine:
    name = "refine"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        if exam.answer is None or exam.answer.route != "answer" or not exam.passages:
            return []
        doubtful = {c for s in exam.symptoms for c in s.data.get("claims", ())}
        refined = refined_text(exam, doubtful, fallback=symptom.name == "ignored_context")
        if refined is None or refined[0].strip() == exam.answer.text.strip():
            return []
        text, notes = refined
        return [Change(self.name, "generate", "answer rewritten from confirmed claims and passage sentences only",
                       _with_draft(text), uses_model=False, notes=notes)]


def _preference(doc: DocInfo, settings) -> tuple:
    level = authority_level(doc.tags, settings.authority_tag, settings.authority_levels)
    return (version_key(str(doc.tags.get("version", ""))), str(doc.tags.get("date", "")), level or 0.0)


def _why(a: DocInfo, b: DocInfo, settings, zh: bool) -> str:
    if version_key(str(a.tags.get("version", ""))) != version_key(str(b.tags.get("version", ""))):
        return "较新版本" if zh else "newer version of the"
    if str(a.tags.get("date", "")) != str(b.tags.get("date", "")):
        return "较新" if zh else "more recent"
    return "更权威" if zh else "more authoritative"


@TREATMENTS.register("state_conflict")
class StateConflict:
    """Both sides with their sources, the preferred one (newest, most authoritative) first."""

    name = "state_conflict"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        if exam.answer is None or exam.answer.route != "answer" or not exam.state.conflicts:
            return []
        zh = language_of(exam.question) == "zh"
        by_id: dict[str, Passage] = {p.chunk.id: p for p in exam.passages}
        lines, notes = [], []
        for c in exam.state.conflicts[:1]:  # the first (top-ranked) disagreement; more would bury the answer
            pa, pb = by_id.get(c.chunk_a), by_id.get(c.chunk_b)
            if pa is None or pb is None:
                continue
            sides = [(pa, c.sentence_a), (pb, c.sentence_b)]
            sides.sort(key=lambda t: _preference(t[0].doc, exam.settings), reverse=True)
            (p1, s1), (p2, s2) = sides
            if zh:
                line = f"文档之间存在分歧：{s1.rstrip('。.')}[{p1.n}]；而{s2.rstrip('。.')}[{p2.n}]。"
            else:
                line = f"The sources disagree: {s1.rstrip('.')} [{p1.n}]; but {s2.rstrip('.')} [{p2.n}]."
            if _preference(p1.doc, exam.settings) != _preference(p2.doc, exam.settings):  # a note beside it
                notes.append(render("prefer", exam.question, n=str(p1.n), why=_why(p1.doc, p2.doc, exam.settings, zh)))
            lines.append(line)
        if not lines:
            return []
        return [Change(self.name, "generate", "answer states the conflict, preferred source first",
                       _with_draft(("" if zh else " ").join(lines)), uses_model=False, notes=tuple(notes))]


@TREATMENTS.register("vote")
class Vote:
    """Weakly supported answer: generate with other prompt variants; the doctor keeps the best supported."""

    name = "vote"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        a = exam.answer
        if a is None or a.route != "answer" or a.generator in ("extractive", "template", "doctor"):
            return []
        if exam.state.request.prompt_variant:
            return []
        return [Change(self.name, "generate", f"prompt variant {v}",
                       (lambda v: lambda s: replace(s, request=replace(s.request, prompt_variant=v)))(v))
                for v in (1, 2)]



