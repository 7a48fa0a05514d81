"""HNSW approximate search (hnswlib) for knowledge bases above ``dense_exact_max`` chunks.

Persisted as ``hnsw-v{version}.bin``: the KB version the index reflects is in the file name, so the
file and its stamp are replaced in one atomic rename and a crash can never pair them wrongly.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from pathlib import Path

import hnswlib
import numpy as np

from ragclinic.native import native
from ragclinic.store.vector_index import VECTOR_INDEXES, top_k

# Below this many allowed ids a filtered query is answered exactly over the allowed vectors: cheaper
# than walking the graph with a filter that rejects almost every node, and exact.
_EXACT_FILTER_MAX = 5000


class HnswIndex:
    def __init__(self, dim: int, m: int = 16, ef_construction: int = 200, ef_search: int = 128,
                 capacity: int = 1024, threads: int | None = None) -> None:
        self.dim, self.m, self.ef_construction, self.ef_search = dim, m, ef_construction, ef_search
        self._threads = threads or os.cpu_count() or 1
        self._index = hnswlib.Index(space="ip", dim=dim)
        self._index.init_index(max_elements=capacity, ef_construction=ef_construction, M=m,
                               allow_replace_deleted=True)
        self._index.set_ef(ef_search)
        self._live: set[int] = set()

    def _reserve(self, extra: int) -> None:
        need = self._index.element_count + extra
        if need > self._index.get_max_elements():
            self._index.resize_index(max(need, 2 * self._index.get_max_elements()))

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        ids = np.asarray(ids, np.int64)
        if not len(ids):
            return
        vectors = np.asarray(vectors, np.float32).reshape(len(ids), self.dim)
        with native("hnswlib", f"add {len(ids)} vectors", "index"):
            self._reserve(len(ids))
            self._index.add_items(vectors, ids, num_threads=self._threads, replace_deleted=True)
        self._live.update(ids.tolist())

    def remove(self, ids: Collection[int]) -> None:
        for i in ids:
            if i in self._live:
                try:
                    self._index.mark_deleted(int(i))
                except RuntimeError:  # not in the graph (a live set given by the caller was generous)
                    pass
                self._live.discard(i)

    def set_live(self, ids: Collection[int]) -> None:
        """Declare which labels are live (the caller knows it from its store; saves scanning the graph)."""
        self._live = set(ids)

    def search(self, query: np.ndarray, k: int, allowed: Collection[int] | None = None) -> list[tuple[int, float]]:
        q = np.asarray(query, np.float32).reshape(1, self.dim)
        if allowed is not None:
            allowed_live = [i for i in allowed if i in self._live]
            if len(allowed_live) <= _EXACT_FILTER_MAX:
                if not allowed_live:
                    return []
                vecs = np.asarray(self._index.get_items(allowed_live), np.float32)
                return top_k(np.asarray(allowed_live, np.int64), vecs @ q[0], k)
            allowed_set = set(allowed_live)
            k = min(k, len(allowed_set))
            self._index.set_ef(max(self.ef_search, k))
            with native("hnswlib", f"filtered search k={k}"):
                labels, dists = self._index.knn_query(q, k=k, filter=lambda i: i in allowed_set)
        else:
            k = min(k, len(self._live))
            if k == 0:
                return []
            self._index.set_ef(max(self.ef_search, k))
            with native("hnswlib", f"search k={k}"):
                labels, dists = self._index.knn_query(q, k=k)
        # hnswlib's "ip" distance is 1 - inner product.
        return [(int(i), float(1.0 - d)) for i, d in zip(labels[0], dists[0])]

    def __len__(self) -> int:
        return len(self._live)

    # ------------------------------------------------------------------ persistence
    def save(self, folder: Path, version: int) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        final = folder / f"hnsw-v{version}.bin"
        tmp = folder / f".hnsw-v{version}.tmp"
        self._index.save_index(str(tmp))
        os.replace(tmp, final)
        for old in folder.glob("hnsw-v*.bin"):
            if old != final:
                old.unlink(missing_ok=True)
        return final

    @classmethod
    def load(cls, folder: Path, dim: int, m: int, ef_construction: int, ef_search: int,
             scan_deleted: bool = True) -> tuple["HnswIndex", int] | None:
        """The newest saved index and the KB version it reflects, or None.

        ``scan_deleted=False`` skips finding deleted labels (one call per label with hnswlib 0.8);
        the caller must then ``set_live`` from what it knows.
        """
        found = sorted(((int(mt.group(1)), p) for p in folder.glob("hnsw-v*.bin")
                        if (mt := re.fullmatch(r"hnsw-v(\d+)\.bin", p.name))), reverse=True)
        if not found:
            return None
        version, path = found[0]
        self = cls.__new__(cls)
        self.dim, self.m, self.ef_construction, self.ef_search = dim, m, ef_construction, ef_search
        self._threads = os.cpu_count() or 1
        self._index = hnswlib.Index(space="ip", dim=dim)
        try:
            with native("hnswlib", f"load {path.name}", "index"):
                self._index.load_index(str(path), allow_replace_deleted=True)
        except RuntimeError:
            return None
        self._index.set_ef(ef_search)
        labels = self._index.get_ids_list()
        deleted = set()
        if not scan_deleted:
            pass
        elif hasattr(self._index, "get_deleted_ids"):  # pragma: no cover - newer hnswlib only
            deleted = set(self._index.get_deleted_ids())
        else:
            # hnswlib 0.8 has no API for deleted labels; get_items on a deleted label raises.
            for lab in labels:
                try:
                    self._index.get_items([lab])
                except RuntimeError:
                    deleted.add(lab)
        self._live = set(labels) - deleted
        return self, version


@VECTOR_INDEXES.register("hnsw")
def _hnsw(dim: int, settings) -> HnswIndex:
    return HnswIndex(dim, settings.hnsw_m, settings.hnsw_ef_construction, settings.hnsw_ef_search)
