"""The VectorIndex role: inner-product search over L2-normalised vectors labelled by chunk rowid.

Backends register a factory ``(dim, settings) → VectorIndex`` in ``VECTOR_INDEXES`` (store/exact.py: ``exact``,
store/hnsw.py: ``hnsw``); the knowledge base picks one by its size (``dense_exact_max``)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

import numpy as np

from ragclinic.registry import Registry


class VectorIndex(Protocol):
    dim: int

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add vectors (rows) under integer ids; an existing id is replaced."""
        ...

    def remove(self, ids: Collection[int]) -> None:
        """Remove ids; unknown ids are ignored (replaying a change log must be idempotent)."""
        ...

    def search(self, query: np.ndarray, k: int, allowed: Collection[int] | None = None) -> list[tuple[int, float]]:
        """Top-k (id, cosine) for one query vector; ``allowed`` is a pre-filter applied inside the search."""
        ...

    def __len__(self) -> int: ...


VECTOR_INDEXES: Registry[VectorIndex] = Registry("vector index")


def top_k(ids: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k best (id, score) pairs, best first; ties broken by id for determinism."""
    if len(ids) == 0 or k <= 0:
        return []
    k = min(k, len(ids))
    part = np.argpartition(-scores, k - 1)[:k] if k < len(ids) else np.arange(len(ids))
    order = part[np.lexsort((ids[part], -scores[part]))]
    return [(int(ids[i]), float(scores[i])) for i in order]
