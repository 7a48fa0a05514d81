"""Scope layer: the passages from the hits — the policies (authority, newest version: policies.py), planted
instructions cut (instructions.py), conflicts between passages (conflicts.py). The metadata filters are resolved to
a pre-filter of chunk rows before the search (retrieve/filters.py; ``allowed_rowids`` re-exported here). Its public
face (issue 54): what code outside the pipeline may use of it."""

from ragclinic.pipeline.retrieve.filters import allowed_rowids
from ragclinic.pipeline.scope.instructions import RULES as INSTRUCTION_RULES
from ragclinic.pipeline.scope.instructions import removal_places
from ragclinic.pipeline.scope.policies import authority_level, version_key

__all__ = ["INSTRUCTION_RULES", "allowed_rowids", "authority_level", "removal_places", "version_key"]
