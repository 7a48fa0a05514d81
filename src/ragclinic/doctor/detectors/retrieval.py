"""Retrieval symptoms: ``low_relevance``, ``noisy_context``, ``homogeneous_context``, ``missing_aspect``.

They read the passages the gate scored (its evidence scores, judged when a model judge was loaded) and
the words of the question; all are rules over what the trace already holds, so they cost nothing.
"""

from __future__ import annotations

import re

from ragclinic.doctor.symptoms import DETECTORS, Exam, clamp
from ragclinic.types import Symptom
from ragclinic.pipeline.gate import comparison_sides, decisive
from ragclinic.pipeline.gate import evidence_threshold as threshold
from ragclinic.text.support import content_terms, coverage, numbers

_ZH_ASKING = re.compile(r"多|几|哪|什么|怎|一次|如何|是否")  # 多久, 几次, 哪年 ... ask, they are not aspects
_NAME = re.compile(r"(?<!^)(?<![.?!]\s)\b[A-Z][\w-]+")


@DETECTORS.register("low_relevance")
class LowRelevance:
    name, layer, tier = "low_relevance", "retrieve", "rules"

    def detect(self, exam: Exam) -> Symptom | None:
        passages = exam.passages
        if not passages:
            return Symptom(self.name, 1.0, self.layer, "no passage in scope matched the question")
        basis = decisive(passages)
        best = max(basis, key=lambda p: p.support)
        need = threshold(passages, exam.settings, exam.judge)
        if best.support < need:
            score = 0.5 + 0.5 * (need - best.support) / max(need, 1e-9)
        else:
            score = 0.5 * (1 - best.support) / max(1e-9, 1 - need) * 0.98
        return Symptom(self.name, clamp(score), self.layer,
                       f"best evidence [{best.n}] {best.support:.2f} vs threshold {need:.2f} ({best.support_by}"
                       + (f": {best.support_why})" if best.support_why else ")"),
                       data={"best_chunk": best.chunk.id})


def _jaccard(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


@DETECTORS.register("noisy_context")
class NoisyContext:
    name, layer, tier = "noisy_context", "scope", "rules"

    def detect(self, exam: Exam) -> Symptom | None:
        ps = exam.passages
        if exam.answer is None or exam.answer.route != "answer":
            return None  # the context only matters to an answer
        if len(ps) < 3:
            return Symptom(self.name, 0.0, self.layer, f"{len(ps)} passage(s): too few to be noisy")
        asked = (exam.question,) + exam.state.request.sub_questions  # a passage may serve one sub-question
        cov = [max(coverage(q, p.chunk.text) for q in asked) for p in ps]
        top = max(cov)
        if top == 0:
            return Symptom(self.name, 0.0, self.layer, "no passage shares a word with the question")
        terms = [content_terms(p.chunk.text) for p in ps]
        weak = [p.n for p, c in zip(ps, cov) if c < 0.5 * top]
        dup = [ps[j].n for j in range(len(ps)) for i in range(j) if _jaccard(terms[i], terms[j]) >= 0.8]
        noise = sorted(set(weak) | set(dup))
        share = len(noise) / len(ps)
        score = 0.5 + 0.5 * (share - 0.5) / 0.5 if share >= 0.5 else share
        keep = [p.n for p in ps if p.n not in noise]
        return Symptom(self.name, clamp(score), self.layer,
                       f"{len(weak)} weak and {len(set(dup))} redundant of {len(ps)} passages",
                       data={"keep": keep, "noise": noise})


@DETECTORS.register("homogeneous_context")
class HomogeneousContext:
    name, layer, tier = "homogeneous_context", "scope", "rules"

    def detect(self, exam: Exam) -> Symptom | None:
        ps = exam.passages
        if exam.answer is None or exam.answer.route != "answer":
            return None
        docs = [p.chunk.doc_id for p in ps]
        if len(ps) < 3:
            return Symptom(self.name, 0.0, self.layer, "too few passages to judge diversity")
        top_doc = max(set(docs), key=docs.count)
        share = docs.count(top_doc) / len(docs)
        others = {h.chunk.doc_id for h in exam.state.hits} - {top_doc}
        if share < 0.8 or not others:
            return Symptom(self.name, 0.0, self.layer, f"{len(set(docs))} documents in the context")
        comparison = exam.state.decision is not None and exam.state.decision.question_type == "comparison"
        score = 0.8 if comparison else 0.55
        return Symptom(self.name, score, self.layer,
                       f"{docs.count(top_doc)}/{len(docs)} passages from one document ({top_doc}); "
                       f"{len(others)} other document(s) were retrieved but left out")


def aspects(question: str) -> list[str]:
    """What the question asks about that an answer must cover: comparison sides, names, numbers, and the
    longer Chinese words (each a term of its own)."""
    if sides := comparison_sides(question):
        return list(sides)
    out = [w for w in _NAME.findall(question) if len(w) > 1]
    out += sorted(numbers(question))
    out += [t for t in content_terms(question) if len(t) >= 2 and re.match(r"[\u4e00-\u9fff]", t)
            and not _ZH_ASKING.search(t)]
    return list(dict.fromkeys(out))


@DETECTORS.register("missing_aspect")
class MissingAspect:
    name, layer, tier = "missing_aspect", "retrieve", "rules"

    def detect(self, exam: Exam) -> Symptom | None:
        wanted = aspects(exam.question)
        if len(wanted) < 2 or not exam.passages:
            return Symptom(self.name, 0.0, self.layer, "the question has fewer than two aspects")
        text = " ".join(p.chunk.text for p in exam.passages)
        have = content_terms(text)
        missing = [a for a in wanted if not (content_terms(a) and content_terms(a) <= have) and a not in text]
        if not missing or len(missing) == len(wanted):  # all missing is low_relevance, not a missing aspect
            return Symptom(self.name, 0.0 if not missing else 0.3, self.layer,
                           f"{len(wanted) - len(missing)}/{len(wanted)} aspects covered")
        share = len(missing) / len(wanted)
        return Symptom(self.name, clamp(0.5 + 0.5 * share), self.layer,
                       f"no passage mentions {', '.join(missing)}", data={"missing": missing})
