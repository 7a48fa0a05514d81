"""Exact (brute-force) vector search with numpy: the default below ``dense_exact_max`` chunks."""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from ragclinic.store.vector_index import VECTOR_INDEXES, top_k


class ExactIndex:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._ids = np.zeros(0, np.int64)
        self._vecs = np.zeros((0, dim), np.float32)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []

    def _flush(self) -> None:
        if self._pending:
            self._ids = np.concatenate([self._ids] + [i for i, _ in self._pending])
            self._vecs = np.concatenate([self._vecs] + [v for _, v in self._pending])
            self._pending = []

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        ids = np.asarray(ids, np.int64)
        vectors = np.asarray(vectors, np.float32).reshape(len(ids), self.dim)
        self.remove(ids.tolist())
        self._pending.append((ids, vectors))

    def remove(self, ids: Collection[int]) -> None:
        self._flush()
        if len(ids) and len(self._ids):
            keep = ~np.isin(self._ids, np.fromiter(ids, np.int64))
            self._ids, self._vecs = self._ids[keep], self._vecs[keep]

    def search(self, query: np.ndarray, k: int, allowed: Collection[int] | None = None) -> list[tuple[int, float]]:
        self._flush()
        ids, vecs = self._ids, self._vecs
        if allowed is not None:
            mask = np.isin(ids, np.fromiter(allowed, np.int64))
            ids, vecs = ids[mask], vecs[mask]
        scores = vecs @ np.asarray(query, np.float32).reshape(self.dim)
        return top_k(ids, scores, k)

    def __len__(self) -> int:
        self._flush()
        return len(self._ids)


@VECTOR_INDEXES.register("exact")
def _exact(dim: int, _settings=None) -> ExactIndex:
    return ExactIndex(dim)
