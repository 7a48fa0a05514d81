"""Thinking before answering (issue 17), as steps of the pipeline's own layers: the gate's path choice and the
ambiguity step (route.py, ambiguity.py), the tools path in strict mode (plan.py, toolbox.py, planner.py) and
causal ranking and chains (causal.py). A plain question takes the direct path and pays nothing for these. Its
public face (issue 54): what code outside the pipeline may use of it."""

from ragclinic.pipeline.reason.ambiguity import PRONOUN_EN, PRONOUN_ZH, clarifying_question, refers_back
from ragclinic.pipeline.reason.ambiguity import assess as assess_ambiguity
from ragclinic.pipeline.reason.graph import question_entities

__all__ = ["PRONOUN_EN", "PRONOUN_ZH", "assess_ambiguity", "clarifying_question", "question_entities",
           "refers_back"]
