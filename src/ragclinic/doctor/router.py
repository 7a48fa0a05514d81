"""The router: present symptoms → an ordered plan of changes.

Symptoms are taken upstream first (safety, then the query, retrieval, context, evidence, generation; ``ORDER``):
a repair upstream re-runs everything below it, so it is tried before patching the answer it produced.
Each symptom lists its treatments best-first; a treatment already tried on this query is not repeated.
"""

from __future__ import annotations

from collections.abc import Iterable

from ragclinic.doctor.symptoms import Exam
from ragclinic.trace.layers import ROUTES as LAYER_ROUTES
from ragclinic.types import Symptom
from ragclinic.doctor.treatments import TREATMENTS, Change

ORDER = ("injected_instruction", "ocr_low_confidence", "ambiguous", "compound", "term_mismatch", "low_relevance",
         "missing_aspect",
         "homogeneous_context", "noisy_context", "global_no_community", "conflicting_evidence", "false_premise", "contradicted_claim",
         "unsupported_claim", "self_contradiction", "citation_error", "ignored_context", "off_topic")

ROUTES = LAYER_ROUTES  # symptom → treatments, best first: each layer's entry in the layer table (trace/layers.py)


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
