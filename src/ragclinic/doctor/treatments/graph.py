"""``use_communities``: a global question the gate answered from chunks although the knowledge base has a graph —
ask again from the gate with the graph's communities (twice as many mapped), whatever the question-scope rules
said. Without a graph there is nothing to re-run: the doctor names the fix (``ingest --graph``) instead."""

from __future__ import annotations

from ragclinic.doctor.symptoms import Exam
from ragclinic.types import Symptom
from ragclinic.doctor.treatments.base import TREATMENTS, Change, with_request


@TREATMENTS.register("use_communities")
class UseCommunities:
    name = "use_communities"

    def propose(self, exam: Exam, symptom: Symptom) -> list[Change]:
        if not symptom.data.get("graph") or exam.state.request.graph_route == "global":
            return []
        return [Change(self.name, "gate", "answer from the knowledge graph's communities (map over them, reduce)",
                       with_request(graph_route="global"))]
