"""Scope layer: metadata filters resolved to a pre-filter of chunk rows (policies come next)."""

from ragclinic.pipeline.scope.filters import allowed_rowids

__all__ = ["allowed_rowids"]
