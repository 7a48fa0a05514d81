"""Gate layer: question type, evidence sufficiency, and the answer / refuse / clarify decision."""

from ragclinic.pipeline.gate.gate import decide
from ragclinic.pipeline.gate.qtype import QUESTION_TYPES, classify_rules

__all__ = ["QUESTION_TYPES", "classify_rules", "decide"]
