"""Query symptoms: ``ambiguous``, ``compound``, ``term_mismatch`` — rules over the question, the lexicon
and the spread of its hits."""

from __future__ import annotations

import re

from ragclinic.doctor.symptoms import DETECTORS, Exam, clamp
from ragclinic.types import Symptom
from ragclinic.text.analyzer import analyze
from ragclinic.text.lang import detect_language
from ragclinic.text.support import content_terms

from ragclinic.pipeline.reason import PRONOUN_EN as _PRONOUN_EN
from ragclinic.pipeline.reason import PRONOUN_ZH as _PRONOUN_ZH
from ragclinic.pipeline.reason import assess_ambiguity as assess
_SPLIT_EN = re.compile(r"\?\s+|;\s+|,?\s+and\s+(?=(what|how|why|when|where|who|which|whom|whose)\b)", re.I)
_SPLIT_ZH = re.compile(r"[？?；;]\s*|，?(以及|另外)(?=[\u4e00-\u9fff]{0,6}(什么|哪|谁|多少|怎么|为什么|如何|何时|几))")
# A part counts as a question of its own only if it asks something (measured on RGB, HaluEval, CMRC2018 and
# SciFact questions: bench/doctor_calibration_bench.py).
_ASKS_EN = re.compile(r"\b(what|how|why|when|where|who|whom|whose|which)\b|^\s*(is|are|was|were|does|do|did|can|"
                      r"could|should|will|has|have)\b", re.I)
_ASKS_ZH = re.compile(r"什么|哪|谁|多少|怎么|为什么|如何|何时|几|吗|呢|是否")


def split_question(question: str) -> list[str]:
    """Sub-questions (≤ 3) of a compound question; one item when it is a single question."""
    zh = detect_language(question) == "zh"
    pieces = [p for p in (_SPLIT_ZH if zh else _SPLIT_EN).split(question) if p and not
              re.fullmatch(r"(以及|另外|什么|哪|谁|多少|怎么|为什么|如何|何时|几|what|how|why|when|where|who|which|whom|whose|is|are|was|were|"
                           r"does|do|did|can|could|should|will)", p.strip(), re.I)]
    parts = [p.strip(" ，,;；") for p in pieces if len(content_terms(p)) >= 1 and len(p.strip()) > 3]
    asks = _ASKS_ZH if zh else _ASKS_EN
    if len(parts) < 2 or not all(asks.search(p) for p in parts):
        return [question]
    topic = _topic_words(parts[0])
    out = [parts[0]] + [p if content_terms(p) and not _refers_back(p) else
                        f"{p.rstrip('?？')} ({topic})" for p in parts[1:]]
    return [p if p.endswith(("?", "？")) else p + ("？" if zh else "?") for p in out[:3]]


def _topic_words(text: str) -> str:
    """The first sub-question's own content words (as written), to give a dangling follow-up its topic."""
    if detect_language(text) == "zh":
        chosen: list[str] = []
        for t in sorted(content_terms(text), key=len, reverse=True):
            if not any(t in c for c in chosen):
                chosen.append(t)
        return "".join(chosen[:2])
    words = [w.strip("?,.;") for w in text.split()]
    keep = [w for w in words if content_terms(w)]
    return " ".join(keep[:3])


def _refers_back(text: str) -> bool:
    return bool(_PRONOUN_EN.search(text) or _PRONOUN_ZH.search(text))


@DETECTORS.register("compound")
class Compound:
    name, layer, tier = "compound", "retrieve", "rules"

    def detect(self, exam: Exam) -> Symptom | None:
        parts = split_question(exam.question)
        if len(parts) < 2:
            return Symptom(self.name, 0.0, self.layer, "one question")
        if exam.state.request.sub_questions:
            return Symptom(self.name, 0.2, self.layer, f"answered as {len(exam.state.request.sub_questions)} "
                                                       "sub-questions")
        return Symptom(self.name, 0.8, self.layer, f"{len(parts)} sub-questions: " + " | ".join(parts),
                       data={"parts": parts})


@DETECTORS.register("ambiguous")
class Ambiguous:
    """The gate's ambiguity step (pipeline/reason/ambiguity.py), as a symptom the readings and clarify treatments
    act on. Its kinds keep the names the treatments were written for: reference, senses, short, empty."""

    name, layer, tier = "ambiguous", "retrieve", "rules"

    def detect(self, exam: Exam) -> Symptom | None:
        q = exam.question
        if not content_terms(q):
            return Symptom(self.name, 1.0, self.layer, "nothing to search for", data={"kind": "empty"})
        if exam.state.request.sub_questions:
            return Symptom(self.name, 0.2, self.layer, "answered per reading")
        amb = assess(q, exam.passages, exam.settings.ambiguity_threshold)
        if not amb.has_ambiguity:
            return Symptom(self.name, 0.0, self.layer, "the question names what it asks about")
        if amb.ambiguity_type == "reference":
            return Symptom(self.name, amb.confidence, self.layer, f"“{amb.word}” refers to nothing in the question",
                           data={"kind": "reference", "word": amb.word})
        if amb.ambiguity_type == "polysemy":
            titles = [s["title"] for s in amb.senses]
            return Symptom(self.name, amb.confidence, self.layer, "hits fall into separate senses: " + " | ".join(titles),
                           data={"kind": "senses", "senses": list(amb.senses)})
        return Symptom(self.name, amb.confidence, self.layer, f"a single term ({q.strip()}) with no question",
                       data={"kind": "short"})


# Words a question uses to frame what it asks (stems): a corpus need not contain them.
_GENERIC = frozenset("differ between compar versus vs among relat exampl mean defin type kind way use "
                     "main import effect caus reason result happen".split())


@DETECTORS.register("term_mismatch")
class TermMismatch:
    name, layer, tier = "term_mismatch", "retrieve", "rules"

    def detect(self, exam: Exam) -> Symptom | None:
        lexicon = exam.lexicon()  # a tenant's key: its own documents are the corpus (doctor/lexicon.py)
        if lexicon is None:
            return None
        terms = [t for t in dict.fromkeys(analyze(exam.question)) if t in content_terms(exam.question)
                 and t not in _GENERIC]
        unknown = [t for t in terms if lexicon.doc_freq(t) == 0]
        dense = any(s.retriever == "dense" for h in exam.state.hits for s in h.sources)
        if not unknown or not terms:
            return Symptom(self.name, 0.0, self.layer, "every query term occurs in the corpus")
        if exam.state.request.search_queries:
            return Symptom(self.name, 0.2, self.layer, f"searched with {exam.state.request.search_queries[0]!r}")
        share = len(unknown) / len(terms)
        score = 0.5 + 0.5 * share if dense else 0.4 * share
        return Symptom(self.name, clamp(score), self.layer,
                       f"term(s) {', '.join(unknown)} never occur in the corpus"
                       + ("; dense hits exist" if dense else "; no dense hits to learn the corpus's words from"),
                       data={"unknown": unknown})
