"""Gate layer: question type, evidence sufficiency, and the answer / refuse / clarify decision. Its public face
(issue 54): what code outside the pipeline may use of it."""

from ragclinic.pipeline.gate.evidence import comparison_sides, decisive, is_model_judge
from ragclinic.pipeline.gate.evidence import threshold as evidence_threshold
from ragclinic.pipeline.gate.gate import decide
from ragclinic.pipeline.gate.qtype import QUESTION_TYPES, classify_rules
from ragclinic.pipeline.gate.reread import INSTRUCTION as PEER_INSTRUCTION
from ragclinic.pipeline.gate.reread import REFUSAL as PEER_REFUSAL
from ragclinic.pipeline.gate.reread import peer_messages
from ragclinic.pipeline.gate.reread import refused as peer_refused
from ragclinic.pipeline.gate.templates import render
from ragclinic.pipeline.gate.templates import wordings as template_wordings

__all__ = ["PEER_INSTRUCTION", "PEER_REFUSAL", "QUESTION_TYPES", "classify_rules", "comparison_sides", "decide",
           "decisive", "evidence_threshold", "is_model_judge", "peer_messages", "peer_refused", "render",
           "template_wordings"]
