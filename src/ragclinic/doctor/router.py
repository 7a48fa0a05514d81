"""The router: present symptoms → an ordered plan of changes.

Symptoms are taken upstream first (safety, then the query, retrieval, context, evidence, generation):
a repair upstream re-runs everything below it, so it is tried before patching the answer it produced.
Each symptom lists its treatments best-first; a treatment already tried on this query is not repeated.
"""

from __future__ import annotations

from collections.abc import Iterable

from ragclinic.doctor.symptoms import Exam
from ragclinic.types import Symptom
from ragclinic.doctor.treatments import TREATMENTS, Change

ORDER = ("injected_instruction", "ocr_low_confidence", "ambiguous", "compound", "term_mismatch", "low_relevance",
         "missing_aspect",
         "homogeneous_context", "noisy_context", "global_no_community", "conflicting_evidence", "false_premise", "contradicted_claim",
         "unsupported_claim", "self_contradiction", "citation_error", "ignored_context", "off_topic")

ROUTES: dict[str, tuple[str, ...]] = {
    "injected_instruction": ("quarantine",),
    "ocr_low_confidence": ("widen",),  # another, cleaner source of the same fact; the lasting fix is a better scan
    "ambiguous": ("clarify", "readings"),
    "compound": ("decompose",),
    "term_mismatch": ("expand_terms",),
    "low_relevance": ("prf_rewrite", "switch_retriever", "widen", "rerank"),
    "missing_aspect": ("aspect_search",),
    "homogeneous_context": ("diversify",),
    "noisy_context": ("filter_context",),
    "global_no_community": ("use_communities",),
    "conflicting_evidence": ("state_conflict",),
    "false_premise": ("vote",),  # the prompt already carries the premise warning; a variant may heed it
    "contradicted_claim": ("refine",),
    "unsupported_claim": ("refine", "vote"),
    "self_contradiction": ("refine",),
    "citation_error": ("refine",),
    "ignored_context": ("refine", "vote"),
    "off_topic": ("vote", "prf_rewrite"),
}


def plan(symptoms: Iterable[Symptom], exam: Exam, tried: set[str] = frozenset()) -> list[tuple[Symptom, Change]]:
    """Changes for the present symptoms, most upstream symptom first, each symptom's treatments in order."""
    rank = {name: i for i, name in enumerate(ORDER)}
    out, seen = [], set()
    for sym in sorted(symptoms, key=lambda s: (rank.get(s.name, len(ORDER)), -s.score)):
        for name in ROUTES.get(sym.name, ()):
            if name in tried or name in seen:
                continue
            seen.add(name)
            out += [(sym, change) for change in TREATMENTS.create(name).propose(exam, sym)]
    return out
