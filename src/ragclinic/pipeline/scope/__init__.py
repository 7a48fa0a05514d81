"""Scope layer: the passages from the hits — the policies (authority, newest version: policies.py), planted
instructions cut (instructions.py), conflicts between passages (conflicts.py). The metadata filters are resolved to
a pre-filter of chunk rows before the search (retrieve/filters.py; ``allowed_rowids`` re-exported here)."""

from ragclinic.pipeline.retrieve.filters import allowed_rowids

__all__ = ["allowed_rowids"]
