"""``global_no_community``: a question about the whole collection (the gate's question-scope rules: global or
mixed) answered from chunks alone — no community of the knowledge graph stood behind it, because the knowledge base
has no graph (``ingest --graph``) or no community matched. Top-k chunks cannot cover a collection. ``data["fix"]``
names the note's fix (pipeline/gate/templates.py ``fix_no_graph``/``fix_no_match``), worded in the question's
language when the doctor writes the note."""

from __future__ import annotations

from ragclinic.doctor.symptoms import DETECTORS, Exam
from ragclinic.types import Symptom

FIX_NO_GRAPH = "build the knowledge graph: ragclinic ingest DOCS --kb DIR --graph"
FIX_NO_MATCH = "no community of the graph matched the question; ask with the words the documents use, or raise " \
               "graph_communities_k"


@DETECTORS.register("global_no_community")
class GlobalNoCommunity:
    name, layer, tier = "global_no_community", "gate", "rules"

    def detect(self, exam: Exam) -> Symptom | None:
        span = exam.trace.span("gate") if exam.trace is not None else None
        g = (span.output.graph if span is not None and span.output is not None else None) or {}
        kind = g.get("kind", "specific")
        if kind == "specific":
            return Symptom(self.name, 0.0, self.layer, "a specific question: chunks are the right evidence")
        if g.get("path", "chunks").startswith("documents"):  # issue 55: the best passage of each document
            docs = len((g.get("collection") or {}).get("documents", []))
            return Symptom(self.name, 0.0, self.layer, f"{kind} question answered over the passages of {docs} "
                           f"documents and {len(g.get('communities', []))} communities")
        if g.get("path", "chunks") != "chunks":
            return Symptom(self.name, 0.0, self.layer,
                           f"{kind} question answered over {len(g.get('communities', []))} communities")
        cues = ", ".join(f"'{c}'" for c in g.get("cues", [])[:3])
        why = f"{kind} question (score {g.get('score', 0):.2f}{': ' + cues if cues else ''}) answered from chunks alone"
        if not g.get("graph"):
            return Symptom(self.name, 0.7, self.layer, f"{why}: the knowledge base has no graph; {FIX_NO_GRAPH}",
                           data={"graph": False, "fix": "fix_no_graph"})
        return Symptom(self.name, 0.8, self.layer, f"{why}: {FIX_NO_MATCH}",
                       data={"graph": True, "fix": "fix_no_match"})
