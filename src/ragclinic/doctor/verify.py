"""Verified confidence: how much of an answer the evidence confirms, minus what still looks wrong.

Answers: 0.6 × the share of claims confirmed (uncited-but-supported claims count half) + 0.4 × the gate's
evidence score. Refusals: at most 0.4, scaled by how clearly evidence is absent — an honest refusal beats an
unconfirmed answer, but not a confirmed one. Clarifications: 0.45. Each present symptom subtracts
0.15 × its score (an injected instruction still in the context 1.0 ×: an answer built on a passage that
instructs the model is worth less than an honest refusal; one the scope layer already cut out, 0.15 ×).
A treated answer replaces the current one only if its verified confidence is higher by ``margin`` and it
shows no new symptom of the answer's faithfulness or safety (unless it removes an injected instruction the
current run has: safety first) (a new context symptom — the new context is
noisier, say — is already priced into its confidence, so it does not veto a repair such as a quarantine).
"""

from __future__ import annotations

from collections.abc import Sequence

from ragclinic.doctor.symptoms import clamp
from ragclinic.types import Symptom
from ragclinic.pipeline.generate import CITE
from ragclinic.text.support import content_terms, numbers
from ragclinic.types import Answer, Passage

WEIGHTS = {"injected_instruction": 1.0}
VETO = frozenset({"unsupported_claim", "contradicted_claim", "ignored_context", "self_contradiction", "citation_error",
                  "off_topic", "injected_instruction"})
DEFAULT_WEIGHT = 0.15


def present(symptoms: Sequence[Symptom], threshold: float) -> list[Symptom]:
    return [s for s in symptoms if s.score >= threshold]


def verified_confidence(answer: Answer, evidence: float, symptoms: Sequence[Symptom], threshold: float) -> float:
    if answer.route == "answer":
        claims = [c for c in answer.claims]
        if claims:
            ok = sum(1.0 if c.verdict == "supported" else 0.5 if c.verdict == "uncited" else 0.0
                     for c in claims) / len(claims)
        else:
            ok = 0.3
        base = 0.6 * ok + 0.4 * evidence
    elif answer.route == "refuse":
        base = 0.4 * (1 - evidence)
    else:
        base = 0.45
    penalty = sum(_weight(s) * s.score for s in present(symptoms, threshold))
    return round(clamp(base - min(penalty, 0.8)), 4)


def _weight(s: Symptom) -> float:
    """An instruction already cut out of the context (no chunk left to quarantine) weighs like any symptom."""
    if s.name == "injected_instruction" and not s.data.get("chunks"):
        return DEFAULT_WEIGHT
    return WEIGHTS.get(s.name, DEFAULT_WEIGHT)


def lost_facts(old: Answer | None, new: Answer | None) -> list[str]:
    """Numbers (dates, amounts) the current answer's supported claims state and the candidate no longer does: a
    repair that drops them makes a right answer vaguer ("2021年2月12日" → "2021年"), never better."""
    if old is None or new is None or old.route != "answer" or new.route != "answer":
        return []  # a refusal or a question back is judged by its score, not by what it leaves out
    kept = numbers(CITE.sub("", new.text))
    stated = {n for c in old.claims if c.verdict in ("supported", "uncited") for n in numbers(CITE.sub("", c.text))}
    return sorted(stated - kept)


def dropped_evidence(old_answer: Answer | None, old_passages: Sequence[Passage], new_answer: Answer | None,
                     new_passages: Sequence[Passage], sufficient: float, question: str = "") -> list[int]:
    """Passages [n] that support the current answer's claims, that the verifier found sufficient
    (support ≥ ``sufficient``), and that the candidate's context no longer has while it answers differently: two
    sufficient passages that disagree are conflicting evidence, and filtering one away picks a side at random
    (RGB's counterfactual passages: the right one dropped, the planted one kept)."""
    if old_answer is None or new_answer is None or old_answer.route != "answer" or new_answer.route != "answer":
        return []
    kept = {p.chunk.id for p in new_passages}
    kept_terms = [content_terms(p.chunk.text) for p in new_passages]
    new_terms = content_terms(CITE.sub("", new_answer.text))
    by_chunk = {p.chunk.id: p for p in old_passages}
    out = set()
    for c in old_answer.claims:
        p = by_chunk.get(c.chunk_id)
        if c.verdict != "supported" or p is None or p.chunk.id in kept or p.support_by == "lexical" \
                or p.support < sufficient:
            continue  # only a passage a verifier found sufficient counts as evidence
        terms = content_terms(p.chunk.text)
        claim = content_terms(CITE.sub("", c.text)) - content_terms(question)  # what it adds: the answer
        if any(_jaccard(terms, k) >= 0.8 and _covers(k, claim) for k in kept_terms):
            continue  # a near-duplicate that states the same claim is still there (noise filtering dropped a twin;
            # RGB's counterfactual passages are near-duplicates that change the answer, so they do not count)
        if _covers(new_terms, claim):
            continue  # the candidate still says what the claim said, in its own words
        out.add(p.n)
    return sorted(out)


def _covers(terms: frozenset, claim: frozenset) -> bool:
    return bool(claim) and len(claim & terms) >= 0.8 * len(claim)


def _jaccard(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def judge_better(new_score: float, new_symptoms: Sequence[Symptom], old_score: float,
                 old_symptoms: Sequence[Symptom], threshold: float, margin: float,
                 old_answer: Answer | None = None, new_answer: Answer | None = None,
                 dropped: Sequence[int] = ()) -> tuple[bool, str]:
    old_names = {s.name for s in present(old_symptoms, threshold)}
    if "injected_instruction" not in old_names and (lost := lost_facts(old_answer, new_answer)):
        return False, f"the candidate drops {', '.join(lost)} that the current answer's supported claims state"
    if "injected_instruction" not in old_names and dropped:
        return False, (f"the candidate leaves out passage(s) {list(dropped)} that state the current answer and pass "
                       f"the verifier: conflicting evidence is not repaired by filtering one side away")
    new_names = {s.name for s in present(new_symptoms, threshold)}
    fresh = (new_names - old_names) & VETO
    if "injected_instruction" in old_names - new_names:
        fresh = set()  # removing an injection comes first: the new run's doubts are priced into its score
    if fresh:
        return False, f"new symptom(s): {', '.join(sorted(fresh))}"
    if new_score > old_score + margin:
        return True, f"verified confidence {old_score:.2f} → {new_score:.2f}"
    return False, f"not better: {new_score:.2f} vs {old_score:.2f} (+{margin:.2f} needed)"
