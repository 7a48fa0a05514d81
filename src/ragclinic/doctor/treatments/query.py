"""Treatments that change the query: pseudo-relevance feedback, vocabulary expansion, decomposition,
readings of an ambiguous question, and the clarifying question."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

from ragclinic.doctor.symptoms import Exam
from ragclinic.types import Symptom
from ragclinic.doctor.treatments.base import TREATMENTS, Change, with_request
from ragclinic.text.lang import language_of
from ragclinic.text.analyzer import analyze
from ragclinic.text.support import content_terms
from ragclinic.pipeline.reason import clarifying_question as ask_back


def key_terms(exam: Exam, texts: list[str], n: int) -> list[str]:
    """The n most distinctive words of ``texts`` (term frequency × idf from the lexicon), excluding the
    question's own terms — as written in the text, so the rewritten query reads naturally. The idf counts the
    chunks a tenant's key may read, for a request that enforces a tenant (doctor/lexicon.py)."""
    q = content_terms(exam.question)
    lexical = exam.lexicon()
    total = max(1, len(lexical)) if lexical is not None else 1
    tf: Counter = Counter()
    surface: dict[str, str] = {}
    for text in texts:
        for word in text.replace("\n", " ").split() if language_of(text) == "en" else analyze(text, stem=False):
            w = word.strip(".,;:()[]\"'“”?!")
            terms = content_terms(w)
            if len(terms) == 1 and not terms & q:
                t = next(iter(terms))
                tf[t] += 1
                surface.setdefault(t, w)
    def weight(t: str) -> float:
        df = lexical.doc_freq(t) if lexical is not None else 1
        return tf[t] * math.log((total + 1) / (df + 0.5))
    return [surface[t] for t in sorted(tf, key=lambda t: (-weight(t), t))[:n]]


@TREATMENTS.register("prf_rewrite")
class PrfRewrite:
    """Pseudo-relevance feedback: add the key terms of the best hits to the query."""

    name = "prf_rewrite"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        top = sorted(exam.passages, key=lambda p: -p.support)[:2]
        terms = key_terms(exam, [p.chunk.text for p in top], 4)
        if not terms:
            return []
        query = f"{exam.question} {' '.join(terms)}"
        return [Change(self.name, "retrieve", f"query + key terms of the best hits: {', '.join(terms)}",
                       with_request(search_queries=(query,)))]


@TREATMENTS.register("expand_terms")
class ExpandTerms:
    """Corpus vocabulary for query words the corpus never uses: spelling neighbours from the dense hits'
    words, else the dense hits' key terms."""

    name = "expand_terms"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        unknown = list(symptom.data.get("unknown", ()))
        dense = [h.chunk.text for h in exam.state.hits if any(s.retriever == "dense" for s in h.sources)][:3]
        if not unknown or not dense:
            return []
        vocab = {t for text in dense for t in content_terms(text)}
        near = [v for u in unknown for v in sorted(vocab) if v != u and _close(u, v)]
        added = near[:4] or key_terms(exam, dense[:2], 3)
        if not added:
            return []
        return [Change(self.name, "retrieve", f"{', '.join(unknown)} → {', '.join(added)}",
                       with_request(search_queries=(f"{exam.question} {' '.join(added)}",)))]


def _close(a: str, b: str) -> bool:
    """Spelling neighbours: a shared 4-character prefix, or edit distance ≤ 2 for words of 5+ characters."""
    if len(a) >= 4 and len(b) >= 4 and a[:4] == b[:4]:
        return True
    return min(len(a), len(b)) >= 5 and abs(len(a) - len(b)) <= 2 and _edits(a, b) <= 2


def _edits(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


@TREATMENTS.register("decompose")
class Decompose:
    """Retrieve for each sub-question (≤ 3), share the context, answer each with its own citations."""

    name = "decompose"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        parts = tuple(symptom.data.get("parts", ()))[:3]
        if len(parts) < 2:
            return []
        k = max(exam.state.request.context_k, 2 * len(parts))
        return [Change(self.name, "retrieve", "sub-questions: " + " | ".join(parts),
                       with_request(sub_questions=parts, context_k=min(k, 10)))]


@TREATMENTS.register("aspect_search")
class AspectSearch:
    """Search once more for the aspect no passage covers, alongside the question."""

    name = "aspect_search"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        missing = list(symptom.data.get("missing", ()))
        if not missing:
            return []
        queries = (exam.question,) + tuple(f"{m} {exam.question}" for m in missing[:2])
        return [Change(self.name, "retrieve", "extra searches for " + ", ".join(missing[:2]),
                       with_request(search_queries=queries))]


@TREATMENTS.register("readings")
class Readings:
    """An ambiguous question, not interactive: answer up to 3 readings, each the whole question plus the
    words of one sense (so no condition of the question is dropped)."""

    name = "readings"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        senses = symptom.data.get("senses") or []
        if len(senses) < 2:
            return []
        readings = tuple(f"{exam.question.rstrip('?？')} ({s['title']})?" for s in senses[:3])
        return [Change(self.name, "retrieve", "readings: " + " | ".join(readings),
                       with_request(sub_questions=readings, context_k=max(exam.state.request.context_k, 6)))]


_KINDS = {"senses": "polysemy", "reference": "reference", "short": "incomplete", "empty": "incomplete"}


def clarifying_question(question: str, symptom: Symptom) -> str:
    """One short question back, naming the alternatives (pipeline/reason/ambiguity.py's templates)."""

    kind = _KINDS.get(symptom.data.get("kind", "short"), "incomplete")
    return ask_back(question, kind, symptom.data.get("word", ""), [s["title"] for s in symptom.data.get("senses", [])])


@TREATMENTS.register("clarify")
class Clarify:
    """Interactive callers get one short clarifying question back (route "clarify") instead of a guess."""

    name = "clarify"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        if not exam.interactive or exam.state.decision is None:
            return []
        text = clarifying_question(exam.question, symptom)

        def ask_back(s):
            return replace(s, decision=replace(s.decision, route="clarify", clarifying_question=text,
                                               reason=f"ambiguous question: {symptom.evidence}"))
        return [Change(self.name, "generate", text, ask_back, uses_model=False, terminal=True)]
