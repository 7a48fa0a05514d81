"""Generate layer: an answer with [n] citations from the passages, checked claim by claim."""

from ragclinic.pipeline.generate.base import GENERATORS, Draft, Generator, GenerateInput
from ragclinic.pipeline.generate.citations import check_claims, violations

__all__ = ["GENERATORS", "Draft", "GenerateInput", "Generator", "check_claims", "violations"]
